"""One module per relocation step, each with plan(ctx) -> Plan, apply(ctx, plan) -> Outcome, verify(ctx)."""
