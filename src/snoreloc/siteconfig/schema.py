"""The site-config's JSON Schema (Draft 2020-12): the published contract, and the structural half of validation.

Written as Python data so that it is one source for three consumers: `snoreloc validate` (with `jsonschema`), the
editor of whoever writes site-configs (`snoreloc schema` > docs/site-config.schema.json, referenced by a
`yaml-language-server` comment), and the docs. Every property carries a description and examples. Unknown fields
are errors everywhere we own the shape, because a typo'd optional field would otherwise be silently ignored at a
site nobody can reach.

Two keywords of our own ride along (JSON Schema ignores unknown keywords): `x-message`, the sentence shown when a
`pattern` or a combinator in that subschema fails, and `x-secret`, marking values never to be echoed. The lists of
secret fields (`SECRET_PATHS`, `AUTH_SECRET_FIELDS`) and of ignored fields (`DEPRECATED_PATHS`, the standard
`deprecated` keyword) are read from the schema itself, so marking a property here is the whole change.
"""

from __future__ import annotations

import json
from typing import Any

from snoreloc.siteconfig import findings, fragments, model, registry

SCHEMA_ID = "https://snoreloc.io/schemas/site-config-v1alpha1.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


INTERFACE_TYPES = (
    "ethernet",
    "bond",
    "vlan",
    "linux-bridge",
    "ovs-bridge",
    "ovs-interface",
    "dummy",
    "loopback",
    "mac-vlan",
    "mac-vtap",
    "vrf",
    "vxlan",
    "team",
    "infiniband",
    "veth",
    "ipvlan",
    "hsr",
    "macsec",
    "unknown",
)
INTERFACE_STATES = ("up", "down", "absent", "ignore")
BOND_MODES = ("balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb")

# Fields people ask for that a running cluster cannot change, with why (shown instead of "unknown field").
NOT_ONLINE: dict[tuple[str | int, ...], str] = {
    ("spec", "hostname"): "the node's name is in its kubelet certificate, its Node object and etcd's member name; "
    "renaming it needs a reinstall (set `kubelet.nodeName` only if the host name already differs)",
    ("spec", "clusterName"): "the cluster name is fixed at install time in the infrastructure name and in "
    "resources named after it; only the domain can change (`domain: <cluster>.<base domain>`)",
}


def _cert_key_pair(host: str, stem: str) -> dict[str, Any]:
    return fragments.prop(
        f"A serving certificate for {host} and its private key. Omit to have snoreloc issue one from the cluster's "
        "own signer. The certificate file holds the leaf first, then each issuer; it must cover "
        f"{host}, be currently valid, and use RSA (>= 2048 bits) or EC. The key is PKCS#1, SEC1 or PKCS#8, "
        "unencrypted.",
        [{"certificate": {"file": f"{stem}.crt"}, "key": {"file": f"{stem}.key"}}],
        **fragments.obj(
            {
                "certificate": fragments.pem_source("certificate chain (leaf first)", f"{stem}.crt"),
                "key": fragments.pem_source("private key (unencrypted)", f"{stem}.key", secret=True),
            },
            ("certificate", "key"),
        ),
    )


def _address() -> dict[str, Any]:
    return fragments.obj(
        {
            "ip": fragments.prop(
                "An IPv4 or IPv6 address (without prefix).", ["192.0.2.10", "2001:db8::10"], type="string"
            ),
            "prefix-length": fragments.prop(
                "Prefix length of the subnet.", [24, 64], type="integer", minimum=0, maximum=128
            ),
        },
        ("ip", "prefix-length"),
    )


def _ip_config(family: str, example: dict[str, Any]) -> dict[str, Any]:
    properties = {
        "enabled": fragments.prop(f"Whether {family} is enabled on the interface.", [True], type="boolean"),
        "dhcp": fragments.prop(f"Obtain the {family} address by DHCP.", [False], type="boolean"),
        "address": fragments.prop(
            f"Static {family} addresses.", [example["address"]], type="array", items=_address(), maxItems=64
        ),
    }
    if family == "IPv6":
        properties["autoconf"] = fragments.prop("Use SLAAC (router advertisements).", [False], type="boolean")
    schema = fragments.prop(
        f"{family} settings of the interface (nmstate).", [example], type="object", properties=properties
    )
    schema["additionalProperties"] = True  # nmstate has more knobs than we check (auto-dns, dhcp-client-id, ...)
    return schema


def _interface() -> dict[str, Any]:
    properties = {
        "name": fragments.prop(
            "Kernel interface name (1-15 characters).", ["eno1", "eno1.120", "bond0"], type="string", minLength=1
        ),
        "type": fragments.prop("nmstate interface type.", ["ethernet", "vlan", "bond"], enum=list(INTERFACE_TYPES)),
        "state": fragments.prop("Desired state.", ["up"], enum=list(INTERFACE_STATES)),
        "mtu": fragments.prop("MTU in bytes.", [1500, 9000], type="integer", minimum=68, maximum=65535),
        "ipv4": _ip_config(
            "IPv4", {"enabled": True, "dhcp": False, "address": [{"ip": "192.0.2.10", "prefix-length": 24}]}
        ),
        "ipv6": _ip_config("IPv6", {"enabled": False, "address": [{"ip": "2001:db8::10", "prefix-length": 64}]}),
        "vlan": fragments.prop(
            "VLAN settings (type vlan): the parent interface and the tag.",
            [{"base-iface": "eno1", "id": 120}],
            type="object",
            properties={
                "base-iface": fragments.prop("Parent interface of the VLAN.", ["eno1"], type="string", minLength=1),
                "id": fragments.prop("VLAN tag, 0-4094.", [120], type="integer", minimum=0, maximum=4094),
            },
            required=["base-iface", "id"],
        ),
        "link-aggregation": fragments.prop(
            "Bond settings (type bond): mode and member ports.",
            [{"mode": "active-backup", "port": ["eno1", "eno2"]}],
            type="object",
            properties={
                "mode": fragments.prop("Bonding mode.", ["active-backup", "802.3ad"], enum=list(BOND_MODES)),
                "port": fragments.prop(
                    "Member interfaces.", [["eno1", "eno2"]], type="array", items={"type": "string"}
                ),
            },
        ),
    }
    return {
        "type": "object",
        "description": "One nmstate interface. Keys not listed here are passed to nmstate unchecked.",
        "properties": properties,
        "required": ["name"],
        "additionalProperties": True,
        "examples": [{"name": "eno1.120", "type": "vlan", "state": "up", "vlan": {"base-iface": "eno1", "id": 120}}],
    }


def _route() -> dict[str, Any]:
    schema = fragments.obj(
        {
            "destination": fragments.prop("Destination network in CIDR form.", ["0.0.0.0/0", "::/0"], type="string"),
            "next-hop-address": fragments.prop("Gateway address.", ["192.0.2.1"], type="string"),
            "next-hop-interface": fragments.prop("Interface the route leaves by.", ["eno1.120"], type="string"),
            "metric": fragments.prop("Route metric.", [100], type="integer", minimum=0),
            "table-id": fragments.prop("Routing table.", [254], type="integer", minimum=0),
            "state": fragments.prop("`absent` removes matching routes.", ["absent"], enum=["absent"]),
        },
    )
    schema["additionalProperties"] = True
    return schema


def _nmstate() -> dict[str, Any]:
    route = _route()
    return {
        "type": "object",
        "description": "nmstate desired state, inline; or `{file: network.yaml}` naming a file that holds it.",
        "examples": [{"file": "network.yaml"}],
        "properties": {
            "file": fragments.file_ref("An nmstate YAML file", "network.yaml"),
            "interfaces": fragments.prop(
                "Interfaces to configure.",
                [[{"name": "eno1", "type": "ethernet", "state": "up"}]],
                type="array",
                items=_interface(),
                maxItems=256,
            ),
            "routes": fragments.prop(
                "Static routes.",
                [{"config": [{"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1"}]}],
                **fragments.obj(
                    {
                        "config": fragments.prop(
                            "Routes to set.", [[{"destination": "0.0.0.0/0"}]], type="array", items=route
                        )
                    }
                ),
            ),
            "dns-resolver": fragments.prop(
                "DNS resolver settings.",
                [{"config": {"server": ["192.0.2.53"], "search": ["example.com"]}}],
                **fragments.obj(
                    {
                        "config": fragments.prop(
                            "Resolver configuration.",
                            [{"server": ["192.0.2.53"]}],
                            **fragments.obj(
                                {
                                    "server": fragments.prop(
                                        "Name server IP addresses.",
                                        [["192.0.2.53"]],
                                        type="array",
                                        items={"type": "string"},
                                    ),
                                    "search": fragments.prop(
                                        "Search domains.", [["example.com"]], type="array", items={"type": "string"}
                                    ),
                                }
                            ),
                        )
                    }
                ),
            ),
            "route-rules": fragments.prop("Policy routing rules (passed to nmstate).", [{"config": []}], type="object"),
            "ovs-db": fragments.prop("Open vSwitch database settings (passed to nmstate).", [{}], type="object"),
            "ovn": fragments.prop("OVN bridge mappings (passed to nmstate).", [{"bridge-mappings": []}], type="object"),
        },
        "additionalProperties": False,
        "allOf": [
            {
                "if": {"required": ["file"]},
                "then": {"maxProperties": 1, "x-message": "`file` cannot be combined with inline nmstate keys"},
            }
        ],
    }


def _mirror(kind: str) -> dict[str, Any]:
    return fragments.obj(
        {
            "source": fragments.prop(
                "Repository (or `*.host` wildcard) whose pulls are redirected: host[:port][/path], no tag or digest.",
                ["quay.io/openshift-release-dev/ocp-release", "*.example.com"],
                type="string",
                pattern=fragments.SOURCE_PATTERN,
                **{"x-message": "must be host[:port][/path] or *.host, without a tag or digest"},
            ),
            "mirrors": fragments.prop(
                "Mirror repositories tried in order: host[:port][/path], no tag, digest or wildcard.",
                [["registry.site.example.com:8443/ocp/release"]],
                type="array",
                minItems=1,
                uniqueItems=True,
                items={
                    "type": "string",
                    "pattern": fragments.MIRROR_PATTERN,
                    "x-message": "must be host[:port][/path], without a tag, digest or wildcard",
                },
            ),
            "mirrorSourcePolicy": fragments.prop(
                f"Whether {kind} pulls may fall back to the source when every mirror fails.",
                ["NeverContactSource"],
                enum=["NeverContactSource", "AllowContactingSource"],
            ),
        },
        ("source", "mirrors"),
    )


def _pull_secret() -> dict[str, Any]:
    one_of = "set exactly one of `file`, `inline` or `json`"
    return fragments.prop(
        'Pull secret for the cluster (a dockerconfigjson `{"auths": {...}}`): from a file, inline as YAML, or '
        "inline as JSON text. Every `auths` entry needs a base64 `auth` of `user:password`, or `username` and "
        "`password`.",
        [{"file": "pull-secret.json", "mode": "replace"}],
        **fragments.obj(
            {
                "file": fragments.file_ref("File holding the pull secret JSON", "pull-secret.json"),
                "inline": fragments.prop(
                    "The pull secret as YAML/JSON data; each `auths` entry as `$defs/dockerAuth` describes.",
                    [{"auths": {"registry.example.com:8443": {"auth": "ZmFrZS11c2VyOmZha2UtcGFzcw=="}}}],
                    type="object",
                    **{"x-secret": True},
                ),
                "json": fragments.prop(
                    "The pull secret as JSON text.",
                    ['{"auths": {"registry.example.com:8443": {"auth": "ZmFrZS11c2VyOmZha2UtcGFzcw=="}}}'],
                    type="string",
                    **{"x-secret": True},
                ),
                "mode": fragments.prop(
                    "`replace` (default) installs this pull secret as the cluster's; `merge` adds or updates its "
                    "registries in the cluster's existing pull secret.",
                    ["replace", "merge"],
                    enum=[mode.value for mode in model.PullSecretMode],
                ),
            },
            allOf=[
                {"anyOf": [{"required": [k]} for k in ("file", "inline", "json")], "x-message": one_of},
                {
                    "not": {
                        "anyOf": [
                            {"required": list(p)} for p in (("file", "inline"), ("file", "json"), ("inline", "json"))
                        ]
                    },
                    "x-message": one_of,
                },
            ],
        ),
    )


def _docker_auth() -> dict[str, Any]:
    """One entry of a dockerconfigjson's `auths`; its `x-secret` fields are the ones redacted wherever they appear.

    Published for editors and readers; the entries themselves are checked by `semantic` (whichever of `file`,
    `inline` or `json` they come from), so one message covers all three.
    """
    secret = {"type": "string", "x-secret": True}
    return fragments.prop(
        "Credentials for one registry: `auth` (base64 of `user:password`), or `username` and `password`.",
        [{"auth": "ZmFrZS11c2VyOmZha2UtcGFzcw=="}],
        type="object",
        properties={
            "auth": fragments.prop("base64 of `user:password`.", ["ZmFrZS11c2VyOmZha2UtcGFzcw=="], **secret),
            "username": fragments.prop("User name (with `password`).", ["fake-user"], type="string"),
            "password": fragments.prop("Password (with `username`).", ["fake-pass"], **secret),
            "identitytoken": fragments.prop("An OAuth identity token.", ["fake-identity-token"], **secret),
            "registrytoken": fragments.prop("A registry bearer token.", ["fake-registry-token"], **secret),
            "email": fragments.prop("Unused by the cluster; allowed.", ["ops@example.com"], type="string"),
        },
        additionalProperties=True,
    )


def _registry_ca() -> dict[str, Any]:
    return fragments.obj(
        {
            "registry": fragments.prop(
                "Registry host, with the port if it is not 443.",
                ["registry.site.example.com:8443"],
                type="string",
                pattern=fragments.REGISTRY_PATTERN,
                **{"x-message": "must be a registry host[:port], without scheme or path"},
            ),
            "certificate": fragments.pem_source("CA bundle (one or more PEM certificates)", "registry-ca.crt"),
        },
        ("registry", "certificate"),
    )


def _mirror_list(kind: str, crd: str) -> dict[str, Any]:
    before_413 = (
        "an ImageContentSourcePolicy on clusters before 4.13"
        if kind == "digest"
        else "clusters before 4.13 cannot mirror by tag: the run refuses them there"
    )
    return fragments.prop(
        f"{kind.capitalize()} mirrors, applied as an {crd} ({before_413}).",
        [[{"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["registry.site.example.com:8443/ocp"]}]],
        type="array",
        items=_mirror(kind),
        maxItems=256,
    )


def _spec() -> dict[str, Any]:
    return fragments.prop(
        "What the site needs.",
        [{"domain": "sno1.site.example.com"}],
        **fragments.obj(
            {
                "domain": fragments.prop(
                    "The cluster's new domain, `<cluster>.<base domain>`: the API becomes `api.<domain>` and routes "
                    "`*.apps.<domain>`. Lowercase DNS name; each label at most 63 characters, 253 in total.",
                    ["sno1.store-0412.example.com"],
                    type="string",
                    minLength=1,
                ),
                "network": _nmstate(),
                "certificates": fragments.prop(
                    "Serving certificates to install instead of generated ones.",
                    [{"api": {"certificate": {"file": "api.crt"}, "key": {"file": "api.key"}}}],
                    **fragments.obj(
                        {
                            "api": _cert_key_pair("api.<domain>", "api"),
                            "ingress": _cert_key_pair("*.apps.<domain>", "ingress"),
                        }
                    ),
                ),
                "pullSecret": _pull_secret(),
                "imageDigestMirrors": _mirror_list("digest", "ImageDigestMirrorSet"),
                "imageTagMirrors": _mirror_list("tag", "ImageTagMirrorSet"),
                "removeMirrors": fragments.prop(
                    "Names of factory-era ImageContentSourcePolicy, ImageDigestMirrorSet or ImageTagMirrorSet objects "
                    "to delete.",
                    [["factory-mirrors"]],
                    type="array",
                    uniqueItems=True,
                    items={
                        "type": "string",
                        "maxLength": 253,
                        "pattern": fragments.DNS_SUBDOMAIN_PATTERN,
                        "x-message": "must be a Kubernetes object name (lowercase letters, digits, '-' and '.')",
                    },
                ),
                "registryCA": fragments.prop(
                    "CA bundles to trust for registries (merged into the cluster's additional trusted CAs).",
                    [[{"registry": "registry.site.example.com:8443", "certificate": {"file": "registry-ca.crt"}}]],
                    type="array",
                    items=_registry_ca(),
                    maxItems=256,
                ),
                **registry.schema_properties(),  # each setting's fragment, from its module
            },
            ("domain",),
        ),
    )


def _metadata() -> dict[str, Any]:
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return fragments.prop(
        "Identifies the site.",
        [{"name": "store-0412"}],
        **fragments.obj(
            {
                "name": fragments.prop(
                    "Site identifier: a DNS label (lowercase letters, digits, '-'; at most 63 characters).",
                    ["store-0412"],
                    type="string",
                    pattern=fragments.DNS_LABEL_PATTERN,
                    **{"x-message": "must be a DNS label: lowercase letters, digits and '-', at most 63 characters"},
                ),
                "labels": fragments.prop("Free-form labels for fleet tooling.", [{"region": "emea"}], **string_map),
                "annotations": fragments.prop("Free-form notes.", [{"owner": "edge-team"}], **string_map),
            },
            ("name",),
        ),
    )


def build() -> dict[str, Any]:
    """The whole schema as a fresh dict."""
    return {
        "$schema": DIALECT,
        "$id": SCHEMA_ID,
        "title": "snoreloc site-config",
        "description": "Site-specific settings that relocate a Single Node OpenShift cluster to its edge site.",
        **fragments.obj(
            {
                "apiVersion": fragments.prop("Version of this format.", [model.API_VERSION], const=model.API_VERSION),
                "kind": fragments.prop("Always SiteConfig.", [model.KIND], const=model.KIND),
                "metadata": _metadata(),
                "spec": _spec(),
            },
            ("apiVersion", "kind", "metadata", "spec"),
        ),
        "$defs": {"dockerAuth": _docker_auth()},
    }


SCHEMA: dict[str, Any] = build()
NETWORK_SCHEMA: dict[str, Any] = {"$schema": DIALECT, **_nmstate()}


def marked(keyword: str, node: Any = None, path: findings.Path = ()) -> tuple[findings.Path, ...]:
    """Document paths of the properties whose schema carries `keyword` (see `fragments.marked`); the whole schema
    by default."""
    return fragments.marked(keyword, SCHEMA if node is None else node, path)


def _secret_fields(definition: dict[str, Any]) -> frozenset[str]:
    return frozenset(name for name, prop in definition["properties"].items() if prop.get("x-secret"))


def at(path: findings.Path) -> dict[str, Any]:
    """The schema of the named property at a document `path` (one that `marked` returned)."""
    node: dict[str, Any] = SCHEMA
    for name in path:
        node = node["properties"][name]
    return node


# Where secrets sit in a site-config: masked by `--annotate`, never quoted in a message.
SECRET_PATHS: tuple[findings.Path, ...] = marked("x-secret")
# The secret fields of a registry's credentials, in the site-config's pull secret and in the cluster's.
AUTH_SECRET_FIELDS: frozenset[str] = _secret_fields(SCHEMA["$defs"]["dockerAuth"])
# Fields still accepted but ignored, each with a warning.
DEPRECATED_PATHS: tuple[findings.Path, ...] = marked("deprecated")


def dumps() -> str:
    """The schema as published (`snoreloc schema`, docs/site-config.schema.json)."""
    return json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n"
