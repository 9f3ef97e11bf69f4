"""Which nodes CP-SAT may place pending pods on: every node while the cluster has at most
`NODES_PER_POD_KEPT_WHOLE` nodes per pending pod (a small model, solved whole and proven
optimal); beyond that greedy's nodes and the best-fitting `candidate_nodes_per_pod` per pod
of each shape, a restriction the answer reports (FEASIBLE)."""

from __future__ import annotations

from models.placement import Placement
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.cpsat.config import CpsatConfig
from solver.cpsat.neighbourhood import NODES_PER_POD_KEPT_WHOLE
from solver.cpsat.units import DataLimits
from solver.place import SolveConfig, place
from tests.builders import make_gang, make_node, make_snapshot
from tests.solver.test_cpsat_properties import run_cpsat, run_cpsat_from


def _cluster(nodes: int, pods: int) -> Snapshot:
    """`nodes` nodes of 2 GPUs, one used 500 m on every other node; `pods` 1-GPU pods."""
    return make_snapshot(
        nodes=[make_node(f"n{i}", gpus=2, gpu_used_milli={0: 500 if i % 2 else 0}) for i in range(nodes)],
        groups=[make_gang(f"p{k}", gpus=1) for k in range(pods)],
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


def _best_fit_case(pod_gpu_milli: int, kept_devices: list[int], node_total_first: list[int]) -> Snapshot:
    """One pending pod asking `pod_gpu_milli`, a node whose devices have `kept_devices` milli
    free (a tight fit on the devices) and one with `node_total_first` (less GPU left on the
    node), beside whole idle 2-GPU nodes — more than `NODES_PER_POD_KEPT_WHOLE` nodes."""
    devices = {"tight": kept_devices, "total": node_total_first} | {f"idle{i}": [1000, 1000] for i in range(NODES_PER_POD_KEPT_WHOLE)}
    nodes = [
        make_node(name, gpus=len(free), gpu_used_milli={g: 1000 - milli for g, milli in enumerate(free)})
        for name, free in devices.items()
    ]
    return make_snapshot(nodes=nodes, groups=[make_gang("p", gpu_milli=pod_gpu_milli)])


def test_best_fit_ranks_by_what_the_devices_keep_before_the_node_total() -> None:
    """With an empty hint only the best-fitting node is kept, so CP-SAT binds there: a 160 m
    share goes where its device keeps 30 m (devices 190 m + 1,000 m free, 1,190 m on the
    node), not where the node keeps least (500 m + 500 m: 840 m left, 340 m on the device);
    a 1-GPU pod goes where no whole device stays free (1,000 m + 900 m + 900 m), not where
    the node keeps least GPU (1,000 m + 1,000 m: one whole device left)."""
    config = CpsatConfig(limits=DataLimits(candidate_nodes_per_pod=1))
    for gpu_milli, tight, total in ((160, [190, 1000], [500, 500]), (1000, [1000, 900, 900], [1000, 1000])):
        snapshot = _best_fit_case(gpu_milli, tight, total)
        result = run_cpsat_from(snapshot, Placement(), config)
        assert any(reason.startswith("candidate nodes: 1 of") for reason in result.restricted)
        assert [bind.node for bind in result.placement.binds] == ["tight"]


def test_a_gpu_share_asked_of_a_cluster_without_gpus_is_left_pending_not_a_crash() -> None:
    """Found by hypothesis: with more nodes than the neighbourhood keeps whole and no GPU
    device anywhere, choosing nodes for a fractional-GPU pod took the least of no device
    columns — a ValueError in the search, so `cpsat` raised and `auto` fell back. Now no
    node fits it and the model says so."""
    nodes = [make_node(f"n{i}", gpus=0, cpu=8) for i in range(NODES_PER_POD_KEPT_WHOLE * 3)]
    snapshot = make_snapshot(nodes=nodes, groups=[make_gang("share", cpu=1, gpu_milli=500), make_gang("cpu", cpu=2)])
    for engine in ("cpsat", "auto"):
        decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=2))  # type: ignore[arg-type]
        assert (decision.engine, decision.fallback) == ("cpsat", None)
        assert [b.pod for b in decision.placement.binds] == ["default/cpu-worker-0"]
        assert check_placement(snapshot, decision.placement) == ()
