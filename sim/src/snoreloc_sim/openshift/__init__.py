"""OpenShift on the simulated kube-apiserver: a Single Node cluster as the agent meets it.

`simulator` assembles one (the kube layer's server and store, plus what follows), `seeds` writes a release's
objects, `crds` holds the OpenShift CRD schemas it serves, `operators` are the operators' observable behaviours
(each declares what it watches), `dns` is the node's and the site's name resolution. It uses `snoreloc_sim.kube`
and nothing above it; the hub (`snoreloc_sim.hub`) does not use it.
"""
