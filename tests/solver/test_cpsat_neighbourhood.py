"""Which nodes CP-SAT may place pending pods on: every node while the cluster has at most
`NODES_PER_POD_KEPT_WHOLE` nodes per pending pod (a small model, solved whole and proven
optimal); beyond that greedy's nodes and the best-fitting `candidate_nodes_per_pod` per pod
of each shape, a restriction the answer reports (FEASIBLE)."""

from __future__ import annotations

from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.cpsat.config import CpsatConfig
from solver.cpsat.neighbourhood import NODES_PER_POD_KEPT_WHOLE
from solver.cpsat.units import DataLimits
from tests.solver.test_cpsat_properties import run_cpsat


def _cluster(nodes: int, pods: int) -> Snapshot:
    """`nodes` nodes of 2 GPUs, one used 500 m on every other node; `pods` 1-GPU pods."""
    return Snapshot.model_validate(
        {
            "nodes": [
                {
                    "name": f"n{i}",
                    "allocatable": {"cpu": 16000, "memory": 64 << 30, "gpu": 2000},
                    "gpus": [{"index": 0, "used_milli": 500 if i % 2 else 0}, {"index": 1}],
                }
                for i in range(nodes)
            ],
            "pod_groups": [
                {"namespace": "d", "name": f"p{k}", "min_member": 1, "tasks": [{"name": "t", "min_available": 1, "requests": {"cpu": 1000, "gpu": 1000}}]}
                for k in range(pods)
            ],
            "pods": [
                {"namespace": "d", "name": f"p{k}", "phase": "pending", "pod_group": f"d/p{k}", "task": "t", "requests": {"cpu": 1000, "gpu": 1000}}
                for k in range(pods)
            ],
        }
    )


def _solve(snapshot: Snapshot, per_pod: int):  # noqa: ANN202
    result, _, _ = run_cpsat(snapshot, 10, CpsatConfig(limits=DataLimits(candidate_nodes_per_pod=per_pod)))
    return result


def test_a_small_cluster_keeps_every_node_and_is_proven_optimal() -> None:
    snapshot = _cluster(NODES_PER_POD_KEPT_WHOLE * 2, 2)
    result = _solve(snapshot, per_pod=1)
    assert not any(reason.startswith("candidate nodes") for reason in result.restricted)
    assert result.status == "OPTIMAL"
    assert result.placement is not None and check_placement(snapshot, result.placement) == ()


def test_a_large_cluster_keeps_greedy_s_nodes_and_the_best_fitting_per_pod() -> None:
    snapshot = _cluster(NODES_PER_POD_KEPT_WHOLE * 2 + 1, 2)
    one, all_nodes = _solve(snapshot, per_pod=1), _solve(snapshot, per_pod=0)
    (reason,) = [reason for reason in one.restricted if reason.startswith("candidate nodes")]
    # 2 pods of one shape: greedy's nodes and the 2 best-fitting (the nodes with 500 m used)
    kept = int(reason.split()[2])
    assert 2 <= kept <= 4 < len(snapshot.nodes)
    assert one.status == "FEASIBLE"
    assert not any(reason.startswith("candidate nodes") for reason in all_nodes.restricted)
    for result in (one, all_nodes):
        assert result.placement is not None and check_placement(snapshot, result.placement) == ()
        assert len(result.placement.binds) == 2
