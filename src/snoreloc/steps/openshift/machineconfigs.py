"""What our MachineConfigs share: the master role label and the Ignition version the installer writes."""

from __future__ import annotations

ROLE = "machineconfiguration.openshift.io/role"
ROLE_LABEL = {ROLE: "master"}
IGNITION_VERSION = "3.2.0"  # the version the installer writes into 99-master-ssh on 4.12-4.16
