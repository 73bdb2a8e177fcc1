"""Fleet operations: inventory to site-configs, bulk validation for CI, the fleet's state, metrics and alerts.

Everything the fleet owner runs over many sites at once. The agent's rules are reached only through `agent`, one
small module, so a move inside the agent's site-config package changes one file here.
"""
