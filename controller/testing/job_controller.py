"""A Volcano job controller stand-in for a worker cluster without one: vcjobs → PodGroup and pods.

What a worker's Volcano job controller does first with a Job the manager copied there
(`controller.fleet_manager`): make its PodGroup and its pods, expanded as the seed does
(`controller.testing.seed.vcjob_objects`, itself `models.loaders`' expansion). `expand()`
does it once for each vcjob that has no PodGroup yet; `run` every `interval_s` until stopped.

Not promised: the rest of Volcano's job lifecycle (restarts, policies, status); the
manager reads the PodGroup and pods, not the Job's status.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from controller.errors import ApiError, Conflict
from controller.kinds import VCJOBS, VOLCANO_PODGROUPS
from controller.testing.seed import vcjob_objects
from models.errors import SnapshotError
from models.loaders.keys import VOLCANO_JOB_NAME_KEY

__all__ = ["JobControllerStandIn"]

log = logging.getLogger(__name__)


class JobControllerStandIn:
    def __init__(self, client: Any) -> None:
        self._client = client

    def expand(self) -> list[str]:
        """PodGroup and pods for each vcjob without them; returns the `ns/name` of each job expanded."""
        groups = {
            (g["metadata"]["namespace"], (g["metadata"].get("labels") or {}).get(VOLCANO_JOB_NAME_KEY))
            for g in self._client.list(VOLCANO_PODGROUPS).items
        }
        expanded = []
        for job in self._client.list(VCJOBS).items:
            metadata = job["metadata"]
            if (metadata["namespace"], metadata["name"]) in groups or metadata.get("deletionTimestamp"):
                continue
            scheduler = (job.get("spec") or {}).get("schedulerName") or "volcano"
            try:
                objects = vcjob_objects(job, namespace=metadata["namespace"], scheduler_name=scheduler)
            except SnapshotError as error:
                log.warning("vcjob %s/%s not expanded: %s", metadata["namespace"], metadata["name"], error)
                continue
            for obj in objects:
                if obj.kind == VCJOBS:
                    continue
                try:
                    self._client.create(obj.kind, obj.namespace, obj.body)
                except Conflict:
                    pass
            expanded.append(f"{metadata['namespace']}/{metadata['name']}")
        return expanded

    def run(self, stop: threading.Event, *, interval_s: float = 0.2) -> None:
        while not stop.is_set():
            try:
                self.expand()
            except ApiError as error:
                log.debug("job controller stand-in: %s", error)
            stop.wait(interval_s)
