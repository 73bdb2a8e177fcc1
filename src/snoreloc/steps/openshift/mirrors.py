"""Which mirror API the cluster reads, and the mirrors it cannot express (refused before any change).

ImageDigestMirrorSet and ImageTagMirrorSet exist from OpenShift 4.13; before that ImageContentSourcePolicy is the
only mirror API, and it mirrors by digest only. The run asks here before its first step (`engine.pipeline.admit`:
the refusal is the run's, not a step's), and preflight and cluster-config again.
"""

from __future__ import annotations

from snoreloc import errors
from snoreloc.siteconfig import model

MIRROR_SETS_SINCE = (4, 13)  # ImageDigestMirrorSet / ImageTagMirrorSet; before it, ImageContentSourcePolicy only


def is_legacy(version: tuple[int, int]) -> bool:
    """True when the cluster's only mirror API is ImageContentSourcePolicy."""
    return version < MIRROR_SETS_SINCE


def require_mirror_support(site: model.SiteConfig, version: tuple[int, int]) -> None:
    """Refuse mirrors the cluster cannot express: tag mirrors need ImageTagMirrorSet (OpenShift 4.13+)."""
    if not is_legacy(version) or not site.image_tag_mirrors:
        return
    running = f"OpenShift {version[0]}.{version[1]}"
    raise errors.ConfigError(
        f"spec.imageTagMirrors cannot be applied: this cluster runs {running}, and image tag mirrors need "
        "OpenShift 4.13 or later (ImageTagMirrorSet); before 4.13 ImageContentSourcePolicy mirrors by digest only",
        problems=(
            errors.Problem("spec.imageTagMirrors", f"tag mirrors need OpenShift 4.13+; the cluster runs {running}"),
        ),
        hint="Remove spec.imageTagMirrors from the site-config, or list those repositories under "
        "spec.imageDigestMirrors if their images are pulled by digest, then run again.",
    )
