"""The rebalancing planner on worked examples: who moves, where, how usage is estimated,
and why a hot node stays hot. Each case runs on every engine unless it is about one."""

from __future__ import annotations

import pytest

from models.placement import Placement
from models.rebalance import RebalanceAdvice
from models.snapshot import Snapshot, UsagePolicy
from solver.checker import check_placement
from solver.rebalance import RebalanceConfig, cycle_snapshot, plan_rebalance
from solver.rebalance.load import (
    milli_percent_reading,
    milli_percent_threshold,
    usage_table,
)
from solver.rebalance.movable import (
    HELD_GANG,
    HELD_NOT_PREEMPTABLE,
    HELD_OTHER_SCHEDULER,
)
from solver.rebalance.verify import NOT_ASKED
from tests.builders import (
    USAGE_OBSERVED_S,
    Gang,
    labelled,
    make_bind,
    make_eviction,
    make_gang,
    make_node,
    make_running,
    make_snapshot,
    pod_term,
    with_pod_rules,
)

ENGINES = ("greedy", "auto")


def _plan(snapshot: Snapshot, engine: str = "auto") -> RebalanceAdvice:
    return plan_rebalance(snapshot, RebalanceConfig(engine=engine, time_limit_s=5.0))  # type: ignore[arg-type]


def _node_after(advice: RebalanceAdvice, node: str) -> dict[str, float]:
    return next(row.after for row in advice.nodes if row.node == node)


def worked_example() -> Snapshot:
    """`solver.rebalance.load`'s: n1 16 cpu at 95 % with pods of 8, 4 and 4 cpu; n2 32 cpu at 50 %."""
    return make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 95}), make_node("n2", cpu=32, usage={"cpu_percent": 50})],
        groups=[make_gang(name, cpu=cpu, running_on=["n1"]) for name, cpu in (("a", 8), ("b", 4), ("c", 4))],
    )


def test_units_round_readings_up_and_thresholds_down() -> None:
    assert milli_percent_reading(91.5) == 91500 and milli_percent_reading(80.0004) == 80001
    assert milli_percent_threshold(80) == 80000 and milli_percent_threshold(80.0004) == 80000
    assert milli_percent_reading(80.1) == 80100 == milli_percent_threshold(80.1), "a float's last bits are no thousandth"


def test_a_pods_share_is_its_part_of_the_nodes_requests() -> None:
    table = usage_table(worked_example())
    shares = {key.split("/")[1]: load.leaving["cpu"] for key, load in table.loads.items() if load.node == "n1"}
    assert shares == {"a-worker-0": 47500, "b-worker-0": 23750, "c-worker-0": 23750}
    n2 = worked_example().node_by_name["n2"]
    assert table.loads["default/b-worker-0"].arriving(n2, "cpu") == 11875, "3.8 cpu on 32 cpu"
    assert table.loads["default/b-worker-0"].amount("cpu") == pytest.approx(3800)


def test_without_requests_the_usage_is_shared_equally() -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, memory=64, usage={"cpu_percent": 90, "memory_percent": 60})],
        groups=[make_gang(name, cpu=4, running_on=["n1"]) for name in ("a", "b", "c")],
    )
    table = usage_table(snapshot)
    assert {load.leaving["memory"] for load in table.loads.values()} == {20000}, "no pod asks memory: 60 / 3"


@pytest.mark.parametrize("engine", ENGINES)
def test_one_move_cools_the_worked_example(engine: str) -> None:
    advice = _plan(worked_example(), engine)
    assert (advice.hot_before, advice.hot_after, len(advice.moves)) == (1, 0, 1)
    move = advice.moves[0]
    assert (move.from_node, move.to_node) == ("n1", "n2")
    assert _node_after(advice, "n1")["cpu"] <= 80 and _node_after(advice, "n2")["cpu"] <= 80
    if move.pod == "default/b-worker-0":
        assert (_node_after(advice, "n1"), _node_after(advice, "n2")) == ({"cpu": 71.25}, {"cpu": 61.875})
        assert move.usage[0].from_percent == 23.75 and move.usage[0].to_percent == 11.875
    assert advice.status == ("GREEDY" if engine == "greedy" else "OPTIMAL")


def test_nothing_hot_needs_no_engine() -> None:
    snapshot = make_snapshot(nodes=[make_node("n1", usage={"cpu_percent": 30})], groups=[make_gang("a", running_on=["n1"])])
    advice = _plan(snapshot)
    assert (advice.engine, advice.moves, advice.uncooled, advice.hot_before) == ("none", (), (), 0)
    assert [row.verdict for row in advice.nodes] == ["cool"]


@pytest.mark.parametrize("engine", ENGINES)
def test_fewest_moves_takes_the_large_pod_when_it_fits(engine: str) -> None:
    """n1 at 100 % over a 60 % threshold: one 8-cpu pod (50 %) covers it, two 2-cpu ones would not."""
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 100}), make_node("n2", cpu=64, usage={"cpu_percent": 10})],
        groups=[make_gang(name, cpu=cpu, running_on=["n1"]) for name, cpu in (("s1", 2), ("s2", 2), ("s3", 4), ("big", 8))],
        usage_policy=UsagePolicy(cpu_threshold_percent=60),
    )
    advice = _plan(snapshot, engine)
    assert [move.pod for move in advice.moves] == ["default/big-worker-0"]


def test_the_destination_keeps_its_own_headroom() -> None:
    """b's 3.8 cpu would take n3 (16 cpu at 60 %) to 83.75 %: only n2 may take it."""
    snapshot = make_snapshot(
        nodes=[
            make_node("n1", cpu=16, usage={"cpu_percent": 95}),
            make_node("n3", cpu=16, usage={"cpu_percent": 60}),
            make_node("n2", cpu=32, usage={"cpu_percent": 50}),
        ],
        groups=[make_gang(name, cpu=cpu, running_on=["n1"]) for name, cpu in (("a", 8), ("b", 4), ("c", 4))],
    )
    advice = _plan(snapshot)
    assert [move.to_node for move in advice.moves] == ["n2"]
    assert _node_after(advice, "n3") == {"cpu": 60}


@pytest.mark.parametrize(
    ("pods", "held"),
    [
        ([make_running("other", node="n1", cpu=8)], HELD_OTHER_SCHEDULER),
        (list(make_gang("pinned", cpu=8, preemptable=False, running_on=["n1"]).pods), HELD_NOT_PREEMPTABLE),
    ],
    ids=["a pod of another scheduler", "a pod that is not preemptable"],
)
def test_pods_that_may_not_move_leave_the_node_hot_and_say_why(pods: list, held: str) -> None:
    groups = [] if held == HELD_OTHER_SCHEDULER else [make_gang("pinned", cpu=8, preemptable=False, running_on=["n1"])]
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 95}), make_node("n2", usage={"cpu_percent": 10})],
        groups=groups,
        running=pods if held == HELD_OTHER_SCHEDULER else (),
    )
    advice = _plan(snapshot)
    assert advice.moves == () and advice.hot_after == 1
    (uncooled,) = advice.uncooled
    assert (uncooled.node, uncooled.cause) == ("n1", "no_movable_pod")
    assert uncooled.reason == f"no movable pod: 1 {held}"


def test_a_gang_at_its_minimum_with_a_pod_on_a_cool_node_stays() -> None:
    gang = make_gang("mpi", replicas=2, cpu=8, running_on=["n1", "n2"])
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 95}), make_node("n2", cpu=64, usage={"cpu_percent": 10})],
        groups=[gang],
    )
    advice = _plan(snapshot)
    assert advice.moves == ()
    assert advice.uncooled[0].reason == f"no movable pod: 1 {HELD_GANG}"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_whose_pods_all_run_hot_moves_whole(engine: str) -> None:
    gang = make_gang("mpi", replicas=2, cpu=4, running_on=["n1", "n1"])
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 95}), make_node("n2", cpu=64, usage={"cpu_percent": 10})],
        groups=[gang],
    )
    advice = _plan(snapshot, engine)
    assert sorted(move.pod for move in advice.moves) == ["default/mpi-worker-0", "default/mpi-worker-1"]
    assert all(move.whole_gang for move in advice.moves)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_elastic_gang_moves_a_pod_above_its_minimum(engine: str) -> None:
    gang = make_gang("elastic", replicas=3, min_member=2, cpu=4, running_on=["n1", "n1", "n2"])
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 90}), make_node("n2", cpu=64, usage={"cpu_percent": 10})],
        groups=[gang],
        running=[make_running("other", node="n1", cpu=8)],
    )
    advice = _plan(snapshot, engine)
    assert len(advice.moves) == 1 and not advice.moves[0].whole_gang
    assert advice.hot_after == 0


def test_not_enough_movable_usage_says_how_hot_it_would_stay() -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 95}), make_node("n2", cpu=64, usage={"cpu_percent": 10})],
        groups=[make_gang("small", cpu=2, running_on=["n1"])],
        running=[make_running("other", node="n1", cpu=14)],
    )
    (uncooled,) = _plan(snapshot).uncooled
    assert uncooled.cause == "not_enough_movable"
    assert uncooled.reason == (
        "its 1 movable pod carry too little: with all of them gone cpu would be 83.125% > 80% "
        "(1 pod held: 1 of other schedulers)"
    )


def test_no_destination_when_no_cool_node_has_room() -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 95}), make_node("n2", cpu=4, usage={"cpu_percent": 10})],
        groups=[make_gang("wide", cpu=8, running_on=["n1"]), make_gang("wide2", cpu=8, running_on=["n1"])],
    )
    (uncooled,) = _plan(snapshot).uncooled
    assert uncooled.cause == "no_destination"


def test_a_node_without_a_fresh_reading_is_never_a_destination() -> None:
    snapshot = make_snapshot(
        nodes=[
            make_node("n1", cpu=16, usage={"cpu_percent": 95}),
            make_node("stale", cpu=64, usage={"cpu_percent": 1, "observed_at_s": USAGE_OBSERVED_S - 3600}),
            make_node("unmeasured", cpu=64),
        ],
        groups=[make_gang("a", cpu=8, running_on=["n1"])],
    )
    advice = _plan(snapshot)
    assert advice.moves == () and advice.uncooled[0].cause == "no_destination"
    assert advice.not_judged == {"stale": 1, "missing": 1}


@pytest.mark.parametrize("engine", ENGINES)
def test_gpu_pods_move_onto_free_devices(engine: str) -> None:
    snapshot = make_snapshot(
        nodes=[
            make_node("g1", gpus=8, usage={"gpu_percent": 98}),
            make_node("g2", gpus=8, usage={"gpu_percent": 20}),
        ],
        groups=[
            make_gang("train", gpus=4, running_on=["g1"]),
            make_gang("busy", gpus=2, running_on=["g2"]),
            make_gang("tune", gpus=4, running_on=["g1"]),
        ],
        usage_policy=UsagePolicy(gpu_threshold_percent=90),
    )
    advice = _plan(snapshot, engine)
    (move,) = advice.moves
    assert move.to_node == "g2" and len(move.gpus) == 4 and not set(move.gpus) & {0, 1}, "devices 0 and 1 are busy's"
    assert _node_after(advice, "g2")["gpu"] == pytest.approx(20 + 49)


@pytest.mark.parametrize("engine", ENGINES)
def test_selectors_and_anti_affinity_are_judged_on_destinations(engine: str) -> None:
    """Two web pods with hostname anti-affinity must both leave n1 (each half of it); both fit n2
    by usage (10 + 2 × 15.625 ≤ 45 %), but never on one node: the checker says so, and the next
    round puts them apart."""
    rules = with_pod_rules(make_gang("web", replicas=2, cpu=8, min_member=0, running_on=["n1", "n1"]),
                           labels={"app": "web"}, required_anti_affinity=[pod_term(app="web")])
    web = Gang(group=rules.group, pods=tuple(labelled(pod, {"app": "web"}, anti_affinity=[pod_term(app="web")]) for pod in rules.pods))
    snapshot = make_snapshot(
        nodes=[
            make_node("n1", cpu=20, usage={"cpu_percent": 100}),
            make_node("n2", cpu=64, usage={"cpu_percent": 10}),
            make_node("n3", cpu=64, usage={"cpu_percent": 10}),
            make_node("gpu", cpu=64, gpus=8, usage={"cpu_percent": 0}, taints=["gpu=yes:NoSchedule"]),
        ],
        groups=[web],
        usage_policy=UsagePolicy(cpu_threshold_percent=45),
    )
    advice = _plan(snapshot, engine)
    assert sorted(move.to_node for move in advice.moves) == ["n2", "n3"]


def test_advice_passes_the_checker_as_binds_of_requeued_pods() -> None:
    """What `verify` promises, asked again here from the advice alone."""
    advice = _plan(worked_example())
    snapshot = worked_example()
    moved = {move.pod for move in advice.moves}
    pods = [
        pod.model_copy(update={"phase": "pending", "node": None, "gpu_indices": ()}) if pod.key in moved else pod
        for pod in snapshot.pods
    ]
    checked = snapshot.replaced(pods=pods)
    binds = [make_bind(move.pod, move.to_node, gpus=move.gpus) for move in advice.moves]
    assert [v for v in check_placement(checked, Placement(binds=tuple(binds))) if v.rule not in NOT_ASKED] == []


def test_the_cycle_snapshot_runs_binds_and_drops_evictions_with_their_usage() -> None:
    pending = make_gang("new", cpu=2)
    victim = make_gang("victim", cpu=8, running_on=["n1"])
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=16, usage={"cpu_percent": 90}), make_node("n2", usage={"cpu_percent": 10})],
        groups=[pending, victim, make_gang("stay", cpu=8, running_on=["n1"])],
    )
    placement = Placement(
        binds=(make_bind(pending.pods[0], "n2"),),
        evictions=(make_eviction(victim.pods[0], "n1", for_=pending),),
    )
    cycle = cycle_snapshot(snapshot, placement)
    assert cycle.pod_by_key["default/new-worker-0"].node == "n2"
    assert "default/victim-worker-0" not in cycle.pod_by_key
    assert cycle.node_by_name["n1"].usage.cpu_percent == 45.0, "the victim's half of 90 % left with it"  # type: ignore[union-attr]
    assert cycle.node_by_name["n2"].usage.cpu_percent == 10.0, "a pod bound now brings no measured usage"  # type: ignore[union-attr]


def test_the_greedy_planners_worked_example() -> None:
    """`solver.rebalance.greedy`'s: a (47.5 %) fits nowhere, b goes to n2 rather than n3."""
    snapshot = make_snapshot(
        nodes=[
            make_node("n1", cpu=16, usage={"cpu_percent": 95}),
            make_node("n2", cpu=16, usage={"cpu_percent": 50}),
            make_node("n3", cpu=16, usage={"cpu_percent": 70}),
        ],
        groups=[make_gang(name, cpu=cpu, running_on=["n1"]) for name, cpu in (("a", 8), ("b", 4), ("c", 4))],
    )
    advice = _plan(snapshot, "greedy")
    assert [(move.pod, move.to_node) for move in advice.moves] == [("default/b-worker-0", "n2")]
    assert (_node_after(advice, "n1"), _node_after(advice, "n2")) == ({"cpu": 71.25}, {"cpu": 73.75})
