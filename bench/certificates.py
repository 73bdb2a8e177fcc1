"""Benchmark 5: how long issuing the API and ingress serving certificates takes, EC P-256 against RSA 2048.

The relocation issues two serving certificates (API: `api.<domain>` + `api-int.<domain>`; ingress:
`*.apps.<domain>` + `apps.<domain>`) on the node, on the critical path before the first rollout starts. The
default key (EC P-256) must not add seconds; RSA 2048 key generation is a prime search whose time varies widely,
so both are measured side by side, interleaved, and the worst case is reported next to the median.

Run: `.venv/bin/python bench/certificates.py [--repetitions N]`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common

from snoreloc.pki import certs

NAME = "certificates"
DOMAIN = "site-17.edge.example.com"
KEY_TYPES = ("ec-p256", "rsa-2048")
SIGNER_KEY = "rsa-2048"  # the cluster's own signers (loadbalancer-serving-signer, router-ca) are RSA 2048
CERTIFICATES = {
    "api": (f"api.{DOMAIN}", f"api-int.{DOMAIN}"),
    "ingress": (f"*.apps.{DOMAIN}", f"apps.{DOMAIN}"),
}
DEFAULT_LIMIT_S = 1.0  # "must not add seconds": both certificates, worst case, under one second


def _issue_seconds(signer: tuple[bytes, bytes], names: Sequence[str], key: str, now: dt.datetime) -> float:
    started = time.perf_counter()
    certs.issue_serving(signer[0], signer[1], names, key=key, now=now)
    return time.perf_counter() - started


def _signer_load_seconds(signer: tuple[bytes, bytes]) -> float:
    started = time.perf_counter()
    certs.load_key(signer[1])
    return time.perf_counter() - started


def _one_round(signer: tuple[bytes, bytes], key: str, now: dt.datetime) -> dict[str, float]:
    times = {name: _issue_seconds(signer, names, key, now) for name, names in CERTIFICATES.items()}
    times["both"] = times["api"] + times["ingress"]
    times["signer_key_load"] = _signer_load_seconds(signer)  # part of each issue: the RSA key's consistency check
    return times


def _rounds(repetitions: int, now: dt.datetime) -> dict[str, list[dict[str, float]]]:
    signer = certs.issue_ca("bench-signer", key=SIGNER_KEY, now=now)
    rounds: dict[str, list[dict[str, float]]] = {key: [] for key in KEY_TYPES}
    for repetition in range(repetitions):
        order = KEY_TYPES if repetition % 2 == 0 else tuple(reversed(KEY_TYPES))  # interleaved, alternating
        for key in order:
            rounds[key].append(_one_round(signer, key, now))
    return rounds


def _per_key(samples: list[dict[str, float]]) -> dict[str, Any]:
    parts = (*CERTIFICATES, "both", "signer_key_load")
    return {part: common.summary([sample[part] for sample in samples]) for part in parts}


def measure(repetitions: int = 20) -> dict[str, Any]:
    """Interleaved timings of both certificates per key type, and the RSA/EC ratio, as a result document."""
    rounds = _rounds(repetitions, dt.datetime.now(dt.UTC))
    per_key = {key: _per_key(samples) for key, samples in rounds.items()}
    default_worst = per_key["ec-p256"]["both"]["max"]
    results = {
        "signer_key": SIGNER_KEY,
        "names": {name: list(names) for name, names in CERTIFICATES.items()},
        "repetitions": repetitions,
        "seconds": per_key,
        "rsa_over_ec_median": per_key["rsa-2048"]["both"]["median"] / per_key["ec-p256"]["both"]["median"],
    }
    targets = {"default_ec_p256_both_certificates_worst_s": common.target(default_worst, DEFAULT_LIMIT_S, at_most=True)}
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    seconds = payload["results"]["seconds"]
    lines = [f"{'key':<10} {'api ms':>9} {'ingress ms':>11} {'both ms':>9} {'worst ms':>9}"]
    for key, parts in seconds.items():
        lines.append(
            f"{key:<10} {parts['api']['median'] * 1e3:>9.2f} {parts['ingress']['median'] * 1e3:>11.2f} "
            f"{parts['both']['median'] * 1e3:>9.2f} {parts['both']['max'] * 1e3:>9.2f}"
        )
    lines.append(f"RSA 2048 / EC P-256 (median, both): {payload['results']['rsa_over_ec_median']:.1f}x")
    load = seconds["ec-p256"]["signer_key_load"]["median"]
    lines.append(f"of which loading the {SIGNER_KEY} signer key, per certificate: {load * 1e3:.1f} ms")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.repetitions)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
