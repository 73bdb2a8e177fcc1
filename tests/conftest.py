"""Suite-wide pytest plugins: the simulator's fixtures (`sim`, `cluster_kubeconfig`) and the subprocess guard."""

pytest_plugins = ["snoreloc_sim.pytest_plugin", "guards"]
