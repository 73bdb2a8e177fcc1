"""The fleet's state read from its Sites: one row per site, counts, reasons, what to act on, a node's report judged
for plausibility (`fleetstate`), and the fleet on one HTML page (`page`). Pure functions: no hub access here."""
