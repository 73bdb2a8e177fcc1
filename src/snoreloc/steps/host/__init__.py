"""The host steps (site network, kubelet, the API's return), one module per step; they reach the node only through
`snoreloc.host`.
"""
