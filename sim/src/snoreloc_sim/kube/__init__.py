"""The simulated kube-apiserver: what any Kubernetes API server does, with nothing of OpenShift's.

HTTPS and bearer tokens (`server`, `tls`, `certs`; `served`: start, stop and the admin kubeconfig), the resource
semantics over the store (`api`, `messages`, `model`): discovery, reads, lists and watches, writes (create, update,
the three patch dialects in `patch`, server-side apply in `apply` and `typed`), deletes and namespace lifecycle
(`namespaces`); admission: schema validation with CEL (`validation`, `cel`) and the built-in kinds' rules
(`builtin`, `kinds`, `csr_rules`); the served types (`registry`); injected faults (`faults`). The OpenShift
layer (`snoreloc_sim.openshift`) and the plain hub (`snoreloc_sim.hub`) are built on it; it imports neither
(`.importlinter`, contract `sim-layers`).
"""
