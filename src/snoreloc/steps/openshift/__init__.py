"""What the cluster steps know about OpenShift and share: operator health, rollouts, the kube-apiserver revision
order, the node's CSRs, serving certificates, mirror support and the labels that mark our objects. No step lives here.
"""
