"""Lists in pages: `limit` and `continue`, with the token kube-apiserver issues and its 410 once it is too old.

Followed (kubernetes/kubernetes, staging/src/k8s.io/apiserver/pkg/storage/):
- `continue.go`, `EncodeContinue`/`DecodeContinue`: the token is base64url (no padding) of
  `{"v": "meta.k8s.io/v1", "rv": <list resourceVersion>, "start": "<key after the last item>"}`; a token that does
  not decode is a 400;
- `etcd3/store.go`, `GetList`: items come in key order (namespace, then name), `remainingItemCount` counts the rest;
  a token whose resourceVersion was compacted gives 410 Expired with the message below and a fresh token to go on
  inconsistently (`handleCompactedErrorForPaging`).
Difference: kube serves every page from the snapshot at the token's resourceVersion; here later pages read the
current objects after the start key, so an object created or deleted between pages shows up or disappears.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any, TypeVar

from snoreloc_sim.kube import model

Obj = dict[str, Any]
TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


def key_of(obj: Obj) -> str:
    """An object's key in the store's order: `namespace/name`."""
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def encode(rv: int, start: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": start}
    return base64.urlsafe_b64encode(json.dumps(token, separators=(",", ":")).encode()).decode().rstrip("=")


def decode(token: str) -> tuple[int, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if raw.get("v") != "meta.k8s.io/v1" or not isinstance(raw.get("rv"), int):
            raise ValueError("unknown continue token version")
        return int(raw["rv"]), str(raw["start"])
    except (ValueError, KeyError, TypeError, binascii.Error, AttributeError) as exc:
        raise model.ApiError(400, "BadRequest", f"invalid continue token: {exc}") from None


Item = TypeVar("Item")
Scan = Callable[[str, int], tuple[list[Item], int | None]]


def page(
    scan: Scan[Item], query: dict[str, str], rv: int, floor: int, key: Callable[[Item], str]
) -> tuple[list[Item], Obj]:
    """One page and the list metadata (resourceVersion, continue, remainingItemCount). `scan(start, limit)` gives
    the objects from key `start` on in key order (at most `limit`, all when 0) and how many keys follow them (None
    under a selector), as objects or their encodings; `key(item)` is an item's key (`namespace/name`); `rv` is the
    list's resourceVersion; `floor` the oldest version whose snapshot is still kept.
    A page costs its own objects, not the namespace's, as kube-apiserver's range reads: etcd3 `store.go` `GetList`
    asks etcd for `limit` keys from the continue key on, and the watch cache (`cacher/store_btree.go`,
    `btreeStore.ListPrefix`) ascends its btree from the continue key and stops after `limit`."""
    meta: Obj = {"resourceVersion": str(rv)}
    start = ""
    token = query.get("continue")
    if token:
        token_rv, start = decode(token)
        if token_rv < floor:
            fresh = encode(rv, start)
            raise model.ApiError(410, "Expired", TOO_OLD, details={"continue": fresh})
        meta["resourceVersion"] = str(token_rv)
    try:
        limit = max(int(query.get("limit") or 0), 0)
    except ValueError:
        raise model.ApiError(400, "BadRequest", f"invalid limit {query.get('limit')!r}") from None
    shown, rest = scan(start, limit + 1 if limit else 0)  # one more than asked: is there a next page?
    if not limit or len(shown) <= limit:
        return shown, meta
    shown = shown[:limit]
    meta["continue"] = encode(int(meta["resourceVersion"]), key(shown[-1]) + "\x00")
    if rest is not None:
        meta["remainingItemCount"] = rest + 1  # the extra one read ahead is not shown either
    return shown, meta
