"""What each sub-group of a PodGroup (a gang inside the gang: a shard, a serving replica, a
prefill or decode role) says after a cycle. Pure: values in, values out.

Per sub-group: whether it started (its pods bound or running reach its minimum), its pods
placed and its minimum, the domain it landed in — the closest HyperNode holding all its
placed pods (`solver.rules.topology.common_domain`), the node itself when they share one,
none when nothing is placed — and, while it has not started, why (the first of its PodGroup's
reasons that names it, else the PodGroup's first reason).

Where it is written, and why there:
- On a Volcano PodGroup, as the JSON of `SUB_GROUPS_ANNOTATION` in the same merge patch as
  the status (`controller.status.status_patch`): Volcano's PodGroup status has no field for
  sub-groups, and its CRD has no status subresource, so one patch of the main resource
  writes both at once, under the same write fencing (a leader that lost its Lease writes
  neither). An annotation rather than an invented status field: a structural schema would
  prune a field it does not declare (Volcano's own CRD would), while annotations are kept
  by every API server; `kubectl get podgroup -o jsonpath` and the dashboard read it. The
  PodGroup's condition message ends with the count (`summary`), so `kubectl describe`
  shows it without the JSON.
- Groups that exist only as pods (a LeaderWorkerSet's, a JobSet's): no object to annotate,
  so each pending pod's PodScheduled message names its sub-group (`controller.plan`).
- scheduler-plugins' PodGroup has no sub-groups; a Kubernetes Workload API PodGroup's status
  is the API server's business until batchplace writes its conditions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from models.placement import Bind
from models.snapshot import PodGroup, Snapshot
from solver.rules.gang import sub_group_minimum, sub_group_pods
from solver.rules.topology import common_domain

__all__ = ["SUB_GROUPS_ANNOTATION", "SubGroupStatus", "sub_group_statuses", "annotation_value", "summary", "read_annotation"]

SUB_GROUPS_ANNOTATION = "batchplace.io/sub-groups"
ANY_TIER = 1 << 30  # a tier above every HyperNode's: the domain is the closest whatever its tier


@dataclass(frozen=True)
class SubGroupStatus:
    name: str
    policy: str
    started: bool
    placed: int  # its pods bound or running after the cycle
    minimum: int  # its pods that must be placed together for it to start
    domain: str | None  # the closest HyperNode (or the one node) holding its placed pods
    reason: str = ""  # why it has not started; "" once started


def sub_group_statuses(
    snapshot: Snapshot, group: PodGroup, binds: Iterable[Bind], reasons: Sequence[str]
) -> tuple[SubGroupStatus, ...]:
    """Each sub-group of `group` after its running pods stay and `binds` land, in the
    PodGroup's order. Example: decode-0 (min 4) with 4 pods bound on rack r1's nodes →
    started, placed 4, domain "r1"; decode-1 with none → not started, its reason."""
    bound_node = {bind.pod: bind.node for bind in binds}
    members = sub_group_pods(snapshot, group)
    statuses = []
    for sub in group.sub_groups:
        nodes = [
            bound_node.get(pod.key) or pod.node
            for pod in members.get(sub.name, ())
            if pod.key in bound_node or (pod.phase == "running" and pod.node is not None)
        ]
        started = len(nodes) >= sub_group_minimum(sub)
        statuses.append(
            SubGroupStatus(
                name=sub.name,
                policy=sub.policy,
                started=started,
                placed=len(nodes),
                minimum=sub_group_minimum(sub),
                domain=common_domain(snapshot, [n for n in nodes if n is not None], ANY_TIER),
                reason="" if started else _reason_for(sub.name, reasons),
            )
        )
    return tuple(statuses)


def _reason_for(name: str, reasons: Sequence[str]) -> str:
    """The first reason naming sub-group `name`, else the PodGroup's first, else ""."""
    for reason in reasons:
        if f"subgroup {name} " in reason or f"subgroup {name}:" in reason:
            return str(reason)
    return str(reasons[0]) if reasons else ""


def annotation_value(statuses: Sequence[SubGroupStatus]) -> str:
    """The annotation's JSON: a list, one object per sub-group, keys in a fixed order (so an
    unchanged status compares equal and is not written again)."""
    return json.dumps([asdict(status) for status in statuses], separators=(",", ":"))


def read_annotation(value: str | None) -> tuple[SubGroupStatus, ...]:
    """The statuses an annotation holds; () when absent or not ours to read (edited by hand)."""
    if not value:
        return ()
    try:
        items = json.loads(value)
        return tuple(SubGroupStatus(**item) for item in items)
    except (ValueError, TypeError):
        return ()


def summary(statuses: Sequence[SubGroupStatus]) -> str:
    """"sub-groups: 3 of 4 started" — what the PodGroup's condition message ends with."""
    started = sum(1 for status in statuses if status.started)
    return f"sub-groups: {started} of {len(statuses)} started"
