"""The BMC cycle of a Site delivered through its server's BMC (`spec.delivery.method: bmc`, issue 36): insert the
site's configuration image as virtual media, wait for the node's first report naming its digest, eject it.

A level-triggered pass per Site, run by the controller's BMC workers (their own queue: a BMC answers in seconds, a
Site's reconcile must not wait on it, and kopf's loop never does). Each pass reads the Site afresh, decides from
`status.delivery` (this module's record, the only part of the status it writes) and `status.agent` (the node's
report), does at most one thing to the BMC, and records it; the Site's reconcile renders the record as the
conditions `MediaInserted`, `NodeReadMedium`, `MediaEjected` (`controller.status`). The states:

- (none) the Site is not yet valid with its credential issued (MediaReady True: its wave's batch open), or the
  node already runs this medium: nothing to insert.
- `Inserted`: the image of `digest` is granted in the image server (`hub.imageserver`), its signed URL (`hub.imageurl`,
  valid until the read deadline) inserted through `hub.redfish`, the power applied as the Site says. The pass comes
  back every `POLL` seconds to count downloads, and at the deadline.
- `Ejected`: the node reported this digest (`status.agent.siteConfigDigest`): the image is ejected at once, not at
  the end of the relocation (a medium left attached boots again or re-mounts after a firmware update: IBIO's bug
  trail), and its grant revoked, so its URL answers 410.
- `TimedOut`: the node did not read it within `read_timeout` (default 2 h): ejected and revoked, visibly.
- After `Ejected` or `TimedOut` nothing is inserted again on its own, not even for an edited Site (its node runs, or
  ran, what it read; inserting into a running server, perhaps restarting it, is the owner's call): a new value of
  the annotation `fleet.snoreloc.io/redeliver` inserts the Site's current image.
- `Failed`: the BMC refused or did not answer (`hub.redfish.Problem`, its message and what to do): tried again after
  `RETRY_S`, doubling to `RETRY_MAX_S`.
- `NoImageServer`: the controller runs without `--image-server-address`: nothing can be served.

A Site edited while its image is inserted gets the old one ejected and the new one inserted (the digest differs).
A controller restarted while an image is inserted grants it again (same key from its Secret, so the URL the BMC holds
stays good).

While the BMC may hold a Site's image (from the first insert until an eject succeeds) the Site carries the finalizer
`fleet.snoreloc.io/bmc-eject`, as a metal3 BareMetalHost carries its own: deleting the Site (or switching it to the
stick) ejects first, even from a controller that started after the insert, and the record keeps the BMC it was
inserted into (`status.delivery.bmc`), so an edit of the address ejects from the old BMC. An eject that keeps
failing on a deleted Site is given up after `EJECT_ATTEMPTS` (about ten minutes of back-off) or at once when its
Secret is gone (a namespace deleted with it): a Warning Event says so, and the URL answers 410 whatever the BMC
still holds. The BMC's password is read from the Site's Secret for each pass, registered with `snoreloc.redact`, and
never written anywhere.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime as dt
import logging
import pathlib
import secrets
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siblings import errors, kube, redact, safefile
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.controller import status as status_mod
from snoreloc_fleet.hub import hubaccess, imageserver, imageurl, mediaimage, mediatree, redfish
from snoreloc_fleet.resource import delivery, site

LOG = logging.getLogger(__name__)
READ_TIMEOUT = 7200.0  # seconds the node has to read an inserted image (its first report naming the digest)
URL_SLACK = 600  # the URL outlives the read deadline by this much: a BMC that fetches again late is still served
POLL = 30.0  # an inserted image's Site is looked at again at least this often (downloads, the deadline)
RETRY_S = 5.0  # a failed BMC request is tried again after this, doubled per failure, at most RETRY_MAX_S
RETRY_MAX_S = 600.0
KEY_SECRET_KEY = "key"  # noqa: S105 (a key's name) the signing key's key in the controller's Secret
REDELIVER = f"{site.GROUP}/redeliver"  # a new value inserts the image again after a TimedOut or an eject
MAX_MESSAGE = 512
FINALIZER = f"{site.GROUP}/bmc-eject"  # held while the BMC may hold the Site's image: deletion ejects first
EJECT_ATTEMPTS = 8  # a deleted Site's eject is given up after this many failures (5 s doubling: about 10 minutes)


State = delivery.State  # the record's states (defined beside spec.delivery: the schema and the metrics name them)


@dataclass(frozen=True)
class Serving:
    """The image server the controller runs, as the cycle uses it: where BMCs reach it, the key that signs its URLs,
    the grants it serves."""

    base: str
    key: bytes
    grants: imageserver.Grants
    read_timeout: float = READ_TIMEOUT


@dataclass(frozen=True)
class ServerOptions:
    """The image server the controller runs in its process (`--image-server-address`, `--image-url-base`, TLS)."""

    host: str
    port: int
    base: str  # the https URL BMCs reach it at ("": https://host:port, where it listens)
    cert: pathlib.Path
    key: pathlib.Path
    key_secret: kube.Ref  # the Secret holding the URL-signing key (made when missing)
    read_timeout: float = READ_TIMEOUT


def start_server(
    client: kube.Client, options: ServerOptions, answered: imageserver.Answered | None = None
) -> tuple[Serving, imageserver.Running]:
    """Start the image server (a thread of its own event loop) with the key from the controller's Secret;
    `answered` is told of each of its answers (the controller's metrics)."""
    key = key_of(client, options.key_secret)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(options.cert, options.key)
    grants = imageserver.Grants()
    running = imageserver.serve_in_thread(key, grants, context, options.host, options.port, answered=answered)
    base = options.base or f"https://{options.host}:{running.port}"  # no base given: where it listens
    LOG.info("image server listening on %s:%d, serving at %s", options.host, running.port, base)
    return Serving(base, key, grants, options.read_timeout), running


@dataclass(frozen=True)
class Pass:
    """One pass over one BMC-delivered Site: the Site as read, its BMC, the cycle's record, the time."""

    ref: kube.Ref
    obj: Mapping[str, Any]
    seen: site.View
    bmc: delivery.Bmc
    before: dict[str, Any]
    now: dt.datetime

    @property
    def read(self) -> str:
        """The digest the node last reported (`status.agent.siteConfigDigest`)."""
        return str((self.seen.status.get(site.STATUS_AGENT) or {}).get("siteConfigDigest") or "")


@dataclass(frozen=True)
class Step:
    """What a pass did: whether it wrote `status.delivery` (the Site's conditions are then rendered again), and when
    to look again (seconds; None: when the Site changes)."""

    wrote: bool
    again: float | None = None


def key_of(client: kube.Client, ref: kube.Ref) -> bytes:
    """The URL-signing key from the controller's Secret `ref`, made (32 random bytes) when it does not exist."""
    found = client.find(ref)
    if found is None:
        body = {
            "metadata": {"name": ref.name, "namespace": ref.namespace},
            "type": "Opaque",
            "data": {KEY_SECRET_KEY: base64.b64encode(secrets.token_bytes(imageurl.KEY_BYTES)).decode()},
        }
        with contextlib.suppress(kube.Conflict):  # another replica made it first: read theirs
            client.create(kube.SECRETS, body)
        found = client.get(ref)
    try:
        key = base64.b64decode((found.get("data") or {}).get(KEY_SECRET_KEY, ""), validate=True)
    except binascii.Error:
        key = b""
    if len(key) < imageurl.KEY_BYTES:
        raise errors.ConfigError(
            f"Secret {ref.namespace}/{ref.name} holds no image-signing key of {imageurl.KEY_BYTES} bytes "
            f"(key {KEY_SECRET_KEY!r})",
            hint="Delete it: the controller makes a new one (URLs it signed before stop working).",
        )
    return key


def _login(client: kube.Client, obj: Mapping[str, Any], bmc: delivery.Bmc) -> redfish.Login:
    """The BMC's username and password from the Site's Secret (`credentialsName`, its own namespace)."""
    namespace = site.view(obj).namespace
    secret = client.find(kube.Ref(kube.SECRETS, bmc.credentials_name, namespace))
    data = (secret or {}).get("data") or {}
    try:
        username = base64.b64decode(data.get("username", ""), validate=True).decode()
        password = base64.b64decode(data.get("password", ""), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        username = password = ""
    redact.register_secret(password)
    if secret is None or not username or not password:
        raise redfish.BmcError(
            redfish.Problem.CREDENTIALS,
            f"Secret {namespace}/{bmc.credentials_name} does not exist or has no username and password",
        )
    return redfish.Login(username, password)


@contextlib.contextmanager
def _verify(client: kube.Client, obj: Mapping[str, Any], bmc: delivery.Bmc) -> Iterator[bool | str]:
    """What verifies the BMC: its CA (from the ConfigMap, in a private file for the pass), the system's, or none."""
    if not bmc.verify:
        yield False
        return
    if bmc.ca_ref is None:
        yield True
        return
    namespace = site.view(obj).namespace
    holder = client.find(kube.Ref(kube.CONFIGMAPS, bmc.ca_ref["name"], namespace))
    ca = ((holder or {}).get("data") or {}).get(bmc.ca_ref["key"])
    if not ca:
        message = f"ConfigMap {namespace}/{bmc.ca_ref['name']} has no key {bmc.ca_ref['key']!r} (the BMC's CA)"
        raise redfish.BmcError(redfish.Problem.CERTIFICATE, message)
    with tempfile.TemporaryDirectory(prefix="snoreloc-fleet-bmc-ca.") as tmp:  # 0700, removed after the pass
        path = pathlib.Path(tmp) / "ca.crt"
        safefile.write(path, str(ca), mode=0o644, sync=False)  # public: the BMC's CA (requests reads it by path)
        yield str(path)


def _record(client: kube.Client, ref: kube.Ref, before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    patch = kube.merge_patch(dict(before), dict(after))
    if not patch:
        return False
    body = {"status": {site.STATUS_DELIVERY: patch if before else dict(after)}}
    client.request("PATCH", ref.path("status"), body=body, content_type=kube.MERGE_PATCH, retry=True)
    return True


def _warn(client: kube.Client, obj: Mapping[str, Any], reason: str, message: str, now: dt.datetime) -> None:
    """A Warning Event on the Site, where someone must look: a BMC's first failure in a row, a read deadline passed
    (not each retry: the condition carries the next attempt). The message is the status's (no password in it)."""
    seen, stamp = site.view(obj), status_mod.iso(now)
    client.create(reconcile.EVENTS, {
        "metadata": {"generateName": f"{seen.name}.", "namespace": seen.namespace},
        "involvedObject": {"apiVersion": site.API_VERSION, "kind": site.KIND, "name": seen.name,
                           "namespace": seen.namespace, "uid": seen.uid},
        "reason": reason, "message": status_mod.said(message, site.MAX_CONDITION_MESSAGE), "type": "Warning",
        "source": {"component": reconcile.COMPONENT},
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    })  # fmt: skip


def _raw_bmc(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Site's `spec.delivery.bmc` as written (where an image goes: kept in the record to eject from it)."""
    given = ((obj.get("spec") or {}).get("delivery") or {}).get("bmc")
    return dict(given) if isinstance(given, Mapping) else {}


def _held_in(before: Mapping[str, Any]) -> delivery.Bmc | None:
    """The BMC the record says holds (or may hold) the image; None when the record names none (or a bad one)."""
    recorded = before.get("bmc")
    if not isinstance(recorded, Mapping):
        return None
    return delivery.read({"delivery": {"method": delivery.Method.BMC.value, "bmc": dict(recorded)}})[0].bmc


def _finalized(client: kube.Client, ref: kube.Ref, obj: Mapping[str, Any], *, hold: bool) -> None:
    """Add (`hold`) or remove the cycle's finalizer, guarded by the Site's resourceVersion (others' finalizers kept:
    a merge patch replaces the list, so a change since `obj` was read is a 409, read again and re-applied)."""
    present = FINALIZER in (obj["metadata"].get("finalizers") or [])
    if present == hold:
        return

    def change(current: dict[str, Any]) -> dict[str, Any]:
        kept = [f for f in current["metadata"].get("finalizers") or [] if f != FINALIZER]
        current["metadata"]["finalizers"] = [*kept, FINALIZER] if hold else kept
        return current

    part = {"metadata": {k: obj["metadata"].get(k) for k in ("resourceVersion", "finalizers")}}
    client.patch_from(ref, part, change)


def _backoff(attempts: int) -> float:
    return float(min(RETRY_MAX_S, RETRY_S * 2.0 ** max(0, attempts - 1)))


def _failed(before: Mapping[str, Any], digest: str, exc: redfish.BmcError, now: dt.datetime) -> dict[str, Any]:
    """The record of a failed BMC request: an inserted image stays recorded as inserted (its eject is retried)."""
    attempts = int(before.get("attempts") or 0) + 1
    inserted = before.get("state") == State.INSERTED
    kept = dict(before) if inserted else {k: v for k, v in before.items() if k in ("downloads", "redeliver", "bmc")}
    return {
        **kept,
        "state": State.INSERTED.value if inserted else State.FAILED.value,
        "digest": digest,
        "problem": exc.problem.value,
        "message": status_mod.said(f"{exc}: {exc.advice}", MAX_MESSAGE),
        "attempts": attempts,
        "retryAt": status_mod.iso(now + dt.timedelta(seconds=_backoff(attempts))),
    }


class Cycle:
    """The BMC cycle's passes (`step`), with the controller's client and its image server (None: not configured)."""

    def __init__(self, client: kube.Client, serving: Serving | None) -> None:
        self.client = client
        self.serving = serving
        self.sites = hubaccess.sites()

    def _bmc(self, obj: Mapping[str, Any], bmc: delivery.Bmc, verify: bool | str) -> redfish.Bmc:
        return redfish.Bmc(bmc, _login(self.client, obj, bmc), verify)

    def _eject(self, obj: Mapping[str, Any], bmc: delivery.Bmc) -> None:
        with _verify(self.client, obj, bmc) as verify:
            self._bmc(obj, bmc, verify).eject()

    def _insert(self, obj: Mapping[str, Any], bmc: delivery.Bmc, digest: str, now: dt.datetime) -> None:
        assert self.serving is not None
        seen = site.view(obj)
        image = mediaimage.build(mediatree.tree(self.client, obj))
        self.serving.grants.grant(seen.namespace, seen.name, digest, image)
        expires = int(now.timestamp() + self.serving.read_timeout + URL_SLACK)
        grant = imageurl.Grant(seen.namespace, seen.name, digest, expires)
        url = imageurl.url(self.serving.base, self.serving.key, grant)
        redact.register_secret(imageurl.sign(self.serving.key, grant))  # a BMC's refusal may quote the URL
        with _verify(self.client, obj, bmc) as verify:
            client = self._bmc(obj, bmc, verify)
            client.insert(url)
            client.power(bmc.power)

    def _regrant(self, obj: Mapping[str, Any], digest: str, counted: int) -> None:
        """After a restart: serve the inserted image again (a BMC may fetch again: a reboot, a firmware's re-mount)."""
        assert self.serving is not None
        seen = site.view(obj)
        if self.serving.grants.current(seen.namespace, seen.name) is None:
            with contextlib.suppress(errors.SnorelocError):
                image = mediaimage.build(mediatree.tree(self.client, obj))
                self.serving.grants.grant(seen.namespace, seen.name, digest, image, counted)

    def forget(self, namespace: str, name: str) -> None:
        """Its URL answers 410 from now on."""
        if self.serving is not None:
            self.serving.grants.revoke(namespace, name)

    def _retrying(
        self, ref: kube.Ref, obj: Mapping[str, Any], before: Mapping[str, Any], after: dict[str, Any], now: dt.datetime
    ) -> Step:
        """Record a failed BMC request (`_failed`) and come back after its back-off; a Warning Event on the first
        failure in a row only (the condition carries the retries)."""
        if after["attempts"] == 1:
            _warn(self.client, obj, str(after["problem"]), str(after["message"]), now)
        return Step(_record(self.client, ref, before, after), _backoff(int(after["attempts"])))

    def _let_go(self, ref: kube.Ref, obj: Mapping[str, Any], before: Mapping[str, Any], now: dt.datetime) -> Step:
        """A Site deleted, or switched to the stick: its URL dead at once; the image ejected from the BMC the record
        names, then the finalizer removed. A deleted Site's failing eject is retried with back-off, then given up
        (`EJECT_ATTEMPTS`, or at once without its Secret) with a Warning Event; a live one's is retried."""
        seen = site.view(obj)
        deleting = bool(obj["metadata"].get("deletionTimestamp"))
        self.forget(seen.namespace, seen.name)
        if FINALIZER not in (obj["metadata"].get("finalizers") or []):
            return Step(False if deleting or not before else _record(self.client, ref, before, {}))
        held = _held_in(before)
        retry_at = status_mod.when(before.get("retryAt"))
        if held is not None and retry_at is not None and now < retry_at:  # backing off (an event woke this pass)
            return Step(False, (retry_at - now).total_seconds())
        if held is not None:
            try:
                self._eject(obj, held)
            except redfish.BmcError as exc:
                after = _failed(before, str(before.get("digest") or ""), exc, now)
                given_up = deleting and (
                    exc.problem is redfish.Problem.CREDENTIALS or int(after["attempts"]) >= EJECT_ATTEMPTS
                )
                if not given_up:
                    LOG.warning("site %s/%s: eject at the BMC: %s: %s", seen.namespace, seen.name, exc, exc.advice)
                    return self._retrying(ref, obj, before, after, now)
                message = (
                    f"the Site is deleted but the BMC could not be asked to eject its image ({exc}): if the BMC "
                    "still holds it, eject it there by hand; its URL answers 410"
                )
                LOG.warning("site %s/%s: %s", seen.namespace, seen.name, message)
                _warn(self.client, obj, site.Reason.EJECT_ABANDONED.value, message, now)
            else:
                LOG.info("site %s/%s: %s: its image was ejected", seen.namespace, seen.name,
                         "deleted" if deleting else "delivered by stick now")  # fmt: skip
        wrote = False if deleting else _record(self.client, ref, before, {})
        _finalized(self.client, ref, obj, hold=False)
        return Step(wrote)

    def step(self, namespace: str, name: str, now: dt.datetime) -> Step:
        ref = kube.Ref(self.sites, name, namespace)
        obj = self.client.find(ref)
        if obj is None:  # gone: its finalizer was let go (ejected, or given up), or it never held one
            self.forget(namespace, name)
            return Step(False)
        seen = site.view(obj)
        before = dict(seen.status.get(site.STATUS_DELIVERY) or {})
        spec = obj.get("spec")
        chosen = delivery.read(spec if isinstance(spec, Mapping) else {})[0]
        deleting = bool(obj["metadata"].get("deletionTimestamp"))
        if deleting or chosen.method is not delivery.Method.BMC or chosen.bmc is None:
            try:
                return self._let_go(ref, obj, before, now)
            except redfish.BmcError as exc:  # no BMC to eject from could even be reached (its CA, its login)
                after = _failed(before, str(before.get("digest") or ""), exc, now)
                return Step(_record(self.client, ref, before, after), _backoff(int(after["attempts"])))
        if self.serving is None:
            message = (
                "the controller runs without an image server (--image-server-address, --image-url-base): nothing "
                "can be served to this BMC; run it with them, or deliver this site by stick"
            )
            return Step(_record(self.client, ref, before, {"state": State.NO_IMAGE_SERVER.value, "message": message}))
        try:
            return self._advance(Pass(ref, obj, seen, chosen.bmc, before, now))
        except redfish.BmcError as exc:
            LOG.warning("site %s/%s: BMC %s: %s", namespace, name, exc.problem.value, exc)
            after = _failed(before, str(before.get("digest") or seen.media_digest), exc, now)
            if after["state"] == State.FAILED:
                self.forget(namespace, name)
                after["bmc"] = _raw_bmc(obj)  # an insert was tried there: a deletion ejects from it
            return self._retrying(ref, obj, before, after, now)

    def _wanted(self, obj: Mapping[str, Any]) -> str | None:
        """The digest to deliver: the Site's medium once its credential is issued for its current generation."""
        seen = site.view(obj)
        media = seen.condition(site.Condition.MEDIA_READY)
        if not media or media.get("status") != "True" or media.get("observedGeneration") != seen.generation:
            return None
        return seen.media_digest or None

    def _advance(self, here: Pass) -> Step:
        state, digest = here.before.get("state"), str(here.before.get("digest") or "")
        wanted = self._wanted(here.obj)
        retry_at = status_mod.when(here.before.get("retryAt"))
        if retry_at is not None and here.now < retry_at and (wanted in (None, digest)):
            return Step(False, (retry_at - here.now).total_seconds())
        if state == State.INSERTED:
            return self._while_inserted(here, digest, wanted)
        if wanted is None or here.read == wanted:
            return Step(False)  # not deliverable yet, or the node runs this medium already
        # once delivered (or timed out), never again on its own, not even for an edited Site: its node runs (or ran)
        # what it read, and an image inserted into a running server, perhaps restarted, is the owner's call
        redeliver = str(here.seen.annotations.get(REDELIVER) or "")
        done = state in (State.EJECTED, State.TIMED_OUT)
        if done and redeliver == str(here.before.get("redeliver") or ""):
            return Step(False)
        return self._inserted(here, wanted, here.before)

    def _while_inserted(self, here: Pass, digest: str, wanted: str | None) -> Step:
        """An inserted image: ejected once read, replaced when the Site changed, ejected at the deadline; else its
        downloads counted."""
        if here.read == digest:
            return self._ejected(here, read=True)
        if wanted is not None and wanted != digest:  # edited while inserted: the old one out, the new one in
            self._eject(here.obj, _held_in(here.before) or here.bmc)  # from where it is (the address may be new)
            self.forget(here.seen.namespace, here.seen.name)
            LOG.info("site %s/%s: the Site changed: ejected %s", here.seen.namespace, here.seen.name, digest)
            return self._inserted(here, wanted, here.before)
        deadline = status_mod.when(here.before.get("deadline"))
        if deadline is not None and here.now >= deadline:
            return self._ejected(here, read=False)
        self._regrant(here.obj, digest, int(here.before.get("downloads") or 0))
        after = {**here.before, "downloads": self._downloads(here.seen, here.before)}
        wrote = _record(self.client, here.ref, here.before, after)
        left = (deadline - here.now).total_seconds() if deadline else POLL
        return Step(wrote, max(0.5, min(POLL, left)))

    def _downloads(self, seen: site.View, before: Mapping[str, Any]) -> int:
        assert self.serving is not None
        granted = self.serving.grants.current(seen.namespace, seen.name)
        return granted.downloads if granted is not None else int(before.get("downloads") or 0)

    def _inserted(self, here: Pass, digest: str, recorded: Mapping[str, Any]) -> Step:
        assert self.serving is not None
        seen = here.seen
        _finalized(self.client, here.ref, here.obj, hold=True)  # before the BMC may hold anything
        try:
            self._insert(here.obj, here.bmc, digest, here.now)
        except redfish.BmcError:
            self.forget(seen.namespace, seen.name)
            raise
        deadline = here.now + dt.timedelta(seconds=self.serving.read_timeout)
        after = {
            "state": State.INSERTED.value,
            "digest": digest,
            "insertedAt": status_mod.iso(here.now),
            "deadline": status_mod.iso(deadline),
            "downloads": self._downloads(seen, {}),
            "redeliver": str(seen.annotations.get(REDELIVER) or ""),
            "bmc": _raw_bmc(here.obj),
        }
        LOG.info("site %s/%s: inserted %s (power %s)", seen.namespace, seen.name, digest, here.bmc.power)
        return Step(_record(self.client, here.ref, recorded, after), min(POLL, self.serving.read_timeout))

    def _ejected(self, here: Pass, *, read: bool) -> Step:
        seen, before = here.seen, here.before
        downloads = self._downloads(seen, before)
        self.forget(seen.namespace, seen.name)  # the URL answers 410 from now on, whatever the BMC says
        self._eject(here.obj, _held_in(before) or here.bmc)
        after = {
            **{k: v for k, v in before.items() if k in ("digest", "insertedAt", "deadline", "redeliver")},
            "state": (State.EJECTED if read else State.TIMED_OUT).value,
            "downloads": downloads,
            "ejectedAt": status_mod.iso(here.now),
        }
        if read:
            after["readAt"] = status_mod.iso(here.now)
        else:
            message = f"the node did not report {before.get('digest')} by {before.get('deadline')}: image ejected"
            _warn(self.client, here.obj, site.Reason.READ_TIMEOUT.value, message, here.now)
        LOG.info("site %s/%s: %s ejected (%s)", seen.namespace, seen.name, before.get("digest"), after["state"])
        wrote = _record(self.client, here.ref, before, after)
        _finalized(self.client, here.ref, here.obj, hold=False)  # the BMC holds nothing of it any more
        return Step(wrote)
