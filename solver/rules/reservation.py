"""Rule `reservation`, the starvation guard: nodes held for a PodGroup that has waited too
long, and no other PodGroup's pod bound there.

Why: without it, a 256-GPU gang waits while 1- and 8-GPU jobs take every GPU that frees
up; it starts only when, by chance, enough frees at once. Volcano's `sla` plugin answers
with the `sla-waiting-time` annotation (a Go duration, on the job or as the plugin's
argument): a job past it is ordered first and keeps what it is allocated in a session even
when it cannot start yet. We read the same annotation (`models.snapshot.ReservationPolicy`
says where the waiting time comes from) and do more: the PodGroup gets a *reservation*, a
set of nodes inside one domain chosen for it, and no other PodGroup's pod is bound there
until it starts. What runs there stays (it is drained by finishing, or evicted only when
rule `preemption` allows the overdue PodGroup to take it, as for any preemptor).

Input: a validated `Snapshot`. Output: `reservations(snapshot)`, computed once per snapshot
(`solver.memo`) and deterministic — the same snapshot gives the same reservations, so the
checker, both engines and the reasons agree. `solver.problem` makes a held node ineligible
for every other PodGroup's tasks but those that backfill it (the same mechanism as a hot
node of rule `usage`), and `check` below judges the binds.

Who is overdue: a PodGroup not yet started (its running pods do not meet its gang
requirement) with pending pods, whose waiting time — `now − creation_time` — is past its
limit, `now` being `ReservationPolicy.judged_at_s` or, without a clock, the newest
PodGroup creation time of the snapshot. Its queue must exist and be open. Overdue
PodGroups are served in Volcano's `sla` order: earliest deadline (creation + limit) first,
then key; each takes nodes no earlier one holds. At most one PodGroup per queue holds nodes
at a time — the queue's first in that order that gets a reservation — as the head of a
Kueue StrictFIFO queue blocks: a hold per overdue PodGroup idles more of the cluster the
longer the backlog (on the `llm` timeline, 79 jobs never started instead of 4), while one
per queue still bounds every PodGroup's wait (the next one's turn comes when it starts).

Where: the domain where it fits soonest. Candidates are the HyperNodes it may use (tier ≤
`highest_tier_allowed` under hard topology, any tier otherwise) and, when its topology is
not hard, the whole cluster (`CLUSTER`). In each, nodes it is eligible for are taken most
free first until the pods it still needs fit on them once emptied; a domain is scored by
(GPUs to drain — pods that do not fit now, times their GPUs —, running GPU-seconds on the
nodes that must drain, tier, name) and the least wins. Worked example: a 24-GPU gang (3
pods of 8) under hard tier 1; leaf-3 has 3 of its 8 nodes free, leaf-5 has 2 → leaf-3,
nothing to drain, its 3 free nodes held (24 of 64 GPUs of leaf-3 free); the gang starts
this cycle and the reservation ends with it. If leaf-3 had 2 free nodes and one running
an 8-GPU job for 40 min, leaf-3 would be chosen with 8 GPUs to drain, 19,200 GPU-s in the way.

What is held: the chosen nodes whose room is free now — not those still to drain. A node
that must drain keeps taking other pods, and the PodGroup takes each node as it empties
(the choice is made again every cycle, and an emptied node of the domain is the first
chosen). Why: holding a node that still runs a 4-hour inference pod idles its seven
other GPUs for those hours; on the `llm` timeline holding to-drain nodes held far more of
the GPUs on average than holding free ones (measured: docs/results.md, "Starvation guard
and preemption on the llm timeline").

Not promised: an exact fit. The pods still needed are counted in the shape of the
PodGroup's largest pending task (GPUs, then CPU), per node on its allocatable for "once
emptied"; a multi-shape gang may hold a little more than it uses. A PodGroup over its
queue's capability in GPUs gets no reservation (it could not start, and would hold nodes
forever); nor one whose gang can never be met by its pods.

Backfill, as Slurm's backfill with time limits: a held node idles until the holder's nodes
to drain are empty, so it may take another PodGroup's pod that is sure to be gone by then.
The bound of a pod's run is Kubernetes' `activeDeadlineSeconds` (`Task.active_deadline_s`,
`Pod.active_deadline_s`): the kubelet ends the pod that long after it started, so it is a
true upper bound, not an estimate. The holder can start in its domain once the chosen nodes
that must drain are empty, at the latest when the last running pod there ends: `drained_in_s`
= max over those pods of start + activeDeadlineSeconds, less now (0 when nothing must drain:
the holder starts now and nothing backfills). One pod there with no bound (or no start time)
makes the holder's start unknown, and then nothing backfills (`drained_in_s` None): fail
safe. A pod of another PodGroup may be bound to a held node when its task's
activeDeadlineSeconds ≤ `drained_in_s`. Worked example: j7 needs 3 nodes of leaf-3, holds
free n24 and n25, and must drain n26, where a pod started 22 min ago with a 60-min deadline
and another started 10 min ago with 30 min → n26 is empty in at most 38 min (2,280 s); a
fine-tuning pod with a 30-min deadline may take n24 (gone by then), one with 60 min may not.
Why not estimates of run time: a job that overruns its estimate would delay the holder, the
one PodGroup the guard is there to start; a deadline cannot be overrun. Nodes still to drain stay
unheld (above) even when every pod there has a deadline: holding them too, backfill only,
so that the holder's start can only come sooner, did worse on the `llm` timeline: less
allocated, more jobs never started, a longer tail counting them (measured: docs/results.md,
"Starvation guard and preemption on the llm timeline").

The rule, as the checker judges it: each pod bound this cycle to a held node belongs to
the PodGroup it is held for, or backfills it (above). Pods already running there stay;
evicting them is rule `preemption`'s business, as for any preemptor. Worked example:
llm/j7 holds n24, n25, n26 of leaf-3 with nothing to drain; this cycle binds llm/j9's
8-GPU pod to n25 → violation "pod llm/j9-0 is bound to node n25, held for llm/j7 (...);
it has no activeDeadlineSeconds to backfill by"; binding j7's pods to n24–n26, or j9's to
n30, is fine; with 2,280 s to drain, j9 with a deadline of 3,600 s gets "its
activeDeadlineSeconds 3600 > 2280 s until leaf-3 drains", with 1,800 s it is fine.
`REASON` is what a PodGroup kept off such nodes counts them under (`held_reason` adds the
holder and its backfill window); `reserved_reason` is the sentence the holder carries while
it waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from models.snapshot import (
    GPU,
    GPU_MILLI_PER_DEVICE,
    POD_SLOT,
    PODS,
    Node,
    NodeName,
    PodGroup,
    PodGroupKey,
    Snapshot,
    Task,
)
from solver.after import After
from solver.columns import NodeFilter
from solver.memo import memoized
from solver.reasons import Reason, backfill_clause, reservation_holding
from solver.rules.eligibility import eligible
from solver.rules.gang import gang_requirement
from solver.rules.topology import hard_tier_limit
from solver.rules.usage import usage_reason
from solver.shares import queue_allocated
from solver.violation import Violation

__all__ = [
    "NAME",
    "REASON",
    "CLUSTER",
    "DEFAULT_SLA_WAITING_S",
    "Reservation",
    "now_s",
    "waiting_limit_s",
    "overdue",
    "reservations",
    "reserved_for",
    "reservation_of",
    "by_holder",
    "reserved_reason",
    "held_reason",
    "node_filter",
    "check",
]

NAME = "reservation"

REASON = "held for a PodGroup waiting past its sla-waiting-time"

CLUSTER = "cluster"
"""The domain name of a reservation that is not inside one HyperNode."""

DEFAULT_SLA_WAITING_S = 1800.0
"""The waiting time the controller gives every PodGroup whose job, PodGroup or Queue sets
none (`--sla-waiting-time`, default 30m; `none` turns the guard off). Why on by default:
on the `llm` timeline without it, eviction churn — the run a preempted gang loses and its
wait to start again — was half of the training jobs' wait, and big gangs that waited for a
whole spine never started while free nodes were split over both (docs/results.md, "Where
the delay comes from"). With it, a PodGroup evicts nobody (rule `preemption`: its wait is
bounded here instead) and the head of each queue gets room held, backfilled by deadlines.
Why 30 min: compared there with waiting times from 1 min to 4 h (same docs section)."""


@dataclass(frozen=True)
class Reservation:
    """Nodes held for one overdue PodGroup, and why those.

    Example: `Reservation(group="llm/j7", waited_s=2820, limit_s=1800, domain="leaf-3",
    nodes=("n24", "n25", "n26"), free_gpu_milli=24000, domain_gpu_milli=64000, ...)`."""

    group: PodGroupKey
    waited_s: float
    limit_s: float
    domain: str  # a HyperNode name, or CLUSTER
    nodes: tuple[NodeName, ...]  # held (free now), in the order taken
    pods_needed: int
    free_gpu_milli: int  # free in the domain at the snapshot (eligible nodes not held by others)
    domain_gpu_milli: int  # GPU capacity of those nodes
    drain_gpu_milli: int  # GPUs of the pods that do not fit on the chosen nodes now
    running_gpu_s: float  # GPU-seconds already run by the pods on the chosen nodes that must drain
    drained_in_s: float | None  # until the chosen nodes that must drain are empty at the latest
    # (each running pod there ends by start + activeDeadlineSeconds); 0: none must drain; None: some
    # pod there has no bound, so the holder's start is unknown and nothing backfills its held nodes

    def backfills(self, task: Task) -> bool:
        """Whether a pod of `task`, of another PodGroup, may be bound to these held nodes now:
        it is gone before the holder can start here (module docstring, backfill)."""
        deadline = task.active_deadline_s
        return deadline is not None and self.drained_in_s is not None and deadline <= self.drained_in_s


def now_s(snapshot: Snapshot) -> float:
    """The instant waiting is counted at: the policy's clock, else the newest creation time."""
    policy = snapshot.reservation_policy
    if policy.judged_at_s is not None:
        return policy.judged_at_s
    return max((group.creation_time for group in snapshot.pod_groups), default=0.0)


def waiting_limit_s(snapshot: Snapshot, group: PodGroup) -> float | None:
    """The PodGroup's own waiting time, else its queue's, else the policy's; None: no limit."""
    if group.sla_waiting_s is not None:
        return group.sla_waiting_s
    queue = snapshot.queue_by_name.get(group.queue)
    if queue is not None and queue.sla_waiting_s is not None:
        return queue.sla_waiting_s
    return snapshot.reservation_policy.sla_waiting_s


def overdue(snapshot: Snapshot) -> tuple[tuple[PodGroup, float, float], ...]:
    """(PodGroup, waited, limit) of each overdue PodGroup, earliest deadline first."""
    now = now_s(snapshot)
    found = []
    for group in snapshot.pod_groups:
        limit = waiting_limit_s(snapshot, group)
        if limit is None or now - group.creation_time <= limit:
            continue
        if _pods_needed(snapshot, group) > 0:
            found.append((group, now - group.creation_time, limit))
    found.sort(key=lambda item: (item[0].creation_time + item[2], item[0].key))
    return tuple(found)


def reservations(snapshot: Snapshot) -> tuple[Reservation, ...]:
    """The reservations of this cycle (module docstring); computed once per snapshot."""
    return memoized(snapshot, ("reservations",), lambda: _reserve_all(snapshot))


def reserved_for(snapshot: Snapshot) -> Mapping[NodeName, PodGroupKey]:
    """Each held node → the PodGroup it is held for; do not mutate."""
    return memoized(
        snapshot,
        ("reserved_for",),
        lambda: {node: reservation.group for reservation in reservations(snapshot) for node in reservation.nodes},
    )


def _pods_needed(snapshot: Snapshot, group: PodGroup) -> int:
    """Pods it still needs to start: its gang minimum less its running pods, at least one,
    when it has pending pods and has not started; else 0."""
    pods = snapshot.pods_by_group.get(group.key, ())
    pending = sum(1 for pod in pods if pod.phase == "pending")
    if not pending:
        return 0
    running = len(pods) - pending
    minimum = gang_requirement(snapshot, group).min_member
    if running and running >= minimum:
        return 0  # started: more pods of a running job are no starvation
    if len(pods) < minimum:
        return 0  # its gang can never be met: holding nodes for it helps nobody
    return max(minimum - running, 1)


def _shape(snapshot: Snapshot, group: PodGroup) -> Task | None:
    tasks = {pod.task for pod in snapshot.pods_by_group.get(group.key, ()) if pod.phase == "pending"}
    shaped = [group.task_by_name[name] for name in sorted(tasks) if name in group.task_by_name]
    return max(shaped, key=lambda task: (task.requests.get(GPU, 0), task.requests.get("cpu", 0)), default=None)


def _fits(room: Mapping[str, int], requests: Mapping[str, int], free_devices: int) -> int:
    """How many pods of `requests` fit in `room` (whole GPUs counted on free devices)."""
    counts = [room.get(PODS, 0) // POD_SLOT]
    for name, amount in requests.items():
        if amount <= 0:
            continue
        if name == GPU and amount >= GPU_MILLI_PER_DEVICE:
            counts.append(free_devices // (amount // GPU_MILLI_PER_DEVICE))
        else:
            counts.append(room.get(name, 0) // amount)
    return max(0, min(counts))


@dataclass(frozen=True)
class _NodeState:
    free: dict[str, int]
    free_devices: int
    running_gpu_s: float
    drained_at_s: float | None  # when its last running pod ends at the latest; None: unbounded


def _node_states(snapshot: Snapshot, now: float) -> dict[NodeName, _NodeState]:
    used: dict[NodeName, dict[str, int]] = {node.name: {} for node in snapshot.nodes}
    held: dict[NodeName, dict[int, int]] = {
        node.name: {gpu.index: gpu.used_milli for gpu in node.gpus} for node in snapshot.nodes
    }
    gpu_s: dict[NodeName, float] = dict.fromkeys(used, 0.0)
    drained_at: dict[NodeName, float | None] = dict.fromkeys(used, now)
    for pod in snapshot.pods:
        if pod.phase != "running" or pod.node is None:
            continue
        totals = used[pod.node]
        totals[PODS] = totals.get(PODS, 0) + POD_SLOT
        for name, amount in pod.requests.items():
            totals[name] = totals.get(name, 0) + amount
        gpu_milli = pod.requests.get(GPU, 0)
        for index in pod.gpu_indices:
            per_device = GPU_MILLI_PER_DEVICE if gpu_milli >= GPU_MILLI_PER_DEVICE else gpu_milli
            held[pod.node][index] = held[pod.node].get(index, 0) + per_device
        started = pod.start_time if pod.start_time is not None else now
        gpu_s[pod.node] += gpu_milli / GPU_MILLI_PER_DEVICE * max(0.0, now - started)
        latest = drained_at[pod.node]
        if pod.start_time is None or pod.active_deadline_s is None or latest is None:
            drained_at[pod.node] = None  # an unbounded run: when the node empties is unknown
        else:
            drained_at[pod.node] = max(latest, pod.start_time + pod.active_deadline_s)
    states = {}
    for node in snapshot.nodes:
        free = {name: amount - used[node.name].get(name, 0) for name, amount in node.allocatable.items()}
        free_devices = sum(1 for milli in held[node.name].values() if milli == 0)
        states[node.name] = _NodeState(
            free=free, free_devices=free_devices, running_gpu_s=gpu_s[node.name], drained_at_s=drained_at[node.name]
        )
    return states


def _domains(snapshot: Snapshot, group: PodGroup) -> list[tuple[int, str, list[NodeName]]]:
    """(tier, name, nodes) of each domain the PodGroup may be held in; the cluster last."""
    members: dict[str, list[NodeName]] = {hypernode.name: [] for hypernode in snapshot.hypernodes}
    for node in snapshot.nodes:
        for name in snapshot.hypernode_chain[node.name]:
            members[name].append(node.name)
    limit = hard_tier_limit(group)
    domains = [
        (hypernode.tier, hypernode.name, members[hypernode.name])
        for hypernode in snapshot.hypernodes
        if limit is None or hypernode.tier <= limit
    ]
    if limit is None:
        top = max((h.tier for h in snapshot.hypernodes), default=0) + 1
        domains.append((top, CLUSTER, [n.name for n in snapshot.nodes]))
    return domains


def _reserve_all(snapshot: Snapshot) -> tuple[Reservation, ...]:
    late = overdue(snapshot)
    if not late:
        return ()
    now = now_s(snapshot)
    states = _node_states(snapshot, now)
    nodes = snapshot.node_by_name
    allocated = queue_allocated(snapshot)
    taken: set[NodeName] = set()
    out: list[Reservation] = []
    holding: set[str] = set()
    for group, waited, limit in late:
        if group.queue in holding:
            continue  # one holder per queue: its earliest deadline
        queue = snapshot.queue_by_name.get(group.queue)
        task = _shape(snapshot, group)
        if queue is None or queue.state != "open" or task is None:
            continue
        needed = _pods_needed(snapshot, group)
        cap = (queue.capability or {}).get(GPU)
        in_use = allocated.get(group.queue, {}).get(GPU, 0)
        if cap is not None and in_use + needed * task.requests.get(GPU, 0) > cap:
            continue
        best: tuple[tuple[int, float, int, str], Reservation] | None = None
        for tier, name, members in _domains(snapshot, group):
            candidates = [
                n for n in members if n not in taken and eligible(nodes[n], task) and usage_reason(snapshot, n) is None
            ]
            reservation = _hold(
                group, task, needed, name, candidates, nodes, states, waited=waited, limit=limit, now=now
            )
            if reservation is None:
                continue
            cost = (reservation.drain_gpu_milli, reservation.running_gpu_s, tier, name)
            if best is None or cost < best[0]:
                best = (cost, reservation)
        if best is not None:
            out.append(best[1])
            taken.update(best[1].nodes)
            holding.add(group.queue)
    return tuple(out)


def _hold(
    group: PodGroup,
    task: Task,
    needed: int,
    domain: str,
    candidates: list[NodeName],
    nodes: Mapping[NodeName, Node],
    states: Mapping[NodeName, _NodeState],
    *,
    waited: float,
    limit: float,
    now: float,
) -> Reservation | None:
    """The nodes of `candidates` to hold for `needed` pods of `task`, most free first; None
    when they cannot hold them even emptied."""
    fit_now = {n: _fits(states[n].free, task.requests, states[n].free_devices) for n in candidates}
    busy = {n: nodes[n].allocatable.get(GPU, 0) - states[n].free.get(GPU, 0) for n in candidates}
    order = sorted(candidates, key=lambda n: (-fit_now[n], busy[n], states[n].running_gpu_s, n))
    remaining, drain_pods, running_gpu_s = needed, 0, 0.0
    drained_at: float | None = now
    chosen: list[NodeName] = []
    for n in order:
        if remaining <= 0:
            break
        node = nodes[n]
        fit_empty = _fits(node.allocatable, task.requests, sum(1 for gpu in node.gpus if gpu.used_milli == 0))
        if fit_empty <= 0:
            continue
        take = min(remaining, fit_empty)
        if take > fit_now[n]:
            drain_pods += take - fit_now[n]
            running_gpu_s += states[n].running_gpu_s
            ends = states[n].drained_at_s
            drained_at = None if ends is None or drained_at is None else max(drained_at, ends)
        if take <= fit_now[n]:
            chosen.append(n)  # held: its room is free now; a node still to drain is not held (see above)
        remaining -= take
    if remaining > 0:
        return None
    return Reservation(
        group=group.key,
        waited_s=waited,
        limit_s=limit,
        domain=domain,
        nodes=tuple(chosen),
        pods_needed=needed,
        free_gpu_milli=sum(max(0, states[n].free.get(GPU, 0)) for n in candidates),
        domain_gpu_milli=sum(nodes[n].allocatable.get(GPU, 0) for n in candidates),
        drain_gpu_milli=drain_pods * task.requests.get(GPU, 0),
        running_gpu_s=running_gpu_s,
        drained_in_s=None if drained_at is None else max(0.0, drained_at - now),
    )


def reserved_reason(reservation: Reservation) -> Reason:
    """`"reservation: waiting 47 min > 30 min; holding leaf-3 (2 nodes held, 8 GPUs to drain), 24 of 64
    GPUs free; backfill allowed for jobs ending within 38 min"` (`solver.reasons.reservation_holding`)."""
    return reservation_holding(
        reservation.domain,
        nodes=len(reservation.nodes),
        waited_s=reservation.waited_s,
        limit_s=reservation.limit_s,
        drain_gpus=reservation.drain_gpu_milli // GPU_MILLI_PER_DEVICE,
        free_gpus=reservation.free_gpu_milli // GPU_MILLI_PER_DEVICE,
        total_gpus=reservation.domain_gpu_milli // GPU_MILLI_PER_DEVICE,
        drained_in_s=reservation.drained_in_s,
    )


def held_reason(snapshot: Snapshot, node: NodeName) -> str:
    """Why a held node is kept from a task that does not backfill it: `"held for a PodGroup
    waiting past its sla-waiting-time (llm/j7; backfill for jobs ending within 38 min)"`."""
    held = by_holder(snapshot)[reserved_for(snapshot)[node]]
    return f"{REASON} ({held.group}{backfill_clause(held.drained_in_s, lead='backfill')})"


def by_holder(snapshot: Snapshot) -> Mapping[PodGroupKey, Reservation]:
    """Each PodGroup holding nodes → its reservation; do not mutate."""
    return memoized(snapshot, ("reservation_by_holder",), lambda: {r.group: r for r in reservations(snapshot)})


def reservation_of(snapshot: Snapshot, group: PodGroupKey) -> Reservation | None:
    return by_holder(snapshot).get(group)


def node_filter(snapshot: Snapshot) -> NodeFilter | None:
    """A held node takes its holder's pods, and pods that backfill it, only
    (`solver.columns.NodeFilter`); None when no node is held. What it reads of a task: the
    PodGroup when that PodGroup holds nodes, and its activeDeadlineSeconds (whether it
    backfills). Example: j7 holds n24, drained in 2,280 s → j7's tasks and a task of deadline
    1,800 s may go to n24; one of 3,600 s or without a deadline may not."""
    held = reserved_for(snapshot)
    if not held:
        return None
    holders = set(held.values())
    held_by = by_holder(snapshot)

    def task_part(group: PodGroup, task: Task) -> tuple[PodGroupKey | None, float | None]:
        return (group.key if group.key in holders else None, task.active_deadline_s)

    def allows(task: Task, part: object, holder: object) -> bool:
        return part[0] == holder or held_by[holder].backfills(task)  # type: ignore[index]

    return NodeFilter(rule=NAME, node_part=held, task_part=task_part, allows=allows)


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Each pod bound this cycle to a held node belongs to the PodGroup it is held for, or
    backfills it: its task's activeDeadlineSeconds ≤ the seconds until the holder's nodes to
    drain are empty (`Reservation.backfills`)."""
    if not after.bound:
        return []
    held = reserved_for(snapshot)
    if not held:
        return []
    by_group = by_holder(snapshot)
    violations: list[Violation] = []
    for bound in after.bound:
        holder = held.get(bound.node.name)
        if holder is None or holder == bound.group.key or by_group[holder].backfills(bound.task):
            continue
        violations.append(
            Violation(
                rule=NAME,
                subject=bound.pod.key,
                message=f"pod {bound.pod.key} is bound to node {bound.node.name}, held for {holder} ({REASON}); "
                f"{_why_no_backfill(bound.task, by_group[holder])}",
            )
        )
    return violations


def _why_no_backfill(task: Task, reservation: Reservation) -> str:
    """`"its activeDeadlineSeconds 3600 > 2280 s until leaf-3 drains"`, and the like."""
    if reservation.drained_in_s is None:
        return f"no backfill: a pod on the nodes of {reservation.domain} to drain has no activeDeadlineSeconds"
    if task.active_deadline_s is None:
        return "it has no activeDeadlineSeconds to backfill by"
    deadline, drained_in = task.active_deadline_s, reservation.drained_in_s
    return f"its activeDeadlineSeconds {deadline:.0f} > {drained_in:.0f} s until {reservation.domain} drains"
