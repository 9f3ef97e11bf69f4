"""Rule 2, eligibility: a pod goes only to a schedulable node (or a cordoned one whose
`node.kubernetes.io/unschedulable` taint it tolerates) whose labels match its node
selector and whose NoSchedule / NoExecute taints it tolerates.

`eligible(node, task)` is the plain predicate every engine calls: this rule's filters and
required node affinity's (`solver.rules.node_affinity`, which owns that meaning and judges
it in the checker) — so the eligibility classes of `solver.problem` carry both and no
engine can miss either.
PreferNoSchedule taints never exclude a node (they are a preference, as in kube-scheduler).

`check` judges each pod bound this cycle by this rule's own filters. Worked example: a pod whose
task selects `pool=infer` bound to a node labelled `pool=train` is one violation,
"node selector mismatch"; running pods are not judged (a taint added under them is
kubelet's business, not a placement's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.snapshot import Node, Snapshot, Taint, Task, Toleration
from solver.after import After
from solver.rules import node_affinity
from solver.violation import Violation

NAME = "eligibility"

REASON_UNSCHEDULABLE = "node unschedulable"
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
"""What a cordoned node stands for (kube-scheduler's NodeUnschedulable filter, and the taint
the node lifecycle controller puts on it): a pod that tolerates it — a DaemonSet's, a
drain helper's — may still go there."""
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


def _own_reason(node: Node, task: Task) -> str | None:
    """This rule's filters alone: what its `check` judges."""
    if node.unschedulable and not tolerates((UNSCHEDULABLE_TAINT,), task.tolerations):
        return REASON_UNSCHEDULABLE
    if not matches_selector(node.labels, task.node_selector):
        return REASON_SELECTOR
    if not tolerates(node.taints, task.tolerations):
        return REASON_TAINT
    return None


def ineligibility_reason(node: Node, task: Task) -> str | None:
    """None when `task`'s pods may go to `node`, else the reason constant of the first
    filter that fails: this rule's, then `node_affinity.REASON`."""
    reason = _own_reason(node, task)
    if reason is None and not node_affinity.matches(node, task.required_node_affinity):
        return node_affinity.REASON
    return reason


def eligible(node: Node, task: Task) -> bool:
    return ineligibility_reason(node, task) is None


def _explain(node: Node, task: Task, reason: str) -> str:
    if reason == REASON_UNSCHEDULABLE:
        return "is cordoned (unschedulable)"
    if reason == REASON_SELECTOR:
        labels, selector = dict(sorted(node.labels.items())), dict(sorted(task.node_selector.items()))
        return f"has labels {labels}, not the selector {selector}"
    untolerated = [t for t in node.taints if not tolerates((t,), task.tolerations)]
    names = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in untolerated)
    return f"has taint(s) {names} the pod does not tolerate"


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Each pod bound this cycle goes to a node this rule's filters admit (required node
    affinity is judged by its own rule, so one mistake stays one violation)."""
    violations: list[Violation] = []
    for bound in after.bound:
        reason = _own_reason(bound.node, bound.task)
        if reason is not None:
            violations.append(
                Violation(
                    rule=NAME,
                    subject=bound.pod.key,
                    message=(
                        f"pod {bound.pod.key} is bound to node {bound.node.name}, which "
                        f"{_explain(bound.node, bound.task, reason)} ({reason})"
                    ),
                )
            )
    return violations
