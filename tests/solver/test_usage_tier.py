"""The usage tier (`solver.usage_tier`) and rule `usage` together, over every engine: low
load preferred, hot nodes never bound to, the checker judging every engine's placement."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from models.placement import Bind, Placement
from models.snapshot import NodeUsage, Snapshot, UsagePolicy
from solver.checker import check_placement
from solver.objective import ObjectiveContext, score
from solver.place import ENGINES, SolveConfig, place
from solver.rules import usage
from solver.usage_tier import TOP_BAND, band_of, usage_bands, weighted_load
from tests.builders import USAGE_OBSERVED_S, make_gang, make_node, make_snapshot, solve_checked
from tests.solver.test_cpsat_properties import run_cpsat
from tests.strategies import snapshots


def test_the_docstrings_example_weighted_load_and_band() -> None:
    reading = NodeUsage(cpu_percent=70, memory_percent=30, gpu_percent=45, observed_at_s=0)
    load = weighted_load(reading, UsagePolicy(gpu_weight=2))
    assert load == 47.5 and band_of(load) == 4
    assert band_of(100) == band_of(250) == TOP_BAND
    assert weighted_load(reading, UsagePolicy(cpu_weight=0, memory_weight=0, gpu_weight=0)) is None


def test_unknown_load_is_the_least_cool_band_and_without_any_fresh_usage_every_band_is_zero() -> None:
    measured = make_snapshot(
        nodes=[
            make_node("warm", usage={"cpu_percent": 65}),
            make_node("cool", usage={"cpu_percent": 12}),
            make_node("hot", usage={"cpu_percent": 95}),
            make_node("unmeasured"),
            make_node("unweighted", usage={"gpu_percent": 99}),
        ],
        usage_policy=UsagePolicy(gpu_weight=0),
    )
    assert usage_bands(measured) == {"warm": 6, "cool": 1, "hot": 9, "unmeasured": 1, "unweighted": 1}
    only_hot = make_snapshot(nodes=[make_node("hot", usage={"cpu_percent": 95}), make_node("unmeasured")])
    assert usage_bands(only_hot) == {"hot": 9, "unmeasured": 0}, "a hot node takes no pod: nothing to be as loaded as"
    stale = make_node("a", usage={"cpu_percent": 12, "observed_at_s": USAGE_OBSERVED_S - 900})
    unjudged = make_snapshot(nodes=[stale, make_node("b")], usage_policy=UsagePolicy(judged_at_s=USAGE_OBSERVED_S))
    assert usage_bands(unjudged) == {"a": 0, "b": 0}


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_places_on_the_least_loaded_nodes(engine: str) -> None:
    nodes = [
        make_node("busy", cpu=16, usage={"cpu_percent": 75, "memory_percent": 70}),
        make_node("half", cpu=16, usage={"cpu_percent": 45, "memory_percent": 50}),
        make_node("idle", cpu=16, usage={"cpu_percent": 3, "memory_percent": 10}),
    ]
    job = make_gang("job", replicas=2, cpu=8)
    decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), engine)
    assert {bind.node for bind in decision.placement.binds} == {"idle"}


def test_the_tier_never_costs_a_placement() -> None:
    """Usage ranks below throughput: a warm node still takes what the idle one cannot."""
    nodes = [make_node("warm", cpu=16, usage={"cpu_percent": 70}), make_node("idle", cpu=16, usage={"cpu_percent": 1})]
    job = make_gang("job", replicas=4, cpu=8)
    for engine in ENGINES:
        decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), engine)
        assert len(decision.placement.binds) == 4


def test_a_weight_decides_which_resource_counts() -> None:
    nodes = [
        make_node("cpu-busy", cpu=16, usage={"cpu_percent": 70, "memory_percent": 5}),
        make_node("memory-busy", cpu=16, usage={"cpu_percent": 5, "memory_percent": 70}),
    ]
    job = make_gang("job", cpu=4)
    by_memory = make_snapshot(nodes=nodes, groups=[job], usage_policy=UsagePolicy(cpu_weight=0))
    by_cpu = make_snapshot(nodes=nodes, groups=[job], usage_policy=UsagePolicy(memory_weight=0))
    assert [b.node for b in solve_checked(by_memory, "cpsat").placement.binds] == ["cpu-busy"]
    assert [b.node for b in solve_checked(by_cpu, "cpsat").placement.binds] == ["memory-busy"]


# ---- properties: drawn snapshots with drawn usage ----

READINGS = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "cpu_percent": st.one_of(st.none(), st.floats(0, 120)),
            "memory_percent": st.one_of(st.none(), st.floats(0, 100)),
            "gpu_percent": st.one_of(st.none(), st.floats(0, 100)),
            "age_s": st.sampled_from([0.0, 30.0, 299.0, 301.0, 3600.0]),
        }
    ),
)
POLICIES = st.builds(
    UsagePolicy,
    cpu_threshold_percent=st.sampled_from([None, 50.0, 80.0]),
    memory_threshold_percent=st.sampled_from([None, 80.0]),
    gpu_threshold_percent=st.sampled_from([None, 90.0]),
    cpu_weight=st.integers(0, 3),
    memory_weight=st.integers(0, 3),
    gpu_weight=st.integers(0, 3),
    judged_at_s=st.just(USAGE_OBSERVED_S),
)


@st.composite
def measured_snapshots(draw: st.DrawFn) -> Snapshot:
    """A drawn snapshot whose nodes carry drawn readings (fresh, stale or none) and a drawn policy."""
    base = draw(snapshots(max_nodes=10, max_groups=8))
    nodes: list[dict[str, Any]] = []
    for node in base.nodes:
        data = node.model_dump()
        reading = draw(READINGS)
        if reading is not None:
            age = reading.pop("age_s")
            data["usage"] = {**reading, "observed_at_s": USAGE_OBSERVED_S - age}
        nodes.append(data)
    fields = {name: getattr(base, name) for name in Snapshot.model_fields if name not in ("nodes", "usage_policy")}
    return Snapshot.model_validate({**fields, "nodes": nodes, "usage_policy": draw(POLICIES)})


PROPERTIES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@PROPERTIES
@given(measured_snapshots())
def test_every_engine_is_valid_cpsat_exact_in_the_usage_tier_and_never_below_greedy(snapshot: Snapshot) -> None:
    result, greedy, context = run_cpsat(snapshot)
    assert check_placement(snapshot, greedy.placement) == ()
    assert result.placement is not None and check_placement(snapshot, result.placement) == ()
    got = score(snapshot, result.placement, context=context)
    assert got == result.objective, "CP-SAT's tiers, usage included, equal score of what it returns"
    assert got >= score(snapshot, greedy.placement, context=ObjectiveContext.of(snapshot))
    hot = {name for name, judgement in usage.judgements(snapshot).items() if judgement.state == "hot"}
    assert not hot & {bind.node for bind in result.placement.binds}
    assert not hot & {bind.node for bind in greedy.placement.binds}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(measured_snapshots())
def test_place_answers_a_checked_decision_on_any_usage(snapshot: Snapshot) -> None:
    decision = place(snapshot, SolveConfig(engine="auto", time_limit_s=5.0))
    assert check_placement(snapshot, decision.placement) == ()


def test_a_what_if_keeps_the_base_snapshots_usage_policy() -> None:
    from solver.whatif import Changes, apply_changes

    policy = UsagePolicy(cpu_threshold_percent=50, judged_at_s=USAGE_OBSERVED_S)
    base = make_snapshot(nodes=[make_node("n1", usage={"cpu_percent": 60}), make_node("n2")], usage_policy=policy)
    changed = apply_changes(base, Changes(drain_nodes=("n2",)), submitted_at_s=USAGE_OBSERVED_S)
    assert changed.snapshot.usage_policy == policy
    assert usage.judgements(changed.snapshot)["n1"].state == "hot"


# ---- a node without a reading (issue 29, item 9) ----


@pytest.mark.parametrize("engine", ENGINES)
def test_readings_on_the_gpu_nodes_only_keep_cpu_pods_on_the_cpu_nodes_while_they_fit(engine: str) -> None:
    """The issue's case: H100 nodes report load, CPU nodes report none. An unmeasured node
    used to be in the top band, so every CPU-only pod went to the H100s while the CPU nodes
    stayed empty; now the CPU nodes fill first (12 pods of 2 CPU on 3 × 8 CPU) and only
    what does not fit there goes to a GPU node."""
    reading = {"cpu_percent": 20, "memory_percent": 30, "gpu_percent": 70}
    nodes = [
        *(make_node(f"h100-{i}", cpu=64, gpus=8, usage=reading) for i in range(3)),
        *(make_node(f"cpu-{i}", cpu=8) for i in range(3)),
    ]
    jobs = [make_gang(f"cpu-job-{j}", replicas=2, cpu=2) for j in range(7)]
    binds = solve_checked(make_snapshot(nodes=nodes, groups=jobs), engine).placement.binds
    assert len(binds) == 14
    assert sum(bind.node.startswith("cpu-") for bind in binds) == 12, [bind.node for bind in binds]


TWIN_READINGS = st.fixed_dictionaries(
    {
        "cpu_percent": st.one_of(st.none(), st.floats(0, 100)),
        "memory_percent": st.one_of(st.none(), st.floats(0, 100)),
        "gpu_percent": st.one_of(st.none(), st.floats(0, 100)),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    twin=TWIN_READINGS,
    others=st.lists(READINGS, max_size=4),
    unknown=st.sampled_from(["missing", "stale", "unweighted"]),
    twin_first=st.booleans(),
    policy=POLICIES,
)
def test_a_node_without_a_reading_never_ranks_below_an_otherwise_identical_measured_one(
    twin: dict[str, float | None], others: list[dict[str, float] | None], unknown: str, twin_first: bool, policy: UsagePolicy
) -> None:
    """Two identical nodes but for the reading: `measured` (fresh, cool) and `unmeasured`
    (none, stale, or no resource the policy weighs), beside other drawn nodes. Binding a pod
    to `unmeasured` scores at least as well as binding it to `measured`, whatever the
    readings and the policy — and greedy, which ranks by the bands, never picks `measured`
    when `unmeasured` is in a lower band."""
    stale = {**twin, "observed_at_s": USAGE_OBSERVED_S - 3600}
    unweighted = {"cpu_percent": None, "memory_percent": None, "gpu_percent": None}
    unweighted |= {"gpu_percent": 50.0} if policy.gpu_weight == 0 else {"cpu_percent": 50.0} if policy.cpu_weight == 0 else {}
    twins = [
        make_node("measured", cpu=16, gpus=2, usage=twin),
        make_node("unmeasured", cpu=16, gpus=2, usage={"missing": None, "stale": stale, "unweighted": unweighted}[unknown]),
    ]
    rest = [
        make_node(f"other-{i}", cpu=16, gpus=2, usage=None if reading is None else {
            **{k: v for k, v in reading.items() if k != "age_s"}, "observed_at_s": USAGE_OBSERVED_S - reading["age_s"]
        })
        for i, reading in enumerate(others)
    ]  # fmt: skip
    job = make_gang("job", cpu=1)
    snapshot = make_snapshot(
        nodes=[*(twins if twin_first else twins[::-1]), *rest], groups=[job], usage_policy=policy
    )
    assume(usage.judgements(snapshot)["measured"].state == "cool")
    pod = snapshot.pods[0].key
    context = ObjectiveContext.of(snapshot)
    on = {node: score(snapshot, Placement(binds=(Bind(pod=pod, node=node),)), context=context) for node in ("measured", "unmeasured")}
    assert on["unmeasured"] >= on["measured"]
    bands = usage_bands(snapshot)
    assert bands["unmeasured"] <= bands["measured"]
    if bands["unmeasured"] < bands["measured"]:
        greedy = solve_checked(snapshot, "greedy").placement.binds
        assert [bind.node for bind in greedy] != ["measured"]
