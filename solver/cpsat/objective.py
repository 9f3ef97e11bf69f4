"""The CP-SAT engine's objective: the six tiers of `solver.objective` as model expressions,
and how they are optimised — lexicographic stages, with provably order-keeping weights
inside a stage.

Input: the model, `ModelData`, `Variables` and the `Allocation` helper. Output: `Tiers`
(one expression per tier, to *minimise*: throughput enters negated) and the `Stage`s.

Each tier equals `solver.objective.score` of the extracted placement exactly, not only
at the optimum: fairness uses max/min equalities and floor divisions as row pairs (⌈1000 · shortfall / target⌉
per queue and resource, the least per queue) on the allocation `fairness_allocated` counts
(the in-queue preemption credit — what a queue's preempted kinds hold beyond its own
binds, up to those binds — is a max equality with 0 then a min equality, added to the
queue and its ancestors), spans and the whole racks hard sub-groups open are reified both
ways, and everything else is linear in counts (pattern constants carry the NUMA splits,
the preferred node affinity weight missed, the usage band of the profile's nodes times the
pods placed, and fragments plus, on a GPU node's profile, packing's charge per pod asking
no GPU). The part fixed for inter-pod
constraints (`cpsat.interpod`) enters as constants: its throughput, disruption, locality,
usage and GPU-node charge, its queue allocation; its fragments are in the node profiles,
which it has already filled.

Stages, and why: DESIGN.md orders the tiers strictly. One weighted sum keeps that order
only with weights W_k > (range of all lower tiers), and the ranges multiply: at 10,000
nodes throughput alone spans ~10^9, so six tiers do not fit CP-SAT's integer objective,
let alone its LP relaxation. So consecutive tiers are merged into one stage only while
the product of their ranges (+1 each) stays ≤ 2^31 (and the stage's value stays exact
in a double, `MERGE_MAGNITUDE`) — then weights W_k = Π_{j>k}(range_j + 1)
provably keep the order (a unit of tier k outweighs the whole span of the tiers below) —
and otherwise solved in separate stages: solve stage s, constrain its expression to ≤ the
value found, hint that solution, solve stage s + 1. Each stage gets a share of the time
left (fairness and throughput double). The limit is lower than the integer range allows
because a huge weight ruins the LP relaxation's bound (at 1,000 nodes, merged fairness +
throughput bounded throughput by nothing useful, while apart the stages keep their own
bounds: docs/results.md, "Merged tiers and the LP bound"). Typical small snapshot: one stage; the benchmark: fairness |
throughput | disruption | locality (packing is constant there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.cpsat.constraints import Allocation
from solver.cpsat.data import ModelData
from solver.cpsat.variables import Lin, Variables
from solver.objective import FAIRNESS_SCALE, GPU_NODE_KEEP_MILLI, JOB_VALUE, TIERS, pod_value

__all__ = [
    "Tiers", "Stage", "build_tiers", "plan_stages", "first_come", "FIRST_COME_CHUNK", "MERGE_LIMIT", "MERGE_MAGNITUDE",
]

MERGE_LIMIT = 1 << 31
"""Largest product of tier ranges merged into one weighted stage."""
MERGE_MAGNITUDE = 1 << 53
"""Largest |value| of a merged stage, Σ weight · max |tier|: the stage's optimum is read back
as a double and fixed as a bound for the next stage, so it must be exact there. The
ranges alone do not bound it: a tier's constant (throughput of the pods already running,
up to ~1.8 · 10^18 within the quantity ceilings of `models.quantity`) is not in its range."""


@dataclass
class Tiers:
    """Per tier, a linear expression to minimise (throughput negated) — in `TIERS` order."""

    minimised: list[Lin]

    def signed(self, tier: int, value: int) -> int:
        """The tier's value in `score`'s convention from the minimised value."""
        return -value if TIERS[tier] == "throughput" else value


@dataclass
class Stage:
    tiers: list[int]
    weights: list[int]
    expression: Lin


def build_tiers(model: cp_model.CpModel, data: ModelData, variables: Variables, allocation: Allocation) -> Tiers:
    return Tiers(
        minimised=[
            _fairness(model, data, variables, allocation),
            _throughput(data, variables).scaled(-1),
            _disruption(data, variables),
            _locality(data, variables),
            _usage(data, variables),
            _packing(data, variables),
        ]
    )


def _fairness(model: cp_model.CpModel, data: ModelData, variables: Variables, allocation: Allocation) -> Lin:
    """Σ over queues of min over targeted resources of ⌈1000 · shortfall / target⌉."""
    problem = data.problem
    total = Lin()
    credit = _PreemptCredit(model, data, variables, allocation)
    for queue_name, target in sorted(data.ctx.targets.items()):
        q = problem.queue_index[queue_name]
        terms = []
        met = False
        for resource, amount in sorted(target.items()):
            r = problem.resource_index[resource]
            unit = data.ctx.units.get(resource, 1)
            after = Lin().add_lin(allocation.after(q, r))
            for c in credit.queues_under.get(q, ()):
                var = credit.of(c, r)
                if var is not None:
                    after.add(var, 1)
            low, high = after.bounds()
            if low // unit >= amount:
                met = True  # this resource is always met: the queue's term is 0
                break
            held: cp_model.LinearExprT = after.expr()
            if unit > 1:
                coarse = model.new_int_var(max(0, low) // unit, max(0, high) // unit, f"held[{queue_name},{resource}]")
                _floor_division(model, coarse, held, unit)
                held = coarse
            short = model.new_int_var(0, amount, f"short[{queue_name},{resource}]")
            model.add_max_equality(short, [0, amount - held])
            per_mille = model.new_int_var(0, FAIRNESS_SCALE, f"shortfall_per_mille[{queue_name},{resource}]")
            _floor_division(model, per_mille, FAIRNESS_SCALE * short + amount - 1, amount)
            terms.append(per_mille)
        if met or not terms:
            continue
        if len(terms) == 1:
            total.add(terms[0], 1)
        else:
            least = model.new_int_var(0, FAIRNESS_SCALE, f"fairness[{queue_name}]")
            model.add_min_equality(least, terms)
            total.add(least, 1)
    return total


class _PreemptCredit:
    """Per (queue c, resource r): min(max(0, what c's preempted victims hold − what c's own
    units bind), what they bind), the amount `solver.objective.fairness_allocated` adds to
    c and its ancestors; made on first use, None where c preempts or binds nothing of r."""

    def __init__(self, model: cp_model.CpModel, data: ModelData, variables: Variables, allocation: Allocation):
        self.model, self.data, self.variables, self.allocation = model, data, variables, allocation
        self.kinds: dict[int, list[int]] = {}  # queue → kinds that may be preempted
        for kind, kind_vars in zip(data.kinds, variables.kinds):
            if kind_vars.preempted is not None:
                self.kinds.setdefault(kind.queue, []).append(kind.index)
        if data.fixed is not None:  # the fixed part's preemptions are constants of the same sums
            for q in np.flatnonzero(data.fixed.own_preempted.any(axis=1)).tolist():
                self.kinds.setdefault(q, [])
        self.queues_under: dict[int, list[int]] = {}  # queue → preempting queues of its subtree
        for c in self.kinds:
            for a in data.problem.queue_ancestors[c]:
                self.queues_under.setdefault(a, []).append(c)
        self._vars: dict[tuple[int, int], cp_model.IntVar | None] = {}

    def of(self, queue: int, column: int) -> cp_model.IntVar | None:
        key = (queue, column)
        if key not in self._vars:
            self._vars[key] = self._make(queue, column)
        return self._vars[key]

    def _make(self, queue: int, column: int) -> cp_model.IntVar | None:
        data, variables = self.data, self.variables
        fixed = data.fixed
        preempted = Lin(constant=int(fixed.own_preempted[queue, column]) if fixed is not None else 0)
        for k in self.kinds[queue]:
            amount = int(data.kinds[k].requests[column])
            if amount:
                preempted.add(variables.kinds[k].preempted, amount)  # type: ignore[arg-type]
        if not preempted.terms and not preempted.constant:
            return None
        binds = self.allocation.binds(queue, column, own=True)
        if fixed is not None:
            binds.constant += int(fixed.own_bound[queue, column])
        if not binds.terms and not binds.constant:
            return None  # binds nothing of it: no credit
        beyond = Lin().add_lin(preempted).add_lin(binds, -1)
        problem = data.problem
        where = f"{problem.queue_names[queue]},{problem.resource_names[column]}"
        high = max(0, preempted.bounds()[1])
        freed = self.model.new_int_var(0, high, f"preempted_beyond_binds[{where}]")
        self.model.add_max_equality(freed, [0, beyond.expr()])
        # At most the binds: a queue's held amount then counts each pod at most twice, within
        # the ceilings of `models.quantity` (running + binds − evictions + credit).
        credit = self.model.new_int_var(0, min(high, max(0, binds.bounds()[1])), f"preempt_credit[{where}]")
        self.model.add_min_equality(credit, [freed, binds.expr()])
        return credit


def _floor_division(model: cp_model.CpModel, quotient: cp_model.IntVar, numerator: cp_model.LinearExprT, divisor: int) -> None:
    """`quotient == numerator // divisor` for a non-negative numerator, as two linear rows:
    `divisor · q ≤ numerator ≤ divisor · q + divisor − 1`.

    Not `add_division_equality`: CP-SAT expands a division whose numerator is a sum of many
    terms into a new variable whose domain is every value the sum can take — hundreds of
    intervals for a queue's memory held (`[0][5600][11200]…[2258126]` on an openb snapshot
    of 1,213 nodes) — and its subsolvers then allocated without bound until the process
    aborted with `std::bad_alloc`. The two rows say the same and stay linear."""
    model.add(divisor * quotient <= numerator)
    model.add(numerator <= divisor * quotient + divisor - 1)


def _throughput(data: ModelData, variables: Variables) -> Lin:
    """Tier 2 (`solver.objective`): running pods as constants, bound pods, evicted pods; and
    `JOB_VALUE` per PodGroup running after the placement — the running ones as a constant,
    less those the placement evicts whole (a victim gang's `keeps` 0, each evicted pod of a
    one-pod PodGroup), plus each unit with nothing running that gets a bind (`admitted`)."""
    problem, ctx, snapshot = data.problem, data.ctx, data.snapshot
    constant = 0
    running_groups: set[int] = set()
    for p in range(len(problem.pod_keys)):
        if problem.pod_running[p] and problem.pod_group[p] >= 0:
            pod = snapshot.pods[p]
            constant += ctx.weights[pod.pod_group] * pod_value(pod.requests, ctx.devices)  # type: ignore[index]
            running_groups.add(int(problem.pod_group[p]))
    constant += sum(ctx.weights[snapshot.pod_groups[h].key] for h in running_groups) * JOB_VALUE
    if data.fixed is not None:
        constant += data.fixed.throughput
    lin = Lin(constant=constant)
    for position, task in enumerate(data.tasks):
        lin.add(variables.units[task.unit].pods[position], task.value)
    for unit in data.units:
        if not unit.running:  # admitted ⇔ a bind
            lin.add(variables.units[unit.index].admitted, ctx.weights[unit.group.key] * JOB_VALUE)
    for kind, kind_vars in zip(data.kinds, variables.kinds):
        lin.add_lin(kind_vars.evicted, -kind.value)
        if isinstance(kind.owner, tuple):  # one-pod PodGroups: each evicted pod ends its job
            weight = ctx.weights[snapshot.pod_groups[min(kind.group_indices)].key]
            lin.add_lin(kind_vars.evicted, -weight * JOB_VALUE)
    for h, group_vars in variables.victim_groups.items():  # keeps 0: evicted whole
        weight = ctx.weights[snapshot.pod_groups[h].key] * JOB_VALUE
        lin.constant -= weight
        lin.add(group_vars.keeps, weight)
    return lin


def _disruption(data: ModelData, variables: Variables) -> Lin:
    lin = Lin(constant=data.fixed.disruption if data.fixed is not None else 0)
    for kind, kind_vars in zip(data.kinds, variables.kinds):
        lin.add_lin(kind_vars.evicted, kind.cost)
    return lin


def _locality(data: ModelData, variables: Variables) -> Lin:
    # The fixed part's locality (its spans, NUMA splits, node and inter-pod preferences)
    # depends on it alone: every pod its terms and spread selectors see is fixed too.
    lin = Lin(constant=data.fixed.locality if data.fixed is not None else 0)
    for unit_vars in variables.units:
        for var in unit_vars.spans.values():
            lin.add(var, 1)
    for var in variables.opened.values():  # whole racks hard sub-groups go to
        lin.add(var, 1)
    missed_by_class: dict[int, dict[int, int]] = {}
    for profile, profile_vars in variables.profiles.items():
        pattern_set = data.pattern_sets[profile]
        node_class = pattern_set.profile.eligibility
        if node_class not in missed_by_class:
            missed_by_class[node_class] = _preference_missed(data, node_class)
        missed = missed_by_class[node_class]
        for i, var in profile_vars.pattern_nodes.items():
            lin.add(var, pattern_set.patterns[i].splits + _missed_in(pattern_set.patterns[i].counts, missed))
        for (atom, i), var in profile_vars.atom_pattern_nodes.items():
            pattern = data.topology_sets[(profile, atom)][i]
            lin.add(var, pattern.splits + _missed_in(pattern.counts, missed))
    return lin


def _preference_missed(data: ModelData, node_class: int) -> dict[int, int]:
    """Shape index → preferred node affinity weight one of its pods misses on a node of
    `node_class` (every node of a profile shares its class); only shapes that miss some."""
    problem = data.problem
    table = problem.preference_missed_by_class
    if not table.any():
        return {}
    # The tasks of a shape share its eligibility class (part of the shape's key), so any one tells.
    missed = {task.shape: int(table[problem.task_eligibility_class[task.row], node_class]) for task in data.tasks}
    return {shape: weight for shape, weight in missed.items() if weight}


def _missed_in(counts: Sequence[tuple[int, int]], missed: dict[int, int]) -> int:
    """What a pattern's pods add at a per-pod cost by shape: Σ pods × `missed[shape]` (the
    preference weight they miss; packing's charge on a GPU node). Slots equal pods placed
    (`cpsat.constraints._capacity`), so the constant is exact."""
    return sum(pods * missed.get(shape, 0) for shape, pods in counts) if missed else 0


def _usage(data: ModelData, variables: Variables) -> Lin:
    """Σ over pods placed of their node's usage band (`solver.usage_tier`): every node of a
    profile shares its eligibility class, and the band is part of the class."""
    lin = Lin(constant=data.fixed.usage if data.fixed is not None else 0)
    bands = data.problem.usage_band_by_class
    if not bands.any():
        return lin
    for profile, profile_vars in variables.profiles.items():
        pattern_set = data.pattern_sets[profile]
        band = int(bands[pattern_set.profile.eligibility])
        if not band:
            continue
        for i, var in profile_vars.pattern_nodes.items():
            lin.add(var, band * _pods_in(pattern_set.patterns[i].counts))
        for (atom, i), var in profile_vars.atom_pattern_nodes.items():
            lin.add(var, band * _pods_in(data.topology_sets[(profile, atom)][i].counts))
    return lin


def _pods_in(counts: Sequence[tuple[int, int]]) -> int:
    return sum(pods for _, pods in counts)


def _packing(data: ModelData, variables: Variables) -> Lin:
    """Σ over nodes of the fragment their pattern leaves, plus `GPU_NODE_KEEP_MILLI` per pod
    asking no GPU in a pattern of a GPU node's profile (the fixed part's such pods: a constant)."""
    lin = Lin(constant=data.fixed.gpu_node_keep if data.fixed is not None else 0)
    in_groups = set()
    charge = {shape.index: GPU_NODE_KEEP_MILLI for shape in data.shapes if shape.gpu_milli == 0}
    for profile, pattern_set in data.pattern_sets.items():
        profile_vars = variables.profiles[profile]
        empty = pattern_set.empty_fragment
        charged = charge if pattern_set.profile.gpu_node else {}
        lin.add_lin(profile_vars.supply, empty)
        for i, var in profile_vars.pattern_nodes.items():
            pattern = pattern_set.patterns[i]
            lin.add(var, pattern.fragment - empty + _missed_in(pattern.counts, charged))
        for (atom, i), var in profile_vars.atom_pattern_nodes.items():
            pattern = data.topology_sets[(profile, atom)][i]
            lin.add(var, pattern.fragment - empty + _missed_in(pattern.counts, charged))
        in_groups.add(profile)
    missing = {p for g in data.node_groups for p in g.after} - in_groups
    assert not missing, f"profiles without a pattern set: {missing}"
    return lin


FIRST_COME_CHUNK = 60
"""Units per tie-break stage: weights 2^59 … 1 keep each stage's sum below 2^60."""


def first_come(data: ModelData, variables: Variables) -> list[Lin]:
    """The tie-break among placements equal on every tier, as stages to minimise in turn:
    the units ranked by priority (higher first), then creation time, then key — the order
    greedy serves a queue's PodGroups in, and Volcano's FIFO — and each stage −Σ 2^(k−1−i) ·
    admitted over the next k ≤ `FIRST_COME_CHUNK` of them (i their position), so an earlier
    PodGroup outweighs all later ones together: the earliest that can start does, then the
    next. Example: job-a-1 and job-b-2 tie on every tier, created together → job-a-1; so
    do {job-a-2} and {job-a-4, job-a-5} → job-a-2."""
    ranked = sorted(data.units, key=lambda u: (-u.group.priority, u.group.creation_time, u.group.key))
    stages = []
    for start in range(0, len(ranked), FIRST_COME_CHUNK):
        part = ranked[start : start + FIRST_COME_CHUNK]
        lin = Lin()
        for position, unit in enumerate(part):
            lin.add(variables.units[unit.index].admitted, -(1 << (len(part) - 1 - position)))
        stages.append(lin)
    return stages


def plan_stages(tiers: Tiers, order: Sequence[int] | None = None) -> list[Stage]:
    """Group consecutive non-constant tiers into stages (see the module docstring), taking
    the tiers in `order` (indices into `TIERS`; default: `TIERS`'s own order)."""
    stages: list[Stage] = []
    current: list[tuple[int, int]] = []  # (tier, range)
    tier_order = range(len(tiers.minimised)) if order is None else order
    # Each tier's bounds once: a tier is tens of thousands of terms on a large model.
    bounds = {tier: tiers.minimised[tier].bounds() for tier in tier_order}

    def close() -> None:
        if not current:
            return
        weights = []
        for position in range(len(current)):
            weight = 1
            for _, span in current[position + 1 :]:
                weight *= span + 1
            weights.append(weight)
        expression = Lin()
        for (tier, _), weight in zip(current, weights):
            expression.add_lin(tiers.minimised[tier], weight)
        stages.append(Stage(tiers=[t for t, _ in current], weights=weights, expression=expression))
        current.clear()

    def magnitude(stage: list[tuple[int, int]]) -> int:
        """Σ weight · max |tier| over the tiers of `stage`, weighted as `close` would."""
        total, weight = 0, 1
        for tier, span in reversed(stage):
            total += weight * max(abs(bound) for bound in bounds[tier])
            weight *= span + 1
        return total

    for tier in tier_order:
        low, high = bounds[tier]
        span = high - low
        if span == 0:
            continue
        product = span + 1
        for _, other in current:
            product *= other + 1
        if current and (product > MERGE_LIMIT or magnitude([*current, (tier, span)]) > MERGE_MAGNITUDE):
            close()
        current.append((tier, span))
    close()
    return stages
