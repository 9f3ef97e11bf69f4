"""Why one more pod of a task fits nowhere: kube-scheduler's `FitError`, over numpy masks.

Input: the greedy `CycleState` at the moment a gang's transaction failed (before it is
rolled back, so the gang's own tentative pods count), the task, and the domain it was
confined to. Output: the reasons of `solver.reasons` (values that read as sentences), e.g.
"capacity: task worker: 0/120 nodes fit another pod: 80 insufficient gpu, 40 node selector
mismatch", or "eligibility: task worker: 0/3 nodes: 2 node selector mismatch, 1 untolerated
taint" when no node is eligible at all. Nodes a required node affinity excludes say which:
"2 node affinity mismatch (requires gpu In [h100])"; nodes too loaded to take a pod
(`solver.rules.usage`) say which resource and threshold: "1 cpu usage above threshold (80%)";
nodes held for an overdue PodGroup (`solver.rules.reservation`) say for whom.

Each node is counted once, under the first filter it fails, in this order: eligibility
(the predicate's own reason, asked once per node class), outside the topology domain,
insufficient resource (gpu, cpu, memory, others; a column a rule declares counts as its
rule says, `Problem.column_shortage`: "2 hostPort 0.0.0.0:8080/TCP in use"), GPU device
shape, NUMA cell, then the
inter-pod filters (`greedy.interpod`: pod affinity, anti-affinity, spread), which get a
sentence per rule naming the term or domain, e.g. "pod_affinity: task web: 0/2 nodes fit
another pod: 2 anti-affinity {app=web} on kubernetes.io/hostname" (the capacity sentence
then counts them under the rule's name, and is left out when they are all there is). Nodes out
of `pods` (the kubelet's count) get a sentence of their own naming one of them, "capacity:
task worker: pods: node n1 allows 3, 3 in use", since "insufficient pods" alone does not say
the node is simply full.
"""

from __future__ import annotations

import numpy as np

from models.snapshot import GPU, PodGroupKey, Snapshot, Task
from solver import reasons
from solver.reasons import Reason
from solver.greedy.state import CycleState, TaskShape
from solver.problem import Problem
from solver.rules import dra, node_affinity, reservation, usage
from solver.rules.eligibility import ineligibility_reason

__all__ = ["fit_error", "eligibility_error", "unplaceable_tasks"]

OUTSIDE_DOMAIN = "outside the topology domain"


DRA_CLAIMS = "DRA claims cannot be allocated"


def _ineligible_counts(
    snapshot: Snapshot, problem: Problem, task: Task, task_row: int, eligible: np.ndarray, claims: _ClaimCounts | None = None
) -> dict[str, int]:
    """Per reason, the nodes not eligible for the task; nodes its DRA claims cannot use are
    counted under `DRA_CLAIMS` and, per claim and request, by why in `claims`."""
    counts: dict[str, int] = {}
    classes = problem.node_class[~eligible]
    if classes.size:
        sizes = np.bincount(classes)
        for node_class in np.flatnonzero(sizes):
            node = snapshot.nodes[problem.node_class_representative[node_class]]
            reason = ineligibility_reason(node, task)
            if reason == node_affinity.REASON:
                reason = f"{reason} (requires {node_affinity.describe_terms(task.required_node_affinity)})"
            elif reason is None:
                judgement = usage.judgements(snapshot)[node.name]
                if judgement.reason:
                    reason = f"{judgement.reason} ({judgement.threshold_percent:g}%)"
                elif node.name in reservation.reserved_for(snapshot):
                    reason = reservation.held_reason(snapshot, node.name)
                elif (why := dra.why_not(snapshot, problem.task_keys[task_row], node.name)) is not None:
                    reason = DRA_CLAIMS
                    if claims is not None:
                        per = claims.setdefault((why.claim, why.request), {})
                        per[why.why] = per.get(why.why, 0) + int(sizes[node_class])
                else:
                    reason = "ineligible"
            counts[reason] = counts.get(reason, 0) + int(sizes[node_class])
    return counts


def eligibility_error(state: CycleState, task: Task, task_row: int) -> list[Reason]:
    return _no_node_matches(state.snapshot, state.problem, task, task_row)


_ClaimCounts = dict[tuple[str, str], dict[str, int]]


def _claim_sentences(problem: Problem, claims: _ClaimCounts) -> list[Reason]:
    """One "dra: claim … request …" sentence per claim request that kept nodes away."""
    return [
        reasons.dra_no_allocation(claim, request, nodes=problem.node_count, counts=per)
        for (claim, request), per in claims.items()
    ]


def _no_node_matches(snapshot: Snapshot, problem: Problem, task: Task, task_row: int) -> list[Reason]:
    eligible = problem.eligible_nodes(task_row)
    claims: _ClaimCounts = {}
    counts = _ineligible_counts(snapshot, problem, task, task_row, eligible, claims)
    return [reasons.eligibility_none(task.name, nodes=problem.node_count, counts=counts), *_claim_sentences(problem, claims)]


def unplaceable_tasks(snapshot: Snapshot, problem: Problem) -> dict[PodGroupKey, list[Reason]]:
    """Per PodGroup, a sentence for each task with pending pods that no node matches: they
    stay pending whatever any engine does, even beside a started gang (a master whose
    nodeSelector matches nothing while its workers run). One pass over eligibility classes."""
    no_node = ~problem.eligible_by_class.any(axis=1)
    rows = np.flatnonzero(no_node[problem.task_eligibility_class])
    if not rows.size:
        return {}
    waiting = ~problem.pod_running & (problem.pod_task_row >= 0)
    pending = np.bincount(problem.pod_task_row[waiting], minlength=len(problem.task_keys))
    out: dict[PodGroupKey, list[Reason]] = {}
    for row in rows.tolist():
        if pending[row]:
            key, name = problem.task_keys[row]
            task = snapshot.pod_group_by_key[key].task_by_name[name]
            out.setdefault(key, []).extend(_no_node_matches(snapshot, problem, task, row))
    return out


def fit_error(state: CycleState, shape: TaskShape, task: Task, domain: np.ndarray | None) -> list[Reason]:
    """The sentences for "no node takes one more pod of `task`" in the current state."""
    problem = state.problem
    eligible = problem.eligible_nodes(shape.row)
    if not eligible.any():
        return eligibility_error(state, task, shape.row)
    claims: _ClaimCounts = {}
    counts = _ineligible_counts(state.snapshot, problem, task, shape.row, eligible, claims)
    remaining = eligible.copy()
    if domain is not None:
        outside = remaining & ~domain
        counts[OUTSIDE_DOMAIN] = int(outside.sum())
        remaining &= domain
    order = sorted(shape.columns, key=lambda r: (problem.resource_names[r] != GPU, r))
    if shape.lends:  # its gpu may come from a lent device's room: the device line says it
        order = [r for r in order if r != problem.gpu_column]
    full = np.zeros_like(remaining)
    for r in order:
        lacking = remaining & (state.free[r] < shape.requests[r])
        name = problem.column_shortage[r]  # "insufficient cpu"; a rule's column says it its way
        counts[name] = counts.get(name, 0) + int(lacking.sum())
        remaining &= ~lacking
        if r == problem.pods_column:
            full = lacking
    if shape.whole_devices and not shape.single_numa:
        lacking = remaining & (state.whole_free < shape.whole_devices)
        counts[f"fewer than {shape.whole_devices} wholly free gpu devices"] = int(lacking.sum())
        remaining &= ~lacking
    elif shape.fractional and not shape.single_numa:
        lacking = remaining & ~(state.device_table(shape) >= shape.gpu_milli).any(axis=1)
        counts[f"no gpu device with {reasons.format_quantity(GPU, shape.gpu_milli)} free"] = int(lacking.sum())
        remaining &= ~lacking
    numa_blocked = 0
    if shape.single_numa:
        lacking = remaining & ~state.numa_fit(shape).any(axis=1)
        numa_blocked = int(lacking.sum())
        counts["no single NUMA cell with room"] = numa_blocked
        remaining &= ~lacking
    inter_pod: dict[str, dict[str, int]] = {}
    if state.inter_pod is not None and remaining.any():
        inter_pod, blocked = state.inter_pod.explain(shape.row, remaining)
        for rule, per in inter_pod.items():
            counts[rule] = sum(per.values())
        remaining &= ~blocked
    fitting = int(remaining.sum())
    sentences = [
        reasons.inter_pod_fit_error(rule, task.name, nodes=problem.node_count, fitting=fitting, counts=per)
        for rule, per in inter_pod.items()
    ]
    if not inter_pod or any(count for what, count in counts.items() if what not in inter_pod):
        sentences.append(reasons.capacity_fit_error(task.name, nodes=problem.node_count, fitting=fitting, counts=counts))
    if not fitting:
        sentences += _claim_sentences(problem, claims)
    if full.any() and not fitting:
        n = int(np.flatnonzero(full)[0])
        allows = int(problem.allocatable[problem.pods_column, n])
        in_use = allows - int(state.free[problem.pods_column, n])
        sentences.append(
            reasons.pods_full(
                task.name, node=problem.node_names[n], allows=allows, in_use=in_use, more_nodes=int(full.sum()) - 1
            )
        )
    if numa_blocked and not fitting:
        needs = {name: int(shape.requests[r]) for r, name in enumerate(problem.resource_names) if r in shape.columns}
        sentences.append(reasons.numa_no_cell(task.name, nodes=numa_blocked, needs=needs))
    return sentences
