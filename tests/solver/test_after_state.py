"""`solver.after`: the state after a placement, as every rule's check reads it."""

from __future__ import annotations

from solver.after import build_after, milli_per_device
from tests.builders import (
    make_bind,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_queue,
    make_running,
    make_snapshot,
    resources,
)

QUEUES = [make_queue("org"), make_queue("a", parent="org"), make_queue("b", parent="org")]


def _scenario():
    old = make_gang("old", replicas=2, gpus=2, cpu=2, queue="a", min_member=1, running_on=["n1", "n1"])
    new = make_gang("new", replicas=2, gpu_milli=250, queue="b")
    sidecar = make_running("sidecar", node="n1", gpu_milli=300, gpu_indices=[4])
    snapshot = make_snapshot(
        nodes=[make_node("n1", gpus=8, gpu_used_milli={4: 100})], groups=[old, new], running=[sidecar], queues=QUEUES
    )
    return snapshot, old, new


def test_an_empty_placement_keeps_every_running_pod() -> None:
    snapshot, old, _ = _scenario()
    after = build_after(snapshot, make_placement())
    assert [p.key for p in after.kept] == [*(p.key for p in old.pods), "default/sidecar"]
    assert after.bound == () and after.evicted == ()
    assert after.node_used["n1"] == {"cpu": 5000, "gpu": 4300, "pods": 3}
    assert after.gpu_used_milli["n1"] == {0: 1000, 1: 1000, 2: 1000, 3: 1000, 4: 400, 5: 0, 6: 0, 7: 0}
    assert after.queue_allocated_before == after.queue_allocated_after


def test_binds_and_evictions_move_the_totals() -> None:
    snapshot, old, new = _scenario()
    placement = make_placement(
        binds=[make_bind(new.pods[0], "n1", gpus=[4]), make_bind(new.pods[1], "n1", gpus=[0])],
        evictions=[make_eviction(old.pods[0], for_=new, reason="reclaim")],
    )
    after = build_after(snapshot, placement)
    assert [p.key for p in after.kept] == [old.pods[1].key, "default/sidecar"]
    assert [e.pod.key for e in after.evicted] == [old.pods[0].key]
    assert after.gpu_used_milli["n1"][4] == 100 + 300 + 250
    assert after.gpu_used_milli["n1"][0] == 250  # the evicted pod's device, reused by a fraction
    assert after.gpu_bound_milli == {"n1": {4: 250, 0: 250}}
    assert after.node_bound == {"n1": {"cpu": 2000, "gpu": 500, "pods": 2}}
    assert after.queue_allocated_before["org"] == resources(cpu=4, gpus=4)
    assert after.queue_allocated_after["a"] == resources(cpu=2, gpus=2)
    assert after.queue_allocated_after["org"] == {"cpu": 4000, "gpu": 2500}
    assert after.queue_bound["b"] == after.queue_bound["org"] == {"cpu": 2000, "gpu": 500}
    assert after.group_kept[old.key] == {"worker": 1} and after.group_evicted[old.key] == 1
    assert after.placed(new.key) == 2 and after.placed(new.key, "worker") == 2


def test_malformed_entries_are_left_out_of_the_state() -> None:
    """A second bind of a pod, a bind of a running pod, unknown devices: binding's to report."""
    snapshot, old, new = _scenario()
    placement = make_placement(
        binds=[
            make_bind(new.pods[0], "n1", gpus=[5]),
            make_bind(new.pods[0], "n1", gpus=[6]),  # second bind of the same pod
            make_bind(old.pods[0], "n1", gpus=[7]),  # running pod
            make_bind(new.pods[1], "n1", gpus=[9]),  # device n1 lacks: counted on the node, not a device
            make_bind(new.pods[1], "n9"),  # unknown node
        ],
        evictions=[make_eviction(new.pods[0], "n1", for_=new)],  # pending pod
    )
    after = build_after(snapshot, placement)
    assert [(b.pod.key, b.gpus) for b in after.bound] == [(new.pods[0].key, (5,)), (new.pods[1].key, (9,))]
    assert after.evicted == ()
    assert after.gpu_bound_milli == {"n1": {5: 250}}
    assert after.node_bound["n1"]["gpu"] == 500


def test_milli_per_device_follows_the_gpu_shape() -> None:
    assert [milli_per_device(m) for m in (8000, 1000, 999, 1, 0)] == [1000, 1000, 999, 1, 0]


def test_binds_without_evictions_add_to_every_queue_up_the_tree_and_leave_before_as_it_was() -> None:
    snapshot, _, new = _scenario()
    placement = make_placement(binds=[make_bind(new.pods[0], "n1", gpus=[4])])
    after = build_after(snapshot, placement)
    assert after.queue_allocated_before["org"] == resources(cpu=4, gpus=4)
    assert after.queue_allocated_after["b"] == {"cpu": 1000, "gpu": 250}
    assert after.queue_allocated_after["a"] == resources(cpu=4, gpus=4)
    assert after.queue_allocated_after["org"] == {"cpu": 5000, "gpu": 4250}
    assert after.queue_bound["org"] == {"cpu": 1000, "gpu": 250}
