"""Values derived from one `Snapshot`, computed once per snapshot and shared by every reader.

One `place()` call reads the same derived numbers many times: deserved shares in the
`Problem`, in each `Decision` (greedy's and the final one) and in the objective; gang
requirements in the greedy plan, the CP-SAT data, the decision and the checker. Each is a
pure function of the snapshot, and a `Snapshot` is frozen, so the first answer is every
answer: `memoized(snapshot, key, compute)` returns it.

Input: a snapshot, a hashable key naming the value (e.g. `("deserved_shares",)`), and the
function that computes it. Output: the value, computed at most once per (snapshot, key)
while the snapshot lives (two threads asking at once may both compute it; both get equal
values). Entries are held beside the snapshot, keyed by its identity, and dropped when it
is garbage-collected — never on the snapshot itself, so a `model_copy` of it starts empty.

Not promised: copies. Callers must not mutate what they get (the public functions that
return mutable containers copy them).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Hashable
from typing import TypeVar

from models.snapshot import Snapshot

__all__ = ["memoized", "memo_size"]

T = TypeVar("T")

_entries: dict[int, tuple[weakref.ref[Snapshot], dict[Hashable, object]]] = {}
# No lock: every step below is one dict operation, atomic under the GIL, and `_drop` runs
# as a weakref callback — inside whatever allocation set off the garbage collection that
# freed the snapshot, possibly in the middle of `_values_of` on the same thread, so it
# must never wait for anything. A race costs at most one recomputation.


def _drop(ident: int, ref: weakref.ref[Snapshot]) -> None:
    entry = _entries.get(ident)
    if entry is not None and entry[0] is ref:
        _entries.pop(ident, None)


def _values_of(snapshot: Snapshot) -> dict[Hashable, object]:
    ident = id(snapshot)
    entry = _entries.get(ident)
    if entry is not None and entry[0]() is snapshot:
        return entry[1]
    fresh = (weakref.ref(snapshot, functools.partial(_drop, ident)), {})
    entry = _entries.setdefault(ident, fresh)  # two threads at once: both get the first one stored
    if entry[0]() is not snapshot:  # left by a dead snapshot that had the same id
        _entries[ident] = entry = fresh
    return entry[1]


def memoized(snapshot: Snapshot, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()` the first time `key` is asked of this snapshot, the same value after."""
    values = _values_of(snapshot)
    try:
        return values[key]  # type: ignore[return-value]
    except KeyError:
        value = values[key] = compute()
        return value


def memo_size() -> int:
    """Snapshots with memoized values alive now (for tests: entries go with their snapshot)."""
    return len(_entries)
