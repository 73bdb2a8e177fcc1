"""The node answers for its new names: the SNO dnsmasq overrides file, written, backed up and restored.

On a Single Node OpenShift the `50-master-dnsmasq-configuration` MachineConfig (openshift/assisted-service
`internal/network/manifests_generator.go`: `snoDnsmasqConf`, `forceDnsDispatcherScript`,
`dnsMachineConfigManifest`) installs three things that read `/etc/default/sno_dnsmasq_configuration_overrides`:

- `/usr/local/bin/dnsmasq_config.sh`, the `ExecStartPre=` of `dnsmasq.service`: it writes
  `/etc/dnsmasq.d/single-node.conf` with `address=/apps.F/IP`, `address=/api-int.F/IP`, `address=/api.F/IP`,
  F = `${SNO_CLUSTER_NAME_OVERRIDE}.${SNO_BASE_DOMAIN_OVERRIDE}`, IP = `${SNO_DNSMASQ_IP_OVERRIDE}` (each
  defaulting to the install-time value). So `systemctl restart dnsmasq.service` is what makes the node answer
  for new names: no reboot.
- `/etc/NetworkManager/dispatcher.d/forcedns`: on every `up`/`dhcp*-change`/`connectivity-change` it rewrites
  `/etc/resolv.conf` with IP as the first nameserver and F in the search list. The nameserver is the node's
  internal address, which a relocation keeps (`snoreloc.host.internal_ip`), so resolv.conf already points at
  dnsmasq; only the search suffix stays the factory's until the next such event (the site network's own apply
  is one), and nothing looks names up by that suffix.
- the lifecycle agent does the same at an image-based install (`pkg/postpivot/postpivot.go`
  `setDnsMasqConfiguration`, then `systemctl restart dnsmasq.service`), and decides whether a node has this
  configuration by the script's presence, as `configured` does here.

A relocation renames nothing inside the cluster: the kubelet still reaches its API as `api-int.<factory domain>`
(docs/access.md) and routes keep their factory hosts until the cluster steps move them, so the node must go on
answering the factory names too, which the script no longer writes once the overrides name the new domain.
Before the first write the factory names the script answered (the `address=` lines of its
`/etc/dnsmasq.d/single-node.conf`) are copied to `/etc/dnsmasq.d/snoreloc-factory-names.conf`, which dnsmasq reads
from the same directory (`conf-dir=/etc/dnsmasq.d` in RHEL's `/etc/dnsmasq.conf`): after the restart the node
answers both.

The file is merged, never clobbered: our three keys are set, any other line stays. Its original (bytes and mode,
or its absence) is kept once, before the first write, in the state directory; `restore` puts exactly that back
and restarts dnsmasq, so the node answers for its factory names again.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from snoreloc import errors, safefile
from snoreloc.adapters import fs, systemd
from snoreloc.host import internal_ip

OVERRIDES = "/etc/default/sno_dnsmasq_configuration_overrides"
SCRIPT_CONF = "/etc/dnsmasq.d/single-node.conf"  # what the script writes from the overrides
KEPT = "/etc/dnsmasq.d/snoreloc-factory-names.conf"  # the factory names, kept answered
SCRIPT = "/usr/local/bin/dnsmasq_config.sh"
UNIT = "dnsmasq.service"
NAME, BASE, IP = "SNO_CLUSTER_NAME_OVERRIDE", "SNO_BASE_DOMAIN_OVERRIDE", "SNO_DNSMASQ_IP_OVERRIDE"
SPLIT = (NAME, BASE)  # the domain the overrides name, as <cluster name>.<base domain>
BACKUP_DIR = "host-backups"
BACKUP_FILES = {OVERRIDES: "sno_dnsmasq_configuration_overrides.json", KEPT: "snoreloc-factory-names.conf.json"}
MODE = 0o644  # what the lifecycle agent and the relocation PoC leave (world-readable: it holds no secret)
APPS_PROBE = "snoreloc-dns-check"  # a name under apps.<domain> that no route owns


def configured(host: fs.HostFS) -> bool:
    """Whether the node has the SNO dnsmasq configuration (its script), as the lifecycle agent checks."""
    return host.exists(SCRIPT)


def split(domain: str) -> tuple[str, str]:
    """The cluster name and the base domain of `<name>.<base>` (the site-config's domain)."""
    name, _, base = domain.partition(".")
    return name, base


def node_ip(host: fs.HostFS) -> str | None:
    """The address dnsmasq answers with: the node's primary internal address (kept across the relocation, so
    resolv.conf keeps pointing at dnsmasq), or None when the factory set none (the script's default stays)."""
    addresses = internal_ip.read(host).addresses
    ordered = sorted(addresses, key=lambda a: 0 if isinstance(a, ipaddress.IPv4Interface) else 1)
    return str(ordered[0].ip) if ordered else None


def wanted(domain: str, ip: str | None) -> dict[str, str]:
    name, base = split(domain)
    values = {NAME: name, BASE: base}
    if ip:
        values[IP] = ip
    return values


def parse(text: str) -> dict[str, str]:
    """KEY=VALUE as `source` reads them (quotes honoured); other lines are ignored."""
    values = {}
    for line in text.splitlines():
        key, sep, raw = line.strip().removeprefix("export ").partition("=")
        if sep and key.isidentifier():
            try:
                words = shlex.split(raw, comments=True)
            except ValueError:
                continue
            values[key] = words[0] if words else ""
    return values


def merged(current: str | None, values: dict[str, str]) -> str:
    """`current` with our keys set to `values` in place (appended when absent); every other line kept."""
    lines, seen = [], set()
    for line in (current or "").splitlines():
        key = line.strip().removeprefix("export ").partition("=")[0]
        if key in values:
            if key not in seen:
                lines.append(f"{key}={shlex.quote(values[key])}")
                seen.add(key)
            continue
        lines.append(line)
    lines += [f"{key}={shlex.quote(value)}" for key, value in values.items() if key not in seen]
    return "\n".join(lines) + "\n"


def read(host: fs.HostFS) -> str | None:
    return host.read_text(OVERRIDES) if host.exists(OVERRIDES) else None


def up_to_date(host: fs.HostFS, values: dict[str, str]) -> bool:
    current = read(host)
    found = parse(current) if current is not None else {}
    return all(found.get(key) == value for key, value in values.items())


def names(domain: str) -> tuple[str, ...]:
    """What the node must resolve to itself: the API, the internal API, and a name under apps."""
    return (f"api.{domain}", f"api-int.{domain}", f"{APPS_PROBE}.apps.{domain}")


def _backup_path(state_dir: Path, host_path: str) -> Path:
    return state_dir / BACKUP_DIR / BACKUP_FILES[host_path]


def backup(host: fs.HostFS, state_dir: Path, host_path: str) -> None:
    """Keep a file's original (bytes and mode, or its absence) once: later runs never overwrite it."""
    path = _backup_path(state_dir, host_path)
    if path.exists():
        return
    existed = host.exists(host_path)
    doc = {
        "path": host_path,
        "existed": existed,
        "content": base64.b64encode(host.read_bytes(host_path)).decode() if existed else None,
        "mode": host.mode(host_path) if existed else None,
    }
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    safefile.write(path, json.dumps(doc, indent=1), mode=0o600)


def answered(host: fs.HostFS) -> list[str]:
    """The `address=/domain/ip` lines the script wrote last (what dnsmasq answers for the install's names)."""
    text = host.read_text(SCRIPT_CONF) if host.exists(SCRIPT_CONF) else ""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("address=/")]


def kept_domains(host: fs.HostFS) -> list[str]:
    """The factory domains the kept file answers (api-int.<factory> among them)."""
    text = host.read_text(KEPT) if host.exists(KEPT) else ""
    return [line.split("/")[1] for line in text.splitlines() if line.startswith("address=/") and line.count("/") >= 2]


def write(host: fs.HostFS, state_dir: Path, values: dict[str, str]) -> None:
    """Back both files up (first time only), keep the factory names answered, then set our keys."""
    backup(host, state_dir, OVERRIDES)
    backup(host, state_dir, KEPT)
    factory = [line for line in answered(host) if f".{values[NAME]}.{values[BASE]}/" not in line]
    if factory and not host.exists(KEPT):
        header = "# written by snoreloc: the factory names the node keeps answering after its relocation\n"
        host.write_text(KEPT, header + "\n".join(factory) + "\n", mode=MODE)
    current = read(host)
    mode = host.mode(OVERRIDES) if current is not None else MODE
    host.write_text(OVERRIDES, merged(current, values), mode=mode)


@dataclass(frozen=True)
class Restored:
    existed: bool  # what the original was: a file (put back byte for byte) or nothing (removed)


def backed_up(state_dir: Path) -> bool:
    """Whether a run of ours changed the node's dnsmasq files (their originals are kept): `restore` has work."""
    return any(_backup_path(state_dir, host_path).exists() for host_path in BACKUP_FILES)


def restore(host: fs.HostFS, units: systemd.Systemd, state_dir: Path) -> Restored | None:
    """Put both originals back exactly (or remove a file there was none of) and restart dnsmasq; None when
    nothing was backed up. The backups are removed once the restart is asked for."""
    paths = [_backup_path(state_dir, host_path) for host_path in (KEPT, OVERRIDES)]
    if not any(path.exists() for path in paths):
        return None
    outcome = [_restore_one(host, path) for path in paths if path.exists()]
    units.restart(UNIT)
    for path in paths:
        path.unlink(missing_ok=True)
    return outcome[-1]


def _restore_one(host: fs.HostFS, path: Path) -> Restored:
    try:
        doc = json.loads(safefile.read(path, safefile.BACKUP))
        host_path = str(doc["path"])
        if host_path not in BACKUP_FILES:
            raise ValueError(f"names {host_path}, not a file snoreloc backs up")
        existed = bool(doc["existed"])
        content = base64.b64decode(doc["content"]) if existed else b""
        mode = int(doc["mode"]) if existed else 0
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise errors.UnavailableError(
            f"cannot read the backup {path}: {exc}",
            hint=f"Restore {OVERRIDES} by hand (or remove it if the factory had none), remove {KEPT} and the "
            f"backup, and run `systemctl restart {UNIT}`.",
        ) from exc
    if existed:
        host.write_bytes(host_path, content, mode=mode)
    else:
        host.remove(host_path)
    return Restored(existed)
