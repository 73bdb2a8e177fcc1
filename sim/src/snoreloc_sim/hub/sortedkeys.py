"""Custom resources stored and served with their keys sorted, as a real kube-apiserver answers them.

apiextensions-apiserver keeps a custom resource as `unstructured.Unstructured` (a `map[string]interface{}`;
kubernetes `staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/etcd.go`), and Go's
`encoding/json` writes a map with its keys sorted ("The map keys are sorted", `encoding/json` `Marshal`): what
etcd holds, what a GET, a list, a watch event and a write's answer carry, metadata included, has every mapping's
keys in byte order, whatever order the client sent. Built-in kinds (CRDs among them) are Go structs, encoded in
their fields' order, which the simulator's built-in kinds do not model key by key: they keep the order they were
written in. Issue 34 saw kube-apiserver 1.36 return Sites so, their `spec.siteConfig` no longer in the owner's
order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from snoreloc_sim.kube import model

Obj = dict[str, Any]


def sorted_keys(value: Any) -> Any:
    """`value` with every mapping's keys sorted (by their UTF-8 bytes, as Go compares strings), at any depth."""
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value, key=lambda k: str(k).encode())}
    if isinstance(value, list):
        return [sorted_keys(item) for item in value]
    return value


def for_custom_resources(is_builtin: Callable[[model.ResourceType], bool]) -> Callable[[model.ResourceType, Obj], Obj]:
    """The store's `shape` hook: custom resources sorted, built-in kinds kept as written."""

    def shape(rtype: model.ResourceType, obj: Obj) -> Obj:
        if is_builtin(rtype):
            return obj
        result: Obj = sorted_keys(obj)
        return result

    return shape
