"""Values made the first time they are read, then kept: by index (`MadeWhenRead`) or by
key (`MadeWhenReadByKey`).

Why: on a busy cluster a cycle asks about few of the objects it holds — the PodGroups
with a pod to place, the victims it weighs, the nodes its binds touch — of 12,500
PodGroups and 10,000 nodes. Greedy's plans and what the checker adds up per node and per
PodGroup (`solver.after`) are made for the ones read, not for all of them each cycle.

Everything made this way is a pure function of frozen inputs (a snapshot, its Problem, a
placement), so two threads reading an unmade value at once may both make it and get
equal values. No lock is held, so a process forked meanwhile (the CP-SAT search) reads
it too, as `models.cached` explains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar, cast, overload

__all__ = ["MadeWhenRead", "MadeWhenReadByKey"]

K = TypeVar("K")
T = TypeVar("T")
X = TypeVar("X")

_UNMADE = object()


class MadeWhenRead(Sequence[T]):
    """Item `k` of `count` is `make(k)`, made when first read."""

    def __init__(self, count: int, make: Callable[[int], T]):
        self._make = make
        self._made: list[object] = [_UNMADE] * count

    def __len__(self) -> int:
        return len(self._made)

    @overload
    def __getitem__(self, k: int) -> T: ...

    @overload
    def __getitem__(self, k: slice) -> Sequence[T]: ...

    def __getitem__(self, k: int | slice) -> T | Sequence[T]:
        if isinstance(k, slice):
            return tuple(self[i] for i in range(*k.indices(len(self))))
        value = self._made[k]
        if value is _UNMADE:
            value = self._made[k] = self._make(k)
        return cast(T, value)

    def __iter__(self) -> Iterator[T]:
        return (self[k] for k in range(len(self)))

    def made(self, k: int) -> T | None:
        """Item `k` if it has been read, else None (without making it)."""
        value = self._made[k]
        return None if value is _UNMADE else cast(T, value)


class MadeWhenReadByKey(Mapping[K, T]):
    """Every key of `objects`, the value of one `make(objects[key])`, made when first read."""

    def __init__(self, objects: Mapping[K, X], make: Callable[[X], T]):
        self._objects = objects
        self._make = make
        self._values: dict[K, T] = {}

    def __getitem__(self, key: K) -> T:
        value = self._values.get(key, _UNMADE)
        if value is _UNMADE:
            value = self._values[key] = self._make(self._objects[key])
        return cast(T, value)

    def __iter__(self) -> Iterator[K]:
        return iter(self._objects)

    def __len__(self) -> int:
        return len(self._objects)
