"""Rule: a pod with scheduling gates is never bound.

`spec.schedulingGates` (GA in Kubernetes 1.30) says a pod is not ready to be scheduled:
kube-scheduler keeps it out of its queue (`SchedulingGated`) and the API server refuses to
bind it while a gate remains. Kueue and many operators hold pods this way, and lift the
gates one pod at a time. So a gated pod is pending, counts toward nothing, and its
PodGroup's reason names the gates until they are gone; the next cycle after the last gate
goes places it as any pending pod.

Engines never see a gated pod: `solver.problem` leaves gated pods out of each PodGroup's
pending pods (`GroupFacts.pending`), the one place pending pods enter every engine, and
counts them apart (`GroupFacts.gated`), so the gang rule judges the rest of the gang on
the pods that may be placed. The checker judges the placement on its own here.

Worked example: `ns/train-1` gated by `example.com/quota-check`; binding it to `n1` is
one violation ("pod ns/train-1 is bound to node n1, but it waits for scheduling gate
example.com/quota-check …"); its PodGroup's reason reads "gated: waiting for
example.com/quota-check".
"""

from __future__ import annotations

from models.snapshot import Pod, PodGroup, PodGroupKey, Snapshot
from solver.after import After
from solver.memo import memoized
from solver.violation import Violation

__all__ = ["NAME", "check", "is_gated", "gates_of"]

NAME = "gated"


def is_gated(pod: Pod) -> bool:
    """A pending pod with a scheduling gate left: not to be placed this cycle."""
    return pod.phase == "pending" and bool(pod.scheduling_gates)


def gates_of(snapshot: Snapshot, group: PodGroup) -> tuple[str, ...]:
    """The gates `group`'s pending pods wait for, each once, sorted (pods of one PodGroup may
    carry different ones); () when none is gated."""
    if group.key not in _gated_groups(snapshot):
        return ()  # most PodGroups: asked of every one each cycle, answered without reading its pods
    pods = snapshot.pods_by_group.get(group.key, ())
    return tuple(sorted({gate for pod in pods if is_gated(pod) for gate in pod.scheduling_gates}))


def _gated_groups(snapshot: Snapshot) -> frozenset[PodGroupKey]:
    """The PodGroups with a gated pod, from one pass over the pods (once per snapshot)."""
    return memoized(
        snapshot,
        ("gated_groups",),
        lambda: frozenset(pod.pod_group for pod in snapshot.pods if pod.pod_group is not None and is_gated(pod)),
    )


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations = []
    for bind in after.placement.binds:
        pod = snapshot.pod_by_key.get(bind.pod)
        if pod is not None and is_gated(pod):
            gates = ", ".join(pod.scheduling_gates)
            noun = "gate" if len(pod.scheduling_gates) == 1 else "gates"
            violations.append(
                Violation(
                    rule=NAME,
                    subject=bind.pod,
                    message=f"pod {bind.pod} is bound to node {bind.node}, but it waits for scheduling {noun} {gates} "
                    "(the API server binds no pod while a gate remains)",
                )
            )
    return violations
