"""`spec.extraManifests`: the site's own Kubernetes objects, read and checked offline here (`siteconfig.manifests`),
dry-run by the cluster in preflight and applied with server-side apply by the manifests step
(`snoreloc.steps.cluster.manifests`) once the cluster carries its new names. What they cost depends on their kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc.siteconfig import checks, claims, findings, fragments, manifests, setting

KEY = "extraManifests"


def _schema() -> dict[str, Any]:
    where = "relative to the site-config's directory, inside it (no absolute paths, no '..', no symlinks leading out)"
    return fragments.prop(
        "Kubernetes manifests applied after the relocation with server-side apply (field manager `snoreloc`), each "
        "checked by the cluster with a dry run before the first change. YAML or JSON, several documents per file "
        "(`---`). Either `directory` or `files`. What they cause depends on the kinds: a ConfigMap or a "
        "Subscription moves no node; a MachineConfig reboots the node (the final settle waits for it).",
        [{"directory": "manifests"}, {"files": ["manifests/10-site-configmap.yaml"]}],
        **fragments.obj(
            {
                "directory": fragments.prop(
                    f"A directory {where}: its `*.yaml`, `*.yml` and `*.json` files (not subdirectories), applied "
                    f"in name order; at most {manifests.MAX_MANIFEST_FILES} files of at most 1 MiB each.",
                    ["manifests"],
                    type="string",
                    minLength=1,
                    maxLength=4096,
                ),
                "files": fragments.prop(
                    f"Manifest files {where}, applied in this order.",
                    [["manifests/10-site-configmap.yaml", "manifests/20-subscription.yaml"]],
                    type="array",
                    minItems=1,
                    maxItems=manifests.MAX_MANIFEST_FILES,
                    uniqueItems=True,
                    items={"type": "string", "minLength": 1, "maxLength": 4096},
                ),
            },
            minProperties=1,
            maxProperties=1,
        ),
    )


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = (*checks.SPEC, KEY)
    value = spec.get(KEY)
    if not isinstance(value, Mapping) or not run.sound(path):
        return
    found, problems = manifests.check(value, run.base_dir, path)
    for problem in problems:
        run.error(problem.path, problem.message)
    for manifest, message in claims.collisions(run.claimed, found):
        run.error(_manifest_at(path, value, manifest), message)
    for manifest, message in claims.broad_grants(found):
        run.warn(_manifest_at(path, value, manifest), message)
    run.parsed[KEY] = tuple(found)


def _manifest_at(path: findings.Path, value: Mapping[str, Any], manifest: manifests.Manifest) -> findings.Path:
    """The site-config field that names the manifest's file: its `files` entry, else `directory`."""
    listed = value.get("files")
    if isinstance(listed, list) and manifest.source in listed:
        return (*path, "files", listed.index(manifest.source))
    return (*path, "directory")


def _load(values: Any, checked: checks.Checked) -> tuple[manifests.Manifest, ...]:
    return tuple(checked.parsed.get(KEY, ()))


SETTING = setting.Setting(
    key=KEY,
    field="extra_manifests",
    schema=_schema(),
    load=_load,
    check=_check,
    cost=setting.Cost(
        reboot="maybe",
        rollouts=("mcp/master",),
        note="manifests: a MachineConfig among them rolls out the master pool: the node reboots",
    ),
)
