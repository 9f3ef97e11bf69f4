"""What the tests read back from the API server, with the official client: `kubectl get` in Python;
and `http_get` for the controller's own HTTP side (`/readyz`, `/metrics`)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s


def wait_until(predicate: Callable[[], Any], *, timeout_s: float = 20.0, interval_s: float = 0.1, what: str = "") -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what or predicate}")
        time.sleep(interval_s)


def bound(core: k8s.CoreV1Api, namespace: str) -> dict[str, str]:
    """pod name → node, for the namespace's pods that have a node."""
    pods = core.list_namespaced_pod(namespace).items
    return {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}


def pod_names(core: k8s.CoreV1Api, namespace: str) -> list[str]:
    return sorted(p.metadata.name for p in core.list_namespaced_pod(namespace).items)


def volcano_pod_group(custom: k8s.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    return custom.get_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups", name)


def pg_status(custom: k8s.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    return volcano_pod_group(custom, namespace, name).get("status") or {}


def xk8s_status(custom: k8s.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    """The status of a scheduler-plugins PodGroup."""
    group = custom.get_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups", name)
    return group.get("status") or {}


def condition(status: dict[str, Any]) -> dict[str, Any]:
    conditions = status.get("conditions") or [{}]
    return conditions[-1]


def events(core: k8s.CoreV1Api, namespace: str, *, name: str | None = None, reason: str | None = None) -> list[k8s.CoreV1Event]:
    found = core.list_namespaced_event(namespace).items
    return [
        e for e in found
        if (name is None or e.involved_object.name == name) and (reason is None or e.reason == reason)
    ]


def http_get(url: str) -> tuple[int, bytes]:
    """(status, body); (0, b"") while nothing listens yet."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, OSError):
        return 0, b""
