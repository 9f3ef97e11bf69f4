"""What the assembly's steps built from one load's records, kept for the next load.

The assembly turns records into the Snapshot's models: a Node per node record, the tasks
of a PodGroup from its pods, a Pod per pod record with what it joined. With a `ReadMemo`
the records of objects that did not change are the very same objects from load to load,
so a step that runs on the same records (by identity) with equal derived values (the
priority a PriorityClass gives, the GPUs a pod holds) builds what it built last time;
`StepMemo` gives that back instead of validating the model again. The memo holds the
records it was given, so an id it keys by cannot name another object.

An entry stays under the key object it was first stored with: each call builds its key
anew, and that one then dies at once. Storing each load's new keys instead kept a new
tuple per record for a whole cycle, and every young-generation collection of the
garbage collector walks each surviving new object once — a large share of a controller
cycle's collections at 100,000 pods (docs/results.md, "Steady state at 10,000 nodes").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

__all__ = ["StepMemo", "NO_STEP_MEMO"]

Built = TypeVar("Built")


class StepMemo:
    """What assembly steps built, by the identity of the records they read and the equality
    of the values they derived (see the module docstring)."""

    def __init__(self) -> None:
        self._built: dict[Hashable, tuple[Hashable, tuple[object, ...], object]] = {}
        self._used: dict[Hashable, tuple[Hashable, tuple[object, ...], object]] = {}
        self.reused = 0  # calls answered with what an earlier one built
        self.fresh = 0  # calls that built

    def built(self, step: str, records: tuple[object, ...], values: Hashable, build: Callable[[], Built]) -> Built:
        """`build()`, or what it returned when `step` last ran on these very `records` (the
        memo holds them, so their ids cannot name other objects) and equal `values`."""
        key = (step, tuple(map(id, records)), values)
        entry = self._built.get(key)  # an entry holds its records: while it is here, no other object has their ids
        if entry is None:
            entry = (key, records, build())
            self._built[key] = entry
            self.fresh += 1
        else:
            self.reused += 1
        self._used[entry[0]] = entry
        return entry[2]  # type: ignore[return-value]

    def begin(self) -> None:
        """A load starts: what it uses is what the memo keeps once it ends."""
        self._used = {}

    def end(self) -> None:
        """The load built its Snapshot: keep only what it used. A load that failed keeps
        everything, for the one that follows it."""
        self._built = self._used
        self._used = {}

    def __len__(self) -> int:
        return len(self._built)


class _NoStepMemo(StepMemo):
    """Builds every time: a load without a memo."""

    def built(self, step: str, records: tuple[object, ...], values: Hashable, build: Callable[[], Built]) -> Built:
        return build()


NO_STEP_MEMO = _NoStepMemo()
