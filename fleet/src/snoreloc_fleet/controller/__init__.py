"""The hub controller: one idempotent reconcile per Site (`reconcile`), its status derived by pure functions
(`status`: the phase state machine), run by kopf with a deduplicating queue of keys (`workqueue`, `operator`), and
its Prometheus metrics (`metrics`). `snoreloc fleet controller` (`verbs.controller`) starts it."""
