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
import re
from typing import Any

from snoreloc.siteconfig import findings, model

SCHEMA_ID = "https://snoreloc.io/schemas/site-config-v1alpha1.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

_HOST = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*"
_REPO_PATH = r"(?:/[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?)+"
# The patterns of ImageDigestMirrorSet/ImageTagMirrorSet: host[:port][/path], no tag or digest; sources may be *.host.
MIRROR_PATTERN = rf"^({_HOST}(?::[0-9]+)?)(?:{_REPO_PATH})?$"
SOURCE_PATTERN = r"^\*(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+$|" + MIRROR_PATTERN
REGISTRY_PATTERN = rf"^{_HOST}(?::[0-9]{{1,5}})?$"
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

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

PROBE_NONE = "none"

# Bounds of every timeout override, seconds: (minimum, maximum). Defaults live in model.Timeouts.
TIMEOUT_BOUNDS: dict[str, tuple[int, int]] = {
    "total": (600, 86400),
    "networkProbe": (10, 1800),
    "api": (60, 7200),
    "settle": (300, 14400),
}
TIMEOUT_FIELDS = {
    "total": "total",
    "networkProbe": "network_probe",
    "api": "api",
    "settle": "settle",
}


def _prop(description: str, examples: list[Any], **schema: Any) -> dict[str, Any]:
    return {**schema, "description": description, "examples": examples}


def _obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False, **extra}
    if required:
        out["required"] = list(required)
    return out


def _file_ref(what: str, example: str) -> dict[str, Any]:
    return _prop(
        f"{what}: a path relative to the site-config's directory, inside it (no absolute paths, no '..', "
        "no symlinks leading out); a regular file of at most 1 MiB.",
        [example],
        type="string",
        minLength=1,
        maxLength=4096,
    )


def _pem_source(what: str, example_file: str, *, secret: bool = False) -> dict[str, Any]:
    pem: dict[str, Any] = {"type": "string", "minLength": 1}
    if secret:
        pem["x-secret"] = True
    return {
        **_obj(
            {
                "file": _file_ref(f"File holding the {what}", example_file),
                "pem": _prop(
                    f"The {what}, inline, as PEM text.", ["-----BEGIN ...-----\n...\n-----END ...-----\n"], **pem
                ),
            },
            minProperties=1,
            maxProperties=1,
        ),
        "description": f"The {what}: either `file` or `pem`.",
        "examples": [{"file": example_file}],
    }


def _cert_key_pair(host: str, stem: str) -> dict[str, Any]:
    return _prop(
        f"A serving certificate for {host} and its private key. Omit to have snoreloc issue one from the cluster's "
        "own signer. The certificate file holds the leaf first, then each issuer; it must cover "
        f"{host}, be currently valid, and use RSA (>= 2048 bits) or EC. The key is PKCS#1, SEC1 or PKCS#8, "
        "unencrypted.",
        [{"certificate": {"file": f"{stem}.crt"}, "key": {"file": f"{stem}.key"}}],
        **_obj(
            {
                "certificate": _pem_source("certificate chain (leaf first)", f"{stem}.crt"),
                "key": _pem_source("private key (unencrypted)", f"{stem}.key", secret=True),
            },
            ("certificate", "key"),
        ),
    )


def _address() -> dict[str, Any]:
    return _obj(
        {
            "ip": _prop("An IPv4 or IPv6 address (without prefix).", ["192.0.2.10", "2001:db8::10"], type="string"),
            "prefix-length": _prop("Prefix length of the subnet.", [24, 64], type="integer", minimum=0, maximum=128),
        },
        ("ip", "prefix-length"),
    )


def _ip_config(family: str, example: dict[str, Any]) -> dict[str, Any]:
    properties = {
        "enabled": _prop(f"Whether {family} is enabled on the interface.", [True], type="boolean"),
        "dhcp": _prop(f"Obtain the {family} address by DHCP.", [False], type="boolean"),
        "address": _prop(
            f"Static {family} addresses.", [example["address"]], type="array", items=_address(), maxItems=64
        ),
    }
    if family == "IPv6":
        properties["autoconf"] = _prop("Use SLAAC (router advertisements).", [False], type="boolean")
    schema = _prop(f"{family} settings of the interface (nmstate).", [example], type="object", properties=properties)
    schema["additionalProperties"] = True  # nmstate has more knobs than we check (auto-dns, dhcp-client-id, ...)
    return schema


def _interface() -> dict[str, Any]:
    properties = {
        "name": _prop(
            "Kernel interface name (1-15 characters).", ["eno1", "eno1.120", "bond0"], type="string", minLength=1
        ),
        "type": _prop("nmstate interface type.", ["ethernet", "vlan", "bond"], enum=list(INTERFACE_TYPES)),
        "state": _prop("Desired state.", ["up"], enum=list(INTERFACE_STATES)),
        "mtu": _prop("MTU in bytes.", [1500, 9000], type="integer", minimum=68, maximum=65535),
        "ipv4": _ip_config(
            "IPv4", {"enabled": True, "dhcp": False, "address": [{"ip": "192.0.2.10", "prefix-length": 24}]}
        ),
        "ipv6": _ip_config("IPv6", {"enabled": False, "address": [{"ip": "2001:db8::10", "prefix-length": 64}]}),
        "vlan": _prop(
            "VLAN settings (type vlan): the parent interface and the tag.",
            [{"base-iface": "eno1", "id": 120}],
            type="object",
            properties={
                "base-iface": _prop("Parent interface of the VLAN.", ["eno1"], type="string", minLength=1),
                "id": _prop("VLAN tag, 0-4094.", [120], type="integer", minimum=0, maximum=4094),
            },
            required=["base-iface", "id"],
        ),
        "link-aggregation": _prop(
            "Bond settings (type bond): mode and member ports.",
            [{"mode": "active-backup", "port": ["eno1", "eno2"]}],
            type="object",
            properties={
                "mode": _prop("Bonding mode.", ["active-backup", "802.3ad"], enum=list(BOND_MODES)),
                "port": _prop("Member interfaces.", [["eno1", "eno2"]], type="array", items={"type": "string"}),
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
    schema = _obj(
        {
            "destination": _prop("Destination network in CIDR form.", ["0.0.0.0/0", "::/0"], type="string"),
            "next-hop-address": _prop("Gateway address.", ["192.0.2.1"], type="string"),
            "next-hop-interface": _prop("Interface the route leaves by.", ["eno1.120"], type="string"),
            "metric": _prop("Route metric.", [100], type="integer", minimum=0),
            "table-id": _prop("Routing table.", [254], type="integer", minimum=0),
            "state": _prop("`absent` removes matching routes.", ["absent"], enum=["absent"]),
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
            "file": _file_ref("An nmstate YAML file", "network.yaml"),
            "interfaces": _prop(
                "Interfaces to configure.",
                [[{"name": "eno1", "type": "ethernet", "state": "up"}]],
                type="array",
                items=_interface(),
                maxItems=256,
            ),
            "routes": _prop(
                "Static routes.",
                [{"config": [{"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1"}]}],
                **_obj(
                    {"config": _prop("Routes to set.", [[{"destination": "0.0.0.0/0"}]], type="array", items=route)}
                ),
            ),
            "dns-resolver": _prop(
                "DNS resolver settings.",
                [{"config": {"server": ["192.0.2.53"], "search": ["example.com"]}}],
                **_obj(
                    {
                        "config": _prop(
                            "Resolver configuration.",
                            [{"server": ["192.0.2.53"]}],
                            **_obj(
                                {
                                    "server": _prop(
                                        "Name server IP addresses.",
                                        [["192.0.2.53"]],
                                        type="array",
                                        items={"type": "string"},
                                    ),
                                    "search": _prop(
                                        "Search domains.", [["example.com"]], type="array", items={"type": "string"}
                                    ),
                                }
                            ),
                        )
                    }
                ),
            ),
            "route-rules": _prop("Policy routing rules (passed to nmstate).", [{"config": []}], type="object"),
            "ovs-db": _prop("Open vSwitch database settings (passed to nmstate).", [{}], type="object"),
            "ovn": _prop("OVN bridge mappings (passed to nmstate).", [{"bridge-mappings": []}], type="object"),
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
    return _obj(
        {
            "source": _prop(
                "Repository (or `*.host` wildcard) whose pulls are redirected: host[:port][/path], no tag or digest.",
                ["quay.io/openshift-release-dev/ocp-release", "*.example.com"],
                type="string",
                pattern=SOURCE_PATTERN,
                **{"x-message": "must be host[:port][/path] or *.host, without a tag or digest"},
            ),
            "mirrors": _prop(
                "Mirror repositories tried in order: host[:port][/path], no tag, digest or wildcard.",
                [["registry.site.example.com:8443/ocp/release"]],
                type="array",
                minItems=1,
                uniqueItems=True,
                items={
                    "type": "string",
                    "pattern": MIRROR_PATTERN,
                    "x-message": "must be host[:port][/path], without a tag, digest or wildcard",
                },
            ),
            "mirrorSourcePolicy": _prop(
                f"Whether {kind} pulls may fall back to the source when every mirror fails.",
                ["NeverContactSource"],
                enum=["NeverContactSource", "AllowContactingSource"],
            ),
        },
        ("source", "mirrors"),
    )


def _pull_secret() -> dict[str, Any]:
    one_of = "set exactly one of `file`, `inline` or `json`"
    return _prop(
        'Pull secret for the cluster (a dockerconfigjson `{"auths": {...}}`): from a file, inline as YAML, or '
        "inline as JSON text. Every `auths` entry needs a base64 `auth` of `user:password`, or `username` and "
        "`password`.",
        [{"file": "pull-secret.json", "mode": "replace"}],
        **_obj(
            {
                "file": _file_ref("File holding the pull secret JSON", "pull-secret.json"),
                "inline": _prop(
                    "The pull secret as YAML/JSON data; each `auths` entry as `$defs/dockerAuth` describes.",
                    [{"auths": {"registry.example.com:8443": {"auth": "ZmFrZS11c2VyOmZha2UtcGFzcw=="}}}],
                    type="object",
                    **{"x-secret": True},
                ),
                "json": _prop(
                    "The pull secret as JSON text.",
                    ['{"auths": {"registry.example.com:8443": {"auth": "ZmFrZS11c2VyOmZha2UtcGFzcw=="}}}'],
                    type="string",
                    **{"x-secret": True},
                ),
                "mode": _prop(
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
    return _prop(
        "Credentials for one registry: `auth` (base64 of `user:password`), or `username` and `password`.",
        [{"auth": "ZmFrZS11c2VyOmZha2UtcGFzcw=="}],
        type="object",
        properties={
            "auth": _prop("base64 of `user:password`.", ["ZmFrZS11c2VyOmZha2UtcGFzcw=="], **secret),
            "username": _prop("User name (with `password`).", ["fake-user"], type="string"),
            "password": _prop("Password (with `username`).", ["fake-pass"], **secret),
            "identitytoken": _prop("An OAuth identity token.", ["fake-identity-token"], **secret),
            "registrytoken": _prop("A registry bearer token.", ["fake-registry-token"], **secret),
            "email": _prop("Unused by the cluster; allowed.", ["ops@example.com"], type="string"),
        },
        additionalProperties=True,
    )


def _registry_ca() -> dict[str, Any]:
    return _obj(
        {
            "registry": _prop(
                "Registry host, with the port if it is not 443.",
                ["registry.site.example.com:8443"],
                type="string",
                pattern=REGISTRY_PATTERN,
                **{"x-message": "must be a registry host[:port], without scheme or path"},
            ),
            "certificate": _pem_source("CA bundle (one or more PEM certificates)", "registry-ca.crt"),
        },
        ("registry", "certificate"),
    )


SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


def _ssh_authorized_keys() -> dict[str, Any]:
    key_types = "|".join(re.escape(kind) for kind in SSH_KEY_TYPES)
    return _prop(
        "SSH public keys for the node's `core` user, written to the `99-master-ssh` MachineConfig. The "
        "machine-config operator applies a change of keys alone without draining or rebooting the node.",
        [{"keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyOnly site-admin"], "mode": "replace"}],
        **_obj(
            {
                "keys": _prop(
                    "OpenSSH public keys, one `authorized_keys` line each (type, base64 key, optional comment).",
                    [["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyOnly site-admin"]],
                    type="array",
                    minItems=1,
                    maxItems=64,
                    uniqueItems=True,
                    items={
                        "type": "string",
                        "maxLength": 16384,
                        "pattern": rf"^\s*(?:{key_types}) [A-Za-z0-9+/]+=*(?: [^\n]*)?\s*$",
                        "x-message": "must be one OpenSSH public key line: type, base64 key, optional comment; the "
                        "type one OpenSSH accepts (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp*, sk-*): DSA (ssh-dss) is "
                        "refused, OpenSSH 9.5 turned it off and 10.0 removed it",
                    },
                ),
                "mode": _prop(
                    "`replace` (default): these become core's only keys, so the factory's keys stop working. "
                    "`add`: these are added to the keys core already has.",
                    ["add"],
                    enum=[choice.value for choice in model.SshKeysMode],
                ),
            },
            ("keys",),
        ),
    )


def _proxy_url(which: str, schemes: str) -> dict[str, Any]:
    return _prop(
        f"URL of the proxy for {which} connections leaving the cluster ({schemes}), `scheme://[user:password@]host"
        "[:port]`. Secret: it may carry a password, and is never printed.",
        ["http://proxy.site.example.com:3128"],
        type="string",
        minLength=1,
        maxLength=2048,
        **{"x-secret": True},
    )


def _proxy() -> dict[str, Any]:
    return _prop(
        "The cluster-wide proxy (Proxy `cluster`). Changing the URLs or noProxy reboots the node; a trusted CA "
        "alone restarts kubelet and CRI-O without a reboot.",
        [{"httpsProxy": "http://proxy.site.example.com:3128", "noProxy": [".site.example.com"]}],
        **_obj(
            {
                "httpProxy": _proxy_url("HTTP", "http"),
                "httpsProxy": _proxy_url("HTTPS", "http or https"),
                "noProxy": _prop(
                    "Destinations that bypass the proxy: domains (a leading `.` for its subdomains), IP addresses, "
                    "CIDRs, or `*`. The cluster adds its own networks and internal names.",
                    [[".site.example.com", "10.20.0.0/16"]],
                    type="array",
                    uniqueItems=True,
                    maxItems=256,
                    items={
                        "type": "string",
                        "maxLength": 253,
                        "pattern": r"^(\*|\.?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|[0-9A-Fa-f:.]+(/[0-9]{1,3})?)$",
                        "x-message": "must be a domain, .domain, IP address, CIDR or *",
                    },
                ),
                "trustedCA": _pem_source(
                    "CA bundle the proxy's certificate chains to (PEM certificates)", "proxy-ca.crt"
                ),
            },
            minProperties=1,
        ),
    )


NTP_MAX_SOURCES = 16  # servers and pools together: a site has a few; chrony polls each, so a long list is a mistake
# A host name or an IPv4/IPv6 address, nothing else: the value becomes one chrony.conf line, so no spaces (options)
# and no line breaks (directives); `semantic` checks the whole string again, since `$` lets a final newline pass.
_NTP_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
NTP_SOURCE_PATTERN = rf"^(?:{_NTP_LABEL}(?:\.{_NTP_LABEL})*|[0-9A-Fa-f:.]+)$"


def _ntp_sources(what: str, example: list[str]) -> dict[str, Any]:
    return _prop(
        f"{what}: host names or IP addresses (no options: snoreloc adds `iburst`).",
        [example],
        type="array",
        minItems=1,
        maxItems=NTP_MAX_SOURCES,
        uniqueItems=True,
        items={
            "type": "string",
            "maxLength": 253,
            "pattern": NTP_SOURCE_PATTERN,
            "x-message": "must be a host name or an IP address, without spaces or options",
        },
    )


def _ntp() -> dict[str, Any]:
    return _prop(
        "Time sources for the node's chrony, written to /etc/chrony.conf by a MachineConfig. On OpenShift 4.12 to "
        "4.16 this change reboots the node (see docs/site-config.md).",
        [{"servers": ["ntp1.site.example.com", "192.0.2.123"], "pools": ["pool.site.example.com"]}],
        **_obj(
            {
                "servers": _ntp_sources("NTP servers (chrony `server`)", ["ntp1.site.example.com", "192.0.2.123"]),
                "pools": _ntp_sources(
                    "NTP pools, names resolving to several servers (chrony `pool`)", ["pool.site.example.com"]
                ),
            },
            (),
            minProperties=1,
            **{"x-message": "give `servers`, `pools` or both"},
        ),
    )


IMAGE_PATTERN = rf"^{_HOST}(?::[0-9]+)?{_REPO_PATH}(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}|@sha256:[a-f0-9]{{64}})$"


def _catalog_source() -> dict[str, Any]:
    text = {"type": "string", "minLength": 1, "maxLength": 253}
    return _obj(
        {
            "name": _prop(
                "Name of the CatalogSource in openshift-marketplace (a DNS label).",
                ["site-redhat-operators"],
                type="string",
                pattern=DNS_LABEL_PATTERN,
                **{"x-message": "must be a DNS label: lowercase letters, digits and '-', at most 63 characters"},
            ),
            "image": _prop(
                "The catalog's index image on the site's mirror, with a tag or digest.",
                ["registry.site.example.com:8443/redhat/redhat-operator-index:v4.16"],
                type="string",
                maxLength=1024,
                pattern=IMAGE_PATTERN,
                **{"x-message": "must be an image reference host[:port]/path with a :tag or @sha256: digest"},
            ),
            "displayName": _prop("Name shown in OperatorHub.", ["Red Hat Operators (site mirror)"], **text),
            "publisher": _prop("Publisher shown in OperatorHub.", ["Site IT"], **text),
        },
        ("name", "image"),
    )


def _catalog_sources() -> dict[str, Any]:
    return _prop(
        "Operator catalogs for a disconnected site. No node change: the marketplace operator starts the catalogs.",
        [
            {
                "disableDefaultSources": True,
                "sources": [{"name": "site-redhat", "image": "registry.site.example.com/i:v1"}],
            }
        ],
        **_obj(
            {
                "disableDefaultSources": _prop(
                    "Set OperatorHub `cluster` spec.disableAllDefaultSources (true turns the internet catalogs off). "
                    "Left out: OperatorHub is left as it is.",
                    [True],
                    type="boolean",
                ),
                "sources": _prop(
                    "CatalogSource objects to create or update in openshift-marketplace (gRPC, from an index image).",
                    [[{"name": "site-redhat-operators", "image": "registry.site.example.com:8443/redhat/index:v4.16"}]],
                    type="array",
                    maxItems=64,
                    items=_catalog_source(),
                ),
            },
            minProperties=1,
        ),
    )


MAX_MANIFEST_FILES = 256


def _extra_manifests() -> dict[str, Any]:
    where = "relative to the site-config's directory, inside it (no absolute paths, no '..', no symlinks leading out)"
    return _prop(
        "Kubernetes manifests applied after the relocation with server-side apply (field manager `snoreloc`), each "
        "checked by the cluster with a dry run before the first change. YAML or JSON, several documents per file "
        "(`---`). Either `directory` or `files`. What they cause depends on the kinds: a ConfigMap or a "
        "Subscription moves no node; a MachineConfig reboots the node (the final settle waits for it).",
        [{"directory": "manifests"}, {"files": ["manifests/10-site-configmap.yaml"]}],
        **_obj(
            {
                "directory": _prop(
                    f"A directory {where}: its `*.yaml`, `*.yml` and `*.json` files (not subdirectories), applied "
                    f"in name order; at most {MAX_MANIFEST_FILES} files of at most 1 MiB each.",
                    ["manifests"],
                    type="string",
                    minLength=1,
                    maxLength=4096,
                ),
                "files": _prop(
                    f"Manifest files {where}, applied in this order.",
                    [["manifests/10-site-configmap.yaml", "manifests/20-subscription.yaml"]],
                    type="array",
                    minItems=1,
                    maxItems=MAX_MANIFEST_FILES,
                    uniqueItems=True,
                    items={"type": "string", "minLength": 1, "maxLength": 4096},
                ),
            },
            minProperties=1,
            maxProperties=1,
        ),
    )


def _timeouts() -> dict[str, Any]:
    defaults = model.Timeouts()
    meaning = {
        "total": "the whole run",
        "networkProbe": "probing gateway, DNS and API after the network change before rolling it back",
        "api": "waiting for the Kubernetes API after kubelet starts",
        "settle": "waiting for cluster operators and rollouts to settle, and, before any change, for a freshly "
        "booted cluster to become healthy",
    }
    properties = {}
    for key, (low, high) in TIMEOUT_BOUNDS.items():
        default = getattr(defaults, TIMEOUT_FIELDS[key])
        properties[key] = _prop(
            f"Seconds allowed for {meaning[key]} ({low}-{high}, default {default}).",
            [default],
            type="integer",
            minimum=low,
            maximum=high,
        )
    # Read from the very file it would bound, so it can bound nothing: kept only so old site-configs still validate.
    properties["siteConfig"] = _prop(
        "Ignored: a site-config cannot bound the wait for its own arrival (the agent's discovery timeout does). "
        "Remove it; `validate` warns while it is set.",
        [600],
        type="integer",
        deprecated=True,
    )
    return _prop("Overrides of the bounded waits, in seconds.", [{"total": 5400, "settle": 2700}], **_obj(properties))


def _network_probes() -> dict[str, Any]:
    probes = _obj(
        {
            "gateway": _prop(
                "Check that each default gateway answers ARP (IPv4) or neighbour discovery (IPv6); ICMP is not "
                "needed. Default true.",
                [True],
                type="boolean",
            ),
            "dns": _prop(
                "Check that each DNS server answers a query; any answer counts, REFUSED and SERVFAIL included. "
                "Default true.",
                [True],
                type="boolean",
            ),
            "tcp": _prop(
                "host:port targets that must accept a TCP connection (the registry, the hub). IPv6: [addr]:port.",
                [["registry.site.example.com:8443"]],
                type="array",
                uniqueItems=True,
                maxItems=16,
                items={
                    "type": "string",
                    "pattern": r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$",
                    "x-message": "must be host:port (IPv6: [address]:port)",
                },
            ),
        }
    )
    return _prop(
        "What must be reachable after the network change before it is committed (bounded by "
        "`timeouts.networkProbe`); `none` commits without checking. Default: gateway and DNS.",
        [{"gateway": True, "dns": True, "tcp": ["registry.site.example.com:8443"]}, PROBE_NONE],
        type=["string", "object"],
        **{"if": {"type": "string"}, "then": {"const": PROBE_NONE}, "else": probes},
    )


def _kubelet() -> dict[str, Any]:
    return _prop(
        "Node settings.",
        [{"nodeName": "sno1", "approveCSRs": True}],
        **_obj(
            {
                "nodeName": _prop(
                    "The node's name in the cluster (default: the host name).",
                    ["sno1"],
                    type="string",
                    maxLength=253,
                    pattern=DNS_SUBDOMAIN_PATTERN,
                    **{"x-message": "must be a lowercase DNS name (letters, digits, '-' and '.')"},
                ),
                "approveCSRs": _prop(
                    "Approve this node's pending kubelet certificate requests (only its own).", [True], type="boolean"
                ),
            }
        ),
    )


def _routes() -> dict[str, Any]:
    return _prop(
        "How user routes move to the new apps domain.",
        [{"ownCertificates": "keep-host"}],
        **_obj(
            {
                "ownCertificates": _prop(
                    "A route with its own certificate (spec.tls.certificate) that would not cover its new host: "
                    "`move-and-warn` (default) moves it and warns; `keep-host` leaves it on its factory host and "
                    "warns. Either way `plan` and the report name it.",
                    ["keep-host"],
                    enum=[choice.value for choice in model.OwnCertificates],
                ),
            }
        ),
    )


def _operator_names(description: str, example: list[str]) -> dict[str, Any]:
    return _prop(
        description,
        [example],
        type="array",
        uniqueItems=True,
        maxItems=128,
        items={
            "type": "string",
            "maxLength": 253,
            "pattern": DNS_SUBDOMAIN_PATTERN,
            "x-message": "must be a ClusterOperator name (lowercase letters, digits, '-' and '.')",
        },
    )


def _operators() -> dict[str, Any]:
    return _prop(
        "Which ClusterOperators must be healthy before and after the relocation. The core set and the operators "
        "our changes roll out are always required; any other unhealthy operator is a warning (exit 2).",
        [{"require": ["monitoring"], "ignore": ["insights"]}],
        **_obj(
            {
                "require": _operator_names(
                    "Further operators to require healthy (unhealthy: preflight refuses, settle waits).", ["monitoring"]
                ),
                "ignore": _operator_names(
                    "Operators whose health is not even worth a warning (never a core operator).", ["insights"]
                ),
            }
        ),
    )


def _mirror_list(kind: str, crd: str) -> dict[str, Any]:
    before_413 = (
        "an ImageContentSourcePolicy on clusters before 4.13"
        if kind == "digest"
        else "clusters before 4.13 cannot mirror by tag: the run refuses them there"
    )
    return _prop(
        f"{kind.capitalize()} mirrors, applied as an {crd} ({before_413}).",
        [[{"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["registry.site.example.com:8443/ocp"]}]],
        type="array",
        items=_mirror(kind),
        maxItems=256,
    )


def _spec() -> dict[str, Any]:
    return _prop(
        "What the site needs.",
        [{"domain": "sno1.site.example.com"}],
        **_obj(
            {
                "domain": _prop(
                    "The cluster's new domain, `<cluster>.<base domain>`: the API becomes `api.<domain>` and routes "
                    "`*.apps.<domain>`. Lowercase DNS name; each label at most 63 characters, 253 in total.",
                    ["sno1.store-0412.example.com"],
                    type="string",
                    minLength=1,
                ),
                "network": _nmstate(),
                "certificates": _prop(
                    "Serving certificates to install instead of generated ones.",
                    [{"api": {"certificate": {"file": "api.crt"}, "key": {"file": "api.key"}}}],
                    **_obj(
                        {
                            "api": _cert_key_pair("api.<domain>", "api"),
                            "ingress": _cert_key_pair("*.apps.<domain>", "ingress"),
                        }
                    ),
                ),
                "pullSecret": _pull_secret(),
                "imageDigestMirrors": _mirror_list("digest", "ImageDigestMirrorSet"),
                "imageTagMirrors": _mirror_list("tag", "ImageTagMirrorSet"),
                "removeMirrors": _prop(
                    "Names of factory-era ImageContentSourcePolicy, ImageDigestMirrorSet or ImageTagMirrorSet objects "
                    "to delete.",
                    [["factory-mirrors"]],
                    type="array",
                    uniqueItems=True,
                    items={
                        "type": "string",
                        "maxLength": 253,
                        "pattern": DNS_SUBDOMAIN_PATTERN,
                        "x-message": "must be a Kubernetes object name (lowercase letters, digits, '-' and '.')",
                    },
                ),
                "registryCA": _prop(
                    "CA bundles to trust for registries (merged into the cluster's additional trusted CAs).",
                    [[{"registry": "registry.site.example.com:8443", "certificate": {"file": "registry-ca.crt"}}]],
                    type="array",
                    items=_registry_ca(),
                    maxItems=256,
                ),
                "sshAuthorizedKeys": _ssh_authorized_keys(),
                "proxy": _proxy(),
                "catalogSources": _catalog_sources(),
                "extraManifests": _extra_manifests(),
                "ntp": _ntp(),
                "networkProbes": _network_probes(),
                "networkAccept": _prop(
                    "Risky network changes the author means: removing the default route, every DNS server, or "
                    "br-ex. Without them listed here, such a network is an error.",
                    [["removeDefaultRoute"]],
                    type="array",
                    uniqueItems=True,
                    items={"enum": ["removeDefaultRoute", "removeDNSServers", "removeBrEx"]},
                ),
                "timeouts": _timeouts(),
                "kubelet": _kubelet(),
                "routes": _routes(),
                "operators": _operators(),
                "progressPage": _progress_page(),
            },
            ("domain",),
        ),
    )


def _progress_page() -> dict[str, Any]:
    default = model.ProgressPage()
    return _prop(
        "The read-only progress page the agent serves on the node's site network while it runs.",
        [{"enabled": True, "port": default.port, "keepMinutes": default.keep_minutes}],
        **_obj(
            {
                "enabled": _prop(f"Serve the page (default {default.enabled}).", [True], type="boolean"),
                "port": _prop(
                    f"TCP port of the page (default {default.port}); not one OpenShift uses on the node.",
                    [default.port],
                    type="integer",
                    minimum=1024,
                    maximum=65535,
                ),
                "keepMinutes": _prop(
                    f"Minutes the page stays up after the run ends (0-1440, default {default.keep_minutes}).",
                    [default.keep_minutes],
                    type="integer",
                    minimum=0,
                    maximum=1440,
                ),
            }
        ),
    )


def _metadata() -> dict[str, Any]:
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return _prop(
        "Identifies the site.",
        [{"name": "store-0412"}],
        **_obj(
            {
                "name": _prop(
                    "Site identifier: a DNS label (lowercase letters, digits, '-'; at most 63 characters).",
                    ["store-0412"],
                    type="string",
                    pattern=DNS_LABEL_PATTERN,
                    **{"x-message": "must be a DNS label: lowercase letters, digits and '-', at most 63 characters"},
                ),
                "labels": _prop("Free-form labels for fleet tooling.", [{"region": "emea"}], **string_map),
                "annotations": _prop("Free-form notes.", [{"owner": "edge-team"}], **string_map),
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
        **_obj(
            {
                "apiVersion": _prop("Version of this format.", [model.API_VERSION], const=model.API_VERSION),
                "kind": _prop("Always SiteConfig.", [model.KIND], const=model.KIND),
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
    """Document paths of the properties whose schema carries `keyword` (not looking inside such a property).

    Only named properties are followed; the ones under a list or a free-form mapping have no fixed path.
    """
    node = SCHEMA if node is None else node
    if not isinstance(node, dict):
        return ()
    if node.get(keyword) and path:
        return (path,)
    found: tuple[findings.Path, ...] = ()
    for name, child in (node.get("properties") or {}).items():
        found += marked(keyword, child, (*path, name))
    for child in node.get("allOf") or ():
        found += marked(keyword, child, path)
    return found


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
