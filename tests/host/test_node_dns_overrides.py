"""The node's dnsmasq overrides by class (issue 30): whole-label domain matching, bash's own reading of the file,
and links.

- Domains: for every pair of a factory domain and a site domain (a parent, a grandparent, a child, a sibling, the
  same one, one sharing a suffix but not a label, another case), the factory names the node keeps answering are
  exactly the factory script's names the new script does not write. The old filter matched a substring, so a site
  domain that is a parent of the factory's dropped the factory's `api-int`, which the kubelet uses.
- Bash: seeded random override files from a corpus of lines (assignments in every quoting, comments, `export`,
  duplicates, and the shell bash reads otherwise: `unset`, `readonly`, `declare`, `+=`, a second command, an
  expansion, a continuation, a carriage return). Each file is `source`d by the real bash, as the platform's script
  does; `node_dns.parse` either reads exactly what bash reads, or refuses (exit 69, with the line) and `write`
  changes nothing. Every merged file reads, in bash, as the values snoreloc says it set.
- Links: an overrides file (or the kept names' file) that is a symlink is refused (exit 77) before anything is read
  through it, backed up or written.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from snoreloc import errors
from snoreloc.adapters import fs
from snoreloc.host import node_dns

IP = "192.168.127.10"


def _script_conf(domain: str) -> str:
    return "".join(f"address=/{name}/{IP}\n" for name in ("apps." + domain, "api-int." + domain, "api." + domain))


FACTORY = "cluster.factory.example.com"
SITES = {
    "parent": "example.com",
    "grandparent": "factory.example.com",
    "child": f"edge.{FACTORY}",
    "sibling": "store9.factory.example.com",
    "same": FACTORY,
    "same-other-case": FACTORY.upper(),
    "suffix-not-label": "ry.example.com",
    "unrelated": "store042.edge.example.net",
    "api-int-shaped": f"int.{FACTORY}",
}


def _host(tmp_path: Path, factory: str = FACTORY) -> fs.HostFS:
    host = fs.HostFS(tmp_path / "root")
    host.write_text(node_dns.SCRIPT_CONF, _script_conf(factory))
    return host


@pytest.mark.parametrize("case", sorted(SITES))
def test_the_factory_names_kept_are_compared_by_whole_domain(case: str, tmp_path: Path) -> None:
    host, site = _host(tmp_path), SITES[case]
    values = node_dns.wanted(site, IP)
    node_dns.write(host, tmp_path / "state", values)
    new = set(node_dns.script_domains(values))
    factory = [f"apps.{FACTORY}", f"api-int.{FACTORY}", f"api.{FACTORY}"]
    assert node_dns.kept_domains(host) == [name for name in factory if name not in new]
    if site.lower() != FACTORY:
        assert f"api-int.{FACTORY}" in node_dns.kept_domains(host)  # the kubelet's API name stays answered


# --- bash's reading ---------------------------------------------------------------------------------------------------

KEYS = (node_dns.NAME, node_dns.BASE, node_dns.IP)
B = node_dns.BASE
LINES = (
    f"{B}=old.example.com",
    f"{B}='quoted.example.com'",
    f'{B}="double.example.com"',
    f"export {B}=exported.example.com",
    f"export\t{B}=tabbed.example.com",
    f"  {B}=indented.example.com",
    f"{B}=commented.example.com # a note",
    f"{B}=hash#inside",
    f"{B}='x'#y",
    f"{node_dns.NAME}=sno1",
    f"{node_dns.IP}=10.0.0.1",
    "# a comment",
    "",
    "   ",
    "EXTRA='kept as is'",
    "OTHER=1",
    f"unset {B}",
    f"readonly {B}=frozen.example.com",
    f"declare -r {B}=declared.example.com",
    f"{B}+=.appended",
    f"OTHER=1; {B}=second.example.com",
    f"{B}=$(echo expanded.example.com)",
    f'{B}="$OTHER.example.com"',
    f"{B}=`echo tick`",
    f'{B}="a"b',
    f"{B}=a b",
    f"{B}=~root",
    f"{B}=cont\\\ninued.example.com",
    f"{B}=crlf.example.com\r",
    "source /dev/null",
    f"if true; then {B}=inif.example.com; fi",
    f"{B}='multi\nline'",
    f"{B}",
    f"export {B}",
)
CASES = 300
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _bash_reads(path: Path) -> dict[str, str | None]:
    """What `source` sets, by the real bash (the platform's script: `source OVERRIDES`, then `${X:-default}`)."""
    script = 'source "$1" >/dev/null 2>&1; for k in "${@:2}"; do if [ -n "${!k+x}" ]; then printf "%s=%s\\0" "$k" "${!k}"; fi; done'  # noqa: E501
    out = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", script, "_", str(path), *KEYS, "EXTRA", "OTHER"],
        capture_output=True, env={"PATH": "/usr/bin:/bin"}, timeout=10, check=False,
    ).stdout.decode()  # fmt: skip
    found: dict[str, str | None] = {}
    for entry in out.split("\0")[:-1]:
        key, _, value = entry.partition("=")
        found[key] = value
    return found


def _files() -> list[str]:
    rng = random.Random(30)
    files = [line + "\n" for line in LINES]  # each line alone first
    while len(files) < CASES:
        files.append("\n".join(rng.choice(LINES) for _ in range(rng.randint(2, 5))) + rng.choice(("\n", "")))
    return files


@pytest.mark.parametrize("index", range(CASES))
def test_parse_reads_what_bash_reads_or_refuses_and_changes_nothing(index: int, tmp_path: Path) -> None:
    text = _files()[index]
    host = _host(tmp_path)
    host.write_bytes(node_dns.OVERRIDES, text.encode(), mode=0o644)
    local = host.path(node_dns.OVERRIDES)
    by_bash = _bash_reads(local)
    values = node_dns.wanted("store042.edge.example.net", IP)
    try:
        parsed = node_dns.parse(text)
    except node_dns.Unreadable as exc:
        assert exc.exit_code == errors.ExitCode.UNAVAILABLE and " line " in exc.message
        with pytest.raises(node_dns.Unreadable):
            node_dns.write(host, tmp_path / "state", values)
        assert local.read_bytes() == text.encode() and not (tmp_path / "state").exists()
        return
    assert {k: v for k, v in parsed.items() if k in by_bash or k in KEYS} == by_bash, text
    node_dns.write(host, tmp_path / "state", values)
    merged = _bash_reads(local)
    assert {key: merged.get(key) for key in KEYS} == values, host.read_text(node_dns.OVERRIDES)
    assert node_dns.parse(host.read_text(node_dns.OVERRIDES)) == {**parsed, **values}


def test_the_corpus_has_both_classes() -> None:
    refused = sum(1 for text in _files() if _refuses(text))
    assert 0.2 * CASES < refused < 0.9 * CASES, refused


def _refuses(text: str) -> bool:
    try:
        node_dns.parse(text)
    except node_dns.Unreadable:
        return True
    return False


# --- links --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("linked", [node_dns.OVERRIDES, node_dns.KEPT])
def test_a_link_is_refused_before_anything_is_read_backed_up_or_written(linked: str, tmp_path: Path) -> None:
    host = _host(tmp_path)
    target = tmp_path / "elsewhere.conf"
    target.write_text(f"{node_dns.BASE}=factory.example.com\nSECRET_OF_ANOTHER_FILE=1\n")
    host.path(linked).parent.mkdir(parents=True, exist_ok=True)
    host.path(linked).symlink_to(target)
    state = tmp_path / "state"
    with pytest.raises(errors.PermissionDenied, match="is a symlink") as refused:
        node_dns.write(host, state, node_dns.wanted("store042.edge.example.net", IP))
    assert refused.value.exit_code == errors.ExitCode.NO_PERMISSION and "cp --remove-destination" in (
        refused.value.hint or ""
    )
    assert not state.exists(), "nothing backed up: no copy of the link's target"
    assert host.path(linked).is_symlink() and target.read_text().endswith("SECRET_OF_ANOTHER_FILE=1\n")
