"""What a PodGroup's status says, in Volcano's words. Pure: values in, values out.

Input: a PodGroup's outcome (from the solver's `Decision`) and what the cycle did with it.
Output: a `GroupStatus` and the JSON merge patch that writes it — to the main resource for
Volcano's PodGroup (its CRD has no status subresource), to `/status` for scheduler-plugins'.

Phases, as `kubectl get podgroups` shows them (Volcano's names):

    Pending    nothing of the gang can be placed now (condition Unschedulable, with the reason)
    Inqueue    the gang is admitted but not all bound: waiting for its victims to terminate
               (pipelined), or a bind failed and the next cycle completes it
    Running    at least `minMember` pods are bound or running (condition Scheduled)

Messages follow Volcano's gang plugin: "20/20 tasks in gang unschedulable: <why>", where the
first number is minMember minus the pods placed and the second the PodGroup's pods, and
<why> is the solver's reasons, e.g. "gang: 3 of min 20 pods fit (needs 80 cpu, 12 cpu free)".
The condition's `reason` is one CamelCase word per rule (`CONDITION_REASONS`), looked up by
the first reason's `rule` (`models.reason.Reason`): every rule of `solver.rules.RULES` and
every other source a reason may come from (`solver.reasons.NOT_RULES`) has its word, or is
named where its facts are reported (`REPORTED_UNDER`); tests walk both.

scheduler-plugins' PodGroup has no conditions: its phase (Pending / Scheduling / Scheduled /
Running) and `scheduled` count carry the same facts.

A Kubernetes Workload API PodGroup (`scheduling.k8s.io`, flavor "kube") gets the one condition
kube-scheduler writes on it, in its `/status`, other conditions kept: `PodGroupScheduled`
(v1alpha2) True with reason `Scheduled` once its minimum is bound, else False `Unschedulable`
with the message; in v1beta1 `PodGroupInitiallyScheduled`, which once True stays True (the
API's contract: it records the first start, not the present), so it is never written again.

Each pending pod of ours carries the `PodScheduled` condition kube-scheduler writes
(`pod_scheduled`): status False, and reason `Unschedulable` only when nodes added to the
cluster could start it (`solver.reasons.nodes_would_help` of its PodGroup's reasons) —
Cluster Autoscaler and Karpenter buy nodes for that reason and for no other. A pod held by
policy gets another word (`POD_WAITING_REASONS`, looked up by the first reason no node
lifts), so no node is bought for it: a pod of a gang whose queue is at its capability reads
`QueueQuotaExceeded`; a gang short of free GPUs reads `Unschedulable`. The message is the
PodGroup's, cut at `EVENT_MESSAGE_CHARS`. The binding sets `PodScheduled=True` itself (the
API server's pod binding storage), so nothing is written on bind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from controller.sub_group_status import SUB_GROUPS_ANNOTATION
from controller.timing import rfc3339
from models.reason import Reason
from solver.reasons import EVENT_MESSAGE_CHARS, gang_message, nodes_would_help

__all__ = [
    "PENDING",
    "INQUEUE",
    "RUNNING",
    "SCHEDULED",
    "UNSCHEDULABLE",
    "CONDITION_REASONS",
    "REPORTED_UNDER",
    "POD_SCHEDULED",
    "POD_WAITING_REASONS",
    "POD_UNDETERMINED",
    "PodScheduled",
    "pod_scheduled",
    "pod_pipelined",
    "pod_condition_patch",
    "GroupStatus",
    "scheduled",
    "unschedulable",
    "pipelined",
    "bind_failed",
    "released",
    "condition_reason",
    "gang_message",
    "status_patch",
    "is_current",
]

PENDING = "Pending"
INQUEUE = "Inqueue"
RUNNING = "Running"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"

CONDITION_REASONS: dict[str, str] = {
    # a reason's rule (solver.reasons) → the condition's one-word reason
    "capacity": "NotEnoughResources",
    "gang": "NotEnoughResources",
    "eligibility": "NoEligibleNode",
    "numa": "NotEnoughResources",
    "topology": "TopologyUnsatisfiable",
    "quota": "QueueQuotaExceeded",
    "queue": "QueueNotReady",
    "dependency": "WaitingForDependency",
    "gated": "SchedulingGated",  # pods held by scheduling gates (rule gated), kube-scheduler's word for them
    "preemption": "Preempted",
    "eviction": "EvictionRefused",
    "unplaced": "NotEnoughResources",
    "reservation": "Reserved",  # waiting past its sla-waiting-time: nodes are held for it (rule reservation)
    "pod_affinity": "PodAffinityUnsatisfiable",  # inter-pod (anti-)affinity (rule pod_affinity)
    "topology_spread": "TopologySpreadUnsatisfiable",  # maxSkew with DoNotSchedule (rule topology_spread)
    "usage": "NodesOverloaded",  # the nodes it fits are hot by measured usage (rule usage)
    "colocation": "NoColocationRoom",  # offline pods: no oversubscribed room or lent GPU (rule colocation)
    "dra": "DeviceClaimsUnsatisfiable",  # DRA claims no node's free devices satisfy (rule dra)
    "cluster": "TopologyUnsatisfiable",  # a fleet's job fits in no one cluster: the cluster tier of its topology
}
REPORTED_UNDER: dict[str, str] = {
    # rules whose facts a pending PodGroup's reasons carry under another rule
    "node_affinity": "eligibility",  # a node its affinity or selector refuses is not eligible
    "binding": "eligibility",  # a bind's own shape (node exists, devices valid) is checked, never a wait
    "nodeports": "capacity",  # a taken host port is folded into the capacity fit error, as kube-scheduler folds NodePorts
}
READY_REASON = "tasks in gang are ready to be scheduled"  # Volcano's Scheduled condition says this
PIPELINED_REASON = "Pipelined"
BIND_FAILED_REASON = "BindFailed"
RELEASED_REASON = "GangReleased"
POD_SCHEDULED = "PodScheduled"
POD_WAITING_REASONS: dict[str, str] = {
    # a reason's rule → a pending pod's PodScheduled reason when that reason is one no added
    # node lifts (`solver.reasons`, nodes_help=False); none is "Unschedulable", so an autoscaler
    # buys no node for the pod
    "quota": "QueueQuotaExceeded",  # its queue is at its capability
    "queue": "QueueNotReady",  # its queue is missing or closed
    "dependency": "WaitingForDependency",  # a task it depends on is not running yet
    "gated": "SchedulingGated",  # scheduling gates hold the gang (kube-scheduler's word for gated pods)
    "gang": "NotEnoughTasks",  # fewer pods exist than its minimum (Volcano's word)
    "preemption": PIPELINED_REASON,  # victims are evicted for it: it binds once they are gone
    "unplaced": "Schedulable",  # it fits, but the search ended first or the placement leaves it out (Volcano's word)
}
POD_UNDETERMINED = "Undetermined"
"""A pending pod's reason when none of its PodGroup's reasons has a known rule and code (a
sentence read back from text): no node is bought on a guess (Volcano's word)."""


@dataclass(frozen=True)
class GroupStatus:
    phase: str
    condition_type: str  # Scheduled or Unschedulable
    condition_status: str  # "True" or "False"
    reason: str
    message: str
    running: int  # pods the kubelet reports Running
    placed: int  # pods bound or running

    def describe(self) -> str:
        return f"{self.phase} ({self.condition_type}={self.condition_status} {self.reason}: {self.message})"


def condition_reason(reasons: Sequence[str]) -> str:
    """`[quota_exceeded(…)]` → "QueueQuotaExceeded": the first reason whose rule has a word
    decides (a sentence read back from text is `Reason.read`)."""
    for reason in reasons:
        rule = Reason.read(reason).rule
        if rule in CONDITION_REASONS:
            return CONDITION_REASONS[rule]
    return UNSCHEDULABLE


def scheduled(*, min_member: int, placed: int, total_pods: int, running: int) -> GroupStatus:
    return GroupStatus(
        phase=RUNNING,
        condition_type=SCHEDULED,
        condition_status="True",
        reason=READY_REASON,
        message=f"{placed}/{total_pods} tasks bound or running, minMember {min_member}",
        running=running,
        placed=placed,
    )


def unschedulable(
    *, min_member: int, placed: int, total_pods: int, running: int, reasons: Sequence[str]
) -> GroupStatus:
    """Pending — or Inqueue when some pods are already bound (a gang the next cycle may complete)."""
    return GroupStatus(
        phase=INQUEUE if placed > 0 else PENDING,
        condition_type=UNSCHEDULABLE,
        condition_status="True",
        reason=condition_reason(reasons),
        message=gang_message(min_member=min_member, placed=placed, total_pods=total_pods, why=reasons),
        running=running,
        placed=placed,
    )


def pipelined(*, min_member: int, placed: int, total_pods: int, running: int, waiting_for: str) -> GroupStatus:
    """Placed by the solver, bound once `waiting_for` (victims, terminating pods) is gone."""
    return GroupStatus(
        phase=INQUEUE,
        condition_type=SCHEDULED,
        condition_status="False",
        reason=PIPELINED_REASON,
        message=f"placement decided for {total_pods - placed} pod(s); binding waits for {waiting_for}",
        running=running,
        placed=placed,
    )


def released(*, min_member: int, placed: int, total_pods: int, running: int, why: Reason) -> GroupStatus:
    """A partly bound gang that could not be completed in time (`why`, `solver.reasons.gang_released`):
    its bound pods are evicted, so the GPUs they hold are not held idle, and it is placed again whole."""
    return GroupStatus(
        phase=PENDING,
        condition_type=UNSCHEDULABLE,
        condition_status="True",
        reason=RELEASED_REASON,
        message=gang_message(min_member=min_member, placed=0, total_pods=total_pods, why=[why]),
        running=running,
        placed=placed,
    )


def bind_failed(
    *, min_member: int, placed: int, total_pods: int, running: int, bound: int, failures: Sequence[str]
) -> GroupStatus:
    """Some binds of the gang failed: say which, and that the next cycle completes or reports it."""
    placed_now = placed + bound
    why = [f"bind failed for {len(failures)} pod(s): {'; '.join(failures[:3])}"]
    if len(failures) > 3:
        why.append(f"and {len(failures) - 3} more")
    why.append(f"{bound} bound this cycle; the next cycle retries")
    return GroupStatus(
        phase=INQUEUE if placed_now > 0 else PENDING,
        condition_type=UNSCHEDULABLE,
        condition_status="True",
        reason=BIND_FAILED_REASON,
        message=gang_message(min_member=min_member, placed=placed_now, total_pods=total_pods, why=why),
        running=running,
        placed=placed_now,
    )


@dataclass(frozen=True)
class PodScheduled:
    """The PodScheduled condition a pending pod is to carry: status False, `reason`, `message`."""

    reason: str
    message: str


def pod_scheduled(reasons: Sequence[str], *, message: str) -> PodScheduled:
    """The condition of a pending pod whose PodGroup waits for `reasons`, saying `message`.

    Example: [capacity_fit_error(…)] → Unschedulable; [capacity_fit_error(…), quota_exceeded(…)]
    → QueueQuotaExceeded (the quota holds it whatever the nodes)."""
    message = message[:EVENT_MESSAGE_CHARS]
    if nodes_would_help(reasons):
        return PodScheduled(UNSCHEDULABLE, message)
    for reason in map(Reason.read, reasons):
        if reason.rule in POD_WAITING_REASONS and not nodes_would_help([reason]):
            return PodScheduled(POD_WAITING_REASONS[reason.rule], message)
    return PodScheduled(POD_UNDETERMINED, message)


def pod_pipelined(message: str) -> PodScheduled:
    """A pod placed this cycle that binds once victims or terminating pods are gone."""
    return PodScheduled(PIPELINED_REASON, message[:EVENT_MESSAGE_CHARS])


def pod_condition_patch(desired: PodScheduled, *, observed_status: str | None, now: datetime) -> dict[str, Any]:
    """The strategic merge patch of pods/status that writes `desired` (conditions merge by
    type, so the pod's other conditions stay). `lastTransitionTime` is set only when the
    condition's status changes (`observed_status`: the pod's PodScheduled status, None when
    it has none), as Kubernetes counts a transition."""
    condition: dict[str, Any] = {
        "type": POD_SCHEDULED, "status": "False", "reason": desired.reason, "message": desired.message
    }
    if observed_status != "False":
        condition["lastTransitionTime"] = rfc3339(now)
    return {"status": {"conditions": [condition]}}


def _xk8s_phase(status: GroupStatus, min_member: int) -> str:
    if status.phase == RUNNING:
        return "Running" if status.running >= max(min_member, 1) else "Scheduled"
    if status.phase == INQUEUE:
        return "Scheduling"
    return "Pending"


KUBE_CONDITIONS = {
    # a Workload API PodGroup's version → the condition kube-scheduler writes on it
    "scheduling.k8s.io/v1alpha2": "PodGroupScheduled",
    "scheduling.k8s.io/v1beta1": "PodGroupInitiallyScheduled",  # True once, then never False again
}
TERMINAL_KUBE_CONDITIONS = frozenset({"PodGroupInitiallyScheduled"})


def _kube_condition_type(api_version: str) -> str:
    return KUBE_CONDITIONS.get(api_version, "PodGroupScheduled")


def _kube_says(status: GroupStatus) -> dict[str, str]:
    """The condition's status, reason and message for `status`."""
    started = status.phase == RUNNING
    return {"status": "True" if started else "False", "reason": "Scheduled" if started else UNSCHEDULABLE, "message": status.message}


def _kube_condition(status: GroupStatus, *, api_version: str, observed: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    kind = _kube_condition_type(api_version)
    says = _kube_says(status)
    previous = _condition_of_type(observed, kind)
    kept = previous is not None and previous.get("status") == says["status"] and previous.get("lastTransitionTime")
    since = str(previous.get("lastTransitionTime")) if kept and previous else rfc3339(now)
    return {"type": kind, **says, "lastTransitionTime": since}


def _condition_of_type(observed: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in observed.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def status_patch(
    status: GroupStatus, *, flavor: str, min_member: int, observed: Mapping[str, Any], now: datetime, transition_id: str,
    sub_groups: str | None = None, api_version: str = "",
) -> dict[str, Any]:
    """The merge patch body for `flavor` ("volcano", "xk8s" or "kube"; `api_version`: a kube
    PodGroup's). `sub_groups`: the JSON of a Volcano PodGroup's per-sub-group status
    (`controller.sub_group_status`), written in the same patch as its annotation; None leaves
    the annotation as it is."""
    if flavor == "kube":  # a merge patch replaces the list: the other conditions go back as they were
        condition = _kube_condition(status, api_version=api_version, observed=observed, now=now)
        others = [c for c in observed.get("conditions") or () if isinstance(c, Mapping) and c.get("type") != condition["type"]]
        return {"status": {"conditions": [*others, condition]}}
    if flavor == "xk8s":
        return {"status": {"phase": _xk8s_phase(status, min_member), "scheduled": status.placed, "running": status.running}}
    previous = _current_condition(observed)
    unchanged = previous is not None and (previous.get("type"), previous.get("status"), previous.get("reason")) == (
        status.condition_type,
        status.condition_status,
        status.reason,
    )
    condition = {
        "type": status.condition_type,
        "status": status.condition_status,
        "reason": status.reason,
        "message": status.message,
        "transitionID": str(previous.get("transitionID")) if unchanged and previous else transition_id,
        "lastTransitionTime": str(previous.get("lastTransitionTime")) if unchanged and previous else rfc3339(now),
    }
    body: dict[str, Any] = {"status": {"phase": status.phase, "running": status.running, "conditions": [condition]}}
    if sub_groups is not None:
        body["metadata"] = {"annotations": {SUB_GROUPS_ANNOTATION: sub_groups}}
    return body


def is_current(
    status: GroupStatus, *, flavor: str, min_member: int, observed: Mapping[str, Any],
    sub_groups: str | None = None, observed_sub_groups: str | None = None, api_version: str = "",
) -> bool:
    """True when the object already says this (no write needed); a Volcano PodGroup's
    sub-group annotation too, when `sub_groups` is given (`observed_sub_groups`: what it says)."""
    if flavor == "kube":
        kind = _kube_condition_type(api_version)
        previous = _condition_of_type(observed, kind)
        if previous is not None and kind in TERMINAL_KUBE_CONDITIONS and previous.get("status") == "True":
            return True
        return previous is not None and all(previous.get(key) == value for key, value in _kube_says(status).items())
    if flavor == "volcano" and sub_groups is not None and sub_groups != observed_sub_groups:
        return False
    if flavor == "xk8s":
        return (observed.get("phase"), observed.get("scheduled"), observed.get("running")) == (
            _xk8s_phase(status, min_member),
            status.placed,
            status.running,
        )
    condition = _current_condition(observed)
    if condition is None or observed.get("phase") != status.phase or observed.get("running", 0) != status.running:
        return False
    return (condition.get("type"), condition.get("status"), condition.get("reason"), condition.get("message")) == (
        status.condition_type,
        status.condition_status,
        status.reason,
        status.message,
    )


def _current_condition(observed: Mapping[str, Any]) -> Mapping[str, Any] | None:
    conditions = observed.get("conditions") or []
    for condition in reversed(conditions):
        if isinstance(condition, Mapping) and condition.get("type") in (SCHEDULED, UNSCHEDULABLE):
            return condition
    return None
