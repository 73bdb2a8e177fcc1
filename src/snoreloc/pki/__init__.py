"""Certificates with `cryptography`: issue serving certificates from cluster signers, check user-supplied pairs."""
