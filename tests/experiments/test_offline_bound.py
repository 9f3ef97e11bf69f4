"""The offline bound of the FGD protocol: hand-computed cases, and on random small clusters
bound ≥ the exact per-node optimum ≥ what a policy places on the same seed."""

from __future__ import annotations

import numpy as np
import pulp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.cluster_state import WHOLE
from experiments.fgd import FgdConfig, fgd_workload, run_fgd
from experiments.offline_bound import node_classes, offline_bound, pod_shapes, seed_bound, share_patterns
from experiments.trace_openb import GPU_MODELS, OpenbNodes, OpenbPods
from solver.bound import lp_solver
from tests.experiments._openb_builders import make_nodes, make_pods


def exact_optimum(nodes: OpenbNodes, pods: OpenbPods) -> int:
    """GPU milli of the best placement of `pods`, node by node and device by device: the
    checks `ClusterState.bind` makes, as a MILP (small instances only)."""
    model = pulp.LpProblem("exact", pulp.LpMaximize)
    objective, per_node_cpu, per_node_mem = [], {}, {}
    devices: dict[tuple[int, int], list] = {}
    holds_shares = {(n, g): model.add_variable(f"s_{n}_{g}", 0, 1, cat=pulp.LpBinary) for n in range(nodes.count) for g in range(int(nodes.gpus[n]))}
    for p in range(pods.count):
        if not pods.num_gpu[p]:
            continue
        on = []
        for n in range(nodes.count):
            spec = int(pods.gpu_spec[p])
            if spec and not (spec >> int(nodes.model[n])) & 1:
                continue
            y = model.add_variable(f"y_{p}_{n}", 0, 1, cat=pulp.LpBinary)
            on.append(y)
            per_node_cpu.setdefault(n, []).append(int(pods.cpu_milli[p]) * y)
            per_node_mem.setdefault(n, []).append(int(pods.memory_mib[p]) * y)
            uses = [model.add_variable(f"w_{p}_{n}_{g}", 0, 1, cat=pulp.LpBinary) for g in range(int(nodes.gpus[n]))]
            model += pulp.lpSum(uses) == int(pods.num_gpu[p]) * y
            for g, w in enumerate(uses):
                devices.setdefault((n, g), []).append((p, w))
            objective.append(int(pods.num_gpu[p] * pods.gpu_milli[p]) * y)
        if on:
            model += pulp.lpSum(on) <= 1
    for n in range(nodes.count):
        model += pulp.lpSum(per_node_cpu.get(n, [])) <= int(nodes.cpu_milli[n])
        model += pulp.lpSum(per_node_mem.get(n, [])) <= int(nodes.memory_mib[n])
    for (n, g), users in devices.items():
        whole = [w for p, w in users if pods.gpu_milli[p] == WHOLE]
        shares = [int(pods.gpu_milli[p]) * w for p, w in users if pods.gpu_milli[p] < WHOLE]
        model += pulp.lpSum(whole) + holds_shares[n, g] <= 1  # a whole pod, or shares, or idle
        model += pulp.lpSum(shares) <= WHOLE * holds_shares[n, g]
    model += pulp.lpSum(objective)
    if not objective:
        return 0
    model.solve(lp_solver(30))
    assert model.sol_status == pulp.LpSolutionOptimal
    return int(round(pulp.value(model.objective)))


def test_per_node_most_caps_a_shape_that_packs_badly_two_nodes_of_eight_gpus_take_four_three_gpu_pods():
    """Capacity alone would allow 16 GPUs of 3-GPU pods (5⅓ pods); a node holds two, so 4 × 3."""
    nodes = make_nodes((96000, 8, "G2"), (96000, 8, "G2"))
    pods = make_pods(*[(4000, 3, 1000)] * 6)
    bound = offline_bound(nodes, pods)
    assert bound.bound_milli == 12_000 == exact_optimum(nodes, pods)
    assert bound.method == "mip"
    [shape] = bound.shapes
    assert (shape.arrived, shape.in_bound, shape.at_most, shape.left_out) == (6, 4, 4, 2)


def test_share_patterns_pack_shares_per_device_not_per_milli():
    """Two GPUs, shares 600 × 2 and 500 × 2: milli alone would admit 600 + 600 + 500 = 1700;
    per device 600 leaves 400, so the best is 500 + 500 and 600 = 1600."""
    nodes = make_nodes((96000, 2, "T4"))
    pods = make_pods((1000, 1, 600), (1000, 1, 600), (1000, 1, 500), (1000, 1, 500))
    assert offline_bound(nodes, pods).bound_milli == 1600 == exact_optimum(nodes, pods)


def test_the_bound_relaxes_cpu_packing_per_node():
    """Three nodes of 10 CPU, 2 GPUs; 1-GPU pods of 7 CPU × 3 and 4 CPU × 1. A node takes one
    7-CPU pod and nothing beside it (7 + 4 > 10): 3 GPUs. The class's CPU sum (25 ≤ 30)
    lets the bound place all four — the relaxation it makes, stated here."""
    nodes = make_nodes(*[(10000, 2, "T4")] * 3)
    pods = make_pods((7000, 1, 1000), (7000, 1, 1000), (7000, 1, 1000), (4000, 1, 1000))
    assert exact_optimum(nodes, pods) == 3000
    assert offline_bound(nodes, pods).bound_milli == 4000


def test_a_gpu_model_selector_keeps_pods_off_other_models():
    nodes = make_nodes((96000, 4, "T4"), (96000, 4, "V100M16"))
    pods = make_pods(*[(1000, 2, 1000)] * 4, spec="V100M16")
    bound = offline_bound(nodes, pods)
    assert bound.bound_milli == 4000
    assert {c.label: c.gpu_milli_used for c in bound.classes} == {"1 × T4 4 GPU, 96 CPU": 0.0, "1 × V100M16 4 GPU, 96 CPU": 4000.0}


def test_pods_without_gpus_are_not_shapes_and_classes_group_identical_nodes():
    nodes = make_nodes((96000, 8, "G2"), (16000, 2, "P100"), (96000, 8, "G2"))
    pods = make_pods((8000, 0, 0), (4000, 1, 500), (4000, 1, 500), (2000, 2, 1000))
    classes, shapes = node_classes(nodes), pod_shapes(pods)
    assert sorted(classes.nodes.tolist()) == [1, 2]
    assert sorted(zip(shapes.num_gpu.tolist(), shapes.gpu_milli.tolist(), shapes.arrived.tolist())) == [(1, 500, 2), (2, 1000, 1)]


def test_share_patterns_are_maximal_multisets_that_fit_one_device():
    assert sorted(share_patterns([300, 500])) == [(0, 2), (1, 1), (3, 0)]
    patterns = share_patterns([160, 230, 470, 810])
    assert patterns is not None
    for pattern in patterns:
        used = sum(k * m for k, m in zip(pattern, (160, 230, 470, 810)))
        assert used <= WHOLE < used + 160
    assert share_patterns([10, 20, 30], limit=100) is None  # too many: the rows are left out


def test_seed_bound_bounds_the_arrivals_the_protocol_feeds_the_policies():
    nodes = make_nodes((32000, 4, "T4"), (16000, 2, "P100"))
    pods = make_pods((4000, 1, 1000), (2000, 1, 500), (8000, 0, 0), (4000, 2, 1000), (2000, 1, 250))
    bound = seed_bound(nodes, pods, seed=42)
    arrived = pods.take(fgd_workload(pods, nodes.gpu_milli_total, seed=42))
    assert sum(shape.arrived for shape in bound.shapes) == int((arrived.num_gpu > 0).sum())
    run = run_fgd(FgdConfig(policy="fgd", seed=42), nodes=nodes, pods=pods)
    assert run.allocated_milli[-1] <= bound.bound_milli <= nodes.gpu_milli_total
    assert run.final_alloc <= bound.bound_pct  # and so is every bin up to 130 %


_MODELS = ("T4", "V100M16")


@st.composite
def small_protocols(draw: st.DrawFn) -> tuple[OpenbNodes, OpenbPods, int, int]:
    """1–3 nodes (CPU 4–16 cores, 1/2/4 GPUs, two models) and 1–6 distinct pods: whole GPUs
    (1–4) or a share, 1–8 cores, sometimes a model selector; a seed and a batch size."""
    node_specs = draw(
        st.lists(st.tuples(st.sampled_from([4000, 8000, 16000]), st.sampled_from([1, 2, 4]), st.sampled_from(_MODELS)), min_size=1, max_size=3)
    )
    pod_rows = draw(
        st.lists(
            st.tuples(
                st.sampled_from([1000, 2000, 4000, 8000]),
                st.one_of(st.tuples(st.integers(1, 4), st.just(WHOLE)), st.tuples(st.just(1), st.sampled_from([250, 300, 500, 600, 700]))),
                st.sampled_from([0, 0, 1, 2]),
            ),
            min_size=1,
            max_size=6,
        )
    )
    nodes = make_nodes(*node_specs)
    pods = make_pods(*[(cpu, gpus, milli) for cpu, (gpus, milli), _ in pod_rows])
    spec = np.array([0 if s == 0 else 1 << GPU_MODELS.index(_MODELS[s - 1]) for _, _, s in pod_rows], dtype=np.int64)
    pods = OpenbPods(**{**pods.__dict__, "gpu_spec": spec})
    return nodes, pods, draw(st.integers(0, 1000)), draw(st.sampled_from([1, 4]))


# Derandomized: one drawn instance whose exact MILP (this test's own, 30 s limit) was not
# proven optimal in time on a loaded machine failed a run; the fixed draw solves in ~1 s.
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_protocols())
def test_bound_is_at_least_the_exact_optimum_which_is_at_least_greedy(case: tuple[OpenbNodes, OpenbPods, int, int]) -> None:
    nodes, pods, seed, batch_size = case
    arrived = pods.take(fgd_workload(pods, nodes.gpu_milli_total, seed=seed))
    bound = seed_bound(nodes, pods, seed=seed)
    exact = exact_optimum(nodes, arrived)
    run = run_fgd(FgdConfig(policy="greedy", seed=seed, batch_size=batch_size), nodes=nodes, pods=pods)
    placed = int(run.allocated_milli[-1]) if run.allocated_milli.size else 0  # tuning may keep no pod
    assert bound.method == "mip"
    assert bound.bound_milli >= exact >= placed


def test_a_time_limit_falls_back_to_the_lp_relaxation_which_still_bounds():
    nodes = make_nodes(*[(10000, 2, "T4")] * 3)
    pods = make_pods((7000, 1, 1000), (7000, 1, 1000), (7000, 1, 1000), (4000, 1, 1000))
    bound = offline_bound(nodes, pods, time_limit_s=1e-9)  # too short for the MIP
    assert (bound.method, bound.bound_milli) == ("lp", 4000)
    assert bound.bound_milli >= exact_optimum(nodes, pods)
