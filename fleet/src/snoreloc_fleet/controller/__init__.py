"""The hub controller: one idempotent reconcile per Site (`reconcile`), its status derived by pure functions
(`status`), run by kopf with a sweep and a write rate limit (`operator`). `snoreloc fleet controller` starts it."""
