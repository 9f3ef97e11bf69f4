"""An upper bound on throughput (tier 2 of `solver.objective`) by LP relaxation.

Input: a `Snapshot`. Output: `lp_bound(snapshot)`, a number no valid placement's
throughput exceeds — so it bounds the lexicographic optimum's too — to say how far a
placement is from the best possible (`batchplace solve --bound`, and the gap `place()`
reports when CP-SAT's own bound is weaker). `integral=True` solves the same model as a
MILP (for cross-checks on small cases). `objective="gpus"` bounds instead the GPUs that
this cycle's binds may hold (the benchmark's "GPUs placed"): the same rows, the cost of a
pending pod its GPUs (milli / 1000), kept running pods worth nothing.

The relaxation is built once as sparse rows (`relaxation`) and solved by one of two
backends: `pulp` (HiGHS when pulp finds it, else CBC — the default, and what the CLI
uses) or `scipy` (HiGHS in-process through `scipy.optimize.linprog`: no subprocess, no
files, and so much faster than pulp that the engine can afford it: docs/results.md,
"The LP bound's backends").

Every valid placement is a feasible point, so the optimum is a valid bound:
  - pods per (task, eligibility class of nodes) `x ≥ 0`; admission `a ∈ [0, 1]` per
    PodGroup that may bind, 0 when it can never be met (`Problem.group_facts`); gang
    (`solver.rules.gang`): each task's pods ≤ pending · a and ≥ its `task_shortfalls` · a
    (its minimum − running), all pods ≥ `members_missing` · a (min_member − running);
  - capacity per eligibility class and resource, summed over its nodes: binds + kept
    victims ≤ free + what the victims hold (every running pod of a preemptable PodGroup
    may be a victim, `keep` per aggregate of alike victims); whole-GPU pods take at most
    the devices that are wholly free once every such victim is gone;
  - quota: each capped queue (and ancestor) stays within its capability where it is now;
  - objective: Σ weight · value of bound pods and kept running pods (`solver.objective`),
    or with `objective="gpus"` the GPUs of bound pods.
Topology, NUMA, per-node packing, fairness and the finer preemption rules are relaxed away.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pulp

from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, Snapshot, gpu_devices
from solver.after import milli_per_device
from solver.objective import JOB_VALUE, ObjectiveContext, pod_value
from solver.problem import Problem, build_problem
from solver.rules.gang import members_missing, task_shortfalls

__all__ = ["BoundObjective", "Relaxation", "relaxation", "lp_bound", "lp_solver"]

BoundObjective = Literal["throughput", "gpus"]


@dataclass
class Relaxation:
    """max c·x + constant s.t. rows (≤ rhs), lower ≤ x ≤ upper; `integer` marks admissions
    and counts (for the MILP variant)."""

    names: list[str] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    constant: float = 0.0
    rows: list[tuple[list[int], list[float], float]] = field(default_factory=list)  # Σ coef · x ≤ rhs

    def variable(self, name: str, low: float, high: float, cost: float = 0.0) -> int:
        self.names.append(name)
        self.lower.append(low)
        self.upper.append(high)
        self.cost.append(cost)
        return len(self.names) - 1

    def at_most(self, terms: list[tuple[int, float]], rhs: float) -> None:
        if terms:
            self.rows.append(([i for i, _ in terms], [c for _, c in terms], rhs))


def relaxation(
    snapshot: Snapshot, *, problem: Problem | None = None, objective: BoundObjective = "throughput"
) -> Relaxation:
    """The LP of the module docstring, as sparse rows."""
    problem = problem if problem is not None else build_problem(snapshot)
    ctx = ObjectiveContext.of(snapshot)
    throughput = objective == "throughput"
    lp = Relaxation()
    classes = problem.node_class
    class_ids = sorted(set(classes.tolist()))
    gpu = problem.gpu_column
    resources = range(len(problem.resource_names))

    capacity = {c: np.zeros(len(problem.resource_names), dtype=np.int64) for c in class_ids}
    for n in range(problem.node_count):
        capacity[int(classes[n])] += np.maximum(problem.free[:, n], 0)
    device_free = problem.gpu_free_milli.copy()
    if problem.gpu_lent_free_milli is not None:  # a lent device holds online free and lent room apart: both, relaxed
        lent = np.maximum(problem.gpu_lent_free_milli, 0)
        device_free = np.where(problem.gpu_lent_free_milli >= 0, problem.gpu_online_free_milli + lent, device_free)  # type: ignore[operator]
        for n in np.flatnonzero(lent.sum(axis=1)).tolist():
            capacity[int(classes[n])][gpu] += int(lent[n].sum())
    victims: dict[tuple[int, tuple[int, ...], int, int], int] = {}
    running = np.flatnonzero(problem.pod_running & (problem.pod_group >= 0))
    if throughput:  # every running job kept (`JOB_VALUE`): evicting one whole only lowers the value
        running_groups = set(problem.pod_group[running].tolist())
        lp.constant += sum(ctx.weights[snapshot.pod_groups[h].key] for h in running_groups) * JOB_VALUE
    for p in running.tolist():
        pod = snapshot.pods[p]
        group = snapshot.pod_groups[int(problem.pod_group[p])]
        value = ctx.weights[group.key] * pod_value(pod.requests, ctx.devices) if throughput else 0
        if not (group.preemptable and pod.preemptable):
            lp.constant += value
            continue
        n = int(problem.pod_node[p])
        capacity[int(classes[n])] += problem.pod_requests[p]
        milli = int(problem.pod_requests[p, gpu])
        for g in problem.pod_gpu_slots.get(p, ()):
            device_free[n, g] += milli_per_device(milli)
        queue = int(problem.group_queue[int(problem.pod_group[p])])
        key = (int(classes[n]), tuple(problem.pod_requests[p].tolist()), value, queue)
        victims[key] = victims.get(key, 0) + 1
    whole = {c: 0 for c in class_ids}
    for n in range(problem.node_count):
        whole[int(classes[n])] += int((device_free[n] >= GPU_MILLI_PER_DEVICE).sum())
    keep = {key: lp.variable(f"keep_{i}", 0, count, key[2]) for i, (key, count) in enumerate(sorted(victims.items()))}

    usage: dict[int, list[list[tuple[int, float]]]] = {c: [[] for _ in resources] for c in class_ids}
    devices: dict[int, list[tuple[int, float]]] = {c: [] for c in class_ids}
    queue_binds: dict[int, list[tuple[np.ndarray, list[int]]]] = {}
    eligible_by_row: dict[int, list[int]] = {}
    for k, group in enumerate(snapshot.pod_groups):
        queue = snapshot.queue_by_name.get(group.queue)
        if queue is None or queue.state != "open":
            continue
        facts = problem.group_facts[k]
        requirement = facts.requirement
        starts = throughput and not any(facts.running.values())  # a bind starts a job: `JOB_VALUE`
        admitted = lp.variable(f"a_{k}", 0, 1, ctx.weights[group.key] * JOB_VALUE if starts else 0)
        if not facts.can_be_met:
            lp.upper[admitted] = 0
        shortfalls = task_shortfalls(requirement, facts.running)
        every: list[int] = []
        weight = ctx.weights[group.key]
        q = int(problem.group_queue[k])
        for task in group.tasks:
            if task.name in requirement.waiting:
                continue
            row = problem.task_row[(group.key, task.name)]
            pending = len(facts.pending[task.name])
            if not pending:
                continue
            eligibility = int(problem.task_eligibility_class[row])
            if eligibility not in eligible_by_row:
                eligible_by_row[eligibility] = sorted(set(classes[problem.eligible_nodes(row)].tolist()))
            eligible_classes = eligible_by_row[eligibility]
            value = weight * pod_value(task.requests, ctx.devices) if throughput else task.requests.get(GPU, 0) / GPU_MILLI_PER_DEVICE
            xs = [lp.variable(f"x_{row}_{c}", 0, pending, value) for c in eligible_classes]
            every.extend(xs)
            lp.at_most([(x, 1.0) for x in xs] + [(admitted, -pending)], 0)
            if shortfalls[task.name] > 0:
                lp.at_most([(x, -1.0) for x in xs] + [(admitted, shortfalls[task.name])], 0)
            requests = problem.task_requests[row]
            milli = int(requests[gpu])
            whole_devices = gpu_devices(milli)
            for c, x in zip(eligible_classes, xs):
                for r in resources:
                    if requests[r]:
                        usage[c][r].append((x, float(requests[r])))
                if whole_devices:
                    devices[c].append((x, float(whole_devices)))
            if q >= 0:
                for a in problem.queue_ancestors[q]:
                    queue_binds.setdefault(a, []).append((requests, xs))
        missing = members_missing(requirement, sum(facts.running.values()), 0)
        if every and missing > 0:
            lp.at_most([(x, -1.0) for x in every] + [(admitted, missing)], 0)

    for c in class_ids:
        for r in resources:
            kept = [(var, float(key[1][r])) for key, var in keep.items() if key[0] == c and key[1][r]]
            lp.at_most(usage[c][r] + kept, float(capacity[c][r]))
        lp.at_most(devices[c], float(whole[c]))
    for q, binds in queue_binds.items():
        for r in resources:
            cap, before = int(problem.queue_capability[q, r]), int(problem.queue_allocated[q, r])
            if cap < 0 or before > cap:
                continue
            added = [(x, float(requests[r])) for requests, xs in binds if requests[r] for x in xs]
            if not added:
                continue
            # before + binds − (victims − kept) ≤ cap
            gone = [
                (var, float(key[1][r]))
                for key, var in keep.items()
                if key[1][r] and key[3] >= 0 and q in problem.queue_ancestors[key[3]]
            ]
            freed = sum(victims[key] * key[1][r] for key in keep if key[1][r] and key[3] >= 0 and q in problem.queue_ancestors[key[3]])
            lp.at_most(added + gone, float(cap - before + freed))
    return lp


def lp_solver(time_limit_s: float) -> pulp.LpSolver:
    """HiGHS if pulp finds it, else CBC; quiet, with a time limit."""
    for name in ("HiGHS", "HiGHS_CMD", "COIN_CMD"):
        solver_class = getattr(pulp, name, None)
        if solver_class is not None:
            solver = solver_class(msg=False, timeLimit=time_limit_s)
            if solver.available():
                return solver
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pulp's bundled CBC, still the fallback in 3.x
        return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s)


def lp_bound(
    snapshot: Snapshot,
    *,
    problem: Problem | None = None,
    integral: bool = False,
    backend: Literal["pulp", "scipy"] = "pulp",
    time_limit_s: float = 30.0,
    objective: BoundObjective = "throughput",
) -> float:
    """The relaxation's optimum: throughput, or GPUs bound (see the module docstring)."""
    lp = relaxation(snapshot, problem=problem, objective=objective)
    if backend == "scipy":
        return _solve_scipy(lp, integral=integral, time_limit_s=time_limit_s)
    return _solve_pulp(lp, integral=integral, time_limit_s=time_limit_s)


def _solve_pulp(lp: Relaxation, *, integral: bool, time_limit_s: float) -> float:
    model = pulp.LpProblem("throughput_bound", pulp.LpMaximize)
    category = pulp.LpInteger if integral else pulp.LpContinuous
    variables = [model.add_variable(name, lo, hi, cat=category) for name, lo, hi in zip(lp.names, lp.lower, lp.upper)]
    for columns, coefficients, rhs in lp.rows:
        model += pulp.lpSum(c * variables[i] for i, c in zip(columns, coefficients)) <= rhs
    model += pulp.lpSum(c * v for c, v in zip(lp.cost, variables) if c) + lp.constant
    model.solve(lp_solver(time_limit_s))
    if pulp.LpStatus[model.status] != "Optimal":
        raise RuntimeError(f"the LP bound did not solve: {pulp.LpStatus[model.status]}")
    value = pulp.value(model.objective)
    return float(lp.constant if value is None else value)  # an empty objective is its constant


def _solve_scipy(lp: Relaxation, *, integral: bool, time_limit_s: float) -> float:
    from scipy import sparse  # here, not at the top: SciPy is slow to import, and most commands
    from scipy.optimize import linprog  # and cycles never ask for this bound (docs/results.md, "Import times")

    if not lp.names:
        return lp.constant
    data, row_index, column_index, rhs = [], [], [], []
    for r, (columns, coefficients, bound) in enumerate(lp.rows):
        data.extend(coefficients)
        column_index.extend(columns)
        row_index.extend([r] * len(columns))
        rhs.append(bound)
    matrix = sparse.csr_matrix((data, (row_index, column_index)), shape=(len(lp.rows), len(lp.names)))
    result = linprog(
        -np.asarray(lp.cost),
        A_ub=matrix if lp.rows else None,
        b_ub=np.asarray(rhs) if lp.rows else None,
        bounds=list(zip(lp.lower, lp.upper)),
        method="highs",
        integrality=np.ones(len(lp.names)) if integral else None,
        options={"time_limit": time_limit_s},
    )
    if result.status != 0:
        raise RuntimeError(f"the LP bound did not solve: {result.message}")
    return float(-result.fun + lp.constant)
