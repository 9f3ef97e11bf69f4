"""plan: a checked `Decision` → the ordered API actions of one cycle. Pure.

Input: the cycle's `Observation`, the solver's `Decision` (already passed by the checker),
and what earlier cycles reported (to write an Event or a status only when it changes).
Output: a `Plan` — one `GangPlan` per PodGroup, each a unit (the `Statement` idea of
Volcano): first its evictions, then its binds, then its status, then its Events.

Before every gang: the repairs of overcommitted nodes (`Observation.repairs`, chosen by
`controller.repair`), one gang of evictions per node, with a Warning `Overcommitted` Event
on the node and on each pod evicted.

Rules, in the order they apply to a gang:
1. A gang whose placement needs victims evicts them this cycle and binds nothing: its pods
   are bound in a later cycle, once the victims are gone and the solver places the gang on
   the room they left (Volcano's pipelining). Status Inqueue, "binding waits for …".
2. A gang whose binds land on a node where pods are still terminating (or are evicted
   this cycle) is bound only if every bind fits beside them, resources and GPU devices;
   otherwise it waits too — the solver counted their room as free, the node is not yet.
   Example: node 4 cpu, a 4-cpu victim terminating, the gang's 2-cpu pod placed there →
   waits; a 4-cpu victim terminating on an 8-cpu node → binds.
3. Otherwise the gang's binds go out together; its status becomes Running when they land
   (act rewrites it when a bind fails), and one Normal Scheduled Event on its PodGroup
   names every pod's node ("Successfully assigned 10 pods to 2 nodes: node-a (job-0, …)").
   One Event per gang, not one per pod as kube-scheduler writes: each pod already says
   where it went (`spec.nodeName`, the PodScheduled condition the API server sets when it
   binds, the `batchplace.io/gpus` annotation), and 5,000 Event writes would cost the API
   server as much as the binds. A pod with no PodGroup object gets its own Scheduled Event.
4. A pending gang gets phase Pending (Inqueue when some of its pods are already bound), the
   condition Unschedulable with the solver's reasons, and a FailedScheduling Event on its
   PodGroup and on each pending pod — when the message changed since last reported.
5. A started gang's pods the cycle leaves pending each get a FailedScheduling Event with
   their own reason ("capacity: task worker: 0/4 nodes fit another pod: 4 insufficient
   cpu"), as Volcano raises on them — when the message changed since last reported.

6. A partly bound gang (`solver.rules.gang.is_partly_bound`) that stayed so past the
   controller's `partial_gang_release_s` and that the solver does not complete this cycle
   is released: its bound pods are evicted, so the GPUs they hold are not held idle, and
   its status and a GangReleased Event say "gang: 1 of min 4 bound for 60 s; released to be
   placed whole". The solver serves partly bound gangs before new ones of their priority,
   so one is released only when it could not be completed in that time.

7. Every pending pod of a gang that the cycle does not bind carries the PodScheduled
   condition kube-scheduler writes (`status.pod_scheduled`): `Unschedulable` only when
   added nodes could start it (an autoscaler buys nodes for that reason alone), another
   word when policy holds it (`QueueQuotaExceeded`, …), `Pipelined` while its binds wait for
   victims. A pending gang's pods say its message; a started gang's pods left pending each
   say their own reason. Written only when the pod does not already say it (status, reason,
   message), and not twice for one state of the pod — the watch may not have shown the last
   write yet (`reported`). A gated pod is left as the API server marked it
   (`SchedulingGated`), as kube-scheduler leaves it; a pod held out of the cycle for a
   dependency starting keeps the `WaitingForDependency` it had while that waited for nodes.

8. A gang that binds writes, before its binds, each DRA ResourceClaim its pods use: the
   allocation the solver chose (`Placement.claims`) and its pods in `reservedFor`, as
   kube-scheduler does (`controller.dra_claims`). A claim that cannot be written binds
   nothing of the gang.

9. A PodGroup with sub-groups says how each fares (`solver.sub_group_report`, written where
   `controller.sub_group_status` says): its condition's message ends "sub-groups: 3 of 4
   started", a Volcano PodGroup carries each sub-group's status (started, placed/min, the
   domain it landed in, why not) in the `batchplace.io/sub-groups` annotation, written in the
   status's patch, and each pending pod of a sub-group names it in its PodScheduled message
   ("subgroup decode-1: …").

Events are capped per cycle (`max_pod_events`), as kube-scheduler's recorder rate-limits:
the rest follow in later cycles, since what was not reported is reported then.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

from controller import status as status_text
from controller.dra_claims import ClaimWrite, claim_writes
from controller.informer import object_key
from controller.observe import JsonObject, Observation, PodGroupRef, SeenCondition, TerminatingPod
from controller.repair import RepairEviction
from controller.sub_group_status import annotation_value
from models.placement import Bind, ClaimAllocation, Decision, Eviction, PodGroupOutcome
from models.snapshot import NodeName, Pod, PodGroupKey, PodKey, Snapshot
from solver.reasons import EVENT_MESSAGE_CHARS, gang_assigned_message, gang_released
from solver.rules import gated
from solver.sub_group_report import SubGroupStatus, sub_group_statuses
from solver.sub_group_report import summary as sub_group_summary
from solver.offline_evictions import OfflineEviction

__all__ = [
    "Evict",
    "BindPod",
    "SetStatus",
    "EmitEvent",
    "SetPodCondition",
    "pod_condition_key",
    "GangPlan",
    "Plan",
    "plan",
    "podgroup_event",
    "POD_EVENTS_PER_CYCLE",
]

POD_EVENTS_PER_CYCLE = 200


@dataclass(frozen=True)
class EmitEvent:
    """A core/v1 Event about one object; `dedupe_key` set → written only when its message changed."""

    namespace: str  # "" for a cluster-scoped object: the Event then lives in `default`
    kind: str  # Pod, PodGroup, Node, Queue, …
    api_version: str
    name: str
    uid: str
    type: str  # Normal, Warning
    reason: str
    message: str
    dedupe_key: str | None = None


@dataclass(frozen=True)
class Evict:
    pod: PodKey
    node: NodeName
    for_group: PodGroupKey
    reason: str  # preempt or reclaim
    event: EmitEvent


@dataclass(frozen=True)
class BindPod:
    pod: PodKey
    node: NodeName
    gpus: tuple[int, ...]
    event: EmitEvent | None = None  # its own Scheduled Event: only a pod without a PodGroup object gets one


@dataclass(frozen=True)
class SetStatus:
    ref: PodGroupRef
    status: status_text.GroupStatus
    min_member: int
    sub_groups: str | None = None  # a Volcano PodGroup's per-sub-group status, the annotation's JSON (rule 9)


@dataclass(frozen=True)
class SetPodCondition:
    """Write `desired` as a pending pod's PodScheduled condition (rule 7); `observed`: what it says now."""

    pod: PodKey
    desired: status_text.PodScheduled
    observed: SeenCondition | None

    def reported_as(self) -> str:
        """What `reported` keeps once written: a digest of the condition and of the pod's state
        it was written over (this process's `hash`, as `reported` lives no longer; a few
        bytes a pod where the messages would be a kilobyte or two)."""
        return str(hash((self.desired, self.observed)))


def pod_condition_key(pod: PodKey) -> str:
    """The key of a pod's PodScheduled condition in `reported`."""
    return f"Pod/{pod}/PodScheduled"


def podgroup_status_key(group: PodGroupKey) -> str:
    """The key of a PodGroup's status in `reported`."""
    return f"PodGroup/{group}/status"


REPORTED_SLACK = 1_000
"""Entries `reported` may hold beyond two per object the cluster has before it is pruned."""


def forget_gone(reported: MutableMapping[str, str], *, pods: Sequence[JsonObject], pod_groups: Collection[str]) -> int:
    """Drop what `reported` remembers of Pods and PodGroups no longer in the cluster (`pods`:
    the pod objects it has; `pod_groups`: the PodGroups' keys); the number dropped. Only
    once it holds more than twice as many entries as the cluster has objects: the live
    keys cost a pass over every pod, paid for by the entries it frees. Every key of a pod
    or a PodGroup reads `Pod/<namespace>/<name>/…` or `PodGroup/<namespace>/<name>/…`;
    the others (a Node's, a provisioning request's) are few and kept."""
    if len(reported) <= 2 * (len(pods) + len(pod_groups)) + REPORTED_SLACK:
        return 0
    live = {f"Pod/{object_key(pod)}" for pod in pods} | {f"PodGroup/{key}" for key in pod_groups}
    dropped = 0
    for key in list(reported):  # a copy: the Event senders' threads may write meanwhile
        kind, _, rest = key.partition("/")
        if kind in ("Pod", "PodGroup") and f"{kind}/{rest.rpartition('/')[0]}" not in live:
            reported.pop(key, None)
            dropped += 1
    return dropped


def status_reported_as(ref: PodGroupRef, status: status_text.GroupStatus, min_member: int, sub_groups: str | None) -> str:
    """What `reported` keeps once a PodGroup's status is written: a digest of the status and of
    the copy it was written over (its resourceVersion). The next cycle may start before the
    watch shows the write; it then reads that same copy and must not write the status again.
    Any later change of the object, the write's own included, has another resourceVersion."""
    return str(hash((status, min_member, sub_groups, ref.resource_version)))


@dataclass(frozen=True)
class GangPlan:
    group: PodGroupKey
    min_member: int
    total_pods: int
    placed_before: int  # pods bound or running before this cycle
    running: int
    evictions: tuple[Evict, ...] = ()
    binds: tuple[BindPod, ...] = ()
    status: SetStatus | None = None
    events: tuple[EmitEvent, ...] = ()
    ref: PodGroupRef | None = None
    note: str = ""  # for the log: what the plan does and why
    pod_conditions: tuple[SetPodCondition, ...] = ()  # rule 7, after the status
    claims: tuple[ClaimWrite, ...] = ()  # rule 8: the DRA claims its binds use, written before them


@dataclass(frozen=True)
class Plan:
    gangs: tuple[GangPlan, ...] = ()
    events: tuple[EmitEvent, ...] = ()  # not tied to a gang (objects the loader rejected)


def plan(
    observation: Observation,
    decision: Decision,
    *,
    reported: Mapping[str, str] = {},
    max_pod_events: int = POD_EVENTS_PER_CYCLE,
    offline: Sequence[OfflineEviction] = (),
    release: Mapping[PodGroupKey, float] = {},
    released: Mapping[PodGroupKey, str] = {},
) -> Plan:
    """What to write this cycle. `offline`: offline pods to evict because online usage rose
    on their colocation node (`solver.offline_evictions`), one gang each node
    ahead of the rest, each pod with an `Evicted` Event saying why and the node with one too.
    `release`: partly bound gangs past their time to complete → seconds they have been
    waiting; one the solver does not complete this cycle has its bound pods evicted (rule 6).
    `released`: gangs released before → the release's sentence, kept among a pending gang's
    reasons until it is placed again."""
    snapshot = observation.snapshot
    binds_by_group: dict[PodGroupKey, list[Bind]] = {}
    for bind in decision.placement.binds:
        group = snapshot.pod_by_key[bind.pod].pod_group
        if group is not None:
            binds_by_group.setdefault(group, []).append(bind)
    evictions_by_group: dict[PodGroupKey, list[Eviction]] = {}
    for eviction in decision.placement.evictions:
        evictions_by_group.setdefault(eviction.for_, []).append(eviction)
    room = _Room(snapshot, observation.terminating, decision.placement.evictions)
    budget = _EventBudget(max_pod_events, reported)
    conditions = _Conditions(observation, reported)
    gangs = [
        _released(outcome, observation, release[outcome.name])
        if outcome.name in release and outcome.name not in binds_by_group and outcome.name not in evictions_by_group
        else _gang(
            outcome, observation, binds_by_group.get(outcome.name, []), evictions_by_group.get(outcome.name, []), room, budget,
            released.get(outcome.name, ""), conditions,
        )
        for outcome in _ordered(decision.podgroups, binds_by_group, evictions_by_group)
    ]
    evicting = {eviction.pod for eviction in decision.placement.evictions}
    offline_gangs = [gang for eviction in offline if (gang := _offline_gang(eviction, observation, evicting)) is not None]
    claims_of: dict[PodKey, list[ClaimAllocation]] = {}
    for allocation in decision.placement.claims:
        for pod in allocation.reserved_for:
            claims_of.setdefault(pod, []).append(allocation)
    return Plan(
        gangs=(
            *_repair_gangs(observation),
            *offline_gangs,
            *(_with_claims(gang, claims_of, observation) for gang in gangs if gang is not None),
        ),
        events=tuple(_rejected_events(observation, budget)),
    )


def _with_claims(
    gang: GangPlan, claims_of: Mapping[PodKey, Sequence[ClaimAllocation]], observation: Observation
) -> GangPlan:
    """Rule 8: the DRA claims the gang's binds use, written before them (`controller.dra_claims`);
    `claims_of`: the placement's claim allocations by the pods reserved with them."""
    if not gang.binds:
        return gang
    binds = [Bind(pod=bind.pod, node=bind.node) for bind in gang.binds]
    allocations = list({id(a): a for bind in binds for a in claims_of.get(bind.pod, ())}.values())
    writes = claim_writes(
        binds,
        allocations,
        observation.snapshot,
        pods=observation.pods,
        index=observation.claims,
    )
    return dataclasses.replace(gang, claims=writes) if writes else gang


def offline_plan(observation: Observation, offline: Sequence[OfflineEviction]) -> Plan:
    """A cycle with nothing to place: the repairs and the offline evictions alone."""
    offline_gangs = (gang for eviction in offline if (gang := _offline_gang(eviction, observation, set())) is not None)
    return Plan(gangs=(*_repair_gangs(observation), *offline_gangs))


OVERCOMMITTED = "Overcommitted"
"""The reason of the Warning Events on an overcommitted node and on each pod evicted to repair it."""


def _repair_gangs(observation: Observation) -> list[GangPlan]:
    """One gang of evictions per overcommitted node (`Observation.repairs`), ahead of every
    other write: a Warning Event on the node naming the pods evicted, and one on each pod
    saying why (after its eviction)."""
    by_node: dict[NodeName, list[RepairEviction]] = {}
    for repair in observation.repairs:
        by_node.setdefault(repair.overcommitted, []).append(repair)
    gangs = []
    for node, repairs in sorted(by_node.items()):
        evicts = tuple(
            Evict(
                pod=repair.pod,
                node=repair.node,
                for_group=repair.group or PodGroupKey(repair.pod),
                reason="repair",
                event=_pod_event(observation, repair.pod, type_="Warning", reason=OVERCOMMITTED, message=repair.message, dedupe=False),
            )
            for repair in repairs
        )
        message = (
            f"node {node} is overcommitted ({repairs[0].overflow}): evicting {len(repairs)} pod(s) bound last "
            f"(and the rest of a gang that cuts below its minMember): {', '.join(r.pod for r in repairs)}"
        )
        node_event = _node_warning(node, OVERCOMMITTED, message)
        gangs.append(
            GangPlan(
                group=PodGroupKey(f"repair/{node}"), min_member=0, total_pods=len(repairs), placed_before=len(repairs),
                running=0, evictions=evicts, events=(node_event,), note=f"repairs overcommitted node {node}: evicts {len(repairs)} pod(s)",
            )
        )
    return gangs


OFFLINE_EVICTED = "OfflineEvicted"
"""The reason of the Events on an offline pod evicted for online load, and on its node."""


def _offline_gang(eviction: OfflineEviction, observation: Observation, evicting: set[PodKey]) -> GangPlan | None:
    """One node's offline evictions as a gang of evictions alone (no binds, no status)."""
    pods = [pod for pod in eviction.pods if pod not in evicting and pod in observation.snapshot.pod_by_key]
    if not pods:
        return None
    snapshot = observation.snapshot
    first = snapshot.pod_by_key[pods[0]]
    group = first.pod_group or PodGroupKey(first.key)
    evicts = tuple(
        Evict(
            pod=pod,
            node=eviction.node,
            for_group=group,
            reason="colocation",
            event=_pod_event(
                observation, pod, type_="Warning", reason=OFFLINE_EVICTED, message=f"Evicted offline pod: {eviction.message}", dedupe=False
            ),
        )
        for pod in pods
    )
    node_event = _node_warning(eviction.node, OFFLINE_EVICTED, f"{eviction.message}: {', '.join(pods)}")
    return GangPlan(
        group=group, min_member=0, total_pods=len(pods), placed_before=len(pods), running=len(pods),
        evictions=evicts, events=(node_event,), note=f"evicts {len(pods)} offline pod(s) from {eviction.node}",
    )


def _node_warning(node: NodeName, reason: str, message: str) -> EmitEvent:
    """A Warning Event on a Node (it lives in `default`, where `kubectl describe node` finds it)."""
    return EmitEvent(
        namespace="", kind="Node", api_version="v1", name=node, uid="", type="Warning", reason=reason, message=message
    )


def _ordered(
    outcomes: Sequence[PodGroupOutcome],
    binds: Mapping[PodGroupKey, list[Bind]],
    evictions: Mapping[PodGroupKey, list[Eviction]],
) -> list[PodGroupOutcome]:
    """Gangs that evict first (victims take longest to leave), then those that bind, then the rest."""
    return sorted(outcomes, key=lambda o: (0 if o.name in evictions else 1 if o.name in binds else 2))


def _gang(
    outcome: PodGroupOutcome,
    observation: Observation,
    binds: list[Bind],
    evictions: list[Eviction],
    room: "_Room",
    budget: "_EventBudget",
    released: str,
    conditions: "_Conditions",
) -> GangPlan | None:
    snapshot = observation.snapshot
    pods = snapshot.pods_by_group.get(outcome.name, ())
    total = len(pods) + observation.held_counts.get(outcome.name, 0)
    placed_before = sum(1 for pod in pods if pod.phase == "running")
    running = observation.running.get(outcome.name, 0)
    ref = observation.pod_groups.get(outcome.name)
    base = dict(group=outcome.name, min_member=outcome.min_member, total_pods=total, placed_before=placed_before, running=running, ref=ref)
    group = snapshot.pod_group_by_key.get(outcome.name)

    def set_status(status: status_text.GroupStatus, binds_landing: Sequence[Bind] = ()) -> SetStatus | None:
        if group is None or not group.sub_groups:
            return _set_status(ref, status, outcome.min_member)
        left_out = {unplaced.pod: unplaced.reason for unplaced in outcome.unplaced_pods}
        subs = sub_group_statuses(snapshot, group, binds_landing, outcome.reasons, left_out)
        return _set_status(ref, status, outcome.min_member, subs)

    if evictions:
        victims = ", ".join(e.pod for e in evictions[:5]) + (" …" if len(evictions) > 5 else "")
        status = status_text.pipelined(
            min_member=outcome.min_member, placed=placed_before, total_pods=total, running=running,
            waiting_for=f"{len(evictions)} preempted pod(s) to terminate: {victims}",
        )
        room.hold(evictions)
        return GangPlan(
            **base,  # type: ignore[arg-type]
            evictions=tuple(_evict(e, observation) for e in evictions),
            status=set_status(status),
            note=f"evicts {len(evictions)} victim(s), binds once they are gone",
            pod_conditions=conditions.pending(pods, status_text.pod_pipelined(status.message)),
        )
    if binds:
        blocked = room.blocking(binds)
        if blocked:
            status = status_text.pipelined(
                min_member=outcome.min_member, placed=placed_before, total_pods=total, running=running,
                waiting_for=blocked,
            )
            return GangPlan(
                **base,  # type: ignore[arg-type]
                status=set_status(status),
                note=f"waits: {blocked}",
                pod_conditions=conditions.pending(pods, status_text.pod_pipelined(status.message)),
            )
        room.take(binds)
        placed = placed_before + len(binds)
        status = status_text.scheduled(min_member=outcome.min_member, placed=placed, total_pods=total, running=running)
        if ref is None:  # no PodGroup object to carry the gang's Event: each pod gets its own
            planned = tuple(_bind(b, _scheduled_event(b, observation)) for b in binds)
            events: tuple[EmitEvent, ...] = ()
        else:
            planned = tuple(_bind(b, None) for b in binds)
            message = gang_assigned_message([(b.pod, b.node) for b in binds])
            events = (podgroup_event(ref, type_="Normal", reason="Scheduled", message=message),)
        return GangPlan(
            **base,  # type: ignore[arg-type]
            binds=planned,
            status=set_status(status, binds),
            events=(*events, *_unplaced_events(outcome, observation, budget)),
            note=f"binds {len(binds)} pod(s)",
            pod_conditions=conditions.unplaced(outcome),
        )
    if outcome.state == "scheduled":
        status = status_text.scheduled(min_member=outcome.min_member, placed=placed_before, total_pods=total, running=running)
        return GangPlan(
            **base,  # type: ignore[arg-type]
            status=set_status(status),
            events=tuple(_unplaced_events(outcome, observation, budget)),
            pod_conditions=conditions.unplaced(outcome),
        )
    reasons = list(outcome.reasons)
    for extra in (observation.held.get(outcome.name), released):
        if extra and extra not in reasons:
            reasons.append(extra)
    status = status_text.unschedulable(
        min_member=outcome.min_member, placed=placed_before, total_pods=total, running=running, reasons=reasons
    )
    events = list(_pending_events(outcome, status, observation, ref, budget))
    waiting = status_text.pod_scheduled(reasons, message=status.message)
    return GangPlan(
        **base,  # type: ignore[arg-type]
        status=set_status(status),
        events=tuple(events),
        note=status.message,
        pod_conditions=conditions.pending(pods, waiting),
    )


GANG_RELEASED = "GangReleased"
"""The reason of the Warning Events on a partly bound gang released, and on each of its pods."""


def _released(outcome: PodGroupOutcome, observation: Observation, held_s: float) -> GangPlan:
    """A partly bound gang past its time to complete: its bound pods evicted, its status and
    Events saying so; it is placed again whole once they are gone."""
    pods = observation.snapshot.pods_by_group.get(outcome.name, ())
    bound = [pod for pod in pods if pod.phase == "running" and pod.node is not None]
    total = len(pods) + observation.held_counts.get(outcome.name, 0)
    running = observation.running.get(outcome.name, 0)
    ref = observation.pod_groups.get(outcome.name)
    why = gang_released(placed=len(bound), minimum=outcome.min_member, held_s=held_s)
    status = status_text.released(min_member=outcome.min_member, placed=len(bound), total_pods=total, running=running, why=why)
    evicts = tuple(
        Evict(
            pod=pod.key, node=NodeName(pod.node or ""), for_group=outcome.name, reason="release",
            event=_pod_event(observation, pod.key, type_="Warning", reason=GANG_RELEASED, message=why, dedupe=False),
        )
        for pod in bound
    )
    events = () if ref is None else (podgroup_event(ref, type_="Warning", reason=GANG_RELEASED, message=why),)
    group = observation.snapshot.pod_group_by_key.get(outcome.name)
    subs = tuple(  # every sub-group loses its pods with the release: none started, each waits for why
        dataclasses.replace(sub, started=False, placed=0, domain=None, reason=str(why))
        for sub in (sub_group_statuses(observation.snapshot, group, (), ()) if group is not None else ())
    )
    return GangPlan(
        group=outcome.name, min_member=outcome.min_member, total_pods=total, placed_before=len(bound), running=running,
        evictions=evicts, status=_set_status(ref, status, outcome.min_member, subs), events=events, ref=ref, note=why,
    )


def _set_status(
    ref: PodGroupRef | None, status: status_text.GroupStatus, min_member: int, sub_groups: Sequence[SubGroupStatus] = ()
) -> SetStatus | None:
    """The status to write, None when the object says it already. With `sub_groups` (rule 9)
    the condition's message ends with how many started, and a Volcano PodGroup gets each
    sub-group's status as its annotation, in the same patch."""
    if ref is None:
        return None
    annotation = annotation_value(sub_groups) if sub_groups and ref.flavor == "volcano" else None
    if sub_groups:
        status = dataclasses.replace(status, message=f"{status.message}; {sub_group_summary(sub_groups)}")
    if status_text.is_current(
        status, flavor=ref.flavor, min_member=min_member, observed=ref.status, sub_groups=annotation,
        observed_sub_groups=ref.sub_groups, api_version=ref.api_version,
    ):
        return None
    return SetStatus(ref=ref, status=status, min_member=min_member, sub_groups=annotation)


def _pod_event(observation: Observation, pod: PodKey, *, type_: str, reason: str, message: str, dedupe: bool) -> EmitEvent:
    ref = observation.pods.get(pod)
    namespace, _, name = pod.partition("/")
    return EmitEvent(
        namespace=namespace,
        kind="Pod",
        api_version="v1",
        name=name,
        uid=ref.uid if ref else "",
        type=type_,
        reason=reason,
        message=message,
        dedupe_key=f"Pod/{pod}/{reason}" if dedupe else None,
    )


def _evict(eviction: Eviction, observation: Observation) -> Evict:
    message = f"Preempted by podgroup {eviction.for_} on node {eviction.node} ({eviction.reason})"
    event = _pod_event(observation, eviction.pod, type_="Normal", reason="Preempted", message=message, dedupe=False)
    return Evict(pod=eviction.pod, node=eviction.node, for_group=eviction.for_, reason=eviction.reason, event=event)


def _bind(bind: Bind, event: EmitEvent | None) -> BindPod:
    return BindPod(pod=bind.pod, node=bind.node, gpus=tuple(bind.gpus), event=event)


def _scheduled_event(bind: Bind, observation: Observation) -> EmitEvent:
    """kube-scheduler's own Scheduled Event, for a pod whose gang has no PodGroup object."""
    message = f"Successfully assigned {bind.pod} to {bind.node}"
    return _pod_event(observation, bind.pod, type_="Normal", reason="Scheduled", message=message, dedupe=False)


def podgroup_event(
    ref: PodGroupRef, *, type_: str, reason: str, message: str, dedupe_key: str | None = None
) -> EmitEvent:
    """An Event on a PodGroup object (`kubectl describe podgroup` lists it)."""
    return EmitEvent(
        namespace=ref.namespace,
        kind="PodGroup",
        api_version=ref.kind.api_version,
        name=ref.name,
        uid=ref.uid,
        type=type_,
        reason=reason,
        message=message,
        dedupe_key=dedupe_key,
    )


def _pending_events(
    outcome: PodGroupOutcome,
    status: status_text.GroupStatus,
    observation: Observation,
    ref: PodGroupRef | None,
    budget: "_EventBudget",
) -> list[EmitEvent]:
    events: list[EmitEvent] = []
    if ref is not None:
        event = podgroup_event(
            ref, type_="Warning", reason="Unschedulable", message=status.message, dedupe_key=f"PodGroup/{ref.key}/Unschedulable"
        )
        if budget.wants(event):
            events.append(event)
    for pod in observation.snapshot.pods_by_group.get(outcome.name, ()):
        if pod.phase != "pending" or gated.is_gated(pod):
            continue
        event = _pod_event(observation, pod.key, type_="Warning", reason="FailedScheduling", message=status.message, dedupe=True)
        if budget.wants(event, counted=True):
            events.append(event)
    return events


def _unplaced_events(outcome: PodGroupOutcome, observation: Observation, budget: "_EventBudget") -> list[EmitEvent]:
    """A started gang's pods left pending: a FailedScheduling Event on each with its own reason
    (`PodGroupOutcome.unplaced_pods`), as Volcano writes on every pod of a job that did not
    fit, whether or not the job started — when the message changed since last reported.
    A gated pod gets none: kube-scheduler does not try it, so it writes no FailedScheduling
    on it (the PodGroup's condition names the gates)."""
    events = []
    pods = observation.snapshot.pod_by_key
    for unplaced in outcome.unplaced_pods:
        if unplaced.pod in pods and gated.is_gated(pods[unplaced.pod]):
            continue
        event = _pod_event(observation, unplaced.pod, type_="Warning", reason="FailedScheduling", message=unplaced.reason, dedupe=True)
        if budget.wants(event, counted=True):
            events.append(event)
    return events


def _rejected_events(observation: Observation, budget: "_EventBudget") -> list[EmitEvent]:
    """A Warning Event on each object left out, namespaced or not (a Node's goes to `default`,
    where `kubectl describe node` finds it, as the kubelet's do)."""
    events = []
    for rejected in observation.rejected:
        event = EmitEvent(
            namespace=rejected.namespace or "",
            kind=rejected.kind,
            api_version=rejected.api_version,
            name=rejected.name,
            uid=rejected.uid,
            type="Warning",
            reason="FailedScheduling" if rejected.kind in ("Pod", "PodGroup") else "Invalid",
            message=f"batchplace cannot read this object: {rejected.message}",
            dedupe_key=f"{rejected.kind}/{rejected.namespace}/{rejected.name}/Invalid",
        )
        if budget.wants(event, counted=True):
            events.append(event)
    return events


@dataclass(frozen=True)
class _Conditions:
    """Rule 7: the PodScheduled conditions to write, leaving out each a pod already says or
    that was written over the pod as it is now (`reported`)."""

    observation: Observation
    reported: Mapping[str, str]

    def pending(self, pods: Sequence[Pod], desired: status_text.PodScheduled) -> tuple[SetPodCondition, ...]:
        """`desired` for each pending pod of `pods` not held by a scheduling gate, where new."""
        wanted = (self._set(pod.key, desired) for pod in pods if pod.phase == "pending" and not gated.is_gated(pod))
        return tuple(write for write in wanted if write is not None)

    def unplaced(self, outcome: PodGroupOutcome) -> tuple[SetPodCondition, ...]:
        """A started gang's pods left pending, each with its own reason."""
        pods = self.observation.snapshot.pod_by_key
        wanted = (
            self._set(unplaced.pod, status_text.pod_scheduled([unplaced.reason], message=unplaced.reason))
            for unplaced in outcome.unplaced_pods
            if unplaced.pod in pods and not gated.is_gated(pods[unplaced.pod])
        )
        return tuple(write for write in wanted if write is not None)

    def _set(self, pod: PodKey, desired: status_text.PodScheduled) -> SetPodCondition | None:
        ref = self.observation.pods.get(pod)
        if ref is None:
            return None
        desired = _naming_sub_group(desired, self.observation.snapshot.pod_by_key.get(pod))
        seen = ref.scheduled
        if seen is not None and (seen.status, seen.reason, seen.message) == ("False", desired.reason, desired.message):
            return None
        write = SetPodCondition(pod=pod, desired=desired, observed=seen)
        if self.reported.get(pod_condition_key(pod)) == write.reported_as():
            return None
        return write


def _naming_sub_group(desired: status_text.PodScheduled, pod: Pod | None) -> status_text.PodScheduled:
    """Rule 9: a pod of a sub-group says which, unless its message names it already (a pod of a
    LeaderWorkerSet or JobSet has no PodGroup object to carry its sub-group's status)."""
    if pod is None or pod.sub_group is None or f"subgroup {pod.sub_group}" in desired.message:
        return desired
    message = f"subgroup {pod.sub_group}: {desired.message}"[:EVENT_MESSAGE_CHARS]
    return status_text.PodScheduled(desired.reason, message)


@dataclass
class _EventBudget:
    remaining: int
    reported: Mapping[str, str]

    def wants(self, event: EmitEvent, *, counted: bool = False) -> bool:
        if event.dedupe_key is not None and self.reported.get(event.dedupe_key) == event.message:
            return False
        if counted:
            if self.remaining <= 0:
                return False
            self.remaining -= 1
        return True


@dataclass
class _Room:
    """What each node really holds now: the Snapshot's running pods plus terminating pods."""

    snapshot: Snapshot
    terminating: Sequence[TerminatingPod]
    evictions: Sequence[Eviction]
    occupied: dict[NodeName, dict[str, int]] = field(default_factory=dict)
    busy_gpus: dict[NodeName, set[int]] = field(default_factory=dict)
    leaving: dict[NodeName, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.active = bool(self.terminating) or bool(self.evictions)
        if not self.active:
            return
        for pod in self.snapshot.pods:
            if pod.phase == "running" and pod.node is not None:
                _add(self.occupied.setdefault(pod.node, {}), pod.requests)
        for leaving in self.terminating:
            _add(self.occupied.setdefault(leaving.node, {}), leaving.requests)
            self.busy_gpus.setdefault(leaving.node, set()).update(leaving.gpus)
            self.leaving.setdefault(leaving.node, []).append(leaving.key)
        self.hold(self.evictions)

    def hold(self, evictions: Sequence[Eviction]) -> None:
        """Pods evicted this cycle stay on their nodes until they are gone."""
        for eviction in evictions:
            pod = self.snapshot.pod_by_key.get(eviction.pod)
            if pod is not None:
                self.busy_gpus.setdefault(eviction.node, set()).update(pod.gpu_indices)
            names = self.leaving.setdefault(eviction.node, [])
            if eviction.pod not in names:
                names.append(eviction.pod)
        self.active = self.active or bool(evictions)

    def blocking(self, binds: Sequence[Bind]) -> str:
        """"" when every bind fits beside what is really there; else what it waits for."""
        if not self.active:
            return ""
        extra: dict[NodeName, dict[str, int]] = {}
        for bind in binds:
            if bind.node not in self.leaving:
                continue
            node = self.snapshot.node_by_name[bind.node]
            need = extra.setdefault(bind.node, {})
            _add(need, self.snapshot.pod_by_key[bind.pod].requests)
            occupied = self.occupied.get(bind.node, {})
            short = [r for r, amount in need.items() if occupied.get(r, 0) + amount > node.allocatable.get(r, 0)]
            clash = set(bind.gpus) & self.busy_gpus.get(bind.node, set())
            if short or clash:
                leaving = self.leaving[bind.node]
                shown = ", ".join(leaving[:3]) + (" …" if len(leaving) > 3 else "")
                return f"{len(leaving)} terminating pod(s) on {bind.node} to leave ({shown})"
        return ""

    def take(self, binds: Sequence[Bind]) -> None:
        if not self.active:
            return
        for bind in binds:
            _add(self.occupied.setdefault(bind.node, {}), self.snapshot.pod_by_key[bind.pod].requests)
            self.busy_gpus.setdefault(bind.node, set()).update(bind.gpus)


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for resource, amount in amounts.items():
        total[resource] = total.get(resource, 0) + amount
