"""Rule `colocation`: on colocation nodes offline pods use allocatable − online usage −
margin − other offline requests (as kubernetes.io/batch-cpu / batch-memory), online pods
never see them; stale or missing usage gives offline pods no oversubscribed room; when
online usage rises, the fewest offline pods are evicted."""

from __future__ import annotations

from dataclasses import replace

import pytest

from models.snapshot import ColocationPolicy, PodGroup, Snapshot, UsagePolicy
from solver.checker import check_placement
from solver.offline_evictions import offline_evictions
from solver.place import ENGINES
from solver.rules import colocation, counted
from tests.builders import (
    USAGE_OBSERVED_S,
    Gang,
    make_bind,
    make_gang,
    make_node,
    make_placement,
    make_running,
    make_snapshot,
    solve_checked,
)

COLOCATION = {"volcano.sh/oversubscription": "true"}


def offline(gang: Gang) -> Gang:
    """`gang` with every task and pod offline (volcano.sh/qos-level: BE)."""
    data = gang.group.model_dump()
    data["tasks"] = [{**task, "offline": True} for task in data["tasks"]]
    return Gang(group=PodGroup.model_validate(data), pods=tuple(p.model_copy(update={"offline": True}) for p in gang.pods))


def worked_example(*, usage: dict | None = None, offline_running: float = 3, pending: Gang | None = None) -> Snapshot:
    """The module docstring's n1: 16 cpu, online pods requesting 12 and using 25 %,
    offline pods running there requesting `offline_running` cpu."""
    web = make_running("web", node="n1", cpu=12)
    batch = make_running("batch-0", node="n1", cpu=offline_running).model_copy(update={"offline": True})
    return make_snapshot(
        nodes=[make_node("n1", cpu=16, memory=64, labels=COLOCATION, usage={"cpu_percent": 40, "online_cpu_percent": 25, "memory_percent": 10, "online_memory_percent": 10} if usage is None else usage)],
        running=[web, batch],
        groups=[pending] if pending else [],
    )


def _cpu(snapshot: Snapshot, node: str = "n1") -> colocation.Room:
    return next(r for r in colocation.rooms(snapshot)[node].resources if r.resource == "cpu")


def test_the_worked_example_offers_allocatable_minus_online_usage_minus_margin() -> None:
    room = _cpu(worked_example())
    assert (room.allocatable, room.online, room.margin, room.room, room.offline) == (16000, 4000, 1600, 10400, 3000)
    effective = counted(worked_example())
    assert effective.node_by_name["n1"].allocatable[colocation.BATCH_CPU] == 10400
    assert effective.pod_by_key["default/batch-0"].requests == {colocation.BATCH_CPU: 3000}
    assert effective.pod_by_key["default/web"].requests == {"cpu": 12000}


def test_the_room_is_declared_as_columns_that_stand_in_for_cpu_and_memory() -> None:
    """What `counted` applies is the rule's own declaration: n1 offers its room, the running
    offline pod and the pending offline task ask batch-cpu instead of cpu; the online pod is
    not named (it keeps asking cpu)."""
    gang = offline(make_gang("etl", cpu=2))
    snapshot = worked_example(pending=gang)
    by_name = {column.name: column for column in colocation.columns(snapshot)}
    assert sorted(by_name) == [colocation.BATCH_CPU, colocation.BATCH_MEMORY]  # no device is lent here
    cpu = by_name[colocation.BATCH_CPU]
    assert (cpu.rule, cpu.moves, cpu.dealt_to_queues, cpu.packs) == ("colocation", "cpu", True, True)
    assert cpu.offer == {"n1": 10400}
    assert cpu.ask == {"default/batch-0": 3000, **{pod.key: 2000 for pod in gang.pods}}
    assert cpu.task_ask == {(gang.group.key, task.name): 2000 for task in gang.group.tasks}
    online_and_margin = 2 * 6_871_947_674  # 10 % online usage, 10 % margin, of 64 GiB, rounded up
    assert by_name[colocation.BATCH_MEMORY].offer == {"n1": 64 * 2**30 - online_and_margin}


@pytest.mark.parametrize("engine", ENGINES)
def test_an_offline_pod_fits_the_room_and_a_larger_one_does_not(engine: str) -> None:
    fits = offline(make_gang("etl", cpu=6))
    decision = solve_checked(worked_example(pending=fits), engine)
    assert [b.node for b in decision.placement.binds] == ["n1"]
    too_big = offline(make_gang("etl", cpu=8))
    decision = solve_checked(worked_example(pending=too_big), engine)
    assert decision.placement.binds == ()
    (outcome,) = decision.podgroups
    assert any("insufficient kubernetes.io/batch-cpu" in reason for reason in outcome.reasons)


@pytest.mark.parametrize("engine", ENGINES)
def test_online_pods_never_see_offline_pods_on_a_colocation_node(engine: str) -> None:
    # 12 online + 3 offline cpu on 16: an online pod of 4 still fits (16 − 12), whatever offline holds.
    decision = solve_checked(worked_example(offline_running=10, pending=make_gang("api", cpu=4)), engine)
    assert [b.node for b in decision.placement.binds] == ["n1"]


def test_stale_usage_gives_no_oversubscribed_room_and_the_reason_says_so() -> None:
    stale = {"cpu_percent": 40, "online_cpu_percent": 25, "observed_at_s": USAGE_OBSERVED_S - 600}
    snapshot = worked_example(usage=stale, offline_running=1, pending=offline(make_gang("etl", cpu=4)))
    snapshot = snapshot.with_usage_policy(UsagePolicy(judged_at_s=USAGE_OBSERVED_S))
    room = _cpu(snapshot)
    assert (room.room, room.usage_based) == (4000, False)  # 16 − 12 online requests
    assert colocation.rooms(snapshot)["n1"].state == "stale"
    decision = solve_checked(snapshot, "greedy")
    assert decision.placement.binds == ()
    (outcome,) = decision.podgroups
    assert any("no oversubscribed room (fail safe): 1 with stale usage" in reason for reason in outcome.reasons)


def test_offline_pods_measured_by_nobody_make_the_node_unmeasured() -> None:
    snapshot = worked_example(usage={"cpu_percent": 40, "memory_percent": 10})
    assert colocation.rooms(snapshot)["n1"].state == "unmeasured"
    assert _cpu(snapshot).room == 4000
    assert offline_evictions(snapshot) == []


def test_without_offline_pods_there_the_whole_usage_is_online() -> None:
    web = make_running("web", node="n1", cpu=12)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=16, labels=COLOCATION, usage={"cpu_percent": 50, "memory_percent": 0})], running=[web],
                             groups=[offline(make_gang("etl", cpu=6))])
    assert _cpu(snapshot).room == 16000 - 8000 - 1600


@pytest.mark.parametrize("engine", ENGINES)
def test_offline_pods_go_to_colocation_nodes_only_and_with_no_colocation_node_anywhere(engine: str) -> None:
    plain = make_node("plain", cpu=16)
    coloc = make_node("coloc", cpu=16, labels=COLOCATION, usage={"cpu_percent": 0, "memory_percent": 0})
    gang = offline(make_gang("etl", cpu=2, replicas=2))
    decision = solve_checked(make_snapshot(nodes=[plain, coloc], groups=[gang]), engine)
    assert {b.node for b in decision.placement.binds} == {"coloc"}
    decision = solve_checked(make_snapshot(nodes=[plain], groups=[gang]), engine)  # colocation changes nothing
    assert {b.node for b in decision.placement.binds} == {"plain"}


def test_the_labels_are_read_as_volcano_reads_them() -> None:
    def is_colocation(labels: dict) -> bool:
        return make_node("n", labels=labels).node.colocation

    assert is_colocation({"volcano.sh/oversubscription": "true"})
    assert is_colocation({"volcano.sh/colocation": "True"})
    assert not is_colocation({"volcano.sh/colocation": "true", "volcano.sh/oversubscription": "false"})
    assert not is_colocation({"volcano.sh/oversubscription": "yes"})  # not a Go boolean
    assert not is_colocation({})


def test_disabled_colocation_changes_nothing() -> None:
    snapshot = worked_example(pending=offline(make_gang("etl", cpu=2)))
    off = snapshot.model_copy(update={"colocation_policy": ColocationPolicy(enabled=False)})
    assert counted(off) is off


def test_the_transform_is_idempotent() -> None:
    effective = counted(worked_example(pending=offline(make_gang("etl", cpu=2))))
    assert counted(effective) is effective


def test_the_checker_reports_an_offline_bind_past_the_room_with_the_numbers() -> None:
    gang = offline(make_gang("etl", cpu=8))
    snapshot = worked_example(pending=gang)
    violations = check_placement(snapshot, make_placement(binds=[make_bind(gang.pending[0], "n1")]))
    assert [v.rule for v in violations] == ["colocation"]
    assert "offline pods ask 11000m cpu > 10400m they may use" in violations[0].message
    assert "allocatable 16000m − online usage 4000m − margin 1600m" in violations[0].message


# ---- evictions ----


def _rising(offline_cpus: list[float], *, online_percent: float, priorities: list[int] | None = None) -> Snapshot:
    pods = [
        make_running(f"batch-{i}", node="n1", cpu=cpu, priority=(priorities or [0] * len(offline_cpus))[i]).model_copy(
            update={"offline": True, "start_time": 1000.0 + i}
        )
        for i, cpu in enumerate(offline_cpus)
    ]
    return make_snapshot(
        nodes=[make_node("n1", cpu=16, labels=COLOCATION, usage={"cpu_percent": 90, "online_cpu_percent": online_percent, "memory_percent": 0})],
        running=[make_running("web", node="n1", cpu=12), *pods],
    )


def test_nothing_is_evicted_while_the_offline_pods_fit() -> None:
    assert offline_evictions(_rising([2, 2, 4], online_percent=25)) == []  # 8 ≤ 10.4


def test_online_usage_rising_evicts_the_fewest_offline_pods_with_the_numbers() -> None:
    # online 50 %: room 16 − 8 − 1.6 = 6.4 cpu; offline 2 + 2 + 4 = 8: 1.6 short — one pod does it.
    (eviction,) = offline_evictions(_rising([2, 2, 4], online_percent=50))
    assert len(eviction.pods) == 1
    assert eviction.short_by == {"cpu": 1600}
    assert "cpu room 6400m = allocatable 16000m − online usage 8000m − margin 1600m < offline requests 8000m" in eviction.message
    assert "evicting 1 of 3 offline pod(s)" in eviction.message


def test_among_as_few_the_lowest_priority_then_the_newest_go() -> None:
    (eviction,) = offline_evictions(_rising([2, 2, 4], online_percent=50, priorities=[5, 1, 5]))
    assert eviction.pods == ("default/batch-1",)  # priority 1
    (eviction,) = offline_evictions(_rising([2, 2, 4], online_percent=50))
    assert eviction.pods == ("default/batch-2",)  # all priority 0: the newest (started last)
    (eviction,) = offline_evictions(_rising([2, 2, 4], online_percent=70))
    # room 16 − 11.2 − 1.6 = 3.2: 4.8 short — two pods at least, and {2, 4} is the newest pair
    assert sorted(eviction.pods) == ["default/batch-1", "default/batch-2"]


def test_stale_usage_evicts_nothing() -> None:
    snapshot = _rising([2, 2, 4], online_percent=90).with_usage_policy(UsagePolicy(judged_at_s=USAGE_OBSERVED_S + 301))
    assert offline_evictions(snapshot) == []


def test_gpus_are_not_oversubscribed() -> None:
    node = make_node("n1", cpu=16, gpus=1, labels=COLOCATION, usage={"cpu_percent": 0, "memory_percent": 0, "gpu_percent": 0})
    online = make_running("infer", node="n1", cpu=1, gpu_milli=600, gpu_indices=[0])
    gang = offline(make_gang("etl", cpu=1, gpu_milli=500))
    decision = solve_checked(make_snapshot(nodes=[node], running=[online], groups=[gang]), "greedy")
    assert decision.placement.binds == ()  # 600 + 500 > 1000 on the one device, however idle it is
    assert replace is not None


def test_the_totals_the_controller_exports_are_the_rooms_added_up() -> None:
    """`totals` is what the controller's colocation metrics read: hand-computed on the
    eviction example — one fresh node, cpu room 16 − 8 − 1.6 = 6.4 cores, online pods
    requesting 12 leave 4, offline pods asking 2 + 2 + 4."""
    snapshot = _rising([2, 2, 4], online_percent=50)
    totals = colocation.totals(snapshot)
    # memory is not measured apart from the offline pods: the node counts as "unmeasured" (cpu alone is)
    assert totals.nodes == {"fresh": 0, "stale": 0, "missing": 0, "unmeasured": 1}
    assert totals.room["cpu"] == 6400
    assert totals.offline["cpu"] == 8000
    assert totals.oversubscribed["cpu"] == 6400 - (16000 - 12000)  # room past what online requests leave
    assert totals.room["gpu"] == totals.offline["gpu"] == totals.oversubscribed["gpu"] == 0
