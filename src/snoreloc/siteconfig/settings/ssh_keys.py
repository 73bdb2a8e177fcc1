"""`spec.sshAuthorizedKeys`: SSH public keys for the node's `core` user, written by the ssh-keys step into the
`99-master-ssh` MachineConfig (`snoreloc.steps.cluster.ssh_keys`). The machine-config operator applies a change of
keys alone without draining or rebooting the node, inside cluster-config's pool update.
"""

from __future__ import annotations

import base64
import binascii
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.pki import ssh
from snoreloc.siteconfig import checks, claims, fragments, setting

# OpenSSH refuses RSA keys with a modulus shorter than this, for authentication as for generation:
# openssh/openssh-portable sshkey.h `#define SSH_RSA_MINIMUM_MODULUS_SIZE 1024` (checked by sshkey_check_rsa_length
# in sshkey.c; sshd's RequiredRSASize, OpenSSH 9.1 and later, defaults to it). A `replace` with only such keys would
# lock the technicians out.
SSH_RSA_MINIMUM_MODULUS_SIZE = 1024
SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


def _schema() -> dict[str, Any]:
    key_types = "|".join(re.escape(kind) for kind in SSH_KEY_TYPES)
    return fragments.prop(
        "SSH public keys for the node's `core` user, written to the `99-master-ssh` MachineConfig. The "
        "machine-config operator applies a change of keys alone without draining or rebooting the node.",
        [{"keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyOnly site-admin"], "mode": "replace"}],
        **fragments.obj(
            {
                "keys": fragments.prop(
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
                "mode": fragments.prop(
                    "`replace` (default): these become core's only keys, so the factory's keys stop working. "
                    "`add`: these are added to the keys core already has.",
                    ["add"],
                    enum=[choice.value for choice in SshKeysMode],
                ),
            },
            ("keys",),
        ),
    )


class SshKeysMode(enum.Enum):
    REPLACE = "replace"  # the site's keys become core's only keys
    ADD = "add"  # the site's keys are added to the ones core already has


@dataclass(frozen=True)
class SshKeys:
    """Public keys for the node's `core` user (OpenSSH `authorized_keys` lines, each checked), and how to combine."""

    keys: tuple[str, ...]
    mode: SshKeysMode = SshKeysMode.REPLACE


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> SshKeys | None:
    if values is None:
        return None
    mode = SshKeysMode(values.get("mode", SshKeysMode.REPLACE.value))
    return SshKeys(tuple(key.strip() for key in values["keys"]), mode)


def ssh_key_problem(line: str) -> str | None:
    """Why an `authorized_keys` line is not a usable public key, or None. Security-key (`sk-`) types, which
    `cryptography` does not load, are checked for a well-formed key blob of the declared type."""
    kind, blob = line.split()[:2]
    if not kind.startswith("sk-"):
        try:
            bits = ssh.rsa_bits(kind, blob)
        except ValueError:
            return f"is not a valid {kind} public key (the base64 part does not decode to one)"
        if bits is not None and bits < SSH_RSA_MINIMUM_MODULUS_SIZE:
            return (
                f"is a {bits}-bit RSA key; OpenSSH refuses RSA keys under {SSH_RSA_MINIMUM_MODULUS_SIZE} "
                "bits, so it could never log in (use ssh-ed25519, or RSA of 3072 bits)"
            )
        return None
    try:
        raw = base64.b64decode(blob, validate=True)
    except binascii.Error:
        return "is not a valid public key: its key part is not base64"
    size = int.from_bytes(raw[:4], "big")
    if raw[4 : 4 + size] != kind.encode():
        return f"is not a valid {kind} public key (the key part holds another type)"
    return None


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = (*SETTING.path, "keys")
    if SETTING.key not in spec or not run.sound(path):
        return
    seen: dict[str, int] = {}
    for index, line in enumerate(spec[SETTING.key]["keys"]):
        problem = ssh_key_problem(line)
        if problem:
            run.error((*path, index), problem)
        blob = line.split()[1]
        if blob in seen:
            run.error((*path, index), f"the same key as keys[{seen[blob]}] (with another comment); list it once")
        seen.setdefault(blob, index)


MACHINECONFIG = "99-master-ssh"  # the installer's MachineConfig holding core's keys; the ssh-keys step updates it


def _claims(spec: Mapping[str, Any]) -> list[claims.Claim]:
    if not claims.given(spec, SETTING.key):
        return []
    return [claims.Claim(claims.MCO, "MachineConfig", "", MACHINECONFIG, SETTING.path, "core's SSH keys")]


SETTING = setting.Setting(
    key="sshAuthorizedKeys",
    field="ssh_authorized_keys",
    schema=_schema(),
    load=_load,
    check=_check,
    cost=setting.Cost(
        reboot="no",
        rollouts=("mcp/master",),
        note="SSH keys: the machine-config pool updates without draining or rebooting the node",
    ),
    claims=_claims,
    rollback=setting.Rollback(("mcp/master",), why=f"MachineConfig {MACHINECONFIG}: a machine-config update"),
)
