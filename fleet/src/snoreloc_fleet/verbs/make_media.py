"""`snoreloc fleet make-media SITE`: the stick for one Site, made from the hub: its site-config, its files, and
its reporting kubeconfig.

The Site must be valid on the hub (its Validated condition True for its current generation) and its credential
issued. The controller issues a site's reporting credential only when a stick is asked for: when the Site's has none
that works (never issued, revoked, or due for renewal), this command asks for it by setting the Site's
`fleet.snoreloc.io/media-requested` annotation to the time (one metadata patch: `patch` of Sites is all it needs
beyond reading), then waits, bounded by `--timeout` and visibly (`snoreloc.waits`), until the controller has issued
it (MediaReady True for the Site's current generation, the report Secret's token bound to the live binding Secret);
on timeout it exits 75 with nothing written. A Site with `spec.report.enabled: false` needs no credential: nothing
is asked for, nothing waited on. The medium is rebuilt here from the Site and the Secrets and ConfigMaps it names,
checked again with the agent's rules, and its digest compared with the one the controller put in `status.media`: a
difference means the Site or an input changed since the controller last saw it, and nothing is written (exit 75: run
it again once the controller has caught up). The images are written by the agent's own media maker (`snoreloc
make-media`), with `hub-report.kubeconfig` (0600 in the tree) beside the site-config; `--out-dir` writes the same
files to a directory instead (0700, files 0600), to copy onto a stick by hand. The token is never printed or logged.
A Site that does not exist, or is deleted while this command waits, exits 69 (unavailable) saying so. A Site its
wave holds (`status.gate` Held: its batch is not open, or the wave halted; MediaReady False, reason Held) gets no
credential and no stick: this command says why and exits 75 at once (run it again once `snoreloc fleet status
--wave NAME` shows its batch open), asking for nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import pathlib
import sys
from typing import Any

from snoreloc.siblings import clock as clock_mod
from snoreloc.siblings import errors, kube

HELP = "write the stick (ISO, FAT image or a directory) for one Site, with its hub reporting kubeconfig"
TIMEOUT = 120.0  # the default wait for the controller to issue a requested credential (seconds)
POLL = 0.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

    parser.add_argument("site", metavar="SITE", help="the Site's name")
    hubaccess.add_arguments(parser)
    parser.add_argument("--iso", metavar="PATH", help="write an ISO9660 image labelled relocation-config")
    parser.add_argument("--fat", metavar="PATH", help="write a FAT image labelled RELOCCONFIG (dd it to a stick)")
    parser.add_argument("--out-dir", metavar="DIR", help="write the medium's files into DIR (created, 0700)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT,
        metavar="SECONDS",
        help=f"longest wait for the hub's controller to issue the site's reporting credential (default {TIMEOUT:g})",
    )


def _ready(obj: dict[str, Any]) -> str:
    """The digest the controller issued, once the Site is valid and its credential issued; else exit 75."""
    from snoreloc_fleet.hub import mediatree  # noqa: PLC0415

    return mediatree.issued(obj)


def _current(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The Site's condition `kind` when it was judged for the Site's current generation."""
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    seen = site.view(obj)
    found = seen.condition(kind)
    return dict(found) if found and found.get("observedGeneration") == seen.generation else None


def settled(client: kube.Client, obj: dict[str, Any], request: str, now: dt.datetime) -> dict[str, Any] | None:
    """`obj` once nothing is left to wait for: the hub judged it invalid (`_ready` says why), or it is ready with a
    working credential (live, or issued for `request` as the controller judged it); None while not."""
    from snoreloc_fleet.hub import credentials  # noqa: PLC0415
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    validated = _current(obj, site.Condition.VALIDATED)
    if validated is not None and validated.get("status") == "False":
        return obj
    media = _current(obj, site.Condition.MEDIA_READY)
    if media is not None and media.get("reason") == site.Reason.HELD and site.view(obj).held:
        return obj  # its wave holds it: `_ready` says why (a gate opened since: the controller has yet to see it)
    if media is None or media.get("status") != "True":
        return None
    if not site.reports(obj):
        return obj
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    report = client.find(kube.Ref(kube.SECRETS, credentials.report_secret_name(name), namespace))
    binding = client.find(kube.Ref(kube.SECRETS, credentials.binding_name(name), namespace))
    live = credentials.live(report, binding, now) or credentials.answers(report, binding, request)
    return obj if live else None


def request(client: kube.Client, namespace: str, name: str, clock: clock_mod.Clock) -> str:
    """Ask the hub's controller for the Site's reporting credential: set its media-requested annotation to now (a
    metadata merge patch, nothing else of the Site touched). The value set."""
    from snoreloc_fleet.controller import reconcile  # noqa: PLC0415
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    stamp = clock.now().astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    client.patch(reconcile.site_ref(namespace, name), {"metadata": {"annotations": {site.MEDIA_REQUESTED: stamp}}})
    return stamp


def _site(client: kube.Client, ref: kube.Ref, *, waited: bool = False) -> dict[str, Any]:
    """The Site as it is now; exit 69 naming it when it does not exist, or was deleted while this command waited."""
    found = client.find(ref)
    if found is None:
        what = "was deleted while make-media waited for its reporting credential" if waited else "does not exist"
        raise errors.UnavailableError(
            f"site {ref.name} in namespace {ref.namespace} {what}; nothing was written",
            hint="List the Sites: snoreloc fleet status -o csv (or -A for every namespace).",
        )
    return found


def with_credential(
    client: kube.Client, namespace: str, name: str, *, timeout: float = TIMEOUT, clock: clock_mod.Clock | None = None
) -> dict[str, Any]:
    """The Site, once its reporting credential works: asked for when it does not (see the module's docstring) and
    waited for at most `timeout` seconds (WaitTimeout, exit 75). A Site that does not report, or that the hub found
    invalid, is returned at once (`_ready` judges it)."""
    from snoreloc.siblings import waits  # noqa: PLC0415
    from snoreloc_fleet.controller import reconcile  # noqa: PLC0415
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    clock = clock or clock_mod.SystemClock()
    ref = reconcile.site_ref(namespace, name)
    obj = _site(client, ref)
    if not site.reports(obj) or settled(client, obj, "", clock.now()) is not None:
        return obj
    asked = request(client, namespace, name, clock)
    sys.stderr.write(f"asked the hub for site {name}'s reporting credential (annotation at {asked})\n")
    wait = waits.Wait(
        "make-media", f"the hub's controller to issue site {name}'s reporting credential", timeout, POLL,
        hint=f"Is the hub's controller running (`snoreloc fleet controller`)? `kubectl get site {name} -n "
        f"{namespace} -o yaml` shows its conditions; run this again (it asks again), or with a longer --timeout.",
    )  # fmt: skip
    return waits.until(lambda: settled(client, _site(client, ref, waited=True), asked, clock.now()), wait, clock)


def write_dir(out: pathlib.Path, tree: dict[str, bytes]) -> None:
    """Each file 0600 from its first byte, replaced atomically, never through a link or onto something that is not
    a regular file (the agent's one writer, `snoreloc.safefile`: exit 77, and checked for every file before the
    first is written, so a refusal changes nothing): the tree holds the reporting token and the pull secret."""
    from snoreloc.siblings import safefile  # noqa: PLC0415

    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name in tree:
        if (out / name).parent.is_dir():
            safefile.check(out / name)
    for name, data in tree.items():
        safefile.write(out / name, data, mode=0o600, make_parents=True)


def make(client: kube.Client, namespace: str, name: str, *, timeout: float = TIMEOUT) -> dict[str, bytes]:
    """The medium's files for a Site (the hub's reporting kubeconfig included, asked for when needed), proven equal
    to what the controller validated (`hub.mediatree`, the one assembly of a stick's and a BMC image's files)."""
    from snoreloc_fleet.hub import mediatree  # noqa: PLC0415

    return mediatree.tree(client, with_credential(client, namespace, name, timeout=timeout))


def run(args: argparse.Namespace) -> int:
    import tempfile  # noqa: PLC0415

    from snoreloc.siblings import (  # noqa: PLC0415
        command,
        media,
        medium,
    )
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415

    if not (args.iso or args.fat or args.out_dir):
        raise errors.UsageError("give --iso PATH, --fat PATH, --out-dir DIR, or several")
    client = hubaccess.client(args)
    try:
        tree = make(client, args.namespace, args.site, timeout=args.timeout)
    finally:
        client.close()
    if args.out_dir:
        write_dir(pathlib.Path(args.out_dir), tree)
        sys.stderr.write(f"wrote {args.out_dir}: {', '.join(tree)}\n")
    if args.iso or args.fat:
        with tempfile.TemporaryDirectory(prefix="snoreloc-fleet-media.") as tmp:
            write_dir(pathlib.Path(tmp) / "tree", tree)
            written = media.write(
                command.SubprocessRunner(),
                pathlib.Path(tmp) / "tree" / medium.SITE_CONFIG_NAME,
                iso=pathlib.Path(args.iso) if args.iso else None,
                fat=pathlib.Path(args.fat) if args.fat else None,
                hub_report=tree.get(medium.HUB_FILE),
            )
        for path in written.paths:
            sys.stderr.write(f"wrote {path}: {', '.join(written.contents)}\n")
    return 0
