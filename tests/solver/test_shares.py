"""Deserved shares by water-filling (`solver.shares`), and the greedy engine's vector form
of the dominant share agreeing with `dominant_share`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.snapshot import Snapshot
from solver.greedy import dominant_shares
from solver.shares import deserved_shares, dominant_share, queue_allocated, queue_requests, water_fill
from tests.builders import make_gang, make_node, make_queue, make_snapshot, resources


def _cpu(shares: dict[str, dict[str, int]], queue: str) -> int:
    return shares[queue].get("cpu", 0)


def _cluster(cpu: float, demands: dict[str, float], **queues: dict) -> Snapshot:  # type: ignore[type-arg]
    """One node of `cpu` cores; one pending one-pod job per queue asking its demand."""
    return make_snapshot(
        nodes=[make_node("n1", cpu=cpu)],
        groups=[make_gang(f"job-{name}", cpu=amount, queue=name) for name, amount in demands.items()],
        queues=[make_queue(name, **queues.get(name, {})) for name in demands],
    )


def test_water_fill_volcano_worked_example_gives_10_30_60() -> None:
    shares = water_fill(
        {"cpu": 100},
        weights=[1, 1, 2],
        requests=[{"cpu": 10}, {"cpu": 60}, {"cpu": 100}],
        capabilities=[None, None, None],
    )
    assert shares == [{"cpu": 10}, {"cpu": 30}, {"cpu": 60}]


def test_deserved_shares_volcano_worked_example_through_a_snapshot() -> None:
    snapshot = _cluster(100, {"a": 10, "b": 60, "c": 100}, c={"weight": 2})
    shares = deserved_shares(snapshot)
    assert [_cpu(shares, q) for q in ("a", "b", "c")] == [10_000, 30_000, 60_000]


def test_capability_caps_a_share_and_the_rest_goes_to_the_others() -> None:
    snapshot = _cluster(100, {"a": 100, "b": 100}, a={"capability": resources(cpu=20)})
    shares = deserved_shares(snapshot)
    assert (_cpu(shares, "a"), _cpu(shares, "b")) == (20_000, 80_000)


def test_guarantee_is_given_first_then_the_rest_by_weight() -> None:
    snapshot = _cluster(100, {"a": 100, "b": 100}, a={"guarantee": resources(cpu=60)})
    shares = deserved_shares(snapshot)
    # 60 reserved for a, the remaining 40 split 1:1 → a 80, b 20.
    assert (_cpu(shares, "a"), _cpu(shares, "b")) == (80_000, 20_000)


def test_hierarchical_queues_split_the_parent_share_among_children() -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=80)],
        groups=[
            make_gang("job-a", cpu=100 / 2, queue="team-a", replicas=2),
            make_gang("job-b", cpu=100 / 2, queue="team-b", replicas=2),
            make_gang("job-o", cpu=100 / 2, queue="other", replicas=2),
        ],
        queues=[
            make_queue("org"),
            make_queue("team-a", parent="org", weight=1),
            make_queue("team-b", parent="org", weight=3),
            make_queue("other"),
        ],
    )
    shares = deserved_shares(snapshot)
    # Root: org and other 40 each; org: team-a 10, team-b 30 (weights 1:3).
    assert [_cpu(shares, q) for q in ("org", "other", "team-a", "team-b")] == [40_000, 40_000, 10_000, 30_000]


def test_fixed_deserved_is_taken_as_given_and_the_rest_is_water_filled() -> None:
    snapshot = _cluster(100, {"a": 100, "b": 100, "c": 100}, a={"deserved": resources(cpu=30)})
    shares = deserved_shares(snapshot)
    assert [_cpu(shares, q) for q in ("a", "b", "c")] == [30_000, 35_000, 35_000]


def test_allocated_counts_running_pods_and_requests_add_pending_ones() -> None:
    job = make_gang("job", replicas=3, cpu=2, queue="a", running_on=["n1"])
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[job], queues=[make_queue("a")])
    assert queue_allocated(snapshot)["a"] == {"cpu": 2000}
    assert queue_requests(snapshot)["a"] == {"cpu": 6000}


@pytest.mark.parametrize(
    ("allocated", "deserved", "share"),
    [
        ({"gpu": 4000, "cpu": 10_000}, {"gpu": 8000, "cpu": 100_000}, 0.5),
        ({}, {"cpu": 1000}, 0.0),
        ({"cpu": 0}, {}, 0.0),
        ({"cpu": 1000}, {"gpu": 1000}, math.inf),
        ({"cpu": 3000}, {"cpu": 2000}, 1.5),
    ],
    ids=["largest ratio wins", "nothing allocated", "zero allocated", "over a zero share", "over its share"],
)
def test_dominant_share(allocated: dict[str, int], deserved: dict[str, int], share: float) -> None:
    assert dominant_share(allocated, deserved) == share


def test_greedy_vector_dominant_share_agrees_with_the_scalar_one() -> None:
    rng = np.random.default_rng(7)
    used = rng.integers(0, 5, size=(50, 3)) * 1000
    deserved = rng.integers(0, 5, size=(50, 3)) * 1000
    names = ("cpu", "memory", "gpu")
    expected = [
        dominant_share(dict(zip(names, map(int, u))), dict(zip(names, map(int, d)))) for u, d in zip(used, deserved)
    ]
    assert dominant_shares(used, deserved).tolist() == expected
