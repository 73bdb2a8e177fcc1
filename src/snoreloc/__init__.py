"""snoreloc: relocate a pre-installed Single Node OpenShift cluster to its edge site.

The public surface is deliberately small: the version and the error tree. Everything else is reached through the
`snoreloc` command, whose behaviour is the contract with factory installers, technicians and SREs.
"""

from snoreloc.errors import ExitCode, SnorelocError

__version__ = "0.1.0"

__all__ = ["ExitCode", "SnorelocError", "__version__"]
