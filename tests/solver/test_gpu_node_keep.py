"""GPU nodes are the last choice for pods that ask no GPU: packing's charge of
`GPU_NODE_KEEP_MILLI` per such pod on a GPU node (`solver.objective`, tier 6), in the
objective, in CP-SAT's model and in greedy's best fit (issue 29, item 9)."""

from __future__ import annotations

import pytest

from models.placement import Bind, Placement
from solver.objective import GPU_NODE_KEEP_MILLI, ObjectiveContext, score
from solver.place import ENGINES
from tests.builders import make_gang, make_node, make_snapshot, solve_checked
from tests.solver.test_cpsat_properties import run_cpsat_from

NODES = [make_node("h100-0", cpu=64, gpus=8), make_node("cpu-0", cpu=8)]


def test_a_pod_asking_no_gpu_costs_packing_a_milli_on_a_gpu_node_and_nothing_else() -> None:
    """FGD sees nothing here — the H100 keeps CPU for every typical shape — so without the
    charge both placements tie and an engine may take the H100."""
    snapshot = make_snapshot(nodes=NODES, groups=[make_gang("cpu-job", cpu=2)])
    context, pod = ObjectiveContext.of(snapshot), snapshot.pods[0].key
    on_gpu = score(snapshot, Placement(binds=(Bind(pod=pod, node="h100-0"),)), context=context)
    on_cpu = score(snapshot, Placement(binds=(Bind(pod=pod, node="cpu-0"),)), context=context)
    assert on_gpu.packing == on_cpu.packing + GPU_NODE_KEEP_MILLI
    assert on_cpu > on_gpu
    assert (on_gpu.fairness, on_gpu.throughput, on_gpu.usage) == (on_cpu.fairness, on_cpu.throughput, on_cpu.usage)


def test_a_gpu_pod_is_not_charged() -> None:
    snapshot = make_snapshot(nodes=NODES, groups=[make_gang("gpu-job", cpu=2, gpus=1)])
    placed = Placement(binds=(Bind(pod=snapshot.pods[0].key, node="h100-0", gpus=(0,)),))
    nothing = score(snapshot, Placement())
    assert score(snapshot, placed).packing <= nothing.packing, "a GPU pod fills a device: no charge, no new fragment"


def test_cpsat_moves_cpu_pods_off_the_gpu_node_its_hint_put_them_on() -> None:
    """CP-SAT keeps a hint it cannot improve on; the charge is what makes the CPU node better."""
    snapshot = make_snapshot(nodes=NODES, groups=[make_gang("cpu-job", replicas=3, cpu=2)])
    hint = Placement(binds=tuple(Bind(pod=pod.key, node="h100-0") for pod in snapshot.pods))
    result = run_cpsat_from(snapshot, hint)
    assert [bind.node for bind in result.placement.binds] == ["cpu-0"] * 3  # type: ignore[union-attr]


def test_greedy_takes_cpu_nodes_then_gpu_nodes_whose_gpus_are_taken_then_idle_gpu_nodes() -> None:
    """The H100 with all 8 GPUs in use has no free GPU, like the CPU node, and fits the pod
    tighter (less CPU left): plain best fit took it; the GPU node now comes after."""
    full = make_node("h100-full", cpu=4, gpus=8, gpu_used_milli=dict.fromkeys(range(8), 1000))
    nodes = [make_node("h100-idle", cpu=64, gpus=8), full, make_node("cpu-0", cpu=16)]
    job = [make_gang("cpu-job", cpu=2)]
    assert [b.node for b in solve_checked(make_snapshot(nodes=nodes, groups=job), "greedy").placement.binds] == ["cpu-0"]
    without_cpu_node = make_snapshot(nodes=nodes[:2], groups=job)
    assert [b.node for b in solve_checked(without_cpu_node, "greedy").placement.binds] == ["h100-full"]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_fills_the_cpu_nodes_before_a_gpu_node(engine: str) -> None:
    """No usage readings at all: 5 pods of 2 CPU, 4 fit the CPU node, the fifth goes to the H100."""
    snapshot = make_snapshot(nodes=NODES, groups=[make_gang(f"cpu-job-{j}", cpu=2) for j in range(5)])
    nodes = [bind.node for bind in solve_checked(snapshot, engine).placement.binds]
    assert sorted(nodes) == ["cpu-0"] * 4 + ["h100-0"]
