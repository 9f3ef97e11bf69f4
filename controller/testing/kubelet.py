"""A kubelet stand-in for a control plane without nodes: what the tests and the live demo
do in the kubelet's place.

- `mark_running`: a pod bound to a node (`spec.nodeName`) still `Pending` gets
  `status.phase: Running`, a start time and Ready conditions (through `pods/status`, as a
  kubelet writes it). Its PodScheduled condition is left as the binding wrote it: a kubelet
  does not touch it, and the controller's repair reads "bound last" from its time.
- `finish_terminating`: a pod being deleted (an eviction sets `deletionTimestamp`) is
  removed for good (`gracePeriodSeconds: 0`), as a kubelet does once its containers stop.
- `run`: both, every `interval_s`, until stopped.

It talks through the controller's edge client (`controller.kube.KubeClient`) with whatever
credentials it was built with (the tests use the admin token).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from controller.errors import ApiError, NotFound
from controller.kinds import PODS
from controller.timing import rfc3339

__all__ = ["KubeletStandIn"]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


class KubeletStandIn:
    def __init__(self, client: Any, *, namespace: str | None = None) -> None:
        self._client = client
        self._namespace = namespace

    def _pods(self) -> list[JsonObject]:
        return list(self._client.list(PODS, namespace=self._namespace).items)

    def mark_running(self, accept: Callable[[JsonObject], bool] = lambda pod: True) -> list[str]:
        """Bound, Pending pods → Running. Returns the `ns/name` of each pod it started."""
        started = []
        now = rfc3339(datetime.now(timezone.utc))
        for pod in self._pods():
            spec, status, metadata = pod.get("spec") or {}, pod.get("status") or {}, pod.get("metadata") or {}
            if not spec.get("nodeName") or status.get("phase") != "Pending" or metadata.get("deletionTimestamp"):
                continue
            if not accept(pod):
                continue
            body = {
                "status": {
                    "phase": "Running",
                    "startTime": now,
                    "hostIP": "127.0.0.1",
                    "conditions": [
                        {"type": condition, "status": "True", "lastTransitionTime": now}
                        for condition in ("Initialized", "ContainersReady", "Ready")
                    ],
                }
            }
            try:
                self._client.patch(PODS, metadata["namespace"], metadata["name"], body, subresource="status", strategic=True)
                started.append(f"{metadata['namespace']}/{metadata['name']}")
            except NotFound:
                continue
        return started

    def finish_terminating(self) -> list[str]:
        """Pods with a deletionTimestamp are deleted at once. Returns those removed."""
        removed = []
        for pod in self._pods():
            metadata = pod.get("metadata") or {}
            if not metadata.get("deletionTimestamp"):
                continue
            try:
                self._client.delete(PODS, metadata["namespace"], metadata["name"], grace_period_s=0)
                removed.append(f"{metadata['namespace']}/{metadata['name']}")
            except NotFound:
                continue
        return removed

    def run(self, stop: threading.Event, *, interval_s: float = 0.5) -> None:
        while not stop.is_set():
            try:
                self.mark_running()
                self.finish_terminating()
            except ApiError as error:
                log.debug("kubelet stand-in: %s", error)
            stop.wait(interval_s)
