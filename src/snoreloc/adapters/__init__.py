"""One adapter per external system (kube API, nmstate, systemd, host files, clock, commands), each a seam for tests."""
