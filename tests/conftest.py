"""Suite-wide pytest plugins: the simulator's fixtures (`sim`, `cluster_kubeconfig`) and the subprocess guard."""

pytest_plugins = ["snoreloc.sim.pytest_plugin", "guards"]
