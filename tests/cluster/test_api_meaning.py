"""What an API answer means, not its status class: the 500 with which kube-apiserver refuses an apply body that
does not fit its type is the object's fault (raised at once, never retried); every other 5xx is the server's
(retried). The same classification over HTTPS is in test_manifests (a manifest refused with exit 65 at once)."""

from __future__ import annotations

import json

import pytest

from snoreloc.adapters import kube

TYPED = (
    "failed to create typed patch object (site/typo; /v1, Kind=ConfigMap): .data.store: expected string, got "
    "&value.valueUnstructured{Value:412}"
)


def _status(code: int, message: str, reason: str = "") -> bytes:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}
    return json.dumps({**body, "reason": reason} if reason else body).encode()


@pytest.mark.parametrize(
    ("code", "body", "refused"),
    [
        (500, _status(500, TYPED), True),  # structuredmerge.go Apply, answered by ErrorToAPIStatus
        (500, _status(500, "Internal error occurred: etcdserver: request timed out", "InternalError"), False),
        (503, _status(503, "the kube-apiserver is restarting", "ServiceUnavailable"), False),
        (500, b"<html>bad gateway</html>", False),  # not a Status: the server's trouble
        (502, _status(502, TYPED), False),  # only kube-apiserver's own 500 carries that refusal
    ],
    ids=["typed-patch", "etcd-timeout", "restarting", "not-json", "proxy-502"],
)
def test_a_refused_apply_body_is_told_from_a_server_in_trouble(code: int, body: bytes, refused: bool) -> None:
    assert (kube.refused_content(code, body) is not None) is refused
