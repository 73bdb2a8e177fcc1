"""`snoreloc fleet controller`: where nodes reach the hub (flags, the Deployment's mounted ConfigMap directory, else
the controller's own API address and CA), and a hub URL that is not https refused as a usage error."""

from __future__ import annotations

import argparse
import io
import logging
import pathlib

import pytest
from snoreloc_fleet.verbs import controller as command

from snoreloc import errors


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_mounted_config_names_the_hub(tmp_path: pathlib.Path) -> None:
    (tmp_path / "url").write_text("https://api.hub.example.com:6443\n")
    (tmp_path / "ca.crt").write_bytes(b"HUB CA")
    assert command.hub_address(_args("--hub-config", str(tmp_path)), "https://10.0.0.1", b"OWN") == (
        "https://api.hub.example.com:6443",
        b"HUB CA",
    )


def test_flags_win_and_the_own_ca_fills_in(tmp_path: pathlib.Path) -> None:
    (tmp_path / "url").write_text("https://from-config:6443")
    args = _args("--hub-config", str(tmp_path), "--hub-url", "https://flag:6443")
    assert command.hub_address(args, "https://10.0.0.1", b"OWN") == ("https://flag:6443", b"OWN")


def test_without_either_the_controllers_own_address_is_used() -> None:
    assert command.hub_address(_args(), "https://127.0.0.1:6443", b"OWN") == ("https://127.0.0.1:6443", b"OWN")


def test_a_plain_http_hub_is_refused() -> None:
    with pytest.raises(errors.UsageError, match="https"):
        command.hub_address(_args("--hub-url", "http://hub:6443"), "https://own", b"")


def test_the_controllers_log_masks_credentials_and_escapes_controls() -> None:
    """An API refusal quotes a Site's field (issue 30): whatever logger says it, the log masks and escapes it."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()
    root.handlers[:] = []  # pytest's own handlers are not closed by the `force` of log_to
    try:
        command.log_to(stream)
        quoted = 'Invalid value: "fleet-user:s3cr3t-pw@registry.example" and a bell \a'
        logging.getLogger("snoreloc_fleet.controller.operator").warning("site fleet/s: %s", quoted)
        logging.getLogger("kopf.objects").info("an event")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    text = stream.getvalue()
    assert "s3cr3t-pw" not in text and "<redacted>@registry.example" in text
    assert "\a" not in text and "\\x07" in text
    assert "an event" not in text


def test_the_image_server_is_off_unless_asked_for_and_its_flags_are_checked(tmp_path: pathlib.Path) -> None:
    assert command.image_server(_args()) is None
    tls = ("--image-server-cert", "c.pem", "--image-server-key", "k.pem")
    given = command.image_server(
        _args("--image-server-address", "0.0.0.0:8443", "--image-url-base", "https://hub.example:8443", *tls)
    )
    assert given is not None and (given.host, given.port, given.base) == ("0.0.0.0", 8443, "https://hub.example:8443")
    assert (given.key_secret.namespace, given.key_secret.name) == ("snoreloc-fleet", "snoreloc-fleet-image-key")
    assert given.read_timeout == 7200.0
    wrong = {
        "HOST:PORT": ("--image-server-address", "8443", "--image-url-base", "https://h", *tls),
        "https": ("--image-server-address", "h:8443", "--image-url-base", "http://h", *tls),
        "TLS": ("--image-server-address", "h:8443", "--image-url-base", "https://h"),
        "NAMESPACE/NAME": ("--image-server-address", "h:1", "--image-url-base", "https://h", *tls,
                           "--image-key-secret", "../x"),
    }  # fmt: skip
    for says, argv in wrong.items():
        with pytest.raises(errors.UsageError, match=says):
            command.image_server(_args(*argv))
