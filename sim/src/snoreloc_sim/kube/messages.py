"""The values the simulated kube-apiserver's layers pass each other: a parsed Request, a Response, Status bodies.

The HTTP layer (`server`) parses a Request and sends a Response; the resource semantics (`api`) and the hub's
front (`hub.front`) take one and return the other, so none of them touches a socket.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from snoreloc_sim.kube import model

Obj = dict[str, Any]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: bytes
    authorization: str = ""
    user_agent: str = ""
    accept: str = ""
    impersonate_user: str = ""
    client_cert: bytes = field(default=b"", repr=False)  # the TLS client certificate (DER), judged by `Front`

    @staticmethod
    def parse(method: str, target: str, headers: dict[str, str], body: bytes, client_cert: bytes = b"") -> Request:
        split = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        return Request(
            method=method,
            path=split.path.rstrip("/") or "/",
            query=query,
            content_type=headers.get("content-type", ""),
            body=body,
            authorization=headers.get("authorization", ""),
            user_agent=headers.get("user-agent", ""),
            accept=headers.get("accept", ""),
            impersonate_user=headers.get("impersonate-user", ""),
            client_cert=client_cert,
        )


@dataclass
class Response:
    code: int
    body: Obj | str | bytes  # an object (sent as JSON), plain text, or JSON already encoded
    warnings: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    stream: Iterator[Obj] | None = None


def status_body(error: model.ApiError) -> Obj:
    """The `Status` object kube-apiserver sends with a refusal."""
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error.message,
        "reason": error.reason,
        "code": error.code,
    }
    if not error.reason:
        del body["reason"]  # StatusReasonUnknown is "" and omitted, as for the 500 of a refused apply body
    details = dict(error.details)
    if error.causes:
        details["causes"] = list(error.causes)
    if details:
        body["details"] = details
    return body


def error_response(error: model.ApiError) -> Response:
    return Response(error.code, status_body(error))


def success_status(rtype: model.ResourceType, obj: Obj) -> Obj:
    meta = obj.get("metadata", {})
    details = {"name": meta.get("name", ""), "group": rtype.group, "kind": rtype.plural, "uid": meta.get("uid", "")}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def dry_run(request: Request) -> bool:
    """Whether the request asks for `dryRun=All` (validated and answered, never stored)."""
    return request.query.get("dryRun") == "All"
