"""Where each sub-group's status (`solver.sub_group_report`: started, placed/min, the domain
it landed in, why not) is written, and in what form.

- On a Volcano PodGroup, as the JSON of `SUB_GROUPS_ANNOTATION` in the same merge patch as
  the status (`controller.status.status_patch`): Volcano's PodGroup status has no field for
  sub-groups, and its CRD has no status subresource, so one patch of the main resource
  writes both at once, under the same write fencing (a leader that lost its Lease writes
  neither). An annotation rather than an invented status field: a structural schema prunes
  a field it does not declare (Volcano's own CRD would), while every API server keeps
  annotations; `kubectl get podgroup -o jsonpath` reads it. The PodGroup's condition
  message ends with the count (`solver.sub_group_report.summary`), so `kubectl describe`
  shows it without the JSON.
- Groups that exist only as pods (a LeaderWorkerSet's, a JobSet's): no object to annotate,
  so each pending pod's PodScheduled message names its sub-group (`controller.plan`).
- scheduler-plugins' PodGroup has no sub-groups; a Kubernetes Workload API PodGroup is read,
  not written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict

from solver.sub_group_report import SubGroupStatus

__all__ = ["SUB_GROUPS_ANNOTATION", "annotation_value", "read_annotation"]

SUB_GROUPS_ANNOTATION = "batchplace.io/sub-groups"


def annotation_value(statuses: Sequence[SubGroupStatus]) -> str:
    """The annotation's JSON: a list, one object per sub-group, keys in a fixed order (so an
    unchanged status compares equal and is not written again)."""
    return json.dumps([asdict(status) for status in statuses], separators=(",", ":"))


def read_annotation(value: str | None) -> tuple[SubGroupStatus, ...]:
    """The statuses an annotation holds; () when absent or not ours to read (edited by hand)."""
    if not value:
        return ()
    try:
        return tuple(SubGroupStatus(**item) for item in json.loads(value))
    except (ValueError, TypeError):
        return ()
