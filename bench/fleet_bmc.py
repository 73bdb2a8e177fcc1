"""Benchmark: zero-touch delivery through the servers' BMCs (issue 36) for a fleet of Sites, and what the BMC cycle
costs the controller's cold start.

**Delivery.** One sushy-tools Redfish emulator (the BMC metal3 and Ironic test with; its fake driver, over HTTPS with
basic auth) serves `--sites` Systems at once (`SUSHY_EMULATOR_FAKE_SYSTEMS`: one emulator process holds many
Systems, each with its own power state and virtual CD, `vmedia` keying devices by System), one System a Site. A hub
simulator runs in this process; `snoreloc fleet controller` in its own process with its image server (so its CPU and
memory are its own). The bench creates the Sites (each with `spec.delivery.method: bmc`, its own login Secret, the
BMCs' CA in one ConfigMap) and plays every node: when a System's CD holds the image the emulator downloaded
(`sha256-<digest>.iso` under the emulator's TMPDIR) and the System is powered on, it reads the ISO as the node's
discovery does, takes the reporting kubeconfig from it and reports the medium's digest with the Site's own token
(`hubreport.target_from`, a JSON merge patch of `status.agent`). Measured: the controller's CPU seconds and the hub's
writes per Site (the simulator's own count of POST/PUT/PATCH/DELETE, less the bench's), the time from Ready
(MediaReady True) to MediaEjected per Site (and its parts: to Inserted, and from the node's report to Ejected), the
downloads per Site, and the controller's RSS before the first insert, at the most grants held at once and after.
With `--hold` the nodes read nothing until every Site is inserted, so all the grants are held at once (the image
server keeps each image in memory until its eject): the memory with N grants held; its times then include the hold.

**Cold start.** `bench/fleet_controller.py`'s cold start (stick Sites, `--cold-sites` of them) with the controller run
as shipped, beside the same with its image server configured (`--image-server-address` and its TLS), alternating,
`--cold-repetitions` pairs: the ratio of the two (target at most 1.10, issue 36).

Run: `.venv/bin/python bench/fleet_bmc.py [--sites 200] [--hold] [--cold-sites 2000] [--cold-repetitions 3]`
(`--cold-sites 0` skips the cold start, `--sites 0` the delivery).
"""

from __future__ import annotations

import argparse
import base64
import collections
import concurrent.futures
import datetime as dt
import os
import statistics
import subprocess
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import bcrypt
import common
import fleet_controller
import fleet_waves
import hub_sites
import requests
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.hub import imageserver, mediaimage, mediatree, redfish
from snoreloc_fleet.resource import delivery, site
from snoreloc_fleet.verbs import make_media

from snoreloc.adapters import clock, kube
from snoreloc.engine import hubreport
from snoreloc.pki import certs
from snoreloc.siteconfig import medium
from snoreloc_sim.hub.simulator import HubSimulator

NAME = "fleet_bmc"
NS = hub_sites.NS
USERNAME, PASSWORD = "admin", "bench-bmc-password"
EMULATOR = Path(os.environ.get("SUSHY_EMULATOR", str(Path(common.python()).with_name("sushy-emulator"))))
POLL_S = 0.5
NODE_THREADS = 8  # nodes reading their media at once (the bench's threads)
PROGRESS_S = 10.0  # a progress line this often
BUDGET_S = 900.0  # the whole delivery, at most
STEADY_S = 1.0  # the cold start's steady window (fleet_controller's; not measured here)
COLD_POLL_S = 1.0  # the cold start's end is polled this often
COLD_RATIO = 1.10  # issue 36: the cold start with the BMC cycle on at most 10 % slower
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _tls(where: Path) -> tuple[Path, Path, Path]:
    """A CA and a serving certificate for 127.0.0.1: (ca, cert, key) files."""
    now = dt.datetime.now(dt.UTC)
    ca, ca_key = certs.issue_ca("bench BMC and image server CA", now=now)
    chain, key = certs.issue_serving(ca, ca_key, ["localhost", "127.0.0.1"], now=now)
    where.mkdir(parents=True, exist_ok=True)
    (where / "ca.crt").write_bytes(ca)
    (where / "tls.crt").write_bytes(chain)
    (where / "tls.key").write_bytes(key)
    (where / "tls.key").chmod(0o600)
    return where / "ca.crt", where / "tls.crt", where / "tls.key"


def _system_id(number: int) -> str:
    return str(uuid.UUID(int=number + 1))


@contextmanager
def emulator(scratch: Path, systems: int) -> Iterator[tuple[int, Path, Path, subprocess.Popen[bytes]]]:
    """sushy-tools' emulator with `systems` fake Systems, until the block ends: (port, its CA file, downloads, its
    process). It logs every request it answers to `scratch/emulator.log` (werkzeug's access log)."""
    if not EMULATOR.exists():
        raise SystemExit(f"{EMULATOR} not found: install sushy-tools (the fleet's test extra)")
    ca, cert, key = _tls(scratch / "bmc-tls")
    auth = scratch / "htpasswd"
    auth.write_text(f"{USERNAME}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()}\n")
    fakes = [{"uuid": _system_id(n), "name": f"bench-{n:05d}", "power_state": "Off", "external_notifier": False,
              "nics": [{"mac": f"00:5c:52:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}", "ip": "10.0.0.1"}]}
             for n in range(systems)]  # fmt: skip
    config = scratch / "emulator.conf"
    config.write_text(f"SUSHY_EMULATOR_AUTH_FILE = {str(auth)!r}\nSUSHY_EMULATOR_FAKE_SYSTEMS = {fakes!r}\n")
    downloads = scratch / "bmc-downloads"
    downloads.mkdir()
    port = fleet_controller._free_port()
    argv = [str(EMULATOR), "--fake", "-i", "127.0.0.1", "-p", str(port), "--config", str(config),
            "--ssl-certificate", str(cert), "--ssl-key", str(key)]  # fmt: skip
    with (scratch / "emulator.log").open("wb") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "TMPDIR": str(downloads)}
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    requests.get(f"https://127.0.0.1:{port}/redfish/v1", verify=str(ca), timeout=2)
                    break
                except requests.exceptions.ConnectionError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError((scratch / "emulator.log").read_text()[-2000:]) from None
                    time.sleep(0.2)
            yield port, ca, downloads, process
        finally:
            process.terminate()
            process.wait(30)


class WriteCount:
    """The hub simulator's writes (POST, PUT, PATCH, DELETE it answered), counted at its front: every client's, by
    method and resource (`PATCH sites/status`, `POST secrets`, ...)."""

    def __init__(self, hub: HubSimulator) -> None:
        front = hub.running.front
        self._inner = front.serve
        self.kinds: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        setattr(front, "serve", self._serve)  # noqa: B010 (an instance attribute over the bound method)

    @property
    def writes(self) -> int:
        with self._lock:
            return sum(self.kinds.values())

    def _serve(self, request: Any) -> Any:
        if request.method in WRITE_METHODS:
            with self._lock:
                self.kinds[f"{request.method} {_resource(request.path)}"] += 1
        return self._inner(request)

    def by_kind(self, node_reports: int, sites: int) -> dict[str, int]:
        """The controller's writes by kind: less the bench's own (a login Secret and a Site a Site, the reports)."""
        with self._lock:
            kinds = dict(self.kinds)
        for kind, own in (("POST secrets", sites + 1), ("POST sites", sites), ("PATCH sites/status", node_reports)):
            kinds[kind] = kinds.get(kind, 0) - own  # the +1: the pull secret
        return {kind.replace(" ", "_").replace("/", "_"): count for kind, count in kinds.items() if count}


def _resource(path: str) -> str:
    """`/apis/G/V/namespaces/NS/sites/NAME/status` -> `sites/status`; `/api/v1/namespaces/NS/secrets` -> `secrets`."""
    parts = [p for p in path.split("/") if p]
    if "namespaces" in parts and len(parts) > parts.index("namespaces") + 2:
        parts = parts[parts.index("namespaces") + 2 :]
    return "/".join(parts[:1] + parts[2:3])


def grant_memory(admin: kube.Client) -> dict[str, float]:
    """What the image server holds for the Sites' grants: each Site's image built as the cycle builds it and granted
    in an `imageserver.Grants` in this process under tracemalloc (the memory held with every grant at once), and the
    CPU seconds a build takes."""
    grants = imageserver.Grants()
    objs = admin.list(reconcile.SITES, NS)
    tracemalloc.start()
    before, cpu = tracemalloc.get_traced_memory()[0], time.process_time()
    for obj in objs:
        image = mediaimage.build(mediatree.tree(admin, obj))
        seen = site.view(obj)
        grants.grant(seen.namespace, seen.name, seen.media_digest, image)
    cpu = time.process_time() - cpu
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return {"grants_traced_kb_per_grant": held / 1024 / len(objs), "grants_traced_mb": held / 2**20,
            "image_build_cpu_s": cpu / len(objs)}  # fmt: skip


def _image_server_argv(scratch: Path, namespace: str) -> list[str]:
    """The controller's options that configure its image server (a free port, its own TLS, its key Secret)."""
    _, cert, key = _tls(scratch / "image-tls")
    port = fleet_controller._free_port()
    return ["--image-server-address", f"127.0.0.1:{port}", "--image-url-base", f"https://127.0.0.1:{port}",
            "--image-server-cert", str(cert),
            "--image-server-key", str(key), "--image-key-secret", f"{namespace}/bench-image-key"]  # fmt: skip


def _bmc_site(admin: kube.Client, number: int, port: int) -> int:
    """Site `store-N` delivered through System N of the emulator, its login in its own Secret; the writes made."""
    name = f"store-{number:05d}"
    login = {"username": base64.b64encode(USERNAME.encode()).decode(),
             "password": base64.b64encode(PASSWORD.encode()).decode()}  # fmt: skip
    admin.create(kube.SECRETS, {"metadata": {"name": f"{name}-bmc", "namespace": NS}, "data": login})
    obj = hub_sites._site(name)
    obj["spec"]["delivery"] = {
        "method": "bmc",
        "bmc": {
            "address": f"redfish-virtualmedia+https://127.0.0.1:{port}/redfish/v1/Systems/{_system_id(number)}",
            "credentialsName": f"{name}-bmc",
            "caConfigMapKeyRef": {"name": "bmc-ca", "key": "ca.crt"},
            "power": "on",
        },
    }
    admin.create(reconcile.SITES, obj)
    return 2


class Nodes:
    """The servers: each reads its medium once its CD holds the downloaded image and it is powered on, and reports
    the medium's digest to the hub with its own token, as the agent's reporter does."""

    def __init__(self, scratch: Path, downloads: Path, ca: Path, port: int) -> None:
        self.scratch, self.downloads, self.ca, self.port = scratch, downloads, ca, port
        self.reported: dict[str, float] = {}  # digest -> when its node reported it (monotonic)
        self.writes = 0
        self.checks = 0  # the nodes' own looks at their Systems (Redfish requests of the bench, not the controller)
        self.per_check = 0

    def pending(self) -> list[Path]:
        return [p for p in self.downloads.rglob("sha256-*.iso") if p.stem.replace("-", ":", 1) not in self.reported]

    def _on(self, number: int) -> bool:
        found, _ = delivery.read({"delivery": {"method": "bmc", "bmc": {
            "address": f"redfish-virtualmedia+https://127.0.0.1:{self.port}/redfish/v1/Systems/{_system_id(number)}",
            "credentialsName": "x"}}})  # fmt: skip
        assert found.bmc is not None
        client = redfish.Bmc(found.bmc, redfish.Login(USERNAME, PASSWORD), verify=str(self.ca))
        self.checks += 1
        return client.media().inserted and client.powered()

    def calibrate(self) -> None:
        """How many Redfish requests a node's look costs, counted on the idle emulator (each look makes the same)."""
        log = self.scratch / "emulator.log"
        before = _redfish_requests(log)
        self._on(0)
        time.sleep(0.5)  # the access log's line of the last request
        self.per_check, self.checks = _redfish_requests(log) - before, 0

    def redfish_requests(self) -> int:
        return self.checks * self.per_check

    def read(self, iso: Path, number: int) -> bool:
        """Node `number` reads `iso` and reports its digest, if its CD holds it and it is on; whether it did."""
        if not self._on(number):
            return False
        digest = iso.stem.replace("-", ":", 1)
        root = self.scratch / "nodes" / iso.stem
        make_media.write_dir(root, mediaimage.files(iso.read_bytes()))
        target = hubreport.target_from(root / medium.HUB_FILE)
        client = kube.Client.from_kubeconfig(str(target.kubeconfig), clock=clock.SystemClock())
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        report = {"runState": "running", "source": "node", "agentVersion": "1.2.3", "siteConfigDigest": digest,
                  "step": "preflight", "reportedAt": stamp}  # fmt: skip
        try:
            client.request("PATCH", target.path, body={"status": {hubreport.REPORT_FIELD: report}},
                           content_type=kube.MERGE_PATCH)  # fmt: skip
        finally:
            client.close()
        self.reported[digest] = time.monotonic()
        self.writes += 1
        return True


def _cpu_s(pid: int) -> float:
    """Process `pid`'s CPU seconds so far (user and system, every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _redfish_requests(log: Path) -> int:
    """The Redfish requests the emulator has answered so far (its access log's lines)."""
    return sum(1 for line in log.read_text(errors="replace").splitlines() if '"GET /' in line or '"POST /' in line
               or '"PATCH /' in line or '"DELETE /' in line)  # fmt: skip


def _condition(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def delivery_run(sites: int, hold: bool) -> dict[str, float]:
    """One delivery of `sites` BMC Sites on a fresh hub with a fresh emulator."""
    with tempfile.TemporaryDirectory(prefix="snoreloc-bench-bmc-") as tmp, HubSimulator() as hub:
        scratch = Path(tmp)
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        fleet_waves._prepare(admin)  # the Site and Wave CRDs (a BMC Site's reconcile reads its namespace's Waves)
        with emulator(scratch, sites) as (port, ca, downloads, bmcs):
            admin.create(kube.CONFIGMAPS, {"metadata": {"name": "bmc-ca", "namespace": NS},
                                           "data": {"ca.crt": ca.read_text()}})  # fmt: skip
            nodes = Nodes(scratch, downloads, ca, port)
            nodes.calibrate()
            counted = WriteCount(hub)
            child = fleet_controller.Child(hub, 0.0, scratch, _image_server_argv(scratch, NS))
            try:
                child.serving()
            except RuntimeError:
                print((scratch / "controller.log").read_text()[-3000:])
                raise
            baseline = counted.writes
            bench_writes = sum(_bmc_site(admin, n, port) for n in range(sites))
            bmc_cpu, bmc_requests = _cpu_s(bmcs.pid), _redfish_requests(scratch / "emulator.log")
            rss_before = child.rss_mb()
            cpu_before = child.cpu_s()
            seen = _follow(admin, child, nodes, sites, hold)
            cpu = child.cpu_s() - cpu_before
            bmc_cpu = _cpu_s(bmcs.pid) - bmc_cpu
            bmc_requests = _redfish_requests(scratch / "emulator.log") - bmc_requests
            controller_writes = counted.writes - baseline - bench_writes - nodes.writes
            own_count = child.writes()
            peak_rss = child.peak_rss_mb()
            child.stop()
            held = grant_memory(admin)
        admin.close()
    ready_to_ejected = [seen["ejected"][n] - seen["ready"][n] for n in seen["ready"]]
    to_inserted = [seen["inserted"][n] - seen["ready"][n] for n in seen["ready"]]
    report_to_ejected = [seen["ejected"][n] - seen["report"][n] for n in seen["ready"]]
    inserted_to_report = [seen["report"][n] - seen["inserted"][n] for n in seen["ready"]]
    return {
        "controller_cpu_s_per_site": cpu / sites,
        "hub_writes_per_site": controller_writes / sites,
        "emulator_cpu_s_per_site": bmc_cpu / sites,
        "redfish_requests_per_site": (bmc_requests - nodes.redfish_requests()) / sites,
        "controller_counted_writes_per_site": own_count / sites,
        "ready_to_ejected_s_min": min(ready_to_ejected),
        "ready_to_ejected_s_median": statistics.median(ready_to_ejected),
        "ready_to_ejected_s_max": max(ready_to_ejected),
        "ready_to_inserted_s_median": statistics.median(to_inserted),
        "ready_to_inserted_s_max": max(to_inserted),
        "inserted_to_report_s_median": statistics.median(inserted_to_report),
        "inserted_to_report_s_max": max(inserted_to_report),
        "report_to_ejected_s_median": statistics.median(report_to_ejected),
        "report_to_ejected_s_max": max(report_to_ejected),
        "downloads_per_site": statistics.fmean(seen["downloads"].values()),
        "image_kb": seen["image_bytes"] / 1024,
        "rss_mb_before_inserts": rss_before,
        "rss_mb_most_held": seen["rss_most_held"],
        "most_grants_held": seen["most_held"],
        "rss_kb_per_grant_held": 1024 * (seen["rss_most_held"] - rss_before) / max(1, seen["most_held"]),
        "rss_mb_after_ejects": seen["rss_after"],
        "peak_rss_mb": peak_rss,
        "wall_s": seen["wall"],
        **held,
        **{f"writes_{kind}_per_site": count / sites for kind, count in counted.by_kind(nodes.writes, sites).items()},
    }


def _follow(admin: kube.Client, child: fleet_controller.Child, nodes: Nodes, sites: int, hold: bool) -> dict[str, Any]:
    """Poll the Sites (and play the nodes) until every Site's medium is ejected: when each was seen Ready, Inserted,
    reported and Ejected (monotonic), its downloads, and the controller's RSS along the way."""
    started = time.monotonic()
    seen: dict[str, Any] = {"ready": {}, "inserted": {}, "report": {}, "ejected": {}, "downloads": {}}
    most_held, rss_most_held, peak = 0, child.rss_mb(), 0.0
    digests: dict[str, str] = {}  # digest -> Site
    image_bytes, shown = 0, started
    pool = concurrent.futures.ThreadPoolExecutor(NODE_THREADS)
    while len(seen["ejected"]) < sites:
        if time.monotonic() - started > BUDGET_S or child.process.poll() is not None:
            raise RuntimeError(f"{len(seen['ejected'])} of {sites} ejected after {time.monotonic() - started:.0f} s")
        now = time.monotonic()
        held = 0
        for obj in admin.list(reconcile.SITES, NS):
            name, status = obj["metadata"]["name"], obj.get("status") or {}
            record = status.get(site.STATUS_DELIVERY) or {}
            if _condition(obj, "MediaReady"):
                seen["ready"].setdefault(name, now)
            if (status.get(site.STATUS_MEDIA) or {}).get("digest"):
                digests[status[site.STATUS_MEDIA]["digest"]] = name
            if record.get("state") == "Inserted":
                seen["inserted"].setdefault(name, now)
                held += 1
            if record.get("state") == "Ejected":
                seen["inserted"].setdefault(name, now)
                seen["ejected"].setdefault(name, now)
                seen["downloads"][name] = int(record.get("downloads") or 0)
        rss = child.rss_mb()
        peak = max(peak, rss)
        if held > most_held:
            most_held, rss_most_held = held, rss
        if not hold or held >= sites or seen["ejected"]:
            found = [(iso, digests[iso.stem.replace("-", ":", 1)]) for iso in nodes.pending()
                     if iso.stem.replace("-", ":", 1) in digests]  # fmt: skip
            image_bytes = image_bytes or (found[0][0].stat().st_size if found else 0)
            reads = pool.map(lambda f: nodes.read(f[0], int(f[1].split("-")[1])), found)
            for (iso, name), read in zip(found, reads, strict=True):
                if read:
                    seen["report"][name] = nodes.reported[iso.stem.replace("-", ":", 1)]
        if now - shown >= PROGRESS_S:
            shown = now
            counts = ", ".join(f"{len(seen[k])} {k}" for k in ("ready", "inserted", "report", "ejected"))
            print(f"  {now - started:.0f} s: {counts}, {len(nodes.pending())} images not read yet", flush=True)
        time.sleep(POLL_S)
    pool.shutdown()
    seen.update(most_held=most_held, rss_most_held=rss_most_held, rss_after=child.rss_mb(), peak_rss=peak,
                image_bytes=image_bytes, wall=time.monotonic() - started)  # fmt: skip
    return seen


def cold_starts(sites: int, repetitions: int) -> dict[str, Any]:
    """The controller's cold start over `sites` stick Sites without and with its image server, alternating: its
    seconds to every Site validated and its CPU seconds to then (`fleet_controller.once`, a steady window of 1 s)."""
    runs: dict[str, list[float]] = {key: [] for key in ("off", "on", "ratio", "cpu_off", "cpu_on")}
    fleet_controller.POLL_S = COLD_POLL_S  # its 3 s would be 14 % of a 2,000-Site cold start: too coarse for 10 %
    for _ in range(repetitions):
        with tempfile.TemporaryDirectory(prefix="snoreloc-bench-bmc-cold-") as tmp:
            off = fleet_controller.once(sites, 0.0, STEADY_S)
            on = fleet_controller.once(sites, 0.0, STEADY_S, _image_server_argv(Path(tmp), hub_sites.NS))
        runs["off"].append(off["cold_start_s"])
        runs["on"].append(on["cold_start_s"])
        runs["ratio"].append(on["cold_start_s"] / off["cold_start_s"])
        runs["cpu_off"].append(off["controller_cpu_s"])
        runs["cpu_on"].append(on["controller_cpu_s"])
        print(f"  cold start over {sites} Sites: without {off['cold_start_s']:.1f} s ({off['controller_cpu_s']:.1f} s "
              f"CPU), with the image server {on['cold_start_s']:.1f} s ({on['controller_cpu_s']:.1f} s CPU); "
              f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    return {f"cold_start_{key}": common.summary(values) for key, values in runs.items()}


def measure(sites: int, hold: bool, repetitions: int, cold_sites: int, cold_repetitions: int) -> dict[str, Any]:
    results: dict[str, Any] = {"sites": sites, "hold": hold, "cold_sites": cold_sites,
                               "load_average_start": os.getloadavg()}  # fmt: skip
    targets: dict[str, Any] = {}
    if sites:
        runs = [delivery_run(sites, hold) for _ in range(repetitions)]
        for key in runs[0]:
            results[key] = common.summary([run[key] for run in runs])
        targets["downloads_per_site"] = common.exactly(max(run["downloads_per_site"] for run in runs), 1.0)
    if cold_sites:
        results |= cold_starts(cold_sites, cold_repetitions)
        targets["cold_start_ratio"] = common.target(results["cold_start_ratio"]["median"], COLD_RATIO, at_most=True)
    results["load_average_end"] = os.getloadavg()
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    r = payload["results"]

    def shown(key: str, digits: int = 3) -> str:
        f = r[key]
        return f"{f['min']:.{digits}f}/{f['median']:.{digits}f}/{f['max']:.{digits}f}"

    lines = [f"load average at start {r['load_average_start']}, at end {r['load_average_end']}"]
    if r["sites"]:
        lines += [
            f"BMC delivery of {r['sites']} Sites{' (nodes hold until all are inserted)' if r['hold'] else ''}, "
            f"min/median/max of {r['hub_writes_per_site']['n']} runs:",
            f"  controller CPU per Site: {shown('controller_cpu_s_per_site')} s; hub writes per Site (the "
            f"controller's): {shown('hub_writes_per_site', 2)} (its own count "
            f"{shown('controller_counted_writes_per_site', 2)})",
            f"  Ready to MediaEjected per Site: min {shown('ready_to_ejected_s_min', 1)} s, median "
            f"{shown('ready_to_ejected_s_median', 1)} s, max {shown('ready_to_ejected_s_max', 1)} s",
            f"  of which Ready to Inserted: median {shown('ready_to_inserted_s_median', 1)}, max "
            f"{shown('ready_to_inserted_s_max', 1)} s; Inserted to the node's report (the bench's nodes): median "
            f"{shown('inserted_to_report_s_median', 1)}, max {shown('inserted_to_report_s_max', 1)} s; "
            f"the report to Ejected: median "
            f"{shown('report_to_ejected_s_median', 1)}, max {shown('report_to_ejected_s_max', 1)} s",
            f"  the emulator (all the BMCs): {shown('emulator_cpu_s_per_site')} s of CPU and "
            f"{shown('redfish_requests_per_site', 1)} Redfish requests per Site from the controller\n"
            f"  downloads per Site {shown('downloads_per_site', 2)}; image {shown('image_kb', 1)} KB",
            f"  controller RSS: {shown('rss_mb_before_inserts', 1)} MB before, {shown('rss_mb_most_held', 1)} MB with "
            f"{shown('most_grants_held', 0)} grants held ({shown('rss_kb_per_grant_held', 1)} KB a grant), "
            f"{shown('rss_mb_after_ejects', 1)} MB after; wall {shown('wall_s', 1)} s",
            f"  the grants alone (tracemalloc, this process): {shown('grants_traced_kb_per_grant', 1)} KB a grant, "
            f"{shown('grants_traced_mb', 2)} MB for all; an image's build {shown('image_build_cpu_s')} s of CPU",
            "  the controller's writes per Site by kind: "
            + ", ".join(f"{k[7:-9]} {v['median']:.2f}" for k, v in r.items() if k.startswith("writes_")),
        ]
    if r["cold_sites"]:
        lines.append(
            f"cold start over {r['cold_sites']} Sites: without {shown('cold_start_off', 1)} s, with the image server "
            f"{shown('cold_start_on', 1)} s, ratio {shown('cold_start_ratio')}; the controller's CPU "
            f"{shown('cold_start_cpu_off', 1)} s without, {shown('cold_start_cpu_on', 1)} s with"
        )
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=200, help="BMC Sites delivered (0: skip)")
    parser.add_argument("--hold", action="store_true", help="nodes read nothing until every Site is inserted")
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--cold-sites", type=int, default=2000, help="Sites of the cold start (0: skip)")
    parser.add_argument("--cold-repetitions", type=int, default=3)
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.sites, args.hold, args.repetitions, args.cold_sites, args.cold_repetitions)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
