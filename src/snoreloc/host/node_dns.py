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
- the lifecycle agent does the same at an image-based install (`lca-cli/postpivot/postpivot.go`
  `setDnsMasqConfiguration`, then `systemctl restart dnsmasq.service`), and decides whether a node has this
  configuration by the script's presence, as `configured` does here.

A relocation renames nothing inside the cluster: the kubelet still reaches its API as `api-int.<factory domain>`
(docs/access.md) and routes keep their factory hosts until the cluster steps move them, so the node must go on
answering the factory names too, which the script no longer writes once the overrides name the new domain.
Before the first write the factory names the script answered (the `address=` lines of its
`/etc/dnsmasq.d/single-node.conf`) are copied to `/etc/dnsmasq.d/snoreloc-factory-names.conf`, which dnsmasq reads
from the same directory (`conf-dir=/etc/dnsmasq.d` in RHEL's `/etc/dnsmasq.conf`): after the restart the node
answers both.

The same holds for an earlier site (issue 35): a second relocation (A, then a corrected stick for B) switches the
overrides to B while the cluster's routes are still on A until the cluster steps move them, and the cluster checks
its routes by name (authentication, console). So whatever the node answered before the switch, other than the
factory names (kept above) and the new domain, is copied to `/etc/dnsmasq.d/snoreloc-earlier-sites.conf`, and stays
answered until the cluster no longer uses that domain: the `node-dns-prune` step drops it then
(`steps.host.node_dns_prune`, asking the cluster through `steps.openshift.site_domains.in_use`). The file lives on
the node, so a run cut off between steps, or a reboot, keeps it answered.

The file is merged, never clobbered: our three keys are set, any other line stays. Its original (bytes and mode,
or its absence) is kept once, before the first write, in the state directory; `restore` puts exactly that back
and restarts dnsmasq, so the node answers for its factory names again.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from snoreloc import errors, safefile
from snoreloc.adapters import fs, systemd
from snoreloc.host import internal_ip

OVERRIDES = "/etc/default/sno_dnsmasq_configuration_overrides"
SCRIPT_CONF = "/etc/dnsmasq.d/single-node.conf"  # what the script writes from the overrides
KEPT = "/etc/dnsmasq.d/snoreloc-factory-names.conf"  # the factory names, kept answered
EARLIER = "/etc/dnsmasq.d/snoreloc-earlier-sites.conf"  # earlier sites' names, answered while the cluster uses them
SCRIPT = "/usr/local/bin/dnsmasq_config.sh"
UNIT = "dnsmasq.service"
NAME, BASE, IP = "SNO_CLUSTER_NAME_OVERRIDE", "SNO_BASE_DOMAIN_OVERRIDE", "SNO_DNSMASQ_IP_OVERRIDE"
SPLIT = (NAME, BASE)  # the domain the overrides name, as <cluster name>.<base domain>
BACKUP_DIR = "host-backups"
BACKUP_FILES = {
    OVERRIDES: "sno_dnsmasq_configuration_overrides.json",
    KEPT: "snoreloc-factory-names.conf.json",
    EARLIER: "snoreloc-earlier-sites.conf.json",
}
ANSWERING = (OVERRIDES, KEPT)  # the files whose backups mean "a run of ours made the node answer a site's names"
# A new overrides file is 0600, as the lifecycle agent creates it (openshift-kni/lifecycle-agent
# lca-cli/postpivot/postpivot.go `setDnsMasqConfiguration`: `os.WriteFile(dnsmasqOverridesFiles, ..., 0o600)`);
# like os.WriteFile, a file that exists keeps its mode. Only root reads it (the script, run by dnsmasq.service).
MODE = 0o600
KEPT_MODE = 0o644  # the kept (factory, earlier) names beside the script's single-node.conf, which `cat >` leaves 0644
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


# One line of the overrides file as `source` reads it, in the subset whose reading needs no shell: blank, a comment,
# or one assignment `[export ]KEY=VALUE [# comment]` whose value is a plain word, '...' or "..." with nothing bash
# would expand ($, `, \\) and no globbing, tilde or brace character. Everything else (unset, readonly, declare, a
# second command, a continuation, a carriage return, `+=`) is refused: its effect on our keys is bash's to decide.
_LINE = re.compile(
    r"""[ \t]*(?:(?:export[ \t]+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)="""
    r"""(?P<value>[A-Za-z0-9._:/@%+,=-]*|'[^'\n\r]*'|"[^"$`\\\n\r]*")(?:[ \t]+(?:#[^\r]*)?)?|(?:#[^\r]*)?)"""
)  # a comment after a value needs a blank before it: bash reads `A=1#x` as "1#x"


class Unreadable(errors.UnavailableError):
    """The overrides file holds shell `source` would read in a way this parser does not: nothing is written."""


def _unreadable(number: int, why: str) -> Unreadable:
    return Unreadable(
        f"{OVERRIDES} line {number}: {why}; the platform's script `source`s this file with bash "
        f"({SCRIPT}), so snoreloc cannot say what it reads, and changes nothing",
        hint="Reduce the line to KEY=VALUE (a plain, 'single-quoted' or \"double-quoted\" value without $, ` or \\), "
        "or remove it; or set spec.dns.nodeLocal: false and have the site DNS resolve the new names.",
    )


def parse(text: str) -> dict[str, str]:
    """The variables `source` sets from `text`, read as bash reads them (the last assignment wins); Unreadable (69,
    with the line) for any line outside the subset `_LINE` accepts. The script reads the file with
    `if [ -f OVERRIDES ]; then source OVERRIDES; fi` and then `${SNO_..._OVERRIDE:-<install-time value>}`
    (openshift/assisted-service internal/network/manifests_generator.go, `snoDnsmasqConf`)."""
    values = {}
    for number, line in enumerate(text.split("\n"), start=1):
        found = _LINE.fullmatch(line)
        if found is None:
            return _refused(number, line)
        if found["key"]:
            raw = found["value"]
            values[found["key"]] = raw[1:-1] if raw[:1] in ("'", '"') else raw
    return values


def _refused(number: int, line: str) -> dict[str, str]:
    words = line.split()
    first = words[0] if words else ""
    if "\r" in line:
        raise _unreadable(number, "a carriage return (a file saved with DOS line ends), which bash keeps in the value")
    if first in ("unset", "readonly", "declare", "typeset", "local", "source", ".", "eval", "set"):
        raise _unreadable(number, f"`{first}`, a shell command")
    raise _unreadable(number, "not a plain KEY=VALUE assignment (a command, an expansion, quoting or a continuation)")


def merged(current: str | None, values: dict[str, str]) -> str:
    """`current` with our keys set to `values` in place (appended when absent); every other line kept. `current`
    must be readable (`parse`), and so is the result: it reads as `values` for our keys, as bash reads it."""
    lines, seen = [], set()
    if current is not None:
        parse(current)
    for line in (current or "").splitlines():
        found = _LINE.fullmatch(line)
        key = found["key"] if found else None
        if key in values:
            if key not in seen:
                lines.append(f"{key}={shlex.quote(values[key])}")
                seen.add(key)
            continue
        lines.append(line)
    lines += [f"{key}={shlex.quote(value)}" for key, value in values.items() if key not in seen]
    return "\n".join(lines) + "\n"


def refuse_links(host: fs.HostFS) -> None:
    """PermissionDenied (77, as `safefile` refuses to write through a link) when the overrides file or the kept
    names' file is a symlink: writing through it would change a file elsewhere, replacing it would detach the node
    from whatever keeps its target, and backing it up would copy the target into the backups as if it were the file.
    So nothing is read through it, backed up or written: the technician decides (issue 30)."""
    for host_path in (OVERRIDES, KEPT, EARLIER):
        local = host.path(host_path)
        if local.is_symlink():
            raise errors.PermissionDenied(
                f"{host_path} is a symlink (to {os.readlink(local)}): snoreloc neither writes through a link nor "
                "backs up its target as the file, and left it and node-local DNS as they were",
                hint=f'Replace it with a regular file of the same lines (`cp --remove-destination "$(readlink -f '
                f'{host_path})" {host_path}`), or set spec.dns.nodeLocal: false and have the site DNS resolve the '
                "new names.",
            )


def read(host: fs.HostFS) -> str | None:
    """The overrides file's text (None: there is none); never through a link (`refuse_links`)."""
    refuse_links(host)
    if not host.exists(OVERRIDES):
        return None
    try:
        return host.read_text(OVERRIDES)
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{OVERRIDES}: not UTF-8 text (byte {exc.start}); snoreloc left it as it was") from None


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


def address_domain(line: str) -> str:
    """The domain of an `address=/<domain>/<ip>` line, as dnsmasq compares it (lower case, no final dot)."""
    return line.strip().split("/")[1].rstrip(".").lower() if line.count("/") >= 2 else ""


def script_domains(values: dict[str, str]) -> tuple[str, ...]:
    """The domains the script writes `address=` lines for once the overrides hold `values` (`apps.F`, `api-int.F`,
    `api.F`: manifests_generator.go `snoDnsmasqConf`)."""
    full = f"{values[NAME]}.{values[BASE]}".rstrip(".").lower()
    return (f"apps.{full}", f"api-int.{full}", f"api.{full}")


def _address_lines(host: fs.HostFS, host_path: str) -> list[str]:
    text = host.read_text(host_path) if host.exists(host_path) else ""
    return [line.strip() for line in text.splitlines() if line.startswith("address=/") and line.count("/") >= 2]


def kept_domains(host: fs.HostFS) -> list[str]:
    """The factory domains the kept file answers (api-int.<factory> among them)."""
    return [address_domain(line) for line in _address_lines(host, KEPT)]


SITE_PREFIXES = ("apps.", "api-int.", "api.")  # the script's three names of a site domain (`script_domains`)


def site_domain(name: str) -> str:
    """The site domain an `address=` domain of the script's belongs to: `apps.D`, `api-int.D` and `api.D` are D's."""
    for prefix in SITE_PREFIXES:
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    return name


def earlier_lines(host: fs.HostFS) -> list[str]:
    """The `address=` lines of earlier sites the node still answers (`EARLIER`)."""
    return _address_lines(host, EARLIER)


def earlier_domains(host: fs.HostFS) -> tuple[str, ...]:
    """The earlier sites' domains the node still answers, in the file's order."""
    return tuple(dict.fromkeys(site_domain(address_domain(line)) for line in earlier_lines(host)))


def _earlier_text(lines: list[str]) -> str:
    header = (
        "# written by snoreloc: earlier sites' names the node keeps answering while the cluster still uses them "
        "(the node-dns-prune step drops each once nothing is on it)\n"
    )
    return header + "".join(f"{line}\n" for line in lines)


def keep_earlier(host: fs.HostFS, state_dir: Path, answered_now: list[str], skip: Iterable[str]) -> None:
    """Keep answering what the node answered before this switch (`answered_now`) other than the `skip` domains
    (the factory names and what the script answers itself from now on), beside what the earlier-sites file
    already holds: the cluster may still have routes there (issue 35). Nothing written when there is none."""
    skip = {d.lower() for d in skip}
    lines = [line for line in [*earlier_lines(host), *answered_now] if address_domain(line) not in skip]
    by_domain = {address_domain(line): line for line in lines}  # one line per domain, the latest answer
    if list(by_domain.values()) == earlier_lines(host):
        return
    backup(host, state_dir, EARLIER)
    if by_domain:
        host.write_text(EARLIER, _earlier_text(list(by_domain.values())), mode=KEPT_MODE)
    else:
        host.remove(EARLIER)


def still_answered(host: fs.HostFS, values: dict[str, str]) -> tuple[str, ...]:
    """The site domains, other than the factory's, the node answers now and keeps answering through the
    earlier-sites file after a switch to `values` (for the plan): the file's, and the script's current ones once
    the factory's names are kept apart (without the kept file, the script answers the factory's)."""
    skip = {*kept_domains(host), *script_domains(values)}
    lines = [*earlier_lines(host), *(answered(host) if host.exists(KEPT) else [])]
    kept = [site_domain(address_domain(line)) for line in lines if address_domain(line) not in skip]
    return tuple(dict.fromkeys(kept))


def drop_earlier(host: fs.HostFS, state_dir: Path, domains: tuple[str, ...]) -> list[str]:
    """Stop answering the earlier sites' `domains` (site domains, D for `api.D`...): their lines leave the file (the
    file goes when none is left). Returns the `address=` domains dropped; the caller restarts dnsmasq."""
    gone = {d.lower() for d in domains}
    lines = earlier_lines(host)
    kept = [line for line in lines if site_domain(address_domain(line)) not in gone]
    if kept == lines:
        return []
    backup(host, state_dir, EARLIER)
    if kept:
        host.write_text(EARLIER, _earlier_text(kept), mode=KEPT_MODE)
    else:
        host.remove(EARLIER)
    return [address_domain(line) for line in lines if line not in kept]


def factory_lines(answered_now: list[str], values: dict[str, str]) -> list[str]:
    """The factory's `address=` lines to keep answering: all but those the script will write itself for the new
    domain, compared whole (a site domain that is a parent of the factory's, `example.com` for
    `cluster.factory.example.com`, must not drop the factory's `api-int`: issue 30)."""
    ours = set(script_domains(values))
    return [line for line in answered_now if address_domain(line) not in ours]


def write(host: fs.HostFS, state_dir: Path, values: dict[str, str]) -> None:
    """Refuse a link or a file bash would read otherwise before anything changes; then back both files up (first
    time only), keep the factory names answered, and set our keys."""
    current = read(host)  # refuse_links, and Unreadable for what bash would read otherwise
    text = merged(current, values)
    backup(host, state_dir, OVERRIDES)
    backup(host, state_dir, KEPT)
    factory = factory_lines(answered(host), values)
    if factory and not host.exists(KEPT):
        header = "# written by snoreloc: the factory names the node keeps answering after its relocation\n"
        host.write_text(KEPT, header + "\n".join(factory) + "\n", mode=KEPT_MODE)
    else:  # the factory's are kept already: what the script answers now is an earlier site's
        keep_earlier(host, state_dir, answered(host), (*kept_domains(host), *script_domains(values)))
    mode = host.mode(OVERRIDES) if current is not None else MODE
    host.write_text(OVERRIDES, text, mode=mode)


@dataclass(frozen=True)
class Restored:
    existed: bool  # what the original was: a file (put back byte for byte) or nothing (removed)


def backed_up(state_dir: Path) -> bool:
    """Whether a run of ours made the node answer a site's names (the overrides' and kept names' originals are
    kept): turning node-local DNS off, or `restore`, has work."""
    return any(_backup_path(state_dir, host_path).exists() for host_path in ANSWERING)


def restore(host: fs.HostFS, units: systemd.Systemd, state_dir: Path, *, keep_used: bool = False) -> Restored | None:
    """Put the originals back exactly (or remove a file there was none of) and restart dnsmasq; None when
    nothing was backed up. The backups are removed once the restart is asked for. With `keep_used` (node-local
    DNS turned off while the cluster may still be on the site the node answered), the names the node answered
    stay answered through the earlier-sites file until `node-dns-prune` finds the cluster off them; `rollback`
    restores everything, that file included."""
    files = ANSWERING if keep_used else (*ANSWERING, EARLIER)
    paths = {host_path: _backup_path(state_dir, host_path) for host_path in files}
    if not any(path.exists() for path in paths.values()):
        return None
    answered_now, factory = answered(host), kept_domains(host)
    outcome = {host_path: _restore_one(host, path) for host_path, path in paths.items() if path.exists()}
    if keep_used:
        keep_earlier(host, state_dir, answered_now, factory)
    units.restart(UNIT)
    for path in paths.values():
        path.unlink(missing_ok=True)
    return outcome.get(OVERRIDES) or next(iter(outcome.values()))


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
