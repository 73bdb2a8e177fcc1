"""An OpenShift Single Node cluster simulated over real HTTPS, for tests, the demo and benchmarks.

No kube-apiserver can run where snoreloc is built and tested, so this package plays one: the kube API protocol
(served to the official `kubernetes` client and `kubectl` unmodified), storage with kube-apiserver's semantics,
validation from the real OpenShift CRD schemas (CEL included), the operators' behaviours that snoreloc depends
on (rollouts, outages, generated route hosts, served certificates), and faults on demand.

Its layers (contract `sim-layers`): `kube`, a generic kube-apiserver; `openshift` (the SNO) and `hub` (a plain
Kubernetes hub for the fleet side) on it, apart from each other; `demo` above them; `cli` and `pytest_plugin` on top.

Nothing in the product imports this package (the import-linter contract says so), and it imports nothing of the
agent's: it is an independent oracle, so a bug in the agent cannot hide behind the same bug in its test double.
"""
