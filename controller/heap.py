"""The controller process's garbage-collector thresholds.

A controller holds the cluster twice over: the informers' JSON and the read memo's records
and models (`controller.reads`), millions of long-lived objects in a large cluster. With
CPython's default thresholds (700, 10, 10) a cycle's own allocations — a Snapshot, the
documents handed to the loader — set off a full collection about once a cycle, and a full
collection walks every one of those objects: the largest single cost of a steady-state
cycle after the reads were kept (docs/results.md, "Steady state at 10,000 nodes").

The objects that live long here are JSON dicts and frozen records and models, which make
no reference cycles; refcounting frees them when a newer version replaces them. So little
is lost by collecting less often: the young generation waits for `YOUNG` allocations
instead of 700, the middle one for `MIDDLE` young collections. Full collections still run
(CPython adds its own rule: only when a quarter of the old generation is new), and
`solver.place` still defers them while it solves. What a young collection walks is what
the cycle allocated and still holds, so the memos that outlive a cycle keep the key objects
of the cycle that first stored an entry rather than each cycle's equal new ones
(`models.loaders.step_memo`, `controller.reads`).
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG", "MIDDLE", "OLD", "tune_collector"]

YOUNG = 100_000
MIDDLE = 50
OLD = 100


def tune_collector() -> tuple[int, int, int]:
    """Set the process's thresholds for a long-running controller; returns the ones it had."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG, MIDDLE, OLD)
    return before
