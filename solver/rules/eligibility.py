"""Rule 2, eligibility: a pod goes only to a schedulable node whose labels match its node
selector and whose NoSchedule / NoExecute taints it tolerates.

`eligible(node, task)` is the plain predicate every engine and the checker call.
PreferNoSchedule taints never exclude a node (they are a preference, as in kube-scheduler).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.snapshot import Node, Taint, Task, Toleration

NAME = "eligibility"

REASON_UNSCHEDULABLE = "node unschedulable"
REASON_SELECTOR = "node selector mismatch"
REASON_TAINT = "untolerated taint"


def matches_selector(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def _tolerated(taint: Taint, toleration: Toleration) -> bool:
    if toleration.effect is not None and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return toleration.key is None or toleration.key == taint.key
    return toleration.key == taint.key and toleration.value == taint.value


def tolerates(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """True when every NoSchedule/NoExecute taint is tolerated by some toleration."""
    return all(
        taint.effect == "PreferNoSchedule" or any(_tolerated(taint, t) for t in tolerations) for taint in taints
    )


def ineligibility_reason(node: Node, task: Task) -> str | None:
    """None when `task`'s pods may go to `node`, else the reason constant."""
    if node.unschedulable:
        return REASON_UNSCHEDULABLE
    if not matches_selector(node.labels, task.node_selector):
        return REASON_SELECTOR
    if not tolerates(node.taints, task.tolerations):
        return REASON_TAINT
    return None


def eligible(node: Node, task: Task) -> bool:
    return ineligibility_reason(node, task) is None
