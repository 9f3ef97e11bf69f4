"""What `observe` keeps from one cycle to the next, so a cycle reads only what changed.

Each cycle hands the loader every object in the caches. The loader's `ReadMemo` reads an
object's version once and reuses what that read added (`models.loaders.read_memo`); for
that, an object must keep its document number from cycle to cycle, since the number is
part of every record's location. `CycleReads` gives each object (kind and uid) the number
it had the cycle before, and a new one to an object it has not seen — so an error still
names the document the controller leaves out, and the numbers of objects gone are
forgotten with them. What `observe` makes of a pod outside the loader (the reference plan
and act use) is made once per version too (`per_version`), and each node's overcommit
check once for the same Node and Pod objects (`steps`).

Each of these keeps, from cycle to cycle, the key object it stored first (the tuple of
kind and uid, of uid and resourceVersion): a cycle's lookups build keys that die at once,
where storing each cycle's new keys left some hundred thousand objects per cycle that the
garbage collector walks before they die (`models.loaders.step_memo` says why that costs).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from models.loaders.read_memo import ReadMemo
from models.loaders.step_memo import StepMemo

__all__ = ["CycleReads"]

JsonObject = dict[str, Any]
Identity = tuple[str, str]  # kind, uid
Made = TypeVar("Made")


class CycleReads:
    """The read memo and the document numbers of one controller's cycles (one thread)."""

    def __init__(self) -> None:
        self.memo = ReadMemo()
        self.steps = StepMemo()
        """What `observe` makes of the Snapshot's objects outside the loader (each node's
        overcommit check), by the identity of the objects it read; `observe` begins and ends
        it as the loader does its own (`models.loaders.step_memo`)."""
        self._numbers: dict[Identity, tuple[Identity, int]] = {}
        self._next_number = 1
        self._made: dict[str, dict[Hashable, tuple[Hashable, Any]]] = {}

    def numbered(self, documents: Sequence[JsonObject]) -> dict[int, JsonObject]:
        """The documents, in their order, each under the number it had last cycle."""
        numbers: dict[Identity, tuple[Identity, int]] = {}
        numbered: dict[int, JsonObject] = {}
        for obj in documents:
            uid = (obj.get("metadata") or {}).get("uid")
            if not (isinstance(uid, str) and uid):
                numbered[self._new_number()] = obj
                continue
            identity = (str(obj.get("kind")), uid)
            entry = self._numbers.get(identity)
            if entry is None or entry[1] in numbered:
                entry = (identity, self._new_number())
            numbers[entry[0]] = entry  # under the key object kept since its first cycle (module docstring)
            numbered[entry[1]] = obj
        self._numbers = numbers
        return numbered

    def _new_number(self) -> int:
        number = self._next_number
        self._next_number += 1
        return number

    def per_version(self, what: str, documents: Sequence[JsonObject], make: Callable[[JsonObject], Made]) -> list[Made]:
        """`make(document)` for each document, made once per object version (uid and
        resourceVersion; a document without either is made every time). `what` names the
        making; what this call did not use is forgotten."""
        before = self._made.get(what, {})
        kept: dict[Hashable, tuple[Hashable, Any]] = {}
        made: list[Made] = []
        for document in documents:
            metadata = document.get("metadata") or {}
            uid, version = metadata.get("uid"), metadata.get("resourceVersion")
            if not (uid and version):
                made.append(make(document))
                continue
            key = (uid, version)
            entry = kept.get(key)
            if entry is None:
                entry = before.get(key) or (key, make(document))
                kept[entry[0]] = entry  # under the key object kept since its first cycle (module docstring)
            made.append(entry[1])
        self._made[what] = kept
        return made
