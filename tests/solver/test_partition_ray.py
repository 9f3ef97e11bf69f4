"""The partitioned solve's parts as Ray tasks (`solver.partition.ray_pool`), on a local Ray
cluster of three worker processes started by the test: the same placements, statuses and
reasons as the local pool of spawned processes with as many workers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from builders import created_at, make_gang, make_node, make_queue, make_snapshot, resources

from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.place import SolveConfig, place

ray = pytest.importorskip("ray")

WORKERS = 3


@pytest.fixture(scope="module")
def local_ray_cluster() -> Iterator[None]:
    ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def three_spines() -> Snapshot:
    """12 eight-GPU nodes, three spines of two leaves; gangs of 1-3 pods of 4-8 GPUs in two
    queues (one capped), more than fit."""
    nodes = [make_node(f"n{i:02d}", gpus=8, cpu=64, leaf=f"leaf-{i // 2}", spine=f"spine-{i // 4}") for i in range(12)]
    gangs = [
        created_at(make_gang(f"g{i:02d}", replicas=1 + i % 3, gpus=4 + 4 * (i % 2), cpu=4, queue="a" if i % 3 else "b"), float(i))
        for i in range(16)
    ]
    queues = [make_queue("a", capability=resources(gpus=40)), make_queue("b")]
    return make_snapshot(nodes=nodes, groups=gangs, queues=queues)


SAFETY_NET_S = 120.0
"""The calls' wall-clock net, far past the default 10 × the limit: on a loaded machine Ray's
three workers once took longer than 10 s to start and import the solver, every part then
answered with its rescue, and the test compared that instead of the parts' answers. What
the test judges is the deterministic search, which the net does not change."""


def test_parts_solved_on_ray_answer_as_the_local_pool_does(local_ray_cluster: None) -> None:
    snapshot = three_spines()
    config = SolveConfig(time_limit_s=1, partition_parts=3, partition_workers=WORKERS, safety_net_s=SAFETY_NET_S)
    local = place(snapshot, config)
    on_ray = place(
        snapshot, SolveConfig(time_limit_s=1, partition_parts=3, ray_address="local", safety_net_s=SAFETY_NET_S)
    )  # workers: Ray's CPUs
    assert (on_ray.engine, on_ray.status) == ("cpsat-partitioned", "FEASIBLE"), on_ray.fallback
    assert on_ray.placement == local.placement
    assert (on_ray.engine, on_ray.status, on_ray.objective) == (local.engine, local.status, local.objective)
    assert [(o.name, o.state, o.reasons) for o in on_ray.podgroups] == [(o.name, o.state, o.reasons) for o in local.podgroups]
    assert check_placement(snapshot, on_ray.placement) == ()
    assert on_ray.placement.binds  # the parts placed something: the equality above is not of two empty answers
