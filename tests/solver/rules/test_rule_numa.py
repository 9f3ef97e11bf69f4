"""Rule 6, NUMA single-numa-node: GPUs and CPUs from one cell, named in the bind."""

from __future__ import annotations

import pytest

from solver.place import ENGINES
from solver.rules import numa
from tests.builders import (
    make_bind,
    make_gang,
    make_node,
    make_placement,
    make_running,
    make_snapshot,
    rule_violations,
    solve_checked,
)

# GPUs 0-3 on cell 0, 4-7 on cell 1; 16 cores per cell.
NODE = make_node("n1", cpu=32, gpus=8, numa_cells=2, cell_cpu=16)
PLAIN = make_node("n2", gpus=8)  # no NUMA cells declared; its GPUs sit on cell 0


def _check(
    *,
    gpus: int = 2,
    gpu_milli: int = 0,
    cpu: float = 4,
    node: str = "n1",
    bind_gpus=(0, 1),
    cell: int | None = 0,
    policy: str = "single-numa-node",
    running=(),
) -> list:
    job = make_gang("job", gpus=gpus, gpu_milli=gpu_milli, cpu=cpu, numa_policy=policy)
    snapshot = make_snapshot(nodes=[NODE, PLAIN], groups=[job], running=running)
    return rule_violations(
        numa, snapshot, make_placement(binds=[make_bind(job.pods[0], node, gpus=bind_gpus, numa_cell=cell)])
    )


def test_gpus_on_one_cell_named_in_the_bind_are_valid() -> None:
    assert _check(bind_gpus=(4, 5), cell=1) == []


def test_gpus_split_across_cells_are_reported() -> None:
    (violation,) = _check(bind_gpus=(3, 4), cell=0)
    assert violation.subject == "default/job-worker-0"
    assert "GPUs [3, 4] on node n1 span NUMA cells [0, 1]" in violation.message


def test_a_bind_naming_another_cell_than_its_gpus_is_reported() -> None:
    (violation,) = _check(bind_gpus=(0, 1), cell=1)
    assert "on NUMA cell 0 of node n1, but its bind names numa_cell 1" in violation.message


def test_a_fractional_single_numa_pod_takes_its_devices_cell() -> None:
    assert _check(gpus=0, gpu_milli=500, bind_gpus=(6,), cell=1) == []
    assert len(_check(gpus=0, gpu_milli=500, bind_gpus=(6,), cell=0)) == 1


def test_cpu_beyond_the_cell_is_reported_counting_running_single_cell_pods() -> None:
    holder = make_running("holder", node="n1", cpu=10, numa_cell=0)
    assert _check(cpu=6, running=[holder]) == []  # 10 + 6 = 16
    (violation,) = _check(cpu=8, running=[holder])
    assert violation.subject == "n1"
    assert violation.message == (
        "node n1 NUMA cell 0: cpu 18000 > 16000m of the cell after placement (single-numa-node binds add 8000m)"
    )


def test_a_cpu_only_single_numa_pod_must_name_an_existing_cell() -> None:
    assert _check(gpus=0, bind_gpus=(), cell=1) == []
    (violation,) = _check(gpus=0, bind_gpus=(), cell=None)
    assert "node n1 has cells [0, 1]" in violation.message
    assert len(_check(gpus=0, bind_gpus=(), cell=7)) == 1


def test_nodes_without_numa_cells_and_other_policies_are_not_judged() -> None:
    assert _check(gpus=0, bind_gpus=(), cell=None, node="n2") == []
    assert _check(policy="none", bind_gpus=(3, 4), cell=None) == []
    assert _check(policy="best-effort", cpu=40, bind_gpus=(0, 1), cell=None) == []


def test_single_cell_predicate() -> None:
    assert numa.single_cell(NODE.node, (0, 3)) == 0
    assert numa.single_cell(NODE.node, (3, 4)) is None
    assert numa.gpu_cells(NODE.node, (3, 4)) == {0, 1}


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_keeps_a_single_numa_node_pod_on_one_cell(engine: str) -> None:
    # 4 GPUs with single-numa-node on a node of 2 cells × 4 GPUs: devices 0-3 or 4-7.
    job = make_gang("job", gpus=4, cpu=2, numa_policy="single-numa-node")
    snapshot = make_snapshot(nodes=[NODE], groups=[job])
    (bind,) = solve_checked(snapshot, engine).placement.binds
    assert sorted(bind.gpus) in ([0, 1, 2, 3], [4, 5, 6, 7])
