"""`cached_property` without a lock: the value a frozen object derives once, safe to read
in a process forked while another thread was computing it.

Python 3.11's `functools.cached_property` holds one `RLock` per property, shared by every
instance of the class, while it computes a value. The CP-SAT search runs in a child forked
from a threaded process (the HTTP service solves two requests at once, the controller binds
beside its cycle): when another thread was inside, say, `Snapshot.pod_by_key` for its own
snapshot at the instant of the fork, the lock is copied held, no thread in the child will
ever release it, and the child's first read of that property on its own snapshot waits for
ever — killed at its deadline as hung, its answer lost (a fuzzed service call: 7 s for a
0.5 s limit). Python 3.12 dropped the lock for the same reason it hurt here: it serialised
every instance.

Two threads that read an uncached value at once may both compute it; both get equal values,
because everything cached this way is a pure function of a frozen object.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar, overload

__all__ = ["cached_property"]

T = TypeVar("T")

_MISSING = object()


class cached_property(functools.cached_property[T]):  # noqa: N801 — the stdlib's name, the stdlib's use
    """`functools.cached_property` as in Python 3.12: computed on first read, kept in the
    instance's `__dict__`, no lock (module docstring). A subclass, so pydantic treats it
    as it treats the stdlib's (not a field)."""

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> cached_property[T]: ...

    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> T | cached_property[T]:
        if instance is None:
            return self
        cache = instance.__dict__
        value = cache.get(self.attrname, _MISSING)
        if value is _MISSING:
            value = self.func(instance)
            cache[self.attrname] = value
        return value  # type: ignore[no-any-return]
