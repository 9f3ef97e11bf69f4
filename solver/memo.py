"""Values derived from one frozen model — a `Snapshot`, or one of its `Node`s — computed
once per object and shared by every reader.

One `place()` call reads the same derived numbers many times: deserved shares in the
`Problem`, in each `Decision` (greedy's and the final one) and in the objective; gang
requirements in the greedy plan, the CP-SAT data, the decision and the checker. Each is a
pure function of the snapshot, and a `Snapshot` is frozen, so the first answer is every
answer: `memoized(snapshot, key, compute)` returns it. A `Node` is frozen too, and one
`Node` object may sit in many snapshots — consecutive cycles built from a cache of the
nodes that did not change (the trace replay), what-if variants of one snapshot — so what
depends on the node alone (its row of the `Problem`'s node tables) is memoized on the node
and computed once across all of them: `memoized(node, key, compute)`.

Input: a snapshot or node, a hashable key naming the value (e.g. `("deserved_shares",)`),
and the function that computes it. Output: the value, computed at most once per (object,
key) while the object lives (two threads asking at once may both compute it; both get
equal values). Entries are held beside the object, keyed by its identity, and dropped when
it is garbage-collected — never on the object itself, so a `model_copy` of it (a changed
node, say) starts empty: a value can only ever be read back for the very object it was
computed from.

Not promised: copies. Callers must not mutate what they get (the public functions that
return mutable containers copy them).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from models.snapshot import Node, Snapshot

__all__ = ["Memoizable", "memoized", "memoized_each", "memo_size"]

T = TypeVar("T")
Memoizable = Snapshot | Node
"""What values can be memoized on: frozen models whose identity stands for their content."""

_entries: dict[int, tuple[weakref.ref[Memoizable], dict[Hashable, object]]] = {}
# No lock: every step below is one dict operation, atomic under the GIL, and `_drop` runs
# as a weakref callback — inside whatever allocation set off the garbage collection that
# freed the object, possibly in the middle of `_values_of` on the same thread, so it
# must never wait for anything. A race costs at most one recomputation.


def _drop(ident: int, ref: weakref.ref[Memoizable], entries: dict = _entries) -> None:
    # `entries` is bound at definition: at interpreter exit the module's globals are cleared
    # before the last objects are freed, and their callbacks still run.
    entry = entries.get(ident)
    if entry is not None and entry[0] is ref:
        entries.pop(ident, None)


def _values_of(owner: Memoizable) -> dict[Hashable, object]:
    ident = id(owner)
    entry = _entries.get(ident)
    if entry is not None and entry[0]() is owner:
        return entry[1]
    fresh = (weakref.ref(owner, functools.partial(_drop, ident)), {})
    entry = _entries.setdefault(ident, fresh)  # two threads at once: both get the first one stored
    if entry[0]() is not owner:  # left by a dead object that had the same id
        _entries[ident] = entry = fresh
    return entry[1]


def memoized(owner: Memoizable, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()` the first time `key` is asked of this snapshot or node, the same value after."""
    values = _values_of(owner)
    try:
        return values[key]  # type: ignore[return-value]
    except KeyError:
        value = values[key] = compute()
        return value


def memoized_each(owners: Sequence[Memoizable], key: Hashable, compute: Callable[[Memoizable], T]) -> list[T]:
    """`memoized(owner, key, lambda: compute(owner))` for each owner, in order, in one loop:
    the node tables ask this of every node of every snapshot, where three Python calls per
    node cost more than the lookup itself."""
    entries = _entries
    values_list: list[T] = []
    for owner in owners:
        entry = entries.get(id(owner))
        values = entry[1] if entry is not None and entry[0]() is owner else _values_of(owner)
        try:
            value = values[key]
        except KeyError:
            value = values[key] = compute(owner)
        values_list.append(value)  # type: ignore[arg-type]
    return values_list


def memo_size() -> int:
    """Snapshots and nodes with memoized values alive now (for tests: entries go with their object)."""
    return len(_entries)
