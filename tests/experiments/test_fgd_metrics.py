"""The FGD protocol's metrics against hand-computed values on tiny clusters."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.cluster_state import ClusterState, OverCommit
from experiments.fgd import FgdConfig, bin_curve, fgd_workload, run_fgd
from experiments.fragmentation import FragTracker, TypicalPods, node_fragmentation, typical_pods
from tests.experiments._openb_builders import make_nodes, make_pods, occupy, pod


def _typical(*rows: tuple[int, int, int, int, float]) -> TypicalPods:
    """(cpu, gpu milli, num gpu, spec mask, freq) per typical pod."""
    return TypicalPods(*(np.array([r[i] for r in rows]) for i in range(5)))


def test_typical_pods_take_the_most_common_shapes_until_the_threshold_and_renormalize():
    pods = make_pods(*[(4000, 1, 500)] * 6, *[(8000, 0, 0)] * 3, (2000, 1, 1000))
    typical = typical_pods(pods, threshold=0.8)
    assert typical.count == 2
    assert typical.gpu_milli.tolist() == [500, 0]
    assert typical.freq.tolist() == pytest.approx([6 / 9, 3 / 9])


def test_fragmentation_worked_example_share_and_cpu_only_pod():
    typical = _typical((4000, 500, 1, 0, 0.5), (1000, 0, 0, 0, 0.5))
    frag = node_fragmentation(np.array([8000]), np.array([[1000, 300]]), np.array([1]), typical)
    assert frag.tolist() == pytest.approx([0.5 * 300 + 0.5 * 1300])


def test_fragmentation_counts_everything_when_cpu_is_short_or_model_excluded():
    typical = _typical((4000, 500, 1, 0b10, 1.0))  # needs model bit 1
    short_cpu = node_fragmentation(np.array([3000]), np.array([[1000, 300]]), np.array([0b10]), typical)
    wrong_model = node_fragmentation(np.array([8000]), np.array([[1000, 300]]), np.array([0b01]), typical)
    fits = node_fragmentation(np.array([8000]), np.array([[1000, 300]]), np.array([0b10]), typical)
    assert (short_cpu[0], wrong_model[0], fits[0]) == (1300, 1300, 300)


def test_fragmentation_of_a_multi_gpu_typical_pod_needs_enough_devices():
    typical = _typical((1000, 1000, 2, 0, 1.0))
    one_idle = node_fragmentation(np.array([8000]), np.array([[1000, 500, 0, 0]]), np.array([1]), typical)
    two_idle = node_fragmentation(np.array([8000]), np.array([[1000, 1000, 500, 0]]), np.array([1]), typical)
    assert (one_idle[0], two_idle[0]) == (1500, 500)


def test_tracker_follows_binds_node_by_node():
    state = ClusterState(make_nodes((8000, 2, "T4"), (8000, 2, "T4")))
    tracker = FragTracker(_typical((1000, 500, 1, 0, 1.0)), state)
    assert tracker.total() == 0
    occupy(state, 0, devices={1: 700})  # device 1 keeps 300 < 500
    assert tracker.per_node().tolist() == [300, 0]
    assert tracker.total() == 300


def test_bind_refuses_an_over_commit():
    state = ClusterState(make_nodes((8000, 1, "T4")))
    occupy(state, 0, devices={0: 600})
    with pytest.raises(OverCommit):
        state.bind(pod(1000, 1, 500), 0, (0,))


def test_bins_average_per_percent_and_borrow_neighbours_when_empty():
    curve = bin_curve(np.array([0.4, 0.6, 1.4]), np.array([1.0, 2.0, 3.0]))
    assert curve[0] == 1.0 and curve[1] == 2.5 and curve[2] == 2.5 and np.isnan(curve[5])


def test_workload_keeps_every_pod_and_appends_copies_up_to_the_target():
    pods = make_pods(*[(1000, 1, 1000)] * 10)
    order = fgd_workload(pods, 10_000, seed=42, tune_ratio=1.3)
    assert sorted(order[:10].tolist()) == list(range(10))
    assert pods.gpu_milli_requested[order].sum() == 13_000
    assert np.array_equal(order, fgd_workload(pods, 10_000, seed=42, tune_ratio=1.3))


def test_workload_drops_pods_at_random_when_the_list_asks_too_much():
    pods = make_pods(*[(1000, 1, 1000)] * 20)
    order = fgd_workload(pods, 10_000, seed=7, tune_ratio=1.3)
    assert len(order) == 13 and len(set(order.tolist())) == 13


def test_run_on_a_tiny_cluster_never_allocates_more_than_arrived_or_capacity():
    nodes = make_nodes((32000, 4, "T4"), (16000, 2, "P100"))
    pods = make_pods((4000, 1, 1000), (2000, 1, 500), (8000, 0, 0), (4000, 2, 1000), (2000, 1, 250))
    run = run_fgd(FgdConfig(policy="fgd", seed=42), nodes=nodes, pods=pods)
    assert np.all(run.allocated_milli <= run.arrived_milli)
    assert run.allocated_milli[-1] <= 6000
    assert run.arrived_milli[-1] <= 1.3 * 6000
    assert 0 < run.final_alloc <= 100
