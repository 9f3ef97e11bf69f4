"""The controller process's collector thresholds (`controller.heap`)."""

from __future__ import annotations

import gc

from controller.heap import MIDDLE, OLD, YOUNG, tune_collector


def test_tune_collector_sets_the_thresholds_and_returns_the_ones_before() -> None:
    before = gc.get_threshold()
    try:
        assert tune_collector() == before
        assert gc.get_threshold() == (YOUNG, MIDDLE, OLD)
        assert YOUNG > before[0]  # collecting less often than CPython's default is the point
    finally:
        gc.set_threshold(*before)
