"""The Site resource: its names, phases, conditions, status keys and CRD (`site`), and the rules its inputs must meet
before any of them reaches an API path or the controller's work (`siteinput`). The bottom of the fleet: it imports
nothing of the fleet."""
