"""`LiveSnapshotSource`: the seam through which a controller in the same process lends the
service its current cluster snapshot, for `POST /v1/what-if` requests that post none.

The controller's watch caches implement it; the service only calls `current()`, on the
event loop, so an implementation returns a snapshot it already holds (no I/O, no waiting).
`None` means "not synced yet": the request gets 503 with Retry-After.

STYLE.md puts seams shared by two top packages in `models`; it lives here until the
controller exists, and then moves down (`models.live` or similar) unchanged.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from models.snapshot import Snapshot

__all__ = ["LiveSnapshotSource", "FixedSnapshot"]


@runtime_checkable
class LiveSnapshotSource(Protocol):
    def current(self) -> Snapshot | None:
        """The latest validated snapshot of the cluster, or None when there is none yet."""
        ...


class FixedSnapshot:
    """A `LiveSnapshotSource` that always answers the same snapshot (tests, demos)."""

    def __init__(self, snapshot: Snapshot | None) -> None:
        self._snapshot = snapshot

    def current(self) -> Snapshot | None:
        return self._snapshot
