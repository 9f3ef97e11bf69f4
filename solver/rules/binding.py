"""Well-formedness of a placement: every bind and eviction names real things, once.

Rule: a bind names a pod that exists and is pending, a node that exists, and distinct GPU
indices that node has, each pod at most once; an eviction names a pod that exists and
is running, on the node it runs on, each pod at most once; no pod is bound and evicted.

Worked example: binding `ns/a-0` to `n1` with gpus `(2, 2)` when `n1` has devices 0–7 is
one violation ("lists GPU 2 twice"); binding it again to `n2` is a second ("bound twice").

Everything the other rules count goes through `solver.after`, which leaves out what
this rule rejects, so a malformed entry is reported here and only here.
"""

from __future__ import annotations

from collections import Counter

from models.snapshot import Snapshot
from solver.after import After
from solver.violation import Violation

__all__ = ["NAME", "check"]

NAME = "binding"


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []

    def report(subject: str, message: str) -> None:
        violations.append(Violation(rule=NAME, subject=subject, message=message))

    bind_counts = Counter(bind.pod for bind in after.placement.binds)
    for pod_key, count in sorted(bind_counts.items()):
        if count > 1:
            report(pod_key, f"pod {pod_key} is bound {count} times; a pod is bound at most once")
    for bind in after.placement.binds:
        pod = snapshot.pod_by_key.get(bind.pod)
        node = snapshot.node_by_name.get(bind.node)
        if pod is None:
            report(bind.pod, f"bind of pod {bind.pod}, which the snapshot does not list")
        elif pod.phase != "pending":
            report(bind.pod, f"bind of pod {bind.pod}, which is already {pod.phase} on node {pod.node}")
        if node is None:
            report(bind.pod, f"pod {bind.pod} is bound to node {bind.node}, which the snapshot does not list")
            continue
        repeated = sorted(i for i, n in Counter(bind.gpus).items() if n > 1)
        if repeated:
            report(bind.pod, f"pod {bind.pod} lists GPU {repeated} more than once on node {node.name}")
        unknown = sorted(set(i for i in bind.gpus if i not in node.gpu_by_index))
        if unknown:
            report(
                bind.pod,
                f"pod {bind.pod} is bound to GPU {unknown} of node {node.name}, "
                f"which has {len(node.gpus)} devices {sorted(node.gpu_by_index)}",
            )

    eviction_counts = Counter(eviction.pod for eviction in after.placement.evictions)
    for pod_key, count in sorted(eviction_counts.items()):
        if count > 1:
            report(pod_key, f"pod {pod_key} is evicted {count} times; a pod is evicted at most once")
    for eviction in after.placement.evictions:
        pod = snapshot.pod_by_key.get(eviction.pod)
        if pod is None:
            report(eviction.pod, f"eviction of pod {eviction.pod}, which the snapshot does not list")
        elif pod.phase != "running":
            report(eviction.pod, f"eviction of pod {eviction.pod}, which is {pod.phase}, not running")
        elif pod.node != eviction.node:
            report(eviction.pod, f"eviction of pod {eviction.pod} names node {eviction.node}; it runs on {pod.node}")

    for pod_key in sorted(set(bind_counts) & set(eviction_counts)):
        report(pod_key, f"pod {pod_key} is both bound and evicted")
    return violations
