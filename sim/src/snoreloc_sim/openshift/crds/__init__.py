"""Where the OpenShift CRDs the simulated cluster serves are: one JSON summary per CRD (group, kind, scope, schema).

The files are generated from openshift/api by `tools/gen_sim_schemas.py` and ship as package data; the kube layer
(`kube.registry`, `kube.validation`) reads whatever directory it is given, so only the OpenShift layer names this one.
"""

from pathlib import Path

DIR = Path(__file__).parent
