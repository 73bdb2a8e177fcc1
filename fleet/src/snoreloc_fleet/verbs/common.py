"""What the verbs that read the fleet from the hub share: which Sites (`add_hub_reading`) and reading them page by
page into rows (`read_rows`). `fleet status` and `fleet report` use it; the rows are `state.fleetstate`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import pathlib
from collections.abc import Iterator

from snoreloc.siblings import errors
from snoreloc_fleet.state import fleetstate, wavestate


def add_hub_reading(parser: argparse.ArgumentParser) -> None:
    """The hub connection and which Sites: shared by `status` and `report`."""
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

    hubaccess.add_arguments(parser)
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="Sites of every namespace")
    parser.add_argument("-l", "--selector", help="a label selector, e.g. region=emea,wave=3")
    parser.add_argument("--phase", help="only Sites in this phase (selected on the server by label)")
    parser.add_argument(
        "--wave", metavar="NAME", help="only the Sites of this Wave (its selector), with its batches and any halt"
    )
    parser.add_argument(
        "--chunk-size", type=int, default=500, metavar="N", help="Sites per list request (default 500, as kubectl)"
    )
    parser.add_argument(
        "--silent-for",
        type=fleetstate.duration_text,
        default=900.0,
        metavar="DURATION",
        help="a run in progress with no report for longer than this is silent (default 15m; 90s, 2h...)",
    )


def _selector(args: argparse.Namespace, wave: str = "") -> str | None:
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    parts = [args.selector] if args.selector else []
    if wave:
        parts.append(wave)
    if args.phase:
        parts.append(f"{site.PHASE_LABEL}={args.phase}")
    return ",".join(parts) or None


def read_waves(args: argparse.Namespace) -> list[wavestate.Wave]:
    """The Wave `--wave` names (exit 69 when there is none), or without it every Wave of the namespace(s) read
    (none when the hub serves no Waves)."""
    from snoreloc.siblings import clock, kube  # noqa: PLC0415
    from snoreloc_fleet.controller import waves  # noqa: PLC0415

    namespace = None if args.all_namespaces else args.namespace
    path = str(pathlib.Path(args.kubeconfig).expanduser())
    client = kube.Client.from_kubeconfig(path, clock=clock.SystemClock())
    try:
        if getattr(args, "wave", None):
            found = client.find(waves.wave_ref(args.namespace, args.wave))
            if found is None:
                raise errors.UnavailableError(
                    f"no Wave {args.wave} in namespace {args.namespace}",
                    hint="List them: kubectl get waves -n NAMESPACE",
                )
            return [wavestate.read(found)]
        try:
            return [wavestate.read(obj) for obj in client.list(waves.WAVES, namespace)]
        except kube.NotFound:
            return []
    finally:
        client.close()


def read_rows(
    args: argparse.Namespace, *, steps: bool = True, wave: wavestate.Wave | None = None
) -> tuple[list[fleetstate.Row], int]:
    """Every selected Site as a row (with its steps or not: `fleetstate.row`), read page by page; (rows, pages
    read). `wave`: only its Sites."""
    from snoreloc.siblings import clock, kube  # noqa: PLC0415
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    resource = hubaccess.sites()
    namespace = None if args.all_namespaces else args.namespace
    policy = kube.Policy(list_page=max(1, args.chunk_size))
    path = str(pathlib.Path(args.kubeconfig).expanduser())
    client = kube.Client.from_kubeconfig(path, clock=clock.SystemClock(), policy=policy)
    rows: list[fleetstate.Row] = []
    pages = 0
    try:
        with no_cycle_collection():
            for page in client.pages(
                resource, namespace, label_selector=_selector(args, wave.selector if wave else "")
            ):
                pages += 1
                rows.extend(fleetstate.row(obj, steps=steps) for obj in page)
    except kube.NotFound:
        raise errors.UnavailableError(
            f"the hub serves no {site.PLURAL}.{site.GROUP}", hint="Install the fleet side first: snoreloc fleet install"
        ) from None
    finally:
        client.close()
    return rows, pages


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """CPython's cycle collector off while the Sites are read and reduced: 10,000 decoded Sites are over a million
    containers, their rows a hundred thousand, none in a cycle, and each collection walks them all again (at 10,000
    Sites 0.28 s of reading's 0.6 s of CPU, and a third of printing them). Reference counting still frees
    everything; the collector's state is restored after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
