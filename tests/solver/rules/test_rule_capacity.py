"""Rule 1, capacity: per node and resource, and per GPU device."""

from __future__ import annotations

import numpy as np
import pytest

from solver.place import ENGINES
from solver.rules import capacity
from tests.builders import (
    bind_gang,
    make_bind,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_running,
    make_snapshot,
    rule_violations,
    solve_checked,
)


def test_a_pod_on_an_empty_node_fits() -> None:
    job = make_gang("job", cpu=4, gpus=2)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8, gpus=8)], groups=[job])
    assert rule_violations(capacity, snapshot, make_placement(binds=bind_gang(job, ["n1"]))) == []


def test_filling_a_node_exactly_to_allocatable_fits() -> None:
    job = make_gang("job", replicas=2, cpu=4, memory=8, gpus=4)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8, memory=16, gpus=8)], groups=[job])
    assert rule_violations(capacity, snapshot, make_placement(binds=bind_gang(job, ["n1", "n1"]))) == []


def test_memory_beyond_allocatable_is_reported() -> None:
    job = make_gang("job", replicas=2, memory=10)
    snapshot = make_snapshot(nodes=[make_node("n1", memory=16)], groups=[job])
    (violation,) = rule_violations(capacity, snapshot, make_placement(binds=bind_gang(job, ["n1", "n1"])))
    assert violation.subject == "n1"
    assert f"memory {20 * 2**30} > allocatable {16 * 2**30} bytes" in violation.message


def test_a_resource_the_node_does_not_offer_is_reported() -> None:
    job = make_gang("job", extra={"rdma": 1})
    snapshot = make_snapshot(nodes=[make_node("n1")], groups=[job])
    (violation,) = rule_violations(capacity, snapshot, make_placement(binds=[make_bind(job.pods[0], "n1")]))
    assert violation.message == "node n1: rdma 1 > allocatable 0 after placement (binds add 1)"


def test_a_whole_gpu_pod_on_a_device_a_running_pod_holds_is_reported() -> None:
    old = make_gang("old", gpus=2, running_on=["n1"])  # devices 0, 1
    new = make_gang("new", gpus=2)
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[old, new])
    (violation,) = rule_violations(
        capacity, snapshot, make_placement(binds=[make_bind(new.pods[0], "n1", gpus=[1, 2])])
    )
    assert violation.message.startswith("node n1: GPU 1 2000 > 1000 milli-GPU per device")
    assert "default/new-worker-0, default/old-worker-0" in violation.message


def test_a_device_freed_by_an_eviction_can_be_reused() -> None:
    old = make_gang("old", gpus=2, running_on=["n1"])
    new = make_gang("new", gpus=2, priority=5)
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=2)], groups=[old, new])
    placement = make_placement(
        binds=[make_bind(new.pods[0], "n1", gpus=[0, 1])], evictions=[make_eviction(old.pods[0], for_=new)]
    )
    assert rule_violations(capacity, snapshot, placement) == []


def test_fractional_pods_may_share_a_device_up_to_exactly_1000() -> None:
    half = make_gang("half", replicas=2, gpu_milli=500, min_member=1)
    sidecar = make_running("sidecar", node="n1", gpu_milli=200, gpu_indices=[0])
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=1, gpu_used_milli={0: 300})], groups=[half], running=[sidecar])
    one = make_placement(binds=[make_bind(half.pods[0], "n1", gpus=[0])])
    assert rule_violations(capacity, snapshot, one) == []  # 300 + 200 + 500 = 1000
    both = make_placement(binds=[make_bind(half.pods[0], "n1", gpus=[0]), make_bind(half.pods[1], "n1", gpus=[0])])
    node_total, device = rule_violations(capacity, snapshot, both)
    assert "gpu 1200 > allocatable 1000 milli-GPU" in node_total.message  # 200 + 500 + 500
    assert "GPU 0 1500 > 1000" in device.message  # 300 outside + 200 + 500 + 500
    assert "used outside pods: GPU 0 300" in device.message


def test_a_whole_gpu_pod_on_a_device_with_outside_use_is_reported() -> None:
    job = make_gang("job", gpus=1)
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=2, gpu_used_milli={0: 1})], groups=[job])
    assert len(rule_violations(capacity, snapshot, make_placement(binds=[make_bind(job.pods[0], "n1", gpus=[0])]))) == 1
    assert rule_violations(capacity, snapshot, make_placement(binds=[make_bind(job.pods[0], "n1", gpus=[1])])) == []


@pytest.mark.parametrize(
    ("shape", "gpus", "must_hold"),
    [
        ({"gpus": 2}, [0], 2),
        ({"gpu_milli": 500}, [0, 1], 1),
        ({"gpu_milli": 500}, [], 1),
        ({}, [0], 0),
    ],
    ids=[
        "a 2-GPU pod listing 1 device",
        "a fractional pod listing 2 devices",
        "a fractional pod listing none",
        "a cpu-only pod listing a device",
    ],
)
def test_a_bind_listing_the_wrong_number_of_devices_is_reported(
    shape: dict[str, int], gpus: list[int], must_hold: int
) -> None:
    job = make_gang("job", **shape)
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=4)], groups=[job])
    violations = rule_violations(capacity, snapshot, make_placement(binds=[make_bind(job.pods[0], "n1", gpus=gpus)]))
    assert [v.subject for v in violations] == [job.pods[0].key]
    assert f"must hold {must_hold} device(s)" in violations[0].message


def test_an_overfull_node_before_the_cycle_is_not_blamed_on_binds_elsewhere() -> None:
    """Two running pods on one device (the snapshot's own state) and a bind on another node."""
    a = make_running("a", node="n1", gpus=1, gpu_indices=[0])
    b = make_running("b", node="n1", gpus=1, gpu_indices=[0])
    job = make_gang("job", gpus=1)
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=1), make_node("n2", gpus=1)], groups=[job], running=[a, b])
    assert rule_violations(capacity, snapshot, make_placement(binds=[make_bind(job.pods[0], "n2", gpus=[0])])) == []


def test_fits_compares_every_requested_resource_and_only_those() -> None:
    free = np.array([[4000, 4000, 4000], [8000, 0, 8000], [0, 0, -2]])  # cpu, gpu, rdma × 3 nodes
    assert capacity.fits(free, np.array([2000, 8000, 0]), (0, 1)).tolist() == [True, False, True]
    assert capacity.fits(free, np.array([4001, 0, 0]), (0,)).tolist() == [False, False, False]
    assert capacity.fits(free, np.array([0, 0, 1]), (2,)).tolist() == [False, False, False]
    assert bool(capacity.fits(free[:, 0], np.array([4000, 8000, 0]), (0, 1)))  # one node
    assert capacity.fits({"cpu": 4000}, {"cpu": 4000, "rdma": 0}, ("cpu",))
    assert capacity.fits(free, np.zeros(3), ())  # asks nothing: fits everywhere


def test_device_predicates_follow_the_gpu_shape() -> None:
    assert [capacity.devices_needed(m) for m in (8000, 1000, 500, 0)] == [8, 1, 1, 0]
    assert capacity.device_fits(400, 400) and not capacity.device_fits(400, 500)
    assert capacity.device_fits(1000, 1000) and not capacity.device_fits(999, 1000)
    assert capacity.device_fits(np.array([1000, 600, 0]), 500).tolist() == [True, True, False]
    assert capacity.device_fits(np.array([1000, 600, 0]), 2000).tolist() == [True, False, False]


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_fills_the_gpus_and_leaves_what_does_not_fit(engine: str) -> None:
    # 2 nodes × 8 GPUs; five 4-GPU pods of one-pod gangs: four fit (two per node), the fifth waits.
    jobs = [make_gang(f"job-{i}", gpus=4, cpu=1) for i in range(5)]
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8), make_node("n2", gpus=8)], groups=jobs)
    binds = solve_checked(snapshot, engine).placement.binds
    assert sorted(b.node for b in binds) == ["n1", "n1", "n2", "n2"]
    assert all(len(b.gpus) == 4 for b in binds)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_keeps_a_node_within_its_pod_count(engine: str) -> None:
    job = make_gang("job", replicas=5, cpu=1, min_member=1)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=16, pods=3)], groups=[job])
    assert len(solve_checked(snapshot, engine).placement.binds) == 3
