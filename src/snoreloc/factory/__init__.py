"""The factory side: the MachineConfig that prepares a node for relocation, and `seal`, the factory's last step."""
