"""The URL a BMC fetches a site's configuration image from: signed, expiring, and naming the medium it serves.

An image holds the site's pull secret and its reporting token, and a BMC fetches it without credentials of ours
(Redfish `InsertMedia` takes a URL; a BMC that can send a header or a client certificate is not the norm). So the
URL is the credential, and it is made to be a poor one to steal: it names the Site and the medium digest it was
made for, expires (`expires`, Unix seconds), and carries an HMAC-SHA256 of all of that under a key only the hub's
controller holds (a Secret it owns). IBIO's image URLs carry only an unguessable path, valid forever
(shared/research/frontier.md §1); ours are refused once expired, once the Site's medium changed, and once the
controller ejected the image (it forgets the Site's grant then).

`check` answers what the image server must say: 200, 403 (not a URL we made: a bad or missing signature, another
Site's path) or 410 (a URL we made that is no longer good: expired, stale digest, ejected). Reasons are for the log
and never quote the signature.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import urllib.parse
from dataclasses import dataclass
from enum import IntEnum

PATH_PREFIX = "/images"
SIGNATURE_BYTES = 32
KEY_BYTES = 32
_PATH = re.compile(
    rf"^{PATH_PREFIX}/(?P<namespace>[a-z0-9]([-a-z0-9]*[a-z0-9])?)/(?P<name>[a-z0-9]([-.a-z0-9]*[a-z0-9])?)"
    r"/(?P<digest>sha256-[0-9a-f]{64})\.iso$"
)


class Verdict(IntEnum):
    OK = 200
    FORBIDDEN = 403
    GONE = 410


@dataclass(frozen=True)
class Grant:
    """What one URL grants: one Site's image of one medium digest, until `expires` (Unix seconds)."""

    namespace: str
    name: str
    digest: str  # `sha256:<hex>`, as the controller records it in status.media.digest
    expires: int

    def path(self) -> str:
        return f"{PATH_PREFIX}/{self.namespace}/{self.name}/{self.digest.replace(':', '-')}.iso"

    def message(self) -> bytes:
        return f"{self.namespace}\n{self.name}\n{self.digest}\n{self.expires}".encode()


def sign(key: bytes, grant: Grant) -> str:
    return hmac.new(key, grant.message(), hashlib.sha256).hexdigest()


def url(base: str, key: bytes, grant: Grant) -> str:
    """`base` (the image server's https URL) + the grant's path, its expiry and signature."""
    query = urllib.parse.urlencode({"expires": str(grant.expires), "signature": sign(key, grant)})
    return f"{base.rstrip('/')}{grant.path()}?{query}"


@dataclass(frozen=True)
class Answer:
    verdict: Verdict
    reason: str
    grant: Grant | None = None


def parse(target: str) -> tuple[Grant, str] | None:
    """The grant and signature a request's target (path and query) claims; None when it is not one of ours."""
    split = urllib.parse.urlsplit(target)
    found = _PATH.match(split.path)
    query = urllib.parse.parse_qs(split.query, max_num_fields=4)
    expires, signature = query.get("expires", [""])[0], query.get("signature", [""])[0]
    if found is None or not expires.isdigit() or len(expires) > 12 or not re.fullmatch(r"[0-9a-f]{64}", signature):
        return None
    digest = found["digest"].replace("sha256-", "sha256:", 1)
    return Grant(found["namespace"], found["name"], digest, int(expires)), signature


def check(key: bytes, target: str, now: float, current_digest: str | None) -> Answer:
    """Whether the image server may serve `target` now; `current_digest` is the digest the Site's image is granted
    for at this moment (None: nothing is granted: the image was ejected, or the Site is gone)."""
    claimed = parse(target)
    if claimed is None:
        return Answer(Verdict.FORBIDDEN, "not an image URL of this hub")
    grant, signature = claimed
    if not hmac.compare_digest(sign(key, grant), signature):
        return Answer(Verdict.FORBIDDEN, f"bad signature for {grant.namespace}/{grant.name}")
    if now >= grant.expires:
        return Answer(Verdict.GONE, f"{grant.namespace}/{grant.name}: the URL expired", grant)
    if current_digest is None:
        return Answer(Verdict.GONE, f"{grant.namespace}/{grant.name}: no image is granted (ejected)", grant)
    if current_digest != grant.digest:
        return Answer(Verdict.GONE, f"{grant.namespace}/{grant.name}: the URL names an older medium", grant)
    return Answer(Verdict.OK, f"{grant.namespace}/{grant.name}: served", grant)
