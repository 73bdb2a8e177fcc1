"""The simulator serving a plain Kubernetes hub cluster, for the fleet controller, its nodes' reporters and kubectl.

The OpenShift simulator models one SNO; the fleet side needs what a plain kube-apiserver offers a controller:
CustomResourceDefinitions created at run time, ServiceAccounts with TokenRequest, RBAC, watches that resume from a
resourceVersion (with bookmarks and 410 Gone), pagination and server-side printing. The hub reuses the kube layer's
(`snoreloc_sim.kube`) store, HTTP layer and schema validation, imports nothing of `snoreloc_sim.openshift`, and adds
those behaviours in this package, each citing the
kube-apiserver source it follows. Start it with `HubSimulator` (`simulator`), `snoreloc sim serve --hub`, or the
`hub_sim` pytest fixture.
"""
