"""Package data of the host steps: the dispatcher script and the unit files rendered into the MachineConfig."""
