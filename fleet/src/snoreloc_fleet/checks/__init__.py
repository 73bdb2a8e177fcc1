"""Validating a fleet in CI: the agent's verdict on thousands of site-configs (`bulk`), the checks that compare sites
with each other (`fleetwide`), and how the outcome is told: prose, JSON, JUnit (`ci`)."""
