"""The relocation's steps and their contract.

`base` and `context` are the contract every step keeps (inputs / plan / apply / verify, and what a step is given);
`cluster` holds the cluster steps and `host` the host steps, one module per step, none importing another;
`openshift` holds what several cluster steps know about OpenShift and share (no step lives there).
"""
