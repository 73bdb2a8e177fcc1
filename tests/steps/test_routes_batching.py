"""Route migration at scale: one backup batch before the first patch, no GET per route, 409s re-read, one pooled
connection per worker, and a rollback that puts every route back exactly. Against the simulator over HTTPS."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes.config import kube_config

from snoreloc import errors, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import backups, journal
from snoreloc.siteconfig import model
from snoreloc.steps import context
from snoreloc.steps.cluster import routes

NEW_DOMAIN = "site-9.edge.example.net"
ROUTE_COUNT = 300
ELSEWHERE = "elsewhere.example.org"


def _client(sim: Any, pool_size: int = 32) -> kube.Client:
    policy = kube.Policy(pool_size=pool_size)
    return kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock_mod.SystemClock(), policy=policy)


def _key(route: kube.Obj) -> str:
    return f"{route['metadata']['namespace']}/{route['metadata']['name']}"


def _user_routes(client: kube.Client) -> dict[str, kube.Obj]:
    return {_key(r): r for r in client.list(kube.ROUTES) if not r["metadata"]["namespace"].startswith("openshift")}


def _but_host(route: kube.Obj) -> dict[str, Any]:
    return {k: v for k, v in route["spec"].items() if k != "host"}


def _ref(route: kube.Obj) -> kube.Ref:
    return kube.Ref(kube.ROUTES, route["metadata"]["name"], route["metadata"]["namespace"])


@dataclass
class WatchedBackups:
    """The real backup store, plus what the cluster looked like at each batch and a hook run after it."""

    store: backups.Store
    client: kube.Client
    old_suffix: str
    batches: list[int] = field(default_factory=list)
    stale_at_batch: list[int] = field(default_factory=list)
    after_batch: Any = None

    def save(self, ref: kube.Ref, original: kube.Obj | None, keep: context.Keep = context.WHOLE) -> None:
        self.store.save(ref, original)

    def save_many(self, originals: Sequence[tuple[kube.Ref, kube.Obj | None]]) -> None:
        self.store.save_many(originals)
        self.batches.append(len(originals))
        stale = [r for r in _user_routes(self.client).values() if r["spec"].get("host", "").endswith(self.old_suffix)]
        self.stale_at_batch.append(len(stale))
        if self.after_batch is not None:
            self.after_batch()


@dataclass
class Setup:
    client: kube.Client
    ctx: context.Context
    watched: WatchedBackups
    old_domain: str


@pytest.fixture
def setup(sim: Any, tmp_path: Path) -> Setup:
    clock = clock_mod.SystemClock()
    client = _client(sim)
    old_domain = client.get(kube.Ref(kube.INGRESSES, "cluster"))["spec"]["domain"]
    store = backups.Store(tmp_path / "backups", clock)
    watched = WatchedBackups(store, client, "." + old_domain)
    ctx = context.Context(
        site=model.SiteConfig(name="site9", domain=NEW_DOMAIN),
        kube=client,
        clock=clock,
        backups=watched,
        rollouts=journal.Journal(tmp_path / "status.json", clock),
        # no domain step ran, so operators never regenerate their routes: do not wait long for them
        settings=context.Settings(route_workers=16, operator_regen_timeout=0.2, poll_interval=0.1),
    )
    return Setup(client, ctx, watched, old_domain)


def _migrate(setup: Setup) -> dict[str, dict[str, str]]:
    step = routes.Routes()
    outcome = step.apply(setup.ctx, step.plan(setup.ctx))
    return {f"{row['namespace']}/{row['name']}": row for row in outcome.details["routes"]}


@pytest.mark.parametrize("sim", [{"routes": ROUTE_COUNT}], indirect=True)
def test_many_routes_one_backup_batch_before_any_patch_and_rollback_restores_all(setup: Setup) -> None:
    before = _user_routes(setup.client)
    old_suffix = "." + setup.old_domain
    to_move = {key for key, r in before.items() if r["spec"].get("host", "").endswith(old_suffix)}
    assert len(to_move) >= ROUTE_COUNT
    requests = setup.client.requests

    rows = _migrate(setup)

    assert setup.watched.batches == [len(to_move)]
    assert setup.watched.stale_at_batch == [len(to_move)], "a route changed before its original was saved"
    files = sorted(p.name for p in setup.watched.store.directory.iterdir())
    assert len(files) == 1 and files[0].startswith("batch.")
    assert (setup.watched.store.directory / files[0]).stat().st_mode & 0o777 == 0o600
    made = setup.client.requests - requests
    assert len(to_move) <= made < len(to_move) + 30  # + lists and polls; a GET per route would add 300 more
    after = _user_routes(setup.client)
    for key in to_move:
        assert rows[key]["result"] == "migrated", rows[key]
        assert (
            after[key]["spec"]["host"] == before[key]["spec"]["host"][: -len(setup.old_domain)] + "apps." + NEW_DOMAIN
        )
        assert _but_host(after[key]) == _but_host(before[key])  # TLS, target, port: untouched

    result = backups.rollback(setup.client, setup.watched.store)

    assert len(result.restored) == len(to_move)
    restored = _user_routes(setup.client)
    assert {key: r["spec"] for key, r in restored.items()} == {key: r["spec"] for key, r in before.items()}
    assert list(setup.watched.store.directory.iterdir()) == []


@pytest.mark.parametrize("sim", [{"routes": 40}], indirect=True)
def test_a_route_changed_after_the_list_is_reread_not_clobbered(setup: Setup) -> None:
    moving = sorted(k for k, r in _user_routes(setup.client).items() if r["spec"]["host"].endswith(setup.old_domain))
    annotated, rehosted = (_user_routes(setup.client)[key] for key in moving[:2])

    def meanwhile() -> None:  # another writer, after our list and backup, before our patches
        setup.client.patch(_ref(annotated), {"metadata": {"annotations": {"team": "blue"}}})
        setup.client.patch(_ref(rehosted), {"spec": {"host": f"shop.{ELSEWHERE}"}})

    setup.watched.after_batch = meanwhile
    rows = _migrate(setup)

    assert rows[_key(annotated)]["result"] == "migrated"
    now = setup.client.get(_ref(annotated))
    assert now["metadata"]["annotations"]["team"] == "blue"
    assert now["spec"]["host"].endswith("apps." + NEW_DOMAIN)
    assert rows[_key(rehosted)]["result"] == f"skipped: changed meanwhile to shop.{ELSEWHERE}"
    assert setup.client.get(_ref(rehosted))["spec"]["host"] == f"shop.{ELSEWHERE}"
    assert all(rows[key]["result"] == "migrated" for key in moving[2:])


@pytest.mark.parametrize("sim", [{"routes": 5}], indirect=True)
def test_patch_from_writes_once_from_a_fresh_object_and_rereads_a_stale_one(sim: Any) -> None:
    client = _client(sim)
    route = next(iter(_user_routes(client).values()))

    def label(value: str) -> Any:
        def mutate(obj: kube.Obj) -> kube.Obj:
            obj["metadata"].setdefault("labels", {})["moved"] = value
            return obj

        return mutate

    start = client.requests
    fresh = client.patch_from(_ref(route), route, label("once"))
    assert client.requests - start == 1  # one PATCH, no GET
    assert fresh["metadata"]["labels"]["moved"] == "once"

    client.patch(_ref(route), {"metadata": {"annotations": {"by": "someone-else"}}})
    start = client.requests
    result = client.patch_from(_ref(route), route, label("twice"))  # `route` is now two versions old
    assert client.requests - start == 3  # PATCH (409), GET, PATCH
    assert result["metadata"]["annotations"]["by"] == "someone-else"
    assert result["metadata"]["labels"]["moved"] == "twice"

    start = client.requests
    client.patch_from(_ref(route), route, label("twice"))  # stale, but the fresh read already says so
    assert client.requests - start == 2  # PATCH (409), GET, and no write


def test_merge_patch_is_the_difference() -> None:
    old = {"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "spec": {"host": "a", "to": {"name": "s"}}}
    new = {"metadata": {"name": "a", "labels": {"x": "1", "z": "3"}}, "spec": {"host": "b", "to": {"name": "s"}}}
    assert kube.merge_patch(old, new) == {"metadata": {"labels": {"y": None, "z": "3"}}, "spec": {"host": "b"}}
    assert kube.merge_patch(old, old) == {}


@pytest.mark.parametrize("sim", [{"routes": 5}], indirect=True)
def test_sixteen_workers_reuse_pooled_connections(sim: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = _client(sim, pool_size=32)
    pool = client._api.rest_client.pool_manager.connection_from_url(client._api.configuration.host)
    assert pool.pool.maxsize == 32  # Policy.pool_size reached urllib3 (its default would be 5 per core)
    with caplog.at_level(logging.WARNING, logger="urllib3"):
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as workers:
            list(workers.map(lambda _: client.list(kube.ROUTES, "default"), range(400)))
    assert 1 <= pool.num_connections <= 16  # one per worker at most, each reused
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]  # a smaller pool discards some


def test_a_batch_skips_what_is_saved_and_later_saves_skip_the_batch(tmp_path: Path) -> None:
    clock = clock_mod.FakeClock()
    store = backups.Store(tmp_path / "b", clock)
    refs = [kube.Ref(kube.ROUTES, f"r{i}", "default") for i in range(3)]
    original = [{"metadata": {"name": ref.name, "namespace": "default"}, "spec": {"host": "old"}} for ref in refs]
    store.save(refs[0], original[0])
    store.save_many(list(zip(refs, [{**o, "spec": {"host": "changed"}} for o in original], strict=True)))
    store.save_many([(refs[1], {"spec": "again"})])
    store.save(refs[2], {"spec": "again"})
    reopened = backups.Store(tmp_path / "b", clock)
    by_name = {entry.ref.name: entry.original for entry in reopened.entries()}
    assert by_name["r0"] == original[0]  # the first original wins
    assert by_name["r1"] == {**original[1], "spec": {"host": "changed"}}
    assert by_name["r2"] == {**original[2], "spec": {"host": "changed"}}
    batch = next((tmp_path / "b").glob("batch.*.json"))
    assert [d["ref"]["name"] for d in json.loads(batch.read_text())["batch"]] == ["r1", "r2"]


@pytest.mark.parametrize("sim", [{"routes": 5}], indirect=True)
def test_the_token_refresh_hook_runs_once_per_interval_not_per_request(
    sim: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    applied: list[int] = []
    original = kube_config.KubeConfigLoader._set_config

    def counting(self: Any, configuration: Any) -> None:
        applied.append(1)
        original(self, configuration)

    monkeypatch.setattr(kube_config.KubeConfigLoader, "_set_config", counting)
    clock = clock_mod.FakeClock()
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock)
    loaded = len(applied)
    for _ in range(20):
        client.server_version()
    assert len(applied) - loaded == 1  # the first request checks the token; the next 19 do not
    clock.advance(kube.TOKEN_RECHECK)
    client.server_version()
    assert len(applied) - loaded == 2  # and it is checked again after the interval


@pytest.mark.parametrize("sim", [{"routes": 1200}], indirect=True)
def test_lists_are_read_in_pages(sim: Any) -> None:
    client = kube.Client.from_kubeconfig(
        str(sim.kubeconfig_path), clock=clock_mod.SystemClock(), policy=kube.Policy(list_page=500)
    )
    start = client.requests
    pages = [len(page) for page in client.pages(kube.ROUTES)]
    assert client.requests - start == len(pages) >= 3  # 1,200 user routes and the cluster's own, 500 a page
    assert all(size == 500 for size in pages[:-1]) and 0 < pages[-1] <= 500
    names = [f"{r['metadata']['namespace']}/{r['metadata']['name']}" for r in client.list(kube.ROUTES)]
    assert len(names) == len(set(names)) == sum(pages)


@pytest.mark.parametrize("sim", [{"routes": 50}], indirect=True)
def test_the_plan_holds_facts_not_routes_and_a_second_listing_shares_them(setup: Setup) -> None:
    step = routes.Routes()
    first = step.plan(setup.ctx)
    infos = first.data["infos"]
    assert len(first.changes) >= 50
    assert all(isinstance(info, routes.RouteInfo) and not hasattr(info, "__dict__") for info in infos)
    assert all(c.before is not None and set(c.before) == {"spec"} == set(c.after or {}) for c in first.changes)
    moved, touched = first.changes[0].ref, first.changes[1].ref
    setup.client.patch(moved, {"spec": {"host": f"shop.{ELSEWHERE}"}})  # one route moves elsewhere meanwhile
    setup.client.patch(touched, {"metadata": {"annotations": {"team": "blue"}}})  # and one only changes a label

    held = {info.ref: info for info in infos}
    second = routes._listed(setup.ctx, held)

    shared = [info.ref for info in second if info is held[info.ref]]
    assert sorted(shared) == sorted(info.ref for info in infos if info.ref != moved)
    [fresh] = [info for info in second if info.ref == moved]
    assert fresh.host == f"shop.{ELSEWHERE}" and fresh.handling is routes.Handling.UNTOUCHED


@pytest.mark.parametrize("sim", [{"routes": 60}], indirect=True)
def test_routes_ride_out_an_outage_longer_than_one_requests_retries(sim: Any, setup: Setup) -> None:
    """The routes overlap the kube-apiserver revision, whose restart outlasts one request's retry budget."""
    impatient = kube.Policy(attempts=2, backoff_initial=0.01, backoff_max=0.02)
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock_mod.SystemClock(), policy=impatient)
    ctx = dataclasses.replace(setup.ctx, kube=client)
    setup.watched.after_batch = lambda: sim.cluster.availability.outage(1.5, "refuse")
    step = routes.Routes()
    plan = step.plan(ctx)
    start = client.requests

    outcome = step.apply(ctx, plan)

    rows = outcome.details["routes"]
    moving = [row for row in rows if row["old_host"].endswith("." + setup.old_domain) and row["result"] != "untouched"]
    migrated = len([row for row in moving if row["result"] == "migrated"])
    assert migrated >= 60
    # the workers hold while the API is away: one refused patch each at most, and one probe a second meanwhile,
    # not every worker retrying on its own (the list, the CO and Ingress reads, and the polls of the operators'
    # routes, an Ingress read and a GET per route each, are the rest)
    probes = 1.5 / routes.OUTAGE_POLL + 2
    owners = len([row for row in rows if "regenerated" in row["result"]])
    polls = setup.ctx.settings.operator_regen_timeout / setup.ctx.settings.poll_interval + 2
    assert client.requests - start <= migrated + setup.ctx.settings.route_workers + probes + 6 + polls * (owners + 1)
    assert not [row for row in rows if row["result"].startswith("failed")]
    stale = [r for r in _user_routes(setup.client).values() if r["spec"]["host"].endswith("." + setup.old_domain)]
    assert stale == []


@pytest.mark.parametrize("sim", [{"routes": 40}], indirect=True)
def test_an_outage_outlasting_the_api_budget_fails_the_step_and_a_rerun_resumes(sim: Any, setup: Setup) -> None:
    """Every worker stops once the one wait for the API runs out; the next run patches what is left, with the
    factory originals still the ones kept, and the run after that writes nothing."""
    ctx = dataclasses.replace(setup.ctx, site=dataclasses.replace(setup.ctx.site, timeouts=model.Timeouts(api=1)))
    setup.watched.after_batch = lambda: sim.cluster.availability.outage(3.0, "refuse")
    step = routes.Routes()
    originals = {key: r["spec"]["host"] for key, r in _user_routes(setup.client).items()}

    with pytest.raises(errors.TemporaryError, match="could not be patched"):
        step.apply(ctx, step.plan(ctx))

    setup.watched.after_batch = None
    back = waits.Wait("test", "the API after the outage", 10.0, interval=0.2)
    waits.until(lambda: True if setup.client.serves(kube.ROUTES) else None, back, setup.ctx.clock)
    rows = {f"{r['namespace']}/{r['name']}": r for r in step.apply(ctx, step.plan(ctx)).details["routes"]}
    moved = [key for key, host in originals.items() if host.endswith("." + setup.old_domain)]
    assert len(moved) >= 40 and all(rows[key]["result"] == "migrated" for key in moved)
    kept = {f"{e.ref.namespace}/{e.ref.name}": e.original for e in setup.watched.store.entries()}
    assert {key: (kept[key] or {})["spec"]["host"] for key in moved} == {key: originals[key] for key in moved}

    writes = setup.client.writes
    assert step.plan(ctx).changes == ()
    step.apply(ctx, step.plan(ctx))
    assert setup.client.writes == writes


@pytest.mark.parametrize("sim", [{"routes": 60}], indirect=True)
def test_each_page_is_backed_up_before_its_patches_and_the_listing_reads_on_after_an_outage(
    sim: Any, setup: Setup
) -> None:
    """The routes are patched page by page as they are listed; an outage between two pages pauses the listing
    with the patches, and it goes on from the page it had reached. A rollback puts every factory host back."""
    paged = kube.Policy(list_page=20, attempts=2, backoff_initial=0.01, backoff_max=0.02)
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock_mod.SystemClock(), policy=paged)
    ctx = dataclasses.replace(setup.ctx, kube=client)
    before = _user_routes(setup.client)

    def outage_after_the_first_page() -> None:
        if len(setup.watched.batches) == 1:
            sim.cluster.availability.outage(1.0, "refuse")

    setup.watched.after_batch = outage_after_the_first_page
    step = routes.Routes()
    plan = step.plan(ctx)
    rows = step.apply(ctx, plan).details["routes"]

    assert len(setup.watched.batches) >= 3 and sum(setup.watched.batches) >= 60  # one batch per page
    assert not [row for row in rows if row["result"].startswith("failed")]
    assert len([row for row in rows if row["result"] == "migrated"]) >= 60
    backups.rollback(setup.client, setup.watched.store)
    assert {k: r["spec"] for k, r in _user_routes(setup.client).items()} == {k: r["spec"] for k, r in before.items()}


@pytest.mark.parametrize("sim", [{"routes": 40}], indirect=True)
def test_routes_changed_elsewhere_since_the_list_still_take_one_request_each(sim: Any, setup: Setup) -> None:
    """When the apps domain changes the router rewrites every route's status, so every resourceVersion the list
    returned is stale by the time of the patch: the patch tests the host, not the resourceVersion."""
    other = _client(sim)
    moving = [r for r in _user_routes(setup.client).values() if r["spec"]["host"].endswith("." + setup.old_domain)]

    def router_meanwhile() -> None:
        for route in moving:
            other.patch(_ref(route), {"metadata": {"annotations": {"router": "re-admitted"}}})

    setup.watched.after_batch = router_meanwhile
    step = routes.Routes()
    plan = step.plan(setup.ctx)
    requests, writes = setup.client.requests, setup.client.writes

    rows = step.apply(setup.ctx, plan).details["routes"]

    assert len([row for row in rows if row["result"] == "migrated"]) == len(moving) >= 40
    assert setup.client.writes - writes == len(moving)
    assert setup.client.requests - requests < len(moving) + 30  # lists and polls; a 409 and a GET per route: +90
    assert all(other.get(_ref(r))["metadata"]["annotations"]["router"] == "re-admitted" for r in moving)
