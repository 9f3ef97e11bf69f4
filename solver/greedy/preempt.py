"""Preempt and reclaim for the greedy engine: Volcano's `preempt` and `reclaim` actions.

Input: the `GreedyEngine` after allocate, with PodGroups still pending for lack of room
(capacity or topology; for preempt also quota; not queue, dependency or eligibility —
evictions cannot fix those). Output: evictions and binds committed together in the
engine's state.

Who may be evicted is decided by `solver.rules.preemption.victim_refusal` alone, with
allocated and deserved per queue as at the snapshot (the checker's numbers), plus:
  - the victim's PodGroup is preemptable and got no bind this cycle, and a PodGroup that
    lost pods gets no binds afterwards (its dependencies and gang stay judgeable);
  - no victim is a pod that a pod bound this cycle counts on for its required pod affinity
    or DoNotSchedule spread (`InterPod.protected`): its leaving could break them;
  - gang-aware: a victim PodGroup keeps at least its min_member running pods or loses
    all of them (`gang.victim_may_keep`). Example: min_member 3, 4 running → evicting one is fine; a second
    eviction takes all 4, never leaving 2. The same holds for each of its sub-groups
    (`SubGroup`): one pod of a shard of min 2 with 2 running takes the other with it;
  - reclaim takes from a queue only while it is above its deserved share (Volcano's
    `Reclaimable` loop: each victim is taken while the queue, after the previous ones,
    still exceeds deserved in some resource) — the victim's queue and each ancestor the
    reclaim takes out of (`charged_queues`); after every eviction each such queue still
    has a reclaimed victim v from its subtree with allocation + v above deserved (the
    checker's form of the same rule, which evictions lower in its subtree could break),
    and no queue falls below min(guarantee, allocation at the snapshot);
  - a queue reclaims only up to its own deserved share, in what it takes
    (`reclaim_share_refusal`, the rule module's): a victim goes for one more pod only if it
    frees something the pod asks and the queue's allocation plus that pod stays within
    deserved in every resource both share. Example: 12 CPU, a (guarantee 8) runs 12, b and
    c deserve 2 each: b reclaims 2 pods and c the other 2, not b all 4; a queue at its CPU
    share whose pod asks a CPU and a GPU reclaims a GPU pod, if a CPU is idle where it runs.

Victim sets are built once per (action, queue, priority) of preemptor (`VictimPool`),
with what they hold per node and device; an attempt copies those tables and subtracts
the few victims gone since (evicted, or of a PodGroup bound this cycle).

How: `make_room` is called when no node takes one more pod of the preemptor. It finds
nodes where the pod would fit if the candidate victims there were gone (vectorized), tries
the `CANDIDATE_NODES` with the smallest shortfall, and on each picks victims lowest
priority first, youngest first (first without cutting any gang, then allowing whole-gang
evictions); the node needing the fewest victims (then the lowest highest priority) wins.
The preemptor's transaction rolls every eviction back if its minimum still does not fit,
so nobody is evicted for a placement that does not happen.

Quota: a queue at its capability frees it by preempting its own lower-priority pods —
same-queue victims give back to the queue and every ancestor — as rule 8 allows and
Volcano's preempt does (its victims' resources return to the queue within the session's
statement before the preemptor is pipelined). When the pod fits a node already, the
queue's victims are taken in victim order from any node until they give back
`quota_shortfall`; otherwise the victims on one node must cover both that node's
shortfall and the quota. Example:
capability 3 CPU, three 1-CPU pods of priority 1 running, a priority-10 1-CPU pod pending
→ one of them is preempted and the pod binds. Reclaim leaves quota alone: another queue's
victims give nothing back to this one.

Not promised: the fewest victims overall — node by node, pod by pod, as Volcano does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from models.snapshot import QueueName, Snapshot
from solver import reasons
from solver.greedy.plan import GreedyFailure, GroupPlan, GroupPlans
from solver.greedy.state import WHOLE, CycleState, TaskShape, choose_devices
from solver.objective import disruption_clock, gpu_time_lost
from solver.problem import Problem
from solver.rules.capacity import device_fits, fits
from solver.rules.gang import GangRequirement, victim_may_keep
from solver.rules.preemption import (
    ReclaimShare,
    above_deserved,
    queue_overused,
    victim_refusal,
    waits_instead,
)

__all__ = ["AllocatingEngine", "Preemptor", "VictimPool", "VictimSet", "run_preemption", "CANDIDATE_NODES"]

QueueShares = dict[QueueName, dict[str, int]]
"""Per queue, a resource list (`Problem.resources_dict`): allocated or deserved, subtree included."""

class AllocatingEngine(Protocol):
    """What preemption needs of the engine that allocated (`solver.greedy.engine.GreedyEngine`):
    its cycle state and plans, and a way to try a PodGroup again once victims are chosen."""

    snapshot: Snapshot
    problem: Problem
    state: CycleState
    plans: GroupPlans
    victims: VictimPool

    def attempt(self, plan: GroupPlan, *, action: str | None, commit: bool = True) -> bool: ...

    def demand(self, plan: GroupPlan, counts: dict[int, int]) -> tuple[np.ndarray, int]: ...

    def dominant_shares(self) -> np.ndarray: ...

    def minimum_counts(self, plan: GroupPlan) -> dict[int, int]: ...


CANDIDATE_NODES = 8
"""Nodes examined per pod that needs room (those with the smallest shortfall)."""

_RETRYABLE = {
    "preempt": (GreedyFailure.CAPACITY, GreedyFailure.TOPOLOGY, GreedyFailure.QUOTA),
    "reclaim": (GreedyFailure.CAPACITY, GreedyFailure.TOPOLOGY),
}


def run_preemption(engine: AllocatingEngine, *, action: str) -> None:
    """Try every PodGroup still pending for lack of room, with evictions of kind `action`."""
    state = engine.state
    plans = [p for p in engine.plans.with_pending() if not p.minimum_met and p.failure in _RETRYABLE[action]]
    if not plans:
        return
    if action == "preempt":
        plans.sort(key=lambda p: p.order)
    else:
        shares = engine.dominant_shares()
        plans.sort(key=lambda p: (shares[p.queue], p.order))
    for plan in plans:
        if state.evicted_count[plan.index] or plan.minimum_met:
            continue
        usable = int(engine.victims.available(plan, action)[1].sum())
        if not usable:
            continue
        before_reasons, before_failure = list(plan.reasons), plan.failure
        if engine.attempt(plan, action=action):
            continue
        plan.failure = before_failure
        past_share = _past_share(engine, plan) if action == "reclaim" else None
        plan.reasons = [*before_reasons, past_share or reasons.preemption_not_enough(action=action, victims=usable)]


def _past_share(engine: AllocatingEngine, plan: GroupPlan) -> str | None:
    """Why reclaim stopped, when the minimum would take `plan`'s queue past its deserved share."""
    problem, state = engine.problem, engine.state
    demand, _ = engine.demand(plan, engine.minimum_counts(plan))
    used, deserved = state.queue_used[plan.queue], problem.queue_deserved[plan.queue]
    for r in np.flatnonzero((demand > 0) & (used + demand > deserved)):
        return reasons.reclaim_past_share(
            problem.queue_names[plan.queue],
            resource=problem.resource_names[r],
            deserved=int(deserved[r]),
            in_use=int(used[r]),
            needs=int(demand[r]),
        )
    return None


@dataclass(frozen=True)
class VictimSet:
    """The running pods `victim_refusal` allows for one kind of preemptor, in victim
    order (lowest PodGroup priority first, then youngest, then key), with their node,
    PodGroup, requests and GPU devices as flat arrays, so that what is still available
    to a given attempt is one vectorized mask."""

    pods: np.ndarray  # [V] pod indices in victim order
    node: np.ndarray  # [V]
    group: np.ndarray  # [V]
    requests: np.ndarray  # [V, R]
    by_node: dict[int, list[int]]  # node → pods, victim order
    allowed: frozenset[int]
    device_owner: np.ndarray  # [E] position in `pods` of each held device
    device_node: np.ndarray  # [E]
    device_slot: np.ndarray  # [E]
    device_milli: np.ndarray  # [E]
    free_if_all_gone: np.ndarray  # [R, N] what all of them hold, per node
    gpu_if_all_gone: np.ndarray  # [N, G] milli they hold per device
    count_per_node: np.ndarray  # [N]

    def held(self, mask: np.ndarray, *, nodes: int, like_free: np.ndarray, like_gpu: np.ndarray):  # noqa: ANN201
        """(free [R, N], per-device milli [N, G], count [N]) held by the victims in `mask`."""
        where = self.node[mask]
        free = np.zeros_like(like_free)
        for r in range(free.shape[0]):
            free[r] = np.bincount(where, weights=self.requests[mask, r], minlength=nodes)
        gpu = np.zeros_like(like_gpu)
        devices = mask[self.device_owner] if self.device_owner.size else np.zeros(0, dtype=bool)
        np.add.at(gpu, (self.device_node[devices], self.device_slot[devices]), self.device_milli[devices])
        return free, gpu, np.bincount(where, minlength=nodes)


class VictimPool:
    """Victim sets per (action, queue, priority, may it preempt at all) of the preemptor —
    `victim_refusal` depends on nothing else but the preemptor's own PodGroup, which each
    attempt leaves out — with allocated and deserved as at the snapshot."""

    def __init__(self, engine: AllocatingEngine):
        self.engine = engine
        self._sets: dict[tuple[str, int, int, bool, bool], VictimSet] = {}
        self._shares: tuple[QueueShares, QueueShares] | None = None

    def snapshot_shares(self) -> tuple[QueueShares, QueueShares]:
        """(allocated, deserved) per queue at the snapshot, as the checker judges them."""
        if self._shares is None:
            # The Problem holds `queue_allocated` and `deserved_shares` as arrays; back to
            # dicts (zeros left out, which no comparison of victim_refusal tells apart).
            problem = self.engine.problem

            def per_queue(rows: np.ndarray) -> QueueShares:
                return {name: problem.resources_dict(rows[q]) for q, name in enumerate(problem.queue_names)}

            self._shares = (per_queue(problem.queue_allocated), per_queue(problem.queue_deserved))
        return self._shares

    def victim_set(self, plan: GroupPlan, action: str) -> VictimSet:
        key = (action, plan.queue, plan.group.priority, plan.group.may_preempt,
               waits_instead(self.engine.snapshot, plan.group))  # fmt: skip
        if key not in self._sets:
            self._sets[key] = self._build(self._allowed_victims(plan, action))
        return self._sets[key]

    def available(self, plan: GroupPlan, action: str) -> tuple[VictimSet, np.ndarray]:
        """The victim set and a `[V]` mask of those usable now: not evicted, not of a
        PodGroup bound this cycle, not of `plan` itself, not counted on by an inter-pod
        constraint of a pod bound this cycle."""
        victims, state = self.victim_set(plan, action), self.engine.state
        usable = ~state.evicted_mask[victims.pods]
        usable &= (state.bound_count[victims.group] == 0) & (victims.group != plan.index)
        if state.inter_pod is not None:
            usable &= ~state.inter_pod.protected_mask(victims.pods)
        return victims, usable

    def _build(self, allowed: list[int]) -> VictimSet:
        engine = self.engine
        snapshot, problem, state = engine.snapshot, engine.problem, engine.state
        now = disruption_clock(snapshot)
        order = sorted(
            allowed,
            key=lambda p: (
                snapshot.pod_groups[problem.pod_group[p]].priority,
                gpu_time_lost(snapshot.pods[p], now),  # the least GPU-time lost first
                -(snapshot.pods[p].start_time or 0.0),
                problem.pod_keys[p],
            ),
        )
        pods = np.array(order, dtype=np.int64)
        by_node: dict[int, list[int]] = {}
        owners, nodes, slots, millis = [], [], [], []
        for position, pod in enumerate(order):
            node = int(problem.pod_node[pod])
            by_node.setdefault(node, []).append(pod)
            held, milli = state.running_devices(pod)
            for slot in held:
                owners.append(position)
                nodes.append(node)
                slots.append(slot)
                millis.append(milli)
        partial = VictimSet(
            pods=pods,
            node=problem.pod_node[pods],
            group=problem.pod_group[pods],
            requests=problem.pod_requests[pods],
            by_node=by_node,
            allowed=frozenset(order),
            device_owner=np.array(owners, dtype=np.int64),
            device_node=np.array(nodes, dtype=np.int64),
            device_slot=np.array(slots, dtype=np.int64),
            device_milli=np.array(millis, dtype=np.int64),
            free_if_all_gone=np.zeros(0),
            gpu_if_all_gone=np.zeros(0),
            count_per_node=np.zeros(0),
        )
        free, gpu, count = partial.held(
            np.ones(pods.size, dtype=bool), nodes=problem.node_count, like_free=state.free, like_gpu=state.gpu_free
        )
        return dataclasses.replace(partial, free_if_all_gone=free, gpu_if_all_gone=gpu, count_per_node=count)

    def _allowed_victims(self, plan: GroupPlan, action: str) -> list[int]:
        engine = self.engine
        snapshot, problem = engine.snapshot, engine.problem
        allocated, deserved = self.snapshot_shares()
        groups = snapshot.pod_groups
        owner = problem.pod_group
        pod_queue = np.where(owner >= 0, problem.group_queue[np.maximum(owner, 0)], -1)
        mask = problem.pod_running & (owner >= 0)
        # Cheap filters that victim_refusal would refuse anyway, so it is asked less often.
        if action == "preempt":
            mask &= pod_queue == plan.queue
        else:
            if queue_overused(allocated.get(plan.group.queue, {}), deserved.get(plan.group.queue, {})):
                return []
            over = np.array(
                [
                    bool(problem.queue_reclaimable[q])
                    and above_deserved(allocated.get(name, {}), deserved.get(name, {}))
                    for q, name in enumerate(problem.queue_names)
                ]
                + [False],  # index −1: pods of no queue
                dtype=bool,
            )
            mask &= (pod_queue != plan.queue) & over[pod_queue]
        allowed = []
        for p in np.flatnonzero(mask):
            if not groups[owner[p]].preemptable:
                continue
            refusal = victim_refusal(
                snapshot,
                preemptor=plan.group,
                victim=snapshot.pods[p],
                reason=action,  # type: ignore[arg-type]
                allocated=allocated,
                deserved=deserved,
            )
            if refusal is None:
                allowed.append(int(p))
        return allowed


class Preemptor:
    """Victims available to one PodGroup for one transaction attempt, by node."""

    def __init__(self, engine: AllocatingEngine, plan: GroupPlan, action: str):
        self.engine, self.plan, self.action = engine, plan, action
        state, problem = engine.state, engine.problem
        self.victims, usable = engine.victims.available(plan, action)
        self.reclaimed = [pod for pod, (reason, _) in state.evictions.items() if reason == "reclaim"]
        victims = self.victims
        # What every victim of the set holds, less the few no longer usable: a copy and a
        # small subtraction instead of re-adding tens of thousands of pods per attempt.
        gone, gone_gpu, gone_count = victims.held(
            ~usable, nodes=problem.node_count, like_free=state.free, like_gpu=state.gpu_free
        )
        self.extra_free = victims.free_if_all_gone - gone
        self.extra_gpu = victims.gpu_if_all_gone - gone_gpu
        self.has_victims = victims.count_per_node - gone_count > 0
        self._share: ReclaimShare | None = None  # reclaim: `_share_terms` of the pod being placed

    @staticmethod
    def hypothetical(engine: AllocatingEngine, plan: GroupPlan, action: str) -> tuple[np.ndarray, np.ndarray]:
        """Free capacity and wholly free devices per node if every usable victim left."""
        preemptor = Preemptor(engine, plan, action)
        state = engine.state
        whole = ((state.gpu_free + preemptor.extra_gpu) == WHOLE).sum(axis=1)
        return state.free + preemptor.extra_free, whole

    def usable(self, pod: int) -> bool:
        """Still a victim for this attempt (not evicted, its PodGroup unbound, not the preemptor's)."""
        state, group = self.engine.state, int(self.engine.problem.pod_group[pod])
        if state.evicted_mask[pod] or state.bound_count[group] or group == self.plan.index:
            return False
        return state.inter_pod is None or not state.inter_pod.protected(pod)

    # ---- one pod ----

    def make_room(self, shape: TaskShape, base: np.ndarray) -> bool:
        """Evict victims on one node so one more pod of `shape` fits there; False if none can."""
        state, problem = self.engine.state, self.engine.problem
        quota = state.quota_shortfall(self.plan.queue, shape)
        if quota.any() and self.action != "preempt":
            return False
        if self.action == "reclaim":
            self._share = self._share_terms(shape)
            if not self._may_reclaim_for(self._share):
                return False
        if quota.any() and state.fit_mask(shape, base).any():
            anywhere = self._select_pass(None, shape, quota, whole_gangs=False)
            if anywhere is None:
                anywhere = self._select_pass(None, shape, quota, whole_gangs=True)
            if anywhere is not None:
                self._evict(anywhere)
                return True
        maybe = base & self.has_victims & fits(state.free + self.extra_free, shape.requests, shape.columns)
        nodes = np.flatnonzero(maybe)
        if shape.whole_devices and nodes.size:
            freed = state.gpu_free[nodes] + self.extra_gpu[nodes]
            nodes = nodes[device_fits(freed, WHOLE).sum(axis=1) >= shape.whole_devices]
        elif shape.fractional and nodes.size:
            freed = state.without_lent(shape, state.gpu_free[nodes] + self.extra_gpu[nodes], nodes)
            nodes = nodes[device_fits(freed, shape.gpu_milli).any(axis=1)]
        if not nodes.size:
            return False
        shortfall = np.zeros(nodes.size)
        for r in shape.columns:
            shortfall += np.maximum(0, shape.requests[r] - state.free[r][nodes]) / (problem.allocatable[r].max() + 1.0)
        order = nodes[np.lexsort((nodes, shortfall))][:CANDIDATE_NODES]
        best: tuple[tuple[int, int, int, int], list[int]] | None = None
        snapshot = self.engine.snapshot
        now = disruption_clock(snapshot)
        for node in order:
            victims = self._select(int(node), shape, quota)
            if victims is None:
                continue
            top_priority = max(snapshot.pod_groups[problem.pod_group[v]].priority for v in victims)
            lost = sum(gpu_time_lost(snapshot.pods[v], now) for v in victims)
            cost = (len(victims), top_priority, lost, int(node))
            if best is None or cost < best[0]:
                best = (cost, victims)
        if best is None:
            return False
        self._evict(best[1])
        return True

    def _evict(self, victims: list[int]) -> None:
        state = self.engine.state
        for victim in victims:
            state.evict(victim, reason=self.action, for_group=self.plan.index)
            self._forget(victim)
            if self.action == "reclaim":
                self.reclaimed.append(victim)

    def _share_terms(self, shape: TaskShape) -> ReclaimShare:
        """What `reclaim_share_refusal` compares for one more pod of `shape`."""
        queue, problem = self.plan.queue, self.engine.problem
        return ReclaimShare(
            queue=problem.queue_names[queue],
            allocated=problem.resources_dict(self.engine.state.queue_used[queue]),
            deserved=problem.resources_dict(problem.queue_deserved[queue]),
            request=problem.resources_dict(shape.requests),
        )

    def _may_reclaim_for(self, share: ReclaimShare) -> bool:
        """Could any victim be reclaimed for the pod `share` is of: one that frees a single
        resource the pod asks, the most lenient the share rule meets?"""
        return any(share.refusal({name: 1}) is None for name in share.request)

    def _share_allows(self, pods: list[int]) -> bool:
        """May each of `pods` be reclaimed for the pod `make_room` is placing?"""
        assert self._share is not None, "make_room sets the share terms before a reclaim selects"
        snapshot, share = self.engine.snapshot, self._share
        return all(share.refusal(snapshot.pods[pod].requests) is None for pod in pods)

    def _forget(self, pod: int) -> None:
        problem, state = self.engine.problem, self.engine.state
        node = int(problem.pod_node[pod])
        self.extra_free[:, node] -= problem.pod_requests[pod]
        slots, milli = state.running_devices(pod)
        if slots:
            self.extra_gpu[node, list(slots)] -= milli
        self.has_victims[node] = any(self.usable(p) for p in self.victims.by_node.get(node, ()))

    def _select(self, node: int, shape: TaskShape, quota: np.ndarray) -> list[int] | None:
        """Victims on `node` (plus the rest of any gang taken whole) so one pod fits there
        and `quota` is given back, or None."""
        for whole_gangs in (False, True):
            chosen = self._select_pass(node, shape, quota, whole_gangs=whole_gangs)
            if chosen is not None:
                return chosen
        return None

    def _select_pass(
        self, node: int | None, shape: TaskShape, quota: np.ndarray, *, whole_gangs: bool
    ) -> list[int] | None:
        """Victims in victim order until one pod of `shape` fits `node` and they give back
        `quota`; `node` None: from every node, for the quota alone (the pod fits already)."""
        engine = self.engine
        state, problem = engine.state, engine.problem
        if node is not None:
            free = state.free[:, node].copy()
            gpu_row = state.gpu_free[node].copy()
            cell_cpu = state.cell_cpu[node].copy()
            cell_memory = state.cell_memory[node].copy()
        given_back = np.zeros_like(quota)
        queue_used: dict[int, np.ndarray] = {}
        taken: dict[int, int] = {}
        chosen: list[int] = []
        chosen_set: set[int] = set()
        candidates = self.victims.pods.tolist() if node is None else self.victims.by_node.get(node, ())
        for victim in candidates:
            if victim in chosen_set or not self.usable(victim):
                continue
            group = int(problem.pod_group[victim])
            left = int(state.running_count[group]) - taken.get(group, 0)
            part = self._sub_group_part(victim, group, chosen_set, whole_gangs=whole_gangs)
            if part is not None and victim_may_keep(self._victim_requirement(group), left - len(part)):
                take = part
            elif whole_gangs and self._whole_gang_evictable(group):
                take = [p for p in self._running_of(group) if p not in chosen_set]
            else:
                continue
            if self.action == "reclaim" and not self._share_allows(take):
                continue
            if self.action == "reclaim" and not self._reclaim_allows(take, chosen, queue_used):
                continue
            for pod in take:
                chosen.append(pod)
                chosen_set.add(pod)
                taken[group] = taken.get(group, 0) + 1
                given_back += problem.pod_requests[pod]
                if node is None or int(problem.pod_node[pod]) != node:
                    continue
                free += problem.pod_requests[pod]
                slots, milli = state.running_devices(pod)
                if slots:
                    gpu_row[list(slots)] += milli
                cell = state.running_cell_slot(pod)
                if cell >= 0:
                    cell_cpu[cell] += problem.pod_requests[pod, problem.cpu_column]
                    cell_memory[cell] += problem.pod_requests[pod, problem.memory_column]
            if (given_back < quota).any():
                continue
            if node is None or self._fits(shape, node, free, gpu_row, cell_cpu, cell_memory):
                return chosen
        return None

    def _fits(self, shape: TaskShape, node: int, free, gpu_row, cell_cpu, cell_memory) -> bool:  # noqa: ANN001
        if not fits(free, shape.requests, shape.columns):
            return False
        state = self.engine.state
        return (
            choose_devices(
                shape,
                gpu_row=state.without_lent(shape, gpu_row, node),
                gpu_cell_row=state.gpu_cell[node],
                cell_exists_row=state.cell_exists[node],
                cell_cpu_row=cell_cpu,
                cell_memory_row=cell_memory,
            )
            is not None
        )

    def _sub_group_part(self, victim: int, group: int, chosen: set[int], *, whole_gangs: bool) -> list[int] | None:
        """What evicting `victim` takes with it for its sub-group to keep all or enough
        (`gang.sub_group_shortfall`): the victim alone when its sub-group keeps none or its
        minimum (or it is in none); in the whole-gang pass, every running pod of its sub-group
        not yet chosen when all of them may go; else None. Example: shard of min 2 with 3
        running → [victim]; with 2 running → both, or None in the first pass."""
        name = self.engine.snapshot.pods[victim].sub_group
        if name is None:
            return [victim]
        sub = self.engine.plans[group].sub_group(name)
        evicted = self.engine.state.evictions
        running = [pod for pod in sub.running if pod not in evicted and pod not in chosen]
        left = len(running) - 1
        if left == 0 or left >= sub.minimum:
            return [victim]
        if whole_gangs and all(pod in self.victims.allowed for pod in running):
            return running
        return None

    def _victim_requirement(self, group: int) -> GangRequirement:
        return self.engine.problem.group_facts[group].requirement

    def _running_of(self, group: int) -> list[int]:
        evicted = self.engine.state.evictions
        return [p for p in self.engine.plans[group].running_pods if p not in evicted]

    def _whole_gang_evictable(self, group: int) -> bool:
        return all(p in self.victims.allowed for p in self._running_of(group))

    def _reclaim_allows(self, take: list[int], chosen: list[int], queue_used: dict[int, np.ndarray]) -> bool:
        """May `take` be reclaimed on top of `chosen` (this pass) and earlier reclaims?

        Three checks, all on allocations as they stand now (this cycle's binds included),
        over the queues each reclaim is charged to (the victim's queue and the ancestors it
        does not share with its preemptor's, `charged_queues`):
          - each of those is above its deserved share just before the victim goes
            (Volcano's `Reclaimable` loop);
          - afterwards every charged queue whose allocation this changes still has one
            reclaimed victim v from its subtree with allocated + v above deserved — the
            checker's rule, kept true after every eviction, since later evictions in a
            subtree also lower its ancestors;
          - no queue on the way up falls below min(guarantee, allocation at the snapshot).
        """
        problem, state = self.engine.problem, self.engine.state
        deserved = problem.queue_deserved
        trial = {q: used.copy() for q, used in queue_used.items()}
        for pod in take:
            for queue in self._charged(pod, self.plan.queue):
                used = trial.setdefault(queue, state.queue_used[queue].copy())
                if not (used > deserved[queue]).any():
                    return False
            for ancestor in problem.queue_ancestors[self._queue_of(pod)]:
                trial.setdefault(ancestor, state.queue_used[ancestor].copy())
                trial[ancestor] -= problem.pod_requests[pod]
        preemptor_queue = {pod: self.plan.queue for pod in (*chosen, *take)}
        for pod in self.reclaimed:
            preemptor_queue[pod] = int(problem.group_queue[state.evictions[pod][1]])
        charged: set[int] = set()
        victims: dict[int, list[int]] = {}  # queue → reclaimed victims from its subtree
        for pod, reclaimer in preemptor_queue.items():
            charged.update(self._charged(pod, reclaimer))
            for ancestor in problem.queue_ancestors[self._queue_of(pod)]:
                victims.setdefault(ancestor, []).append(pod)
        for queue, used in trial.items():
            floor = np.minimum(problem.queue_guarantee[queue], problem.queue_allocated[queue])
            if (used < floor).any():
                return False
            if queue in charged and not any(
                (used + problem.pod_requests[v] > deserved[queue]).any() for v in victims[queue]
            ):
                return False
        queue_used.update(trial)
        return True

    def _charged(self, pod: int, preemptor_queue: int) -> tuple[int, ...]:
        """`charged_queues` by index: the victim's queue, then its ancestors not shared with
        `preemptor_queue`."""
        ancestors = self.engine.problem.queue_ancestors
        chain, shared = ancestors[self._queue_of(pod)], set(ancestors[preemptor_queue])
        return (chain[0], *(queue for queue in chain[1:] if queue not in shared))

    def _queue_of(self, pod: int) -> int:
        problem = self.engine.problem
        return int(problem.group_queue[problem.pod_group[pod]])
