"""The pieces every part of the site-config's JSON Schema is built from: described properties, closed objects,
file references, PEM sources, the name patterns, and finding the properties that carry a keyword (`x-secret`,
`deprecated`). The core schema (`schema`) and every setting's fragment (`settings.*`) use them, so a fragment
looks like the rest of the schema and `x-secret` marks a secret the same way everywhere.
"""

from __future__ import annotations

from typing import Any

from snoreloc.siteconfig import findings

HOST = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*"


REPO_PATH = r"(?:/[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?)+"


# The patterns of ImageDigestMirrorSet/ImageTagMirrorSet: host[:port][/path], no tag or digest; sources may be *.host.
MIRROR_PATTERN = rf"^({HOST}(?::[0-9]+)?)(?:{REPO_PATH})?$"


SOURCE_PATTERN = r"^\*(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+$|" + MIRROR_PATTERN


REGISTRY_PATTERN = rf"^{HOST}(?::[0-9]{{1,5}})?$"


DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"


DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def prop(description: str, examples: list[Any], **schema: Any) -> dict[str, Any]:
    return {**schema, "description": description, "examples": examples}


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False, **extra}
    if required:
        out["required"] = list(required)
    return out


def file_ref(what: str, example: str) -> dict[str, Any]:
    return prop(
        f"{what}: a path relative to the site-config's directory, inside it (no absolute paths, no '..', "
        "no symlinks leading out); a regular file of at most 1 MiB.",
        [example],
        type="string",
        minLength=1,
        maxLength=4096,
    )


def pem_source(what: str, example_file: str, *, secret: bool = False) -> dict[str, Any]:
    pem: dict[str, Any] = {"type": "string", "minLength": 1}
    if secret:
        pem["x-secret"] = True
    return {
        **obj(
            {
                "file": file_ref(f"File holding the {what}", example_file),
                "pem": prop(
                    f"The {what}, inline, as PEM text.", ["-----BEGIN ...-----\n...\n-----END ...-----\n"], **pem
                ),
            },
            minProperties=1,
            maxProperties=1,
        ),
        "description": f"The {what}: either `file` or `pem`.",
        "examples": [{"file": example_file}],
    }


IMAGE_PATTERN = rf"^{HOST}(?::[0-9]+)?{REPO_PATH}(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}|@sha256:[a-f0-9]{{64}})$"


def marked(keyword: str, node: Any, path: findings.Path = ()) -> tuple[findings.Path, ...]:
    """Document paths of the properties under `node` whose schema carries `keyword` (not looking inside such a
    property). Only named properties are followed; the ones under a list or a free-form mapping have no fixed path.
    """
    if not isinstance(node, dict):
        return ()
    if node.get(keyword) and path:
        return (path,)
    found: tuple[findings.Path, ...] = ()
    for name, child in (node.get("properties") or {}).items():
        found += marked(keyword, child, (*path, name))
    for child in (*(node.get("allOf") or ()), *(node.get("oneOf") or ()), *(node.get("anyOf") or ())):
        found += marked(keyword, child, path)  # a value that takes one of several shapes (`kubeadmin`)
    return found
