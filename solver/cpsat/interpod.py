"""Inter-pod constraints for the CP-SAT engine: the PodGroups they touch are placed as the
greedy hint places them, and the model optimises the rest around them.

Why: the model counts interchangeable pods per node profile and packing pattern, never
one pod on one node, so it cannot say "no two web pods share a hostname" or "a cache pod
only in a zone that holds a web pod" — relations between particular pods on particular
nodes and domains. Rather than guess, it leaves those PodGroups to greedy's placement (a
restriction of the search, reported in `restricted`, so the status is never OPTIMAL).

Input: the `Snapshot`, its `Problem`, the `ObjectiveContext` and the hint placement.
Output: `None` when no pending PodGroup is involved (the model is the same as without this
step), else a `FixedPart`:
  - *involved* PodGroups: pending PodGroups with a task whose `inter_pod` is not empty,
    and pending PodGroups with a task whose labels (in its namespace) a term or spread
    selector of such a task, or a running pod's required anti-affinity, selects. None of
    them is a unit of the model;
  - *fixed*: the involved PodGroups the hint binds, with exactly the hint's binds, plus
    the hint's evictions made for them; an eviction of a *protected* pod (below) that the
    hint made for another PodGroup fixes that PodGroup too, and an eviction from a
    PodGroup fixes all the hint's evictions from it (its gang stays as the hint leaves
    it). Involved PodGroups the hint leaves pending stay pending;
  - *protected* running pods, never candidate victims: those a term (required or
    preferred) or spread selector of an involved task selects — an involved pod's
    affinity, spread count or preference depends on them — and the running pods of
    held and fixed-victim PodGroups;
  - the fixed binds and evictions as the model sees them: the nodes' free resources,
    devices and NUMA cells after them (`problem`), each queue's allocation change, and
    the throughput, disruption, locality, usage and packing's GPU-node charge they add —
    constants of the tiers, so the model's tier values still equal `score` of the whole placement.
Why the rest cannot break an involved pod's rule: a pod the model places is selected by
no involved task's term or spread selector and by no running pod's anti-affinity (else
its PodGroup would be involved), has no inter-pod constraint of its own, and the model
evicts no pod those selectors select.

When the hint's fixed part itself breaks a required inter-pod rule, no involved PodGroup
is placed and nothing is fixed (reported).

Not promised: that the fixed part passes the other rules — it is the hint's, and the
checker judges the whole placement as always.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from models.placement import Bind, Eviction, Placement
from models.pod_affinity import PodAffinityTerm, TopologySpreadConstraint
from models.snapshot import GPU, PodGroupKey, Snapshot, Task
from solver.after import build_after, milli_per_device
from solver.objective import (
    GPU_NODE_KEEP_MILLI,
    JOB_VALUE,
    ObjectiveContext,
    on_gpu_node,
    pod_value,
    score,
)
from solver.problem import UNLIMITED, Problem
from solver.rules import pod_affinity, topology_spread
from solver.rules.pod_affinity import term_selects
from solver.rules.preemption import charged_queues
from solver.rules.topology_spread import spread_selects

__all__ = ["FixedPart", "fix_inter_pod", "merged"]


@dataclass(frozen=True)
class FixedPart:
    placement: Placement  # the hint's binds and evictions the model takes as they are
    groups: frozenset[PodGroupKey]  # PodGroups bound exactly as the hint binds them
    held: frozenset[PodGroupKey]  # PodGroups that are no unit of the model (fixed or left pending)
    protected: frozenset[int]  # running pods (Problem indices) that are no candidate victims
    losing: frozenset[int]  # PodGroup indices the fixed evictions take pods from: they bind nothing
    problem: Problem  # nodes, devices and cells with the fixed binds placed and fixed victims gone
    queue_delta: np.ndarray  # [Q, R] allocation change of the fixed part (subtree included)
    queue_bound: np.ndarray  # [Q, R] what the fixed binds add (subtree included)
    own_bound: np.ndarray  # [Q, R] what the fixed binds of the queue's own PodGroups add
    own_preempted: np.ndarray  # [Q, R] what the fixed preemptions take from the queue's own PodGroups
    reclaim_witnesses: tuple[tuple[int, tuple[tuple[int, int], ...]], ...]
    """Per queue a fixed reclaim is charged to: (queue, (resource column, request) of each
    fixed reclaimed victim in its subtree) — one must stay a witness (`cpsat.constraints`)."""
    guarantee_floors: tuple[tuple[int, int, int], ...]  # (queue, column, floor) a fixed reclaim keeps
    throughput: int
    disruption: int
    locality: int
    usage: int
    gpu_node_keep: int  # packing's charge for the fixed binds asking no GPU on GPU nodes (`solver.objective`)
    residual_hint: Placement  # the hint without the fixed part and without held PodGroups
    notes: tuple[str, ...]  # for `restricted`


def _terms(task: Task) -> list[PodAffinityTerm]:
    ip = task.inter_pod
    return [
        *ip.required_affinity,
        *ip.required_anti_affinity,
        *(w.term for w in ip.preferred_affinity),
        *(w.term for w in ip.preferred_anti_affinity),
    ]


class _Selectors:
    """Every term and spread selector of the involved tasks, with the namespace stating it."""

    def __init__(self) -> None:
        self.terms: list[tuple[PodAffinityTerm, str]] = []
        self.spreads: list[tuple[TopologySpreadConstraint, str]] = []

    def add(self, task: Task, namespace: str) -> None:
        self.terms.extend((term, namespace) for term in _terms(task))
        self.spreads.extend((c, namespace) for c in task.inter_pod.topology_spread)

    def select(self, namespace: str, labels: dict[str, str]) -> bool:
        return any(term_selects(term, owner, namespace, labels) for term, owner in self.terms) or any(
            spread_selects(constraint, owner, namespace, labels) for constraint, owner in self.spreads
        )


def fix_inter_pod(snapshot: Snapshot, problem: Problem, ctx: ObjectiveContext, hint: Placement) -> FixedPart | None:
    """The fixed part of the hint (see the module docstring); None when nothing is involved."""
    stating = [g for g in snapshot.pod_groups if any(not t.inter_pod.empty for t in g.tasks)]
    anti = [pod for pod in snapshot.pods if pod.required_anti_affinity and pod.phase == "running"]
    if not stating and not anti:
        return None  # the usual case: one pass over tasks and pods, nothing else
    pending_groups = {pod.pod_group for pod in snapshot.pods if pod.phase == "pending" and pod.pod_group is not None}
    groups = [g for g in snapshot.pod_groups if g.key in pending_groups]
    stating = [g for g in stating if g.key in pending_groups]
    selectors = _Selectors()
    for group in stating:
        for task in group.tasks:
            selectors.add(task, group.namespace)
    running_terms = [(term, pod.namespace) for pod in anti for term in pod.required_anti_affinity]
    involved = {g.key for g in stating}
    for group in groups:
        if group.key in involved:
            continue
        for task in group.tasks:
            if selectors.select(group.namespace, task.labels) or any(
                term_selects(term, owner, group.namespace, task.labels) for term, owner in running_terms
            ):
                involved.add(group.key)
                break
    if not involved:
        return None
    running = [p for p, pod in enumerate(snapshot.pods) if pod.phase == "running"]
    selected = {p for p in running if selectors.select(snapshot.pods[p].namespace, snapshot.pods[p].labels)}

    bound_groups: dict[PodGroupKey, list[Bind]] = {}
    for bind in hint.binds:
        pod = snapshot.pod_by_key.get(bind.pod)
        if pod is not None and pod.pod_group is not None:
            bound_groups.setdefault(pod.pod_group, []).append(bind)
    fixed, evictions, losing = _closure(snapshot, hint, {k for k in involved if k in bound_groups}, selected)
    placement = Placement.model_construct(
        binds=tuple(b for key in sorted(fixed) for b in bound_groups.get(key, ())), evictions=tuple(evictions)
    )
    after = build_after(snapshot, placement)
    notes = []
    if pod_affinity.check(snapshot, after) or topology_spread.check(snapshot, after):
        notes.append(
            f"inter-pod constraints: {len(involved)} PodGroups left pending (greedy's placement of them breaks an inter-pod rule)"
        )
        fixed, evictions, losing = set(), [], set()
        placement = Placement()
    else:
        waiting = len(involved - fixed)
        notes.append(
            f"inter-pod constraints: {len(fixed)} PodGroups placed as greedy places them"
            + (f", {waiting} left pending as greedy leaves them" if waiting else "")
        )
    held = involved | fixed
    held_index = {problem.group_index[key] for key in held} | {problem.group_index[key] for key in losing}
    protected = set(selected)
    protected.update(p for p in running if problem.pod_group[p] in held_index)
    evicted_keys = {e.pod for e in placement.evictions}
    residual = Placement.model_construct(
        binds=tuple(b for b in hint.binds if snapshot.pod_by_key[b.pod].pod_group not in held),
        evictions=tuple(e for e in hint.evictions if e.pod not in evicted_keys and e.for_ not in held),
    )
    return _constants(
        snapshot,
        problem,
        ctx,
        placement,
        fixed=frozenset(fixed),
        held=frozenset(held),
        protected=frozenset(protected),
        losing=frozenset(problem.group_index[key] for key in losing),
        residual=residual,
        notes=tuple(notes),
    )


def _closure(
    snapshot: Snapshot, hint: Placement, fixed: set[PodGroupKey], selected: set[int]
) -> tuple[set[PodGroupKey], list[Eviction], set[PodGroupKey]]:
    """(fixed PodGroups, fixed evictions, PodGroups they take pods from), to the fixpoint:
    evictions for a fixed PodGroup, of a protected pod, or from a PodGroup that loses a pod
    to a fixed eviction are fixed, and the PodGroups they are for are fixed."""
    index = {pod.key: p for p, pod in enumerate(snapshot.pods)}
    fixed = set(fixed)
    losing: set[PodGroupKey] = set()
    while True:
        chosen = [
            e
            for e in hint.evictions
            if e.pod in index
            and (e.for_ in fixed or index[e.pod] in selected or snapshot.pod_by_key[e.pod].pod_group in losing)
        ]
        grown = fixed | {e.for_ for e in chosen}
        lose = {snapshot.pod_by_key[e.pod].pod_group for e in chosen} - {None}
        if grown == fixed and lose == losing:
            return fixed, chosen, losing  # type: ignore[return-value]
        fixed, losing = grown, lose  # type: ignore[assignment]


def _constants(
    snapshot: Snapshot,
    problem: Problem,
    ctx: ObjectiveContext,
    placement: Placement,
    *,
    fixed: frozenset[PodGroupKey],
    held: frozenset[PodGroupKey],
    protected: frozenset[int],
    losing: frozenset[int],
    residual: Placement,
    notes: tuple[str, ...],
) -> FixedPart:
    free = problem.free.copy()
    gpu_free = problem.gpu_free_milli.copy()
    cell_cpu = problem.cell_cpu_free.copy()
    cell_memory = problem.cell_memory_free.copy()
    delta = np.zeros_like(problem.queue_allocated)
    bound = np.zeros_like(problem.queue_allocated)
    own_bound = np.zeros_like(problem.queue_allocated)
    own_preempted = np.zeros_like(problem.queue_allocated)
    cpu, memory = problem.cpu_column, problem.memory_column
    throughput = disruption = 0
    for bind in placement.binds:
        p, n = problem.pod_index[bind.pod], problem.node_index[bind.node]
        pod = snapshot.pods[p]
        requests = problem.pod_requests[p]
        free[:, n] -= requests
        per_device = milli_per_device(pod.requests.get(GPU, 0))
        for index in bind.gpus:
            slots = np.flatnonzero(problem.gpu_index[n] == index)
            if slots.size:
                gpu_free[n, slots[0]] -= per_device
        if bind.numa_cell is not None:
            cells = np.flatnonzero(problem.cell_ids[n] == bind.numa_cell)
            if cells.size:
                c = cells[0]
                if cell_cpu[n, c] != UNLIMITED:
                    cell_cpu[n, c] -= requests[cpu]
                if cell_memory[n, c] != UNLIMITED:
                    cell_memory[n, c] -= requests[memory]
        queue = int(problem.group_queue[problem.pod_group[p]])
        if queue >= 0:
            own_bound[queue] += requests
            for q in problem.queue_ancestors[queue]:
                delta[q] += requests
                bound[q] += requests
        throughput += ctx.weights[pod.pod_group] * pod_value(pod.requests, ctx.devices)  # type: ignore[index]
    witnesses: dict[int, set[tuple[int, int]]] = {}
    floors: set[tuple[int, int, int]] = set()
    for eviction in placement.evictions:
        v = problem.pod_index[eviction.pod]
        pod = snapshot.pods[v]
        n = int(problem.pod_node[v])
        requests = problem.pod_requests[v]
        free[:, n] += requests
        per_device = milli_per_device(pod.requests.get(GPU, 0))
        for g in problem.pod_gpu_slots.get(v, ()):
            gpu_free[n, g] += per_device
        c = problem.pod_cell_slot.get(v, -1)
        if c >= 0:
            if cell_cpu[n, c] != UNLIMITED:
                cell_cpu[n, c] += requests[cpu]
            if cell_memory[n, c] != UNLIMITED:
                cell_memory[n, c] += requests[memory]
        victim_queue = snapshot.pod_group_by_key[pod.pod_group].queue  # type: ignore[index]  # victims have one
        queue = problem.queue_index[victim_queue]
        for q in problem.queue_ancestors[queue]:
            delta[q] -= requests
        if eviction.reason == "preempt":
            own_preempted[queue] += requests
        throughput -= ctx.weights[pod.pod_group] * pod_value(pod.requests, ctx.devices)  # type: ignore[index]
        disruption += ctx.eviction_cost(pod)
        if eviction.reason == "reclaim":
            preemptor = snapshot.pod_group_by_key[eviction.for_].queue
            for charged in charged_queues(snapshot, victim_queue=victim_queue, preemptor_queue=preemptor):
                witnesses.setdefault(problem.queue_index[charged], set())
            for q in problem.queue_ancestors[queue]:
                for r in range(len(problem.resource_names)):
                    guarantee = int(problem.queue_guarantee[q, r])
                    if guarantee > 0:
                        floors.add((q, r, min(guarantee, int(problem.queue_allocated[q, r]))))
    for q, levels in witnesses.items():
        for eviction in placement.evictions:
            v = problem.pod_index[eviction.pod]
            victim_queue = problem.queue_index[snapshot.pod_group_by_key[snapshot.pods[v].pod_group].queue]  # type: ignore[index]
            if eviction.reason == "reclaim" and q in problem.queue_ancestors[victim_queue]:
                levels.update(
                    (r, int(amount)) for r, amount in enumerate(problem.pod_requests[v]) if amount > 0
                )
    throughput += _jobs_started_less_ended(snapshot, ctx, placement)
    model_problem = dataclasses.replace(
        problem, free=free, gpu_free_milli=gpu_free, cell_cpu_free=cell_cpu, cell_memory_free=cell_memory
    )
    fixed_score = score(snapshot, placement, context=ctx) if placement.binds else None
    return FixedPart(
        placement=placement,
        groups=fixed,
        held=held,
        protected=protected,
        losing=losing,
        problem=model_problem,
        queue_delta=delta,
        queue_bound=bound,
        own_bound=own_bound,
        own_preempted=own_preempted,
        reclaim_witnesses=tuple((q, tuple(sorted(w))) for q, w in sorted(witnesses.items())),
        guarantee_floors=tuple(sorted(f for f in floors if f[2] > 0)),
        throughput=throughput,
        disruption=disruption,
        locality=fixed_score.locality if fixed_score is not None else 0,
        usage=fixed_score.usage if fixed_score is not None else 0,
        gpu_node_keep=GPU_NODE_KEEP_MILLI * sum(
            on_gpu_node(snapshot.node_by_name[bind.node], snapshot.pod_by_key[bind.pod].requests)
            for bind in placement.binds
        ),
        residual_hint=residual,
        notes=notes,
    )


def merged(placement: Placement, fixed: FixedPart | None) -> Placement:
    """The model's placement with the fixed part added."""
    if fixed is None or not (fixed.placement.binds or fixed.placement.evictions):
        return placement
    return Placement.model_construct(
        binds=(*placement.binds, *fixed.placement.binds), evictions=(*placement.evictions, *fixed.placement.evictions)
    )


def _jobs_started_less_ended(snapshot: Snapshot, ctx: ObjectiveContext, placement: Placement) -> int:
    """The throughput tier's job term (`solver.objective.JOB_VALUE`) for the fixed part:
    each of its PodGroups with nothing running that gets a bind, less each running one it
    evicts whole (the running ones are the model's constant)."""
    evicted = {eviction.pod for eviction in placement.evictions}
    started = {snapshot.pod_by_key[bind.pod].pod_group for bind in placement.binds} - {None}
    ended = {snapshot.pod_by_key[pod].pod_group for pod in evicted} - {None}
    total = 0
    for key in started | ended:
        pods = snapshot.pods_by_group.get(key, ())  # type: ignore[arg-type]
        runs_before = any(pod.phase == "running" for pod in pods)
        runs_after = key in started or any(pod.phase == "running" and pod.key not in evicted for pod in pods)
        total += ctx.weights[key] * JOB_VALUE * (runs_after - runs_before)  # type: ignore[index]
    return total
