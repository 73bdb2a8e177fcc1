"""`snoreloc demo --fleet N` (`make demo-fleet`): the fleet in one command, on this machine, changing nothing here.

A fleet owner's inputs are generated (one template made from the single-site demo's site-config, an inventory of N
sites with one typo in it), then the owner's commands run in this process exactly as typed: `snoreloc fleet render`
and `snoreloc fleet validate` (which names the bad site, its field and the inventory cell to fix), and `fleet
render --sites` for the hub's objects. A simulated hub starts (the Site CRD as `fleet install` applies it) with the
real Site controller in a thread; the objects are applied, the controller checks every Site with the agent's rules
(the bad one turns Invalid there too), every Ready Site's stick is asked for (the annotation `fleet make-media`
sets), the controller issues those Sites their reporting credentials, and the sticks are made from the hub as
`fleet make-media` makes them. A few nodes then relocate, one after the other, each
with its stick against its own simulated factory SNO (host steps on fakes), and report to their Sites with their
sticks' credentials until the hub shows them Relocated. Last, `fleet status`, `fleet why` and `fleet report
--html`. Everything is written under one directory, kept and printed at the end.

A few of the relocating sites (`--bmc-sites`, default 2) are delivered through their server's BMC instead (issue 36,
zero touch): each server's BMC is sushy-tools' Redfish emulator (`demo.bmc`, HTTPS with basic auth), the owner's
edit adds their BMC columns to the inventory and renders again (`spec.delivery`), their BMC logins and CAs go
beside the hub's objects, the controller runs its
image server, and no stick is asked for or made for them. The demo plays each server: once the hub has inserted the
image into its virtual CD and powered it on, it reads the ISO the emulator downloaded and relocates from it, as a
stick node does; then its Site shows the medium downloaded once, read and ejected. Without sushy-tools the demo says
so in one line and delivers those sites by stick.

Rendering and validation run before any simulator starts: `fleet validate` forks its workers, and a fork must not
copy a process whose server threads hold locks.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import io
import logging
import os
import shlex
import shutil
import sys
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from snoreloc_fleet.controller import bmccycle, operator, reconcile
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site

from snoreloc.siblings import clock, errors, fs, kube, main, medium, safefile, waits
from snoreloc_sim.demo import bmc, flow, hubsite
from snoreloc_sim.hub.simulator import HubSimulator
from snoreloc_sim.openshift import simulator

NAMESPACE = "fleet"
CONTROLLER_QPS = 200.0  # the demo's controller writes faster than the default 20/s: a fleet appears at once here
PAGE_LINE = "progress page:"  # the one line of a node's own output the demo shows
HINT = "The machine may be too busy for the demo's pace: run it again with a lower --speed, or fewer sites."
TEMPLATE, INVENTORY, SITES_DIR, JUNIT = "base.yaml", "sites.csv", "sites", "junit.xml"
HUB_OBJECTS, STICKS, REPORT, HUB_DIR = "hub-objects", "sticks", "fleet.html", "hub"
BMC_OBJECTS, BMC_DIR = "bmc.yaml", "bmcs"  # the BMC sites' logins and CAs; each emulated BMC's files
IMAGE_KEY_SECRET = "snoreloc-fleet-image-key"  # noqa: S105 (a Secret's name) the image server's URL-signing key


def say(text: str) -> None:
    """The demo's own lines, on stdout between the commands' outputs (the agent's logs go to stderr)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _command(argv: list[str], cwd: Path) -> int:
    """Run `snoreloc ARGV` in this process, shown as typed (paths relative to `cwd`)."""
    shown = (str(Path(a).relative_to(cwd)) if a.startswith(f"{cwd}/") else a for a in argv)
    say(f"\n$ snoreloc {shlex.join(shown)}")
    code = main.main(argv)
    sys.stdout.flush()
    return code


def inventory_rows(count: int) -> tuple[list[dict[str, str]], str]:
    """`count` sites, each its own domain and /24; the middle one has a gateway typo. The rows and that site."""
    rows = []
    for number in range(1, count + 1):
        name = f"store-{number:04d}"
        high, low = divmod(number, 250)
        net = f"10.{high}.{low}"
        rows.append({"name": name, "domain": f"{name}.edge.example.net", "address": f"{net}.10", "gateway": f"{net}.1"})
    typo = rows[count // 2]
    typo["gateway"] = typo["gateway"].rsplit(".", 1)[0] + ".256"  # a slip in the spreadsheet
    return rows, typo["name"]


def _template() -> dict[str, Any]:
    """The single-site demo's site-config with the per-site values as inventory placeholders."""
    config = flow.site_config()
    config["metadata"]["name"] = "${name}"
    spec = config["spec"]
    spec["domain"] = "${domain}"
    spec["network"]["interfaces"][0]["ipv4"]["address"][0]["ip"] = "${address}"
    spec["network"]["routes"]["config"][0]["next-hop-address"] = "${gateway}"
    return config


# What the demo reads back of what the fleet commands wrote: the hub's objects and the JUnit report.
_WRITTEN = safefile.Kind("file the demo's fleet commands wrote", 256 * 1024 * 1024)


def copy_tree(source: Path, target: Path, *, skip: str = "") -> None:
    """Copy the regular files under `source` to `target` (modes kept), each read by the bounded reader and written
    by the agent's writer: a link or a FIFO planted in `source` is refused, not followed."""
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if relative.as_posix() == skip or path.is_dir():
            continue
        mode = os.lstat(path).st_mode & 0o777
        safefile.write(target / relative, safefile.read(path, safefile.SITE_FILE), mode=mode, make_parents=True)


def write_inputs(owner: Path, count: int) -> str:
    """The fleet owner's repository in `owner`: base.yaml, its shared files beside it, sites.csv. The invalid site."""
    scratch = owner / "scratch"
    written = flow.write_site(fs.HostFS(scratch))
    for item in written.parent.iterdir():
        shutil.rmtree(owner / item.name, ignore_errors=True)  # an earlier run's, with --keep
    copy_tree(written.parent, owner, skip=medium.SITE_CONFIG_NAME)
    shutil.rmtree(scratch)
    safefile.write(owner / TEMPLATE, yaml.safe_dump(_template(), sort_keys=False), mode=0o644)
    rows, invalid = inventory_rows(count)
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    safefile.write(owner / INVENTORY, out.getvalue(), mode=0o644)
    return invalid


def failed_sites(junit: Path) -> set[str]:
    """The sites `fleet validate` failed, read from its JUnit XML as a CI system reads it."""
    suites = ET.fromstring(safefile.read(junit, _WRITTEN))  # noqa: S314 (`fleet validate` wrote it a moment ago)
    return {str(case.get("name")) for case in suites.iter("testcase") if case.find("failure") is not None}


def render_and_validate(owner: Path) -> set[str]:
    """`fleet render`, `fleet validate`, then `fleet render --sites` for the hub, as the owner types them; the
    sites `fleet validate` found invalid."""
    sites = owner / SITES_DIR
    render = ["fleet", "render", "--template", str(owner / TEMPLATE), "--inventory", str(owner / INVENTORY)]
    if _command([*render, "--out", str(sites)], owner) != 0:
        raise errors.InternalError("the demo's inventory did not render")
    junit = owner / JUNIT
    code = _command(["fleet", "validate", str(sites), "--unique-addresses", "--junit", str(junit)], owner)
    invalid = failed_sites(junit)
    say(f"(exit {code}: {', '.join(sorted(invalid))} invalid; the hub will refuse it with the same rules)")
    if _command([*render, "--sites", str(owner / HUB_OBJECTS), "-n", NAMESPACE], owner) != 0:
        raise errors.InternalError("the demo's inventory did not render as hub objects")
    return invalid


def _validated(admin: kube.Client, count: int, budget: float) -> collections.Counter[str]:
    """Once the controller has checked all `count` Sites (each Ready or Invalid), how many are in each phase."""

    def checked() -> collections.Counter[str] | None:
        counts = hubsite.phases(admin, NAMESPACE)
        return counts if counts[site.Phase.READY.value] + counts[site.Phase.INVALID.value] == count else None

    wait = waits.Wait("fleet-demo", f"the controller to check {count} Sites", budget, 0.5, hint=HINT)
    return waits.until(checked, wait, clock.SystemClock())


def onto_the_hub(admin: kube.Client, objects: Path, count: int) -> list[str]:
    """Apply what `fleet render --sites` wrote (as `kubectl apply -f` would); the Sites the controller made Ready."""
    started = time.monotonic()
    kinds = {"Secret": kube.SECRETS, "ConfigMap": kube.CONFIGMAPS, site.KIND: hubsite.SITES}
    for file in ("secrets.yaml", BMC_OBJECTS, "sites.yaml"):
        if (objects / file).exists():
            for obj in yaml.safe_load_all(safefile.read_text(objects / file, _WRITTEN)):
                admin.create(kinds[obj.get("kind", "Secret")], obj)
    counts = _validated(admin, count, budget=max(60.0, count))
    say(f"applied {objects}: the controller checked {count} Sites with the agent's rules in "
        f"{time.monotonic() - started:.1f}s: {dict(sorted(counts.items()))}")  # fmt: skip
    ready = [obj for obj in admin.list(hubsite.SITES, NAMESPACE) if obj["status"]["phase"] == site.Phase.READY.value]
    return sorted(obj["metadata"]["name"] for obj in ready)


def make_sticks(admin: kube.Client, sticks: Path, ready: list[str]) -> None:
    if not ready:
        return
    started = time.monotonic()
    hubsite.ask_for_sticks(admin, NAMESPACE, ready, budget=max(60.0, len(ready)), hint=HINT)
    say(
        f"asked the hub for {len(ready)} sticks (the annotation {site.MEDIA_REQUESTED} that `snoreloc fleet "
        f"make-media` sets): the controller issued their reporting credentials in {time.monotonic() - started:.1f}s"
    )
    for name in ready:
        files = hubsite.make_stick(admin, NAMESPACE, name, sticks / name)
    say(f"made {len(ready)} sticks from the hub into {sticks}/SITE (as `snoreloc fleet make-media SITE --out-dir "
        f"DIR`), each holding: {', '.join(files)}")  # fmt: skip


def _node_echo(name: str) -> Callable[[str], None]:
    """A node's lines, the progress page's address only: its steps are on that page and in its journal."""

    def echo(line: str) -> None:
        if line.startswith(PAGE_LINE):
            say(f"  {name}: relocating; {line.removeprefix(PAGE_LINE).strip()} while it runs")

    return echo


def relocate_node(args: argparse.Namespace, admin: kube.Client, name: str, workdir: Path, sticks: Path) -> None:
    """Site `name`'s node: its stick in /etc/snoreloc, relocated against its own simulated factory SNO; then its
    Site on the hub, once its reports made it Relocated."""
    root = fs.HostFS(workdir / "nodes" / name)
    root.mkdir("/etc/snoreloc", 0o700)
    copy_tree(sticks / name, root.path("/etc/snoreloc"))
    relocate_from(args, admin, name, workdir, root)


def relocate_from(args: argparse.Namespace, admin: kube.Client, name: str, workdir: Path, root: fs.HostFS) -> None:
    """Site `name`'s node, its medium's files in `root`'s /etc/snoreloc, relocated against its own simulated
    factory SNO; then its Site on the hub, once its reports made it Relocated."""
    config = Path(root.path("/etc/snoreloc")) / medium.SITE_CONFIG_NAME
    spec = yaml.safe_load(safefile.read_text(config, safefile.SITE_FILE))["spec"]
    address = spec["network"]["interfaces"][0]["ipv4"]["address"][0]["ip"]
    site_dns = flow.site_dns(spec["domain"], address)  # this store's DNS has the records for its new names
    started = time.monotonic()
    progress = logging.getLogger("snoreloc.progress")
    level = progress.level
    progress.setLevel(logging.WARNING)  # each node's waits: on its progress page and in its journal, not here
    try:
        factory = simulator.Simulator(
            args.seed, args.speed, routes=args.routes, workdir=workdir / "sims" / name, site_dns=site_dns
        )
        with factory as sim:
            _request, result = flow.relocate(root, sim, echo=_node_echo(name))
    finally:
        progress.setLevel(level)
    obj = hubsite.wait_phase(admin, NAMESPACE, name, site.Phase.RELOCATED, 60.0, hint=HINT)
    agent = obj["status"][site.STATUS_AGENT]
    steps = f"{agent['stepsDone']}/{agent['stepsTotal']} steps"
    say(f"{name}: relocated in {time.monotonic() - started:.1f}s of wall time ({result.state.value}); its Site: "
        f"{obj['status']['phase']} (the node reported run {agent['runState']}, {steps})")  # fmt: skip


def fleet_state(hub: HubSimulator, workdir: Path, invalid: set[str], nodes: list[str]) -> Path:
    """The fleet at a glance, as its owner asks for it; the HTML report's path."""
    access = ["--kubeconfig", str(hub.kubeconfig_path), "-n", NAMESPACE]
    say("\nthe fleet at a glance:")
    _command(["fleet", "status", *access], workdir)
    for name in [*sorted(invalid), *nodes[:1]]:
        _command(["fleet", "why", name, *access], workdir)
    page = workdir / REPORT
    _command(["fleet", "report", *access, "--html", str(page), "--title", "snoreloc demo fleet"], workdir)
    return page


def bmc_names(args: argparse.Namespace, invalid: set[str]) -> list[str]:
    """The sites delivered through their BMC: the last `--bmc-sites` of the `--nodes` that relocate."""
    valid = [row["name"] for row in inventory_rows(args.fleet)[0] if row["name"] not in invalid]
    nodes = valid[: args.nodes]
    return nodes[len(nodes) - min(args.bmc_sites, len(nodes)) :]


def launch_bmcs(stack: contextlib.ExitStack, workdir: Path, names: list[str]) -> dict[str, bmc.Emulator]:
    """An emulated BMC per site (sushy-tools, HTTPS, basic auth), stopped with `stack`; none, said in one line,
    when sushy-tools is not installed (those sites get sticks)."""
    if not names:
        return {}
    if bmc.emulator_binary() is None:
        say(f"\n(sushy-tools' Redfish emulator is not installed: {', '.join(names)} are delivered by stick instead "
            "of through their BMC; `make .venv/.installed` installs it)")  # fmt: skip
        return {}
    emulators = {name: stack.enter_context(bmc.launched(workdir / BMC_DIR / name)) for name in names}
    for name, emulator in emulators.items():
        where = urllib.parse.urlsplit(emulator.address).netloc
        say(f"{name}'s server: its BMC is sushy-tools' Redfish emulator at https://{where} "
            "(HTTPS, basic auth), a virtual CD/DVD and power")  # fmt: skip
    return emulators


def deliver_by_bmc(owner: Path, emulators: dict[str, bmc.Emulator]) -> None:
    """The owner's edit for the servers with BMCs: their BMC columns in the inventory (`bmcAddress`, `bmcCA`: metal3's
    BareMetalHost shape, `fleet render` writes `spec.delivery` from them), `fleet render --sites` again as typed,
    and their login Secrets and CA ConfigMaps in bmc.yaml beside the hub's objects (0600: it holds the passwords)."""
    if not emulators:
        return
    inventory = owner / INVENTORY
    rows = list(csv.DictReader(io.StringIO(safefile.read_text(inventory, _WRITTEN), newline="")))
    extra: list[dict[str, Any]] = []
    for row in rows:
        emulator = emulators.get(row["name"])
        row["bmcAddress"] = row["bmcCA"] = ""
        if emulator is not None:
            held, chosen = bmc.bmc_objects(emulator, NAMESPACE, row["name"])
            ca = chosen["bmc"]["caConfigMapKeyRef"]
            row["bmcAddress"], row["bmcCA"] = chosen["bmc"]["address"], f"{ca['name']}/{ca['key']}"
            extra += [{"apiVersion": "v1", "kind": kind, **body} for kind, body in held]
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    safefile.write(inventory, out.getvalue(), mode=0o644)
    say(
        f"\nthe owner adds the BMC columns for {', '.join(emulators)} to {INVENTORY} (bmcAddress: their Redfish "
        "System, bmcCA: the ConfigMap/key of its CA; the login Secret defaults to SITE-bmc) and renders again:"
    )
    render = ["fleet", "render", "--template", str(owner / TEMPLATE), "--inventory", str(inventory)]
    if _command([*render, "--sites", str(owner / HUB_OBJECTS), "-n", NAMESPACE], owner) != 0:
        raise errors.InternalError("the demo's inventory with BMC columns did not render as hub objects")
    logins = owner / HUB_OBJECTS / BMC_OBJECTS
    safefile.write(logins, yaml.safe_dump_all(extra, sort_keys=False), mode=0o600)
    say(f"their BMC logins and CAs (the owner's own objects; never in the inventory): {logins}")


def _delivery(admin: kube.Client, name: str) -> dict[str, Any]:
    obj = admin.get(kube.Ref(hubsite.SITES, name, NAMESPACE))
    return dict((obj.get("status") or {}).get(site.STATUS_DELIVERY) or {})


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def relocate_bmc_node(
    args: argparse.Namespace, admin: kube.Client, name: str, workdir: Path, emulator: bmc.Emulator
) -> None:
    """Site `name`'s server, delivered through its BMC: once the hub inserted its image and powered it on, it
    reads the ISO its BMC downloaded into /etc/snoreloc and relocates from it; then its Site's medium, ejected."""
    root = fs.HostFS(workdir / "nodes" / name)
    root.mkdir("/etc/snoreloc", 0o700)
    bmc.play_the_server(emulator, root, hint=HINT)
    record = _delivery(admin, name)
    say(f"  {name}: the hub inserted its image ({record.get('digest', '')[:19]}...) at {record.get('insertedAt')} "
        f"and powered the server on; the BMC downloaded it {_times(len(emulator.downloaded()))}; the node reads "
        "the ISO from its virtual CD")  # fmt: skip
    relocate_from(args, admin, name, workdir, root)

    def ejected() -> dict[str, Any] | None:
        found = _delivery(admin, name)
        return found if found.get("state") == bmccycle.State.EJECTED else None

    wait = waits.Wait("fleet-demo", f"the hub to eject {name}'s image", 60.0, 0.2, 15.0, HINT)
    done = waits.until(ejected, wait, clock.SystemClock())
    obj = admin.get(kube.Ref(hubsite.SITES, name, NAMESPACE))
    stick = "asked for" if site.MEDIA_REQUESTED in (obj["metadata"].get("annotations") or {}) else "no stick"
    downloads = _times(int(done.get("downloads") or 0))
    say(f"  {name}: its medium: inserted -> downloaded {downloads} -> read (the node reported it "
        f"{done.get('readAt')}) -> ejected {done.get('ejectedAt')} (the CD is "
        f"{'empty' if not bmc.client(emulator).media().inserted else 'still full'}) -> {obj['status']['phase']}; "
        f"{stick} made for it")  # fmt: skip


def _image_server(hub_dir: Path) -> bmccycle.ServerOptions:
    """The controller's image server on 127.0.0.1 (any free port), HTTPS with a certificate of its own."""
    keys = bmc.tls(hub_dir / "image-tls")
    key_secret = kube.Ref(kube.SECRETS, IMAGE_KEY_SECRET, NAMESPACE)
    return bmccycle.ServerOptions("127.0.0.1", 0, "", keys.cert, keys.key, key_secret)


def _controller_options(hub: HubSimulator, image_server: bmccycle.ServerOptions | None) -> operator.Options:
    config = reconcile.Config(credentials.Hub(hub.api_url, hub.ca_pem))
    return operator.Options(
        config=config, kubeconfig=str(hub.kubeconfig_path), qps=CONTROLLER_QPS, burst=400, image_server=image_server
    )


def _relocate_all(  # noqa: PLR0917 (the demo's pieces, each once)
    args: argparse.Namespace,
    admin: kube.Client,
    nodes: list[str],
    emulators: dict[str, bmc.Emulator],
    scratch: Path,
    sticks: Path,
) -> None:
    pace = f"{args.seed}, {args.speed:g}x real time; host steps on fakes"
    by_bmc = f", {len(emulators)} of them ({', '.join(emulators)}) from their BMC" if emulators else ""
    say(f"\n{len(nodes)} nodes relocate, each with its medium against its own simulated factory SNO ({pace}), and "
        f"report to their Sites: {len(nodes) - len(emulators)} from their sticks{by_bmc}")  # fmt: skip
    for name in nodes:
        if name in emulators:
            relocate_bmc_node(args, admin, name, scratch, emulators[name])
        else:
            relocate_node(args, admin, name, scratch, sticks)


def _on_the_hub(args: argparse.Namespace, workdir: Path, invalid: set[str], scratch: Path) -> Path:
    with HubSimulator(workdir=workdir / HUB_DIR) as hub, contextlib.ExitStack() as bmcs:  # hub kept: commands name it
        emulators = launch_bmcs(bmcs, workdir, bmc_names(args, invalid))
        deliver_by_bmc(workdir, emulators)
        serving = " with its image server for BMCs (HTTPS, signed URLs)" if emulators else ""
        say(f"\nthe hub: a simulated Kubernetes API at {hub.api_url}, the Site CRD installed, the Site controller "
            f"running in this process{serving}")  # fmt: skip
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        hubsite.prepare_hub(admin, NAMESPACE)
        logging.getLogger("kopf").setLevel(logging.ERROR)  # its start-up notes are about threads, not the fleet
        image_server = _image_server(workdir / HUB_DIR) if emulators else None
        controller = operator.Background(_controller_options(hub, image_server))
        try:
            ready = onto_the_hub(admin, workdir / HUB_OBJECTS, args.fleet)
            make_sticks(admin, workdir / STICKS, [name for name in ready if name not in emulators])
            nodes = ready[: args.nodes]
            _relocate_all(args, admin, nodes, emulators, scratch, workdir / STICKS)
            return fleet_state(hub, workdir, invalid, nodes)
        finally:
            controller.stop()
            admin.close()


def run(args: argparse.Namespace) -> int:
    if args.fleet < 2:
        raise errors.UsageError("--fleet needs at least 2 sites (one of them is made invalid)")
    if args.nodes < 0:
        raise errors.UsageError("--nodes is how many nodes relocate: 0 or more")
    if args.bmc_sites < 0:
        raise errors.UsageError("--bmc-sites is how many of the relocating nodes are delivered by BMC: 0 or more")
    workdir = Path(args.keep or tempfile.mkdtemp(prefix="snoreloc-fleet-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    say(f"snoreloc demo --fleet {args.fleet}: the fleet owner's inputs in {workdir}: {TEMPLATE} (the template and "
        f"the files every site shares) and {INVENTORY} ({args.fleet} sites)")  # fmt: skip
    write_inputs(workdir, args.fleet)
    invalid = render_and_validate(workdir)
    with tempfile.TemporaryDirectory(prefix="snoreloc-fleet-demo-sims-") as scratch:
        page = _on_the_hub(args, workdir, invalid, Path(scratch))
    say(f"\nsnoreloc demo --fleet: done in {time.monotonic() - started:.1f}s; everything is in {workdir}")
    say(f"  the fleet report: {page} (open it in a browser)")
    say(f"  the CI report of `fleet validate`: {workdir / JUNIT}")
    say(f"  the sticks: {workdir / STICKS}/SITE")
    say(f"  the hub's files: {workdir / HUB_DIR} (the kubeconfig the commands above name; the hub, the controller "
        "and the nodes' simulated clusters stopped with the demo)")  # fmt: skip
    return 0
