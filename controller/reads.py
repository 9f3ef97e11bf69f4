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
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from models.loaders.read_memo import ReadMemo
from models.loaders.step_memo import StepMemo

__all__ = ["CycleReads"]

JsonObject = dict[str, Any]
Made = TypeVar("Made")


class CycleReads:
    """The read memo and the document numbers of one controller's cycles (one thread)."""

    def __init__(self) -> None:
        self.memo = ReadMemo()
        self.steps = StepMemo()
        """What `observe` makes of the Snapshot's objects outside the loader (each node's
        overcommit check), by the identity of the objects it read; `observe` begins and ends
        it as the loader does its own (`models.loaders.step_memo`)."""
        self._numbers: dict[tuple[str, str], int] = {}
        self._next_number = 1
        self._made: dict[str, dict[Hashable, Any]] = {}

    def numbered(self, documents: Sequence[JsonObject]) -> dict[int, JsonObject]:
        """The documents, in their order, each under the number it had last cycle."""
        numbers: dict[tuple[str, str], int] = {}
        numbered: dict[int, JsonObject] = {}
        for obj in documents:
            uid = (obj.get("metadata") or {}).get("uid")
            identity = (str(obj.get("kind")), uid) if isinstance(uid, str) and uid else None
            number = self._numbers.get(identity) if identity is not None else None
            if number is None or number in numbered:
                number = self._next_number
                self._next_number += 1
            if identity is not None:
                numbers[identity] = number
            numbered[number] = obj
        self._numbers = numbers
        return numbered

    def per_version(self, what: str, documents: Sequence[JsonObject], make: Callable[[JsonObject], Made]) -> list[Made]:
        """`make(document)` for each document, made once per object version (uid and
        resourceVersion; a document without either is made every time). `what` names the
        making; what this call did not use is forgotten."""
        before = self._made.get(what, {})
        kept: dict[Hashable, Any] = {}
        made: list[Made] = []
        for document in documents:
            metadata = document.get("metadata") or {}
            uid, version = metadata.get("uid"), metadata.get("resourceVersion")
            if not (uid and version):
                made.append(make(document))
                continue
            key = (uid, version)
            if key not in kept:
                kept[key] = before[key] if key in before else make(document)
            made.append(kept[key])
        self._made[what] = kept
        return made
