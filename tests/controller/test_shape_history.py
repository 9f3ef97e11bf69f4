"""The controller's learnt typical shapes: each pending pod counted once, decayed by its
half-life, the heaviest kept until 95 % of the weight, bounded."""

from __future__ import annotations

import pytest

from controller.shape_history import ShapeHistory
from models.snapshot import Snapshot
from models.typical_shapes import MAX_TYPICAL_SHAPES
from tests.builders import make_gang, make_node, make_snapshot


def _pending(*gangs: tuple[str, int, float, int]) -> Snapshot:
    """Gangs (name, replicas, cpu, gpu_milli), all pending."""
    return make_snapshot(
        nodes=[make_node("n")],
        groups=[make_gang(name, replicas=replicas, cpu=cpu, gpu_milli=gpu_milli) for name, replicas, cpu, gpu_milli in gangs],
    )


def test_a_pod_is_counted_once_however_long_it_waits() -> None:
    history = ShapeHistory(half_life_s=3600)
    snapshot = _pending(("train", 10, 8, 0))
    for second in range(5):
        history.observe(snapshot, float(second))
    ((cpu, gpu, weight),) = [(s.cpu_milli, s.gpu_milli, s.weight) for s in history.typical()]
    assert (cpu, gpu) == (8000, 0) and weight == pytest.approx(10 * 0.5 ** (4 / 3600))


def test_older_shapes_weigh_less_by_their_half_life() -> None:
    history = ShapeHistory(half_life_s=3600)
    history.observe(_pending(("train", 10, 8, 0)), 0.0)
    history.observe(_pending(("infer", 5, 1, 250)), 7200.0)  # the training pods are gone; 2 h later
    shapes = history.typical()
    assert [(s.cpu_milli, s.gpu_milli) for s in shapes] == [(1000, 250), (8000, 0)]
    assert [s.weight for s in shapes] == pytest.approx([5.0, 2.5])


def test_rare_shapes_past_95_percent_of_the_weight_are_left_out() -> None:
    history = ShapeHistory()
    history.observe(_pending(("common", 99, 1, 500), ("rare", 1, 2, 0)), 0.0)
    assert [(s.cpu_milli, s.gpu_milli) for s in history.typical()] == [(1000, 500)]


def test_nothing_seen_means_no_shapes_so_the_engines_use_the_pending_pods() -> None:
    assert ShapeHistory().typical() == ()


def test_the_history_keeps_at_most_the_bound_of_distinct_shapes() -> None:
    history = ShapeHistory()
    gangs = [(f"g{i}", 1, 1 + i, 0) for i in range(MAX_TYPICAL_SHAPES + 5)]
    history.observe(_pending(*gangs), 0.0)
    assert len(history._weights) == MAX_TYPICAL_SHAPES
