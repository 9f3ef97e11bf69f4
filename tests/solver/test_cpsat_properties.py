"""Properties of the CP-SAT engine over drawn snapshots: the checker accepts its placement,
it never scores below greedy, its own objective is `score` of what it returns, and on
tiny instances it finds the optimum an exhaustive search over every placement finds.

The exhaustive search below shares no code with the engine: it enumerates every bind
(node, GPU devices, NUMA cell) of every pending pod and every eviction (reason, for whom)
of every running pod, keeps what `check_placement` accepts and takes the best `score`.
It applies one policy of both engines that the checker does not impose: a PodGroup that
loses pods gets no binds in the same cycle.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Bind, Eviction, Placement
from models.snapshot import GPU_MILLI_PER_DEVICE, Pod, Snapshot, gpu_devices, is_fractional_gpu
from solver.checker import check_placement
from solver.cpsat import CpsatConfig, CpsatResult
from solver.cpsat.engine import solve_cpsat
from solver.greedy import solve_greedy
from solver.objective import JOB_VALUE, ObjectiveContext, ObjectiveVector, score
from solver.problem import build_problem
from tests.strategies import snapshots

PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def run_cpsat(snapshot: Snapshot, seconds: float = 5.0, config: CpsatConfig = CpsatConfig()):  # noqa: ANN201
    """CP-SAT on `snapshot` from greedy's hint, as `place()` runs it: (result, greedy, context)."""
    problem = build_problem(snapshot)
    context = ObjectiveContext.of(snapshot)
    greedy = solve_greedy(snapshot, problem=problem)
    result = solve_cpsat(
        snapshot,
        problem=problem,
        context=context,
        config=config,
        deadline=time.perf_counter() + seconds,
        hint=greedy.placement,
    )
    return result, greedy, context


def run_cpsat_from(snapshot: Snapshot, hint: Placement, config: CpsatConfig = CpsatConfig()) -> CpsatResult:
    """CP-SAT from a hand-made valid `hint`, to test the model's part alone; its answer
    passes the checker and its tiers are `score` of it."""
    assert check_placement(snapshot, hint) == (), "the hint of these cases is valid"
    context = ObjectiveContext.of(snapshot)
    result = solve_cpsat(
        snapshot, problem=build_problem(snapshot), context=context, config=config, deadline=time.perf_counter() + 10, hint=hint
    )
    assert result.placement is not None and result.objective is not None
    assert check_placement(snapshot, result.placement) == ()
    assert result.objective == score(snapshot, result.placement, context=context)
    return result


@PROPERTY_SETTINGS
@given(snapshots(max_nodes=12, max_groups=8))
def test_cpsat_is_valid_exact_in_its_objective_and_never_below_greedy(snapshot: Snapshot) -> None:
    result, greedy, context = run_cpsat(snapshot)
    assert result.placement is not None
    assert check_placement(snapshot, result.placement) == ()
    got = score(snapshot, result.placement, context=context)
    assert got == result.objective
    assert got >= score(snapshot, greedy.placement, context=context)


# ---- exhaustive search on tiny instances ----


def _bind_options(snapshot: Snapshot, pod: Pod) -> list[Bind | None]:
    task = snapshot.task_of(pod)
    assert task is not None
    numa = task.numa_policy == "single-numa-node"
    gpu = pod.requests.get("gpu", 0)
    options: list[Bind | None] = [None]
    for node in snapshot.nodes:
        indices = [g.index for g in node.gpus]
        if gpu_devices(gpu):
            device_sets = list(itertools.combinations(indices, gpu_devices(gpu)))
        elif is_fractional_gpu(gpu):
            device_sets = [(i,) for i in indices]
        else:
            device_sets = [()]
        for devices in device_sets:
            if numa and devices:
                cells = {node.gpu_by_index[i].numa_cell for i in devices}
                if len(cells) > 1:
                    continue
                cell_options: list[int | None] = [next(iter(cells))]
            elif numa:
                cell_options = [c.id for c in node.numa_cells] or [None]
            else:
                cell_options = [None]
            for cell in cell_options:
                options.append(Bind(pod=pod.key, node=node.name, gpus=devices, numa_cell=cell))
    return options


def _eviction_options(snapshot: Snapshot, pod: Pod) -> list[Eviction | None]:
    options: list[Eviction | None] = [None]
    if pod.pod_group is None:
        return options
    pending_groups = sorted({p.pod_group for p in snapshot.pods if p.phase == "pending" and p.pod_group})
    for reason in ("preempt", "reclaim"):
        for group in pending_groups:
            if group != pod.pod_group:
                options.append(Eviction.model_validate({"pod": pod.key, "node": pod.node, "reason": reason, "for": group}))
    return options


def exhaustive_best(snapshot: Snapshot) -> ObjectiveVector:
    context = ObjectiveContext.of(snapshot)
    pending = [p for p in snapshot.pods if p.phase == "pending"]
    running = [p for p in snapshot.pods if p.phase == "running"]
    # Pods of one task are interchangeable: enumerate multisets of options per task.
    by_task: dict[tuple[Any, Any], list[Pod]] = {}
    for pod in pending:
        by_task.setdefault((pod.pod_group, pod.task), []).append(pod)
    task_choices = []
    for pods in by_task.values():
        options = _bind_options(snapshot, pods[0])
        choices = []
        for combo in itertools.combinations_with_replacement(range(len(options)), len(pods)):
            binds = []
            for pod, index in zip(pods, combo):
                option = options[index]
                if option is not None:
                    binds.append(option.model_copy(update={"pod": pod.key}))
            choices.append(binds)
        task_choices.append(choices)
    eviction_choices = [_eviction_options(snapshot, pod) for pod in running]
    best = score(snapshot, Placement(), context=context)
    for binds_per_task in itertools.product(*task_choices):
        binds = [b for task_binds in binds_per_task for b in task_binds]
        bound_groups = {snapshot.pod_by_key[b.pod].pod_group for b in binds}
        for evictions in itertools.product(*eviction_choices):
            chosen = [e for e in evictions if e is not None]
            if any(snapshot.pod_by_key[e.pod].pod_group in bound_groups for e in chosen):
                continue
            placement = Placement(binds=tuple(binds), evictions=tuple(chosen))
            if check_placement(snapshot, placement):
                continue
            got = score(snapshot, placement, context=context)
            if got > best:
                best = got
    return best


@st.composite
def tiny_snapshots(draw: st.DrawFn) -> Snapshot:
    """≤ 3 nodes of ≤ 2 GPUs, ≤ 4 pending pods in ≤ 2 PodGroups, ≤ 2 running pods."""
    node_count = draw(st.integers(1, 3))
    nodes = []
    leaves = draw(st.booleans())
    for i in range(node_count):
        gpus = draw(st.sampled_from([0, 1, 2]))
        nodes.append(
            {
                "name": f"n{i}",
                "allocatable": {"cpu": draw(st.sampled_from([2, 4])) * 1000, "memory": 16 * 2**30, "gpu": gpus * 1000},
                "gpus": [{"index": g, "numa_cell": g} for g in range(gpus)],
                "numa_cells": [{"id": g} for g in range(gpus)],
            }
        )
    hypernodes = []
    if leaves and node_count > 1:
        hypernodes = [
            {"name": "leaf-a", "tier": 1, "node_members": ["n0"]},
            {"name": "leaf-b", "tier": 1, "node_members": [n["name"] for n in nodes[1:]]},
        ]
    queues = [{"name": "q0", "weight": 1}, {"name": "q1", "weight": draw(st.integers(1, 3))}]
    if draw(st.booleans()):
        queues[1]["capability"] = {"cpu": draw(st.integers(1, 4)) * 1000}
    groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    budget = 4
    for g in range(draw(st.integers(1, 2))):
        replicas = draw(st.integers(1, min(budget, 3)))
        budget -= replicas
        gpu = draw(st.sampled_from([0, 500, 1000, 2000]))
        requests = {"cpu": draw(st.sampled_from([1000, 2000])), **({"gpu": gpu} if gpu else {})}
        minimum = draw(st.integers(1, replicas))
        group: dict[str, Any] = {
            "namespace": "default",
            "name": f"job{g}",
            "queue": f"q{draw(st.integers(0, 1))}",
            "priority": draw(st.integers(1, 2)),
            "min_member": minimum,
            "tasks": [
                {
                    "name": "t",
                    "min_available": minimum,
                    "requests": requests,
                    "numa_policy": draw(st.sampled_from(["none", "single-numa-node"])),
                }
            ],
        }
        if hypernodes and draw(st.booleans()):
            group["network_topology"] = {"mode": draw(st.sampled_from(["hard", "soft"])), "highest_tier_allowed": 1}
        groups.append(group)
        for r in range(replicas):
            pods.append({"namespace": "default", "name": f"job{g}-{r}", "phase": "pending", "pod_group": f"default/job{g}", "task": "t", "requests": requests})
        if budget <= 0:
            break
    if draw(st.booleans()):
        victims = draw(st.integers(1, 2))
        groups.append(
            {
                "namespace": "default",
                "name": "old",
                "queue": "q0",
                "priority": 0,
                "min_member": victims,
                "tasks": [{"name": "t", "min_available": victims, "requests": {"cpu": 1000}}],
            }
        )
        for r in range(victims):
            pods.append(
                {"namespace": "default", "name": f"old-{r}", "phase": "running", "pod_group": "default/old", "task": "t",
                 "requests": {"cpu": 1000}, "node": "n0", "start_time": 0.0}
            )
    return Snapshot.model_validate({"nodes": nodes, "hypernodes": hypernodes, "queues": queues, "pod_groups": groups, "pods": pods})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_snapshots())
def test_cpsat_finds_the_exhaustive_optimum_on_tiny_instances(snapshot: Snapshot) -> None:
    result, _, context = run_cpsat(snapshot)
    assert result.status == "OPTIMAL", result.restricted
    assert result.placement is not None and check_placement(snapshot, result.placement) == ()
    assert score(snapshot, result.placement, context=context) == exhaustive_best(snapshot)


def test_exhaustive_search_sees_what_the_checker_allows() -> None:
    snapshot = Snapshot.model_validate(
        {
            "nodes": [{"name": "n0", "allocatable": {"cpu": 2000, "gpu": 2000}}],
            "pod_groups": [{"namespace": "default", "name": "a", "min_member": 1,
                            "tasks": [{"name": "t", "min_available": 1, "requests": {"gpu": GPU_MILLI_PER_DEVICE}}]}],
            "pods": [{"namespace": "default", "name": "a-0", "phase": "pending", "pod_group": "default/a", "task": "t",
                      "requests": {"gpu": GPU_MILLI_PER_DEVICE}}],
        }
    )
    best = exhaustive_best(snapshot)
    assert best.throughput == 2 * 0 + 1 + 1000 + JOB_VALUE  # one weight-1 pod of one GPU, and its PodGroup starts
