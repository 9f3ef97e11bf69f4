"""Each baseline's choice on a hand-made case where its published rule decides."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.baselines import make_baseline, select_host
from experiments.cluster_state import ClusterState
from experiments.fragmentation import FragTracker, TypicalPods
from tests.experiments._openb_builders import make_nodes, occupy, pod


def _policy(name: str, state: ClusterState, typical: TypicalPods | None = None):
    typical = typical or TypicalPods(*(np.array([v]) for v in (1000, 500, 1, 0, 1.0)))
    return make_baseline(name, rng=np.random.default_rng(0), tracker=FragTracker(typical, state))


def test_select_host_gives_ties_to_the_lowest_rank():
    assert select_host(np.array([3, 7, 7]), np.array([0, 9, 4])) == 2


def test_bestfit_takes_the_node_with_least_cpu_and_gpu_left():
    state = ClusterState(make_nodes((96000, 8, "G2"), (16000, 1, "V100M16")))
    [placed] = _policy("bestfit", state).schedule(state, [pod(8000, 1, 1000)])
    assert placed.node == 1


def test_dotprod_takes_the_node_whose_free_vector_aligns_least_with_the_request():
    state = ClusterState(make_nodes((64000, 8, "G2"), (8000, 1, "V100M16")))
    [placed] = _policy("dotprod", state).schedule(state, [pod(4000, 1, 1000)])
    assert placed.node == 1


def test_gpupacking_fills_a_used_device_before_touching_an_idle_node():
    state = ClusterState(make_nodes((96000, 8, "G2"), (96000, 2, "T4")))
    occupy(state, 1, devices={1: 600})
    [placed] = _policy("gpupacking", state).schedule(state, [pod(1000, 1, 300)])
    assert (placed.node, placed.devices) == (1, (1,))


def test_gpuclustering_joins_pods_of_the_same_shape():
    state = ClusterState(make_nodes((96000, 8, "G2"), (96000, 8, "G2"), (96000, 8, "G2")))
    occupy(state, 1, devices={0: 1000})  # runs a 1-GPU pod
    occupy(state, 2, devices={0: 500})  # runs a share
    [placed] = _policy("gpuclustering", state).schedule(state, [pod(1000, 1, 1000)])
    assert placed.node == 1


def test_fgd_avoids_the_device_that_would_be_left_too_small_for_typical_pods():
    state = ClusterState(make_nodes((96000, 2, "T4")))
    occupy(state, 0, devices={1: 400})  # devices: (1000, 600)
    [placed] = _policy("fgd", state).schedule(state, [pod(1000, 1, 200)])
    assert placed.devices == (0,)  # 600 → 400 would strand it below the typical 500


def test_fgd_prefers_the_node_where_fragmentation_grows_least():
    state = ClusterState(make_nodes((96000, 2, "T4"), (96000, 2, "T4")))
    occupy(state, 0, devices={0: 1000, 1: 300})  # node 0: (0, 700) free
    [placed] = _policy("fgd", state).schedule(state, [pod(1000, 1, 600)])
    assert placed.node == 0  # 700 → 100: frag 100, vs an idle node's 1000 → 400 (stranded 400)


def test_random_only_draws_feasible_nodes():
    state = ClusterState(make_nodes((96000, 8, "G2"), (96000, 8, "G2")))
    occupy(state, 0, devices={g: 1000 for g in range(8)})
    policy = _policy("random", state)
    placed = [policy.schedule(state, [pod(1000, 0, 0)])[0].node for _ in range(5)]
    assert set(placed) <= {0, 1}
    assert policy.schedule(state, [pod(1000, 1, 1000)])[0].node == 1


def test_kube_like_spreads_to_the_least_allocated_node():
    state = ClusterState(make_nodes((64000, 8, "G2"), (64000, 8, "G2")))
    occupy(state, 1, cpu_milli=4000)
    occupy(state, 0, cpu_milli=60000)
    [placed] = _policy("kube", state).schedule(state, [pod(4000, 0, 0)])
    assert placed.node == 1


def test_volcano_like_binpacks_onto_the_fuller_node():
    state = ClusterState(make_nodes((64000, 8, "G2"), (64000, 8, "G2")))
    occupy(state, 1, cpu_milli=32000, devices={0: 1000, 1: 1000})
    [placed] = _policy("volcano", state).schedule(state, [pod(4000, 1, 1000)])
    assert placed.node == 1


@pytest.mark.parametrize("name", ["random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "volcano", "kube"])
def test_every_baseline_respects_the_gpu_model_and_leaves_unfit_pods_unplaced(name):
    state = ClusterState(make_nodes((96000, 8, "G2"), (96000, 2, "T4")))
    t4_only = 1 << 4
    policy = _policy(name, state)
    placed, too_big = policy.schedule(state, [pod(1000, 1, 1000, spec=t4_only), pod(1000, 8, 1000, spec=t4_only, index=1)])
    assert placed.node == 1 and too_big is None


def test_batchplace_greedy_adapter_binds_through_the_engine_and_honours_the_model():
    from experiments.batchplace_policy import BatchplacePolicy

    state = ClusterState(make_nodes((96000, 8, "G2"), (96000, 2, "T4")))
    policy = BatchplacePolicy("greedy", name="greedy")
    placed = policy.schedule(state, [pod(1000, 1, 1000, spec=1 << 4), pod(1000, 1, 500, index=1), pod(1000, 8, 1000, index=2)])
    assert placed[0].node == 1
    assert placed[2].node == 0 and placed[2].devices == tuple(range(8))
    assert placed[1] is not None and state.allocated_gpu_milli == 9500


def test_trace_typical_pods_become_engine_shapes_with_their_model_as_a_node_selector():
    from experiments.batchplace_policy import SPEC_LABEL_PREFIX, typical_shapes

    v100 = 1 << 5
    typical = TypicalPods(*(np.array(v) for v in ([8000, 4000, 2000], [1000, 460, 0], [2, 1, 0], [v100, 0, 0], [0.5, 0.3, 0.2])))
    shapes = typical_shapes(typical)
    assert [(s.cpu_milli, s.gpu_milli, s.weight) for s in shapes] == [(8000, 2000, 0.5), (4000, 460, 0.3), (2000, 0, 0.2)]
    assert shapes[0].node_selector == ((f"{SPEC_LABEL_PREFIX}{v100}", "true"),) and shapes[1].node_selector == ()


def test_batchplace_greedy_with_trace_shapes_keeps_a_whole_device_for_the_typical_half_gpu_pod():
    # Typical pods ask for 500 milli. Node 0's device 1 has 600 free; best fit puts a
    # 200-milli pod there (400 left, useless to the typical pod); the fragmentation score
    # puts it on an idle device of node 1 (800 left).
    from experiments.batchplace_policy import BatchplacePolicy

    typical = TypicalPods(*(np.array([v]) for v in (1000, 500, 1, 0, 1.0)))
    chosen = {}
    for packing in ("best-fit", "fragmentation"):
        state = ClusterState(make_nodes((96000, 2, "G2"), (96000, 2, "G2")))
        occupy(state, 0, devices={0: 1000, 1: 400})
        policy = BatchplacePolicy("greedy", name="greedy", packing=packing, typical=typical)
        [placed] = policy.schedule(state, [pod(1000, 1, 200)])
        chosen[packing] = placed.node
    assert chosen == {"best-fit": 0, "fragmentation": 1}


def test_large_first_serves_whole_gpu_pods_of_a_batch_before_shares_and_cpu_only_pods():
    from experiments.batchplace_policy import _service_order

    pods = [pod(1000, 1, 250, index=10), pod(1000, 2, 1000, index=11), pod(1000, index=12), pod(1000, 1, 1000, index=13)]
    assert _service_order(pods, "arrival") == [10.0, 11.0, 12.0, 13.0]
    assert _service_order(pods, "large-first") == [12.0, 10.0, 13.0, 11.0]
