"""The cluster steps, one module per step; no module here imports another (shared pieces live in `steps.openshift`)."""
