"""The fragmentation measure and the greedy engine's fragmentation-first packing:
hand-computed values, typical shapes from pending pods, the checker on drawn snapshots,
a tiny cluster where best fit strands a device and the fragmentation score does not, and
configured shapes prepared once per tuple, never from a stale entry."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Decision
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.fragmentation import (
    FragmentationScore,
    PackingMeasure,
    TypicalShape,
    _configured,
    _prepared,
    fgd_bucket,
    fragmentation_milli,
    packing_score,
    prepare_shapes,
    typical_shapes_of,
)
from solver.greedy.state import CycleState
from solver.place import SolveConfig, place
from solver.problem import build_problem
from solver.rules import counted
from tests.builders import make_gang, make_node, make_snapshot
from tests.cycle_steps import CycleSteps
from tests.strategies import snapshots

HALF_GPU = TypicalShape(cpu_milli=1000, gpu_milli=500, weight=1.0)


def _shapes(*rows: tuple[int, int, float], nodes: int = 1, eligible: np.ndarray | None = None):
    cpu, gpu, weight = (np.array(column) for column in zip(*rows))
    allowed = np.ones((len(rows), nodes), dtype=bool) if eligible is None else eligible
    return prepare_shapes(cpu, gpu, weight, allowed)


def test_measure_matches_the_hand_computed_example():
    # Devices (1000, 300), 8 CPUs free; a = 1 × 500 milli with 4 CPUs (0.5), b = CPU-only (0.5):
    # for a the 300 device is fragment, for b all 1,300 → 0.5·300 + 0.5·1300 = 800.
    shapes = _shapes((4000, 500, 0.5), (2000, 0, 0.5))
    value = fragmentation_milli(np.array([8000]), np.array([[1000, 300]]), shapes, np.array([0]))
    assert value.tolist() == [800.0]


@pytest.mark.parametrize(
    ("cpu_free", "devices", "expected"),
    [
        (8000, [1000, 1000, -1], 0.0),  # a 2-GPU pod fits: nothing is fragment (padding counts as nothing)
        (8000, [1000, 600, -1], 1600.0),  # only one whole device: the 2-GPU pod fits nowhere → all of it
        (1000, [1000, 1000, -1], 2000.0),  # not enough CPU for the pod → all of it
    ],
    ids=["pod fits", "too few whole devices", "too little cpu"],
)
def test_a_shape_that_does_not_fit_makes_all_free_gpu_fragment(cpu_free, devices, expected):
    shapes = _shapes((4000, 2000, 1.0))
    value = fragmentation_milli(np.array([cpu_free]), np.array([devices]), shapes, np.array([0]))
    assert value.tolist() == [expected]


def test_a_node_the_shape_may_not_use_is_all_fragment():
    shapes = _shapes((1000, 500, 1.0), nodes=2, eligible=np.array([[True, False]]))
    value = fragmentation_milli(np.array([8000, 8000]), np.array([[1000], [1000]]), shapes, np.array([0, 1]))
    assert value.tolist() == [0.0, 1000.0]


def test_fgd_bucket_is_the_integer_sigmoid_of_the_growth():
    assert fgd_bucket(np.array([0.0, 1000.0, -1000.0])).tolist() == [50, 26, 73]


def test_typical_shapes_from_pending_pods_keep_the_most_frequent_until_the_threshold():
    snapshot = make_snapshot(
        nodes=[make_node("n1", gpus=8)],
        groups=[
            make_gang("half", replicas=6, cpu=1, gpu_milli=500),
            make_gang("one", replicas=3, cpu=2, gpus=1),
            make_gang("cpu", replicas=1, cpu=4),
        ],
    )
    shapes = typical_shapes_of(snapshot, build_problem(snapshot), threshold=0.8)
    assert shapes.cpu_only_weight == 0.0
    assert sorted(zip(shapes.devices.tolist(), shapes.weight.tolist())) == [(1, 333_333), (1, 666_667)]  # ppm
    assert sorted(shapes.thresholds.tolist()) == [500, 1000]


def test_best_fit_packing_has_no_fragmentation_score():
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=1)], groups=[make_gang("a", gpu_milli=500)])
    assert packing_score(snapshot, build_problem(snapshot), packing="best-fit") is None


def _fragmentation_after(snapshot: Snapshot, decision: Decision, shape: TypicalShape) -> float:
    """Cluster fragmentation (milli) for `shape` after the decision's binds."""
    free = {node.name: [1000 - gpu.used_milli for gpu in node.gpus] for node in snapshot.nodes}
    cpu = {node.name: node.allocatable.get("cpu", 0) for node in snapshot.nodes}
    pods = snapshot.pod_by_key
    for bind in decision.placement.binds:
        asked = pods[bind.pod].requests
        cpu[bind.node] -= asked.get("cpu", 0)
        for g in bind.gpus:
            free[bind.node][g] -= min(1000, asked.get("gpu", 0))
    names = [node.name for node in snapshot.nodes]
    shapes = _shapes((shape.cpu_milli, shape.gpu_milli, shape.weight), nodes=len(names))
    width = max(len(row) for row in free.values())
    table = np.array([free[n] + [-1] * (width - len(free[n])) for n in names])
    return float(fragmentation_milli(np.array([cpu[n] for n in names]), table, shapes, np.arange(len(names))).sum())


def test_on_a_tiny_cluster_the_fragmentation_score_strands_less_than_best_fit():
    # Half-GPU pods are typical. Node a has two idle devices; node b has 600 milli left on
    # device 0. Best fit puts a 200-milli pod on b's 600 (the tightest device), leaving
    # 400 no half-GPU pod can use; the fragmentation score sends it to a (800 left, usable).
    snapshot = make_snapshot(
        nodes=[make_node("a", gpus=2), make_node("b", gpus=2, gpu_used_milli={0: 400})],
        groups=[make_gang("small", cpu=1, gpu_milli=200)],
    )
    best_fit = place(snapshot, SolveConfig(engine="greedy", packing="best-fit"))
    aware = place(snapshot, SolveConfig(engine="greedy", typical_shapes=(HALF_GPU,)))
    assert [b.node for b in best_fit.placement.binds] == ["b"]
    assert [b.node for b in aware.placement.binds] == ["a"]
    assert _fragmentation_after(snapshot, aware, HALF_GPU) < _fragmentation_after(snapshot, best_fit, HALF_GPU)


def test_configured_shapes_honour_their_node_selector():
    # The typical shape may use only pool=x nodes, so node y's GPUs are fragment whatever
    # happens: the 200-milli pod goes to y and leaves x's idle device whole.
    snapshot = make_snapshot(
        nodes=[make_node("x", gpus=1, labels={"pool": "x"}), make_node("y", gpus=1, labels={"pool": "y"})],
        groups=[make_gang("small", cpu=1, gpu_milli=200)],
    )
    shape = TypicalShape(cpu_milli=1000, gpu_milli=1000, weight=1.0, node_selector=(("pool", "x"),))
    decision = place(snapshot, SolveConfig(engine="greedy", typical_shapes=(shape,)))
    assert [b.node for b in decision.placement.binds] == ["y"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=snapshots(max_nodes=12, max_groups=10))
def test_greedy_with_the_fragmentation_score_passes_the_checker(snapshot: Snapshot):
    for config in (SolveConfig(engine="greedy"), SolveConfig(engine="greedy", typical_shapes=(HALF_GPU,))):
        decision = place(snapshot, config)
        assert check_placement(snapshot, decision.placement) == ()


class _FreeState:
    """A stand-in for the engine's cycle state: the arrays the score reads. Whoever changes
    a node's free CPU or devices counts it in `node_changes`, as `CycleState` does (tested
    below on the real one)."""

    def __init__(self, cpu: np.ndarray, gpu_free: np.ndarray):
        self.free = cpu[None, :].copy()
        self.gpu_free = gpu_free.copy()
        self.node_changes = np.zeros(cpu.size, dtype=np.int64)


class _Shape:
    def __init__(self, cpu_milli: int, gpu_milli: int):
        self.cpu_milli, self.gpu_milli = cpu_milli, gpu_milli
        self.whole_devices = gpu_milli // 1000 if gpu_milli >= 1000 else 0
        self.fractional = 0 < gpu_milli < 1000


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_remembered_growth_always_equals_a_fresh_computation(data):
    """The per-shape memo may skip only nodes whose state did not change: after any
    sequence of node changes and scoring calls (on any node subsets) it must give what a
    score with no memory gives."""
    nodes, slots = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 4))
    milli = st.sampled_from([-1, 0, 250, 500, 750, 1000])
    table = np.array(data.draw(st.lists(st.lists(milli, min_size=slots, max_size=slots), min_size=nodes, max_size=nodes)))
    cpu = np.array(data.draw(st.lists(st.sampled_from([0, 2000, 8000]), min_size=nodes, max_size=nodes)))
    shapes = _shapes((1000, 500, 2.0), (4000, 1000, 1.0), (2000, 2000, 1.0), nodes=nodes)
    problem = type("P", (), {"cpu_column": 0})()
    remembering, state = FragmentationScore(problem, shapes), _FreeState(cpu, table)
    asked = [_Shape(1000, 250), _Shape(2000, 1000), _Shape(0, 2000)]
    for _ in range(data.draw(st.integers(1, 8))):
        node = data.draw(st.integers(0, nodes - 1))
        state.gpu_free[node, data.draw(st.integers(0, slots - 1))] = data.draw(milli)
        state.free[0, node] = data.draw(st.sampled_from([0, 1000, 8000]))
        state.node_changes[node] += 1
        subset = np.array(sorted(data.draw(st.sets(st.integers(0, nodes - 1), min_size=1))), dtype=np.int64)
        shape = data.draw(st.sampled_from(asked))
        fresh = FragmentationScore(problem, shapes).growth(state, shape, subset)
        assert remembering.growth(state, shape, subset).tolist() == fresh.tolist()


def test_a_score_handed_another_state_forgets_what_it_remembered():
    """Change counts are per state: a second state, as unchanged as the first by its
    counts but with other free devices, gets its own growth, not the first state's."""
    shapes = _shapes((1000, 500, 1.0), nodes=2)
    problem = type("P", (), {"cpu_column": 0})()
    score = FragmentationScore(problem, shapes)
    half = _Shape(1000, 500)
    first = _FreeState(np.array([8000, 8000]), np.array([[1000, 1000], [1000, 1000]]))
    second = _FreeState(np.array([8000, 8000]), np.array([[300, 1000], [700, 700]]))
    every = np.arange(2)
    score.growth(first, half, every)
    fresh = FragmentationScore(problem, shapes).growth(second, half, every)
    assert score.growth(second, half, every).tolist() == fresh.tolist()
    assert fresh.tolist() != FragmentationScore(problem, shapes).growth(first, half, every).tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=snapshots(max_nodes=8, max_groups=8), data=st.data())
def test_the_cycle_state_counts_every_change_of_a_node_and_the_memo_stays_fresh(snapshot: Snapshot, data):
    """The growth memo trusts `CycleState.node_changes`: every bind, eviction and rollback
    that changes a node's free resources or devices must count on that node. After each
    random step, a node whose arrays differ from before has a new count, and the
    remembering score still gives what a fresh one gives."""
    snapshot = counted(snapshot)
    problem = build_problem(snapshot)
    state = CycleState(problem, snapshot)
    shapes = _shapes((1000, 500, 2.0), (4000, 1000, 1.0), (2000, 2000, 1.0), nodes=problem.node_count)
    remembering = FragmentationScore(problem, shapes)
    steps = CycleSteps(state)
    every = np.arange(problem.node_count)
    for _ in range(data.draw(st.integers(1, 10))):
        before = (state.free.copy(), state.gpu_free.copy(), state.node_changes.copy())
        steps.take(data)
        free, gpu_free, changes = before
        changed = (state.free != free).any(axis=0) | (state.gpu_free != gpu_free).any(axis=1)
        assert (state.node_changes[changed] != changes[changed]).all()
        for shape in (_Shape(1000, 250), _Shape(2000, 1000)) if state.gpu_free.shape[1] else ():  # GPU pods score GPU nodes
            fresh = FragmentationScore(problem, shapes).growth(state, shape, every)
            assert remembering.growth(state, shape, every).tolist() == fresh.tolist()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_one_node_state_in_python_equals_the_numpy_measure(data):
    """CP-SAT's pattern walks read node states one at a time (`PackingMeasure.split_state`,
    plain Python); the objective and greedy read them in arrays (`fragmentation_milli`).
    The packing tier is one measure only if both give the same integer for every state."""
    count = data.draw(st.integers(0, 5))
    nodes = data.draw(st.integers(1, 3))
    cpu = data.draw(st.lists(st.sampled_from([0, 1000, 4000, 16000]), min_size=count, max_size=count))
    gpu = data.draw(st.lists(st.sampled_from([0, 250, 500, 1000, 2000, 8000]), min_size=count, max_size=count))
    weight = data.draw(st.lists(st.floats(0.01, 1.0), min_size=count, max_size=count))
    eligible = np.array(data.draw(st.lists(st.booleans(), min_size=count * nodes, max_size=count * nodes)), dtype=bool)
    measure = PackingMeasure(prepare_shapes(np.array(cpu), np.array(gpu), np.array(weight), eligible.reshape(count, nodes)))
    node = data.draw(st.integers(0, nodes - 1))
    whole = data.draw(st.integers(0, 8))
    partial = tuple(sorted(data.draw(st.lists(st.integers(0, 999), max_size=4))))
    cpu_free = data.draw(st.sampled_from([0, 500, 1000, 4000, 20000]))
    row = np.array([(1000,) * whole + partial or (0,)])
    expected = int(measure.nodes(np.array([cpu_free]), row, np.array([node]))[0])
    assert measure.split_state(cpu_free, whole, partial, int(measure.node_class[node])) == expected
    assert measure.state(cpu_free, (1000,) * whole + partial, int(measure.node_class[node])) == expected


def _configured_columns(snapshot: Snapshot, shapes) -> tuple:  # noqa: ANN001
    prepared = _configured(snapshot, shapes)
    return (prepared.cpu_milli.tolist(), prepared.devices.tolist(), prepared.weight.tolist(), prepared.eligible.tolist())


def test_configured_shapes_are_prepared_once_per_tuple_and_never_stale():
    snapshot = make_snapshot(nodes=[make_node("a", gpus=2, labels={"pool": "x"}), make_node("b", gpus=2)])
    selected = TypicalShape(cpu_milli=2000, gpu_milli=1000, weight=1.0, node_selector=(("pool", "x"),))
    shapes = (HALF_GPU, selected)
    assert _prepared(shapes) is _prepared(shapes)  # one tuple, one preparation
    assert _configured_columns(snapshot, shapes) == (
        [1000, 2000], [1, 1], [500_000, 500_000], [[True, True], [True, False]]
    )
    other = (selected,)  # other contents: its own columns
    assert _configured_columns(snapshot, other) == ([2000], [1], [1_000_000], [[True, False]])
    changing = [HALF_GPU]  # a list may change under one identity: never taken from the cache
    assert _configured_columns(snapshot, changing)[0] == [1000]
    changing[0] = selected
    assert _configured_columns(snapshot, changing)[0] == [2000]


CONFIGURED = (
    HALF_GPU,
    TypicalShape(cpu_milli=2000, gpu_milli=1000, weight=2.0, node_selector=(("gpu", "a100"),)),
    TypicalShape(cpu_milli=4000, gpu_milli=2000, weight=1.0, node_selector=(("gpu", "h100"), ("zone", "a"))),
    TypicalShape(cpu_milli=1000, gpu_milli=250, weight=1.0, node_selector=(("gen", "9"),)),
    TypicalShape(cpu_milli=8000, gpu_milli=0, weight=1.0),
)
"""One configured tuple for every drawn snapshot, so its eligibility by node view is kept
across them as across the cycles of one controller or replay."""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(max_nodes=12, max_groups=2))
def test_configured_eligibility_kept_across_snapshots_is_each_node_judged_afresh(snapshot: Snapshot):
    eligible = _configured(snapshot, CONFIGURED).eligible
    gpu_shapes = [shape for shape in CONFIGURED if shape.gpu_milli]
    expected = [
        [
            not node.unschedulable and all(node.labels.get(key) == value for key, value in shape.node_selector)
            for node in snapshot.nodes
        ]
        for shape in gpu_shapes
    ]
    assert eligible.dtype == bool and eligible.tolist() == expected
