"""What the tests read back from the API server, with the official client: `kubectl get` in Python;
`http_get` for the controller's own HTTP side (`/readyz`, `/metrics`); and `stop_controllers`
for the controller processes a test starts."""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client as k8s


def lease_holder(coordination: k8s.CoordinationV1Api, lease: str, namespace: str) -> str | None:
    """The Lease's `holderIdentity` ("" once released), None while it does not exist."""
    try:
        return coordination.read_namespaced_lease(lease, namespace).spec.holder_identity
    except k8s.ApiException:
        return None


def wait_until(predicate: Callable[[], Any], *, timeout_s: float = 20.0, interval_s: float = 0.1, what: str = "") -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what or predicate}")
        time.sleep(interval_s)


def stop_controllers(*processes: subprocess.Popen[bytes], logs: Path, grace_s: float = 20.0) -> None:
    """SIGTERM every process, then wait `grace_s` for each to stop. One still running is
    killed before the test fails: a stuck replica left alive would go on binding pods in
    the session's API server under the tests that follow. The failure carries the end of
    each `*.log` in `logs`: a shutdown stuck past `batchplace.shutdown.STACKS_AFTER_S` has
    written every thread's stack there."""
    for process in processes:
        process.terminate()
    stuck = []
    for process in processes:
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
            stuck.append(process.args)
    assert not stuck, f"still running {grace_s:.0f} s after SIGTERM, killed: {stuck}; logs: {log_tails(logs, 6000)}"


def log_tails(directory: Path, chars: int) -> dict[str, str]:
    """The last `chars` characters of each `*.log` in `directory`, by file name: what a
    failing test that started processes shows of them."""
    return {path.name: path.read_text(errors="replace")[-chars:] for path in sorted(directory.glob("*.log"))}


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
