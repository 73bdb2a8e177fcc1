"""The Site's input rules by class, generated (seeded, deterministic): names that go into an API path, keys, the
medium's file names, and the CRD's patterns agreeing with the controller's check (issue 30, "Names are names").

For every generated name: either `siteinput` refuses it, or the path the kube client builds from it is already
normal (`..` cannot climb out) and stays in the Site's namespace. The CRD's pattern (matched with RE2, as the hub
simulator and kube-apiserver match it) accepts exactly the names the controller accepts. Every accepted file name
lays out inside the medium's directory.
"""

from __future__ import annotations

import pathlib
import posixpath
import random

import pytest
import re2  # type: ignore[import-untyped]  # what the hub simulator matches CRD patterns with (Go's syntax)
from snoreloc_fleet.resource import site, siteinput

from snoreloc.adapters import kube
from snoreloc.siteconfig import files, medium

SEED = 30
CASES = 600
# Pieces hostile names are made of: path tricks, encodings, case, controls, and the characters names are made of.
PIECES = ("..", "/", "%2f", "%2F", "%2e%2e", ".", "-", "a", "z", "0", "9", "A", "Z", "_", " ", "\x00", "\x07",
          "\n", "\\", "kube-system", "secrets", "\u00e9", "\u202e", "@", ":", "?", "#", "x" * 60)  # fmt: skip


def _names(rng: random.Random, count: int) -> list[str]:
    names = ["", "a" * 253, "a" * 254, "../../kube-system/secrets/victim", "..%2f..%2fkube-system", "Pull-Secret"]
    while len(names) < count:
        names.append("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8))))
    return names


NAMES = _names(random.Random(SEED), CASES)


def _crd_pattern(field: str) -> tuple[str, int]:
    ref = site.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    schema = ref["files"]["additionalProperties"]["properties"]["secretKeyRef"]["properties"][field]
    return str(schema["pattern"]), int(schema["maxLength"])


def test_an_accepted_name_makes_a_normal_path_inside_the_sites_namespace() -> None:
    accepted = 0
    for name in NAMES:
        if siteinput.object_name_problem(name) is not None:
            continue
        accepted += 1
        path = kube.Ref(kube.SECRETS, name, "fleet").path()
        assert posixpath.normpath(path) == path, name
        assert path == f"/api/v1/namespaces/fleet/secrets/{name}"
    assert 20 <= accepted < CASES - 100, "the generator makes both kinds"


@pytest.mark.parametrize(("field", "check"), [("name", siteinput.object_name_problem), ("key", siteinput.key_problem)])
def test_the_crd_accepts_exactly_what_the_controller_accepts(field: str, check: object) -> None:
    pattern, longest = _crd_pattern(field)
    assert callable(check)
    for name in NAMES:
        admitted = len(name) <= longest and bool(re2.search(pattern, name))
        assert admitted == (check(name) is None), repr(name)


def test_a_refusal_never_quotes_the_name() -> None:
    for name in NAMES:
        for check in (siteinput.object_name_problem, siteinput.key_problem, medium.file_name_problem):
            problem = check(name)
            if problem is not None and len(name) > 2:
                assert name not in problem


def test_keys_follow_kube_apiservers_config_key_rule() -> None:
    for key in (".dockerconfigjson", "tls.crt", "a..b", ".a", "x-y_z.0"):
        assert siteinput.key_problem(key) is None, key
    for key in (".", "..", "..a", "a/b", "", "a b", "k" * 254):
        assert siteinput.key_problem(key) is not None, key


def test_an_accepted_file_name_lays_out_inside_the_medium(tmp_path: pathlib.Path) -> None:
    base = tmp_path.resolve()
    accepted = 0
    for name in NAMES:
        if medium.file_name_problem(name) is not None:
            continue
        accepted += 1
        target = (base / name).resolve()
        assert target.is_relative_to(base) and target != base, name
        assert "\x00" not in name and not name.startswith("/")
        files.resolve(str(base), name)  # and the node reads it (its rule is part of the medium's): no RefError
    assert accepted >= 20


def test_a_file_and_a_directory_of_the_same_name_clash() -> None:
    assert medium.name_clashes(["a", "a/b", "ab/c", "b"]) == [("a", "a/b")]
    assert medium.name_clashes(["certs/api.crt", "certs/api.key", "pull-secret.json"]) == []


def test_deep_and_large_site_configs_are_refused_without_recursion() -> None:
    deep: object = "x"
    for _ in range(5000):  # far past Python's recursion limit: the walk must not recurse
        deep = {"a": deep}
    wide = {"k": ["v" * 1000] * 1500}
    many = {"k": list(range(siteinput.MAX_VALUES + 1))}
    for value, words in ((deep, "nested deeper"), (wide, "bytes"), (many, "values")):
        problems = siteinput.spec_problems({"metadata": {"name": "s"}, "spec": {"siteConfig": value}})
        assert [p.path for p in problems] == ["spec.siteConfig"]
        assert words in problems[0].message
    fitting: object = "x"
    for _ in range(siteinput.MAX_DEPTH - 1):
        fitting = {"a": fitting}
    assert siteinput.spec_problems({"metadata": {"name": "s"}, "spec": {"siteConfig": fitting}}) == []
