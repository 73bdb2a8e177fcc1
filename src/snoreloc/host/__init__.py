"""The node's own systems at the site: the network transaction and kubelet control, below the step contract."""
