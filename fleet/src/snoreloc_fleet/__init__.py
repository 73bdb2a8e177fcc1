"""snoreloc-fleet: the fleet owner's side of snoreloc (hub resources, controller, inventory and fleet tooling).

Kept out of the agent's distribution so a node carries none of it; the agent never imports this package.
"""
