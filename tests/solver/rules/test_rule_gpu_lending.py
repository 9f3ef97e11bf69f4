"""Rule `colocation`, GPU lending: on a colocation node with fresh per-device online usage,
offline pods with fractional requests may hold, on a device online pods share, 1000 −
online usage − margin − what offline pods hold there; online pods are admitted against
1000 − online requests, never counting offline pods; stale usage, whole devices and
devices no online pod shares lend nothing; when online usage rises the fewest offline
pods are evicted.

The worked example, node n7 (2 GPUs, margin 10 % = 100m): device 0 holds an online
600m inference pod using 30 % (300m) and an offline 200m training pod; device 1 holds an
online whole-GPU pod. Device 0's lent room is 1000 − 300 − 100 = 600m, 400m of it left;
its online free milli is 1000 − 600 = 400m (the offline 200m not counted)."""

from __future__ import annotations

import pytest

from models.snapshot import ColocationPolicy, Snapshot, UsagePolicy
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
from tests.solver.rules.test_rule_colocation import COLOCATION, offline

pytestmark = pytest.mark.parametrize("engine", ENGINES)


def worked_example(pending: Gang | None = None, *, online_percent: float = 30, offline_pods: tuple[int, ...] = (200,)) -> Snapshot:
    infer = make_running("infer", node="n7", cpu=1, gpu_milli=600, gpu_indices=[0])
    whole = make_running("whole", node="n7", cpu=1, gpus=1, gpu_indices=[1])
    trains = [
        make_running(f"train-{i}", node="n7", cpu=1, gpu_milli=milli, gpu_indices=[0]).model_copy(
            update={"offline": True, "start_time": USAGE_OBSERVED_S - 100 + i}
        )
        for i, milli in enumerate(offline_pods)
    ]
    usage = {
        "cpu_percent": 10,
        "online_cpu_percent": 10,
        "memory_percent": 5,
        "online_memory_percent": 5,
        "online_gpu_device_percent": {0: online_percent},
    }
    return make_snapshot(
        nodes=[make_node("n7", cpu=16, memory=64, gpus=2, labels=COLOCATION, usage=usage)],
        running=[infer, whole, *trains],
        groups=[pending] if pending else [],
    )


def _bound(snapshot: Snapshot, engine: str) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(b.pod, b.node, b.gpus) for b in solve_checked(snapshot, engine).placement.binds]


def test_the_worked_example_lends_device_0_only(engine: str) -> None:
    room = colocation.rooms(worked_example())["n7"]
    assert room.gpu_state == "fresh"
    assert [(d.index, d.online, d.margin, d.room, d.offline, d.online_requested) for d in room.devices] == [(0, 300, 100, 600, 200, 600)]
    view = counted(worked_example())
    assert [gpu.lent_milli for gpu in view.node_by_name["n7"].gpus] == [600, None]
    assert view.pod_by_key["default/train-0"].requests.get(colocation.LENT_GPU) == 200
    assert "gpu" not in view.pod_by_key["default/train-0"].requests


def test_an_offline_pod_fits_in_the_lent_room_left(engine: str) -> None:
    """400m left of the 600m room: without lending only 1000 − 600 − 200 = 200m were free."""
    assert _bound(worked_example(offline(make_gang("job", gpu_milli=400))), engine) == [("default/job-worker-0", "n7", (0,))]


def test_an_offline_pod_past_the_lent_room_waits(engine: str) -> None:
    assert _bound(worked_example(offline(make_gang("job", gpu_milli=500))), engine) == []


def test_an_online_pod_ignores_what_offline_pods_hold(engine: str) -> None:
    """Online free milli on device 0 is 1000 − 600 = 400: the offline 200m does not count."""
    assert _bound(worked_example(make_gang("web", gpu_milli=400)), engine) == [("default/web-worker-0", "n7", (0,))]
    assert _bound(worked_example(make_gang("web", gpu_milli=500)), engine) == []


def test_stale_per_device_usage_lends_nothing(engine: str) -> None:
    stale = worked_example(offline(make_gang("job", gpu_milli=400)))
    stale = stale.with_usage_policy(UsagePolicy(judged_at_s=USAGE_OBSERVED_S + 301))
    room = colocation.rooms(stale)["n7"]
    assert (room.gpu_state, room.devices) == ("stale", ())
    assert _bound(stale, engine) == []
    assert any(colocation.REASON_NO_GPU_LENDING in reason for reason in solve_checked(stale, engine).podgroups[0].reasons)


def test_a_node_without_per_device_usage_lends_nothing(engine: str) -> None:
    snapshot = worked_example(offline(make_gang("job", gpu_milli=400)))
    node = snapshot.nodes[0]
    unmeasured = snapshot.replaced(nodes=[node.model_copy(update={"usage": node.usage.model_copy(update={"online_gpu_device_percent": None})})])
    assert colocation.rooms(unmeasured)["n7"].gpu_state == "unmeasured"
    assert counted(unmeasured).node_by_name["n7"].gpus == node.gpus
    assert _bound(unmeasured, engine) == []


def test_a_whole_device_offline_request_is_never_lent(engine: str) -> None:
    assert _bound(worked_example(offline(make_gang("job", gpus=1))), engine) == []


def test_a_device_no_online_pod_shares_is_not_lent(engine: str) -> None:
    """Only offline pods on device 0: nothing online to lend from, it counts as any device."""
    snapshot = make_snapshot(
        nodes=[make_node("n7", cpu=16, memory=64, gpus=1, labels=COLOCATION, usage={"cpu_percent": 1, "online_gpu_device_percent": {0: 0}})],
        running=[make_running("train-0", node="n7", gpu_milli=700, gpu_indices=[0]).model_copy(update={"offline": True})],
        groups=[offline(make_gang("job", gpu_milli=400))],
    )
    assert colocation.rooms(snapshot)["n7"].devices == ()
    assert _bound(snapshot, engine) == []


def test_the_checker_rejects_an_offline_bind_past_the_lent_room(engine: str) -> None:
    snapshot = worked_example(offline(make_gang("job", gpu_milli=500)))
    violations = check_placement(snapshot, make_placement(binds=[make_bind("default/job-worker-0", "n7", gpus=(0,))]))
    assert [v.rule for v in violations] == ["colocation"]
    assert "gpu 0 of n7: offline pods hold 700m > room 600m = 1000 − online usage 300m − margin 100m" in violations[0].message


def test_rising_online_usage_evicts_the_fewest_offline_pods(engine: str) -> None:
    """Online usage 80 %: room 1000 − 800 − 100 = 100m < offline 300m + 100m: evicting the
    300m pod alone makes room."""
    snapshot = worked_example(online_percent=80, offline_pods=(300, 100))
    (eviction,) = offline_evictions(snapshot)
    assert eviction.pods == ("default/train-0",)
    assert eviction.short_by == {"gpu": 300}
    assert "gpu 0 of n7: offline 400m > room 100m = 1000 − online usage 800m − margin 100m" in eviction.message
    assert "evicting 1 of 2 offline pod(s)" in eviction.message


def test_a_larger_margin_lends_less(engine: str) -> None:
    snapshot = worked_example(offline(make_gang("job", gpu_milli=400)))
    wider = snapshot.model_copy(update={"colocation_policy": ColocationPolicy(gpu_margin_percent=30)})
    assert colocation.rooms(wider)["n7"].devices[0].room == 400
    assert _bound(wider, engine) == []


def test_a_device_whose_offline_pods_outgrew_its_room_lends_nothing_more(engine: str) -> None:
    """Online usage 80 %: room 100m, offline pods already hold 200m — over by 100m. The device
    stays lent (offline pods count against its room, now full), not an ordinary device."""
    snapshot = worked_example(offline(make_gang("job", gpu_milli=100)), online_percent=80)
    assert colocation.rooms(snapshot)["n7"].devices[0].excess == 100
    assert _bound(snapshot, engine) == []
