"""What reading each object added to a load, kept across loads of the same cluster.

A controller loads the whole cluster every cycle, and between two cycles almost nothing
changed: at 10,000 nodes and 100,000 running pods, reading every object again (quantities
parsed, fields checked, pydantic models built) is most of the cycle. The API server gives
every version of an object its own `resourceVersion`, so `(uid, resourceVersion)` names
an object's content; a load with a `ReadMemo` reads an object only the first time it sees
that version and otherwise adds what the first read added — the same records, the same
warnings, in the same order — so the Snapshot is the one a load without the memo builds.

What this asks of the caller: an object it changes in memory (the controller's copy of a
pending pod as it is after an assumed bind) must carry a `resourceVersion` of its own, and
an object keeps its document number from load to load (the number is part of every record's
`Location`, and so of the key: a number that moves is a miss, never a wrong record). Objects
without `uid` or `resourceVersion` (hand-written manifests) and the items of a `List`
document are read every time. The records
are frozen dataclasses and pydantic models that the assembly never changes, which is what
makes handing the same ones to several loads sound.

The same holds one step further, in the assembly (`step_memo`).

The memo keeps what the last successful load used and drops the rest, so it holds one
cluster's worth of records, not every version ever seen.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, fields

from .assemble import Inventory
from .raw import RecordedWarnings, Warnings
from .step_memo import StepMemo

__all__ = ["ObjectRead", "ReadMemo"]

_RECORD_LISTS = tuple(
    f.name for f in fields(Inventory) if f.name != "sources" and f.default_factory is list  # type: ignore[comparison-overlap]
)
"""Inventory's lists of records one object's read appends to (`sources` is per document)."""


@dataclass(frozen=True)
class ObjectRead:
    """What one object's read added: records per Inventory list, pods counted, DRA fields
    read but unused, and warnings."""

    records: tuple[tuple[str, tuple[object, ...]], ...]
    pod_count: int
    dra_unused: frozenset[str]
    warnings: RecordedWarnings

    @classmethod
    def of(cls, inventory: Inventory, warnings: RecordedWarnings) -> ObjectRead:
        records = tuple(
            (name, tuple(getattr(inventory, name))) for name in _RECORD_LISTS if getattr(inventory, name)
        )
        return cls(records, inventory.pod_count, frozenset(inventory.dra_unused.fields), warnings)

    def add_to(self, inventory: Inventory, warnings: Warnings) -> None:
        """Append the records and replay the warnings (the pod count is the caller's, so that
        it checks the snapshot's limit as a first read does)."""
        for name, records in self.records:
            getattr(inventory, name).extend(records)
        inventory.dra_unused.fields.update(self.dra_unused)
        self.warnings.replay(warnings)


class ReadMemo:
    """`ObjectRead`s by object version and place in the input, and the assembly's `steps`
    (see the module docstring). Both are kept the same way: what the last successful load
    used (`StepMemo`)."""

    def __init__(self) -> None:
        self._reads = StepMemo()
        self.steps = StepMemo()

    @staticmethod
    def key(
        source: str, number: int, document: object, scheduler_names: frozenset[str], check_fields: bool
    ) -> Hashable | None:
        """The document's object version, where it sits, and what the read depends on; None
        for a `List` or an object without a uid or resourceVersion to name its content by.
        The object's name is not in the key: the API server keeps a uid's name and namespace."""
        if not isinstance(document, dict):
            return None
        api_version, kind, metadata = document.get("apiVersion"), document.get("kind"), document.get("metadata")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(metadata, dict)):
            return None
        if kind.endswith("List") and "items" in document:
            return None
        uid, version = metadata.get("uid"), metadata.get("resourceVersion")
        if not (isinstance(uid, str) and uid and isinstance(version, str) and version):
            return None
        return (uid, version, api_version, kind, source, number, scheduler_names, check_fields)

    def read(self, key: Hashable, first_read: Callable[[], ObjectRead]) -> ObjectRead:
        """What the version `key` names added, read by `first_read` the first time."""
        return self._reads.built("read", (), key, first_read)

    def begin(self) -> None:
        self._reads.begin()
        self.steps.begin()

    def end(self) -> None:
        self._reads.end()
        self.steps.end()

    @property
    def hits(self) -> int:
        return self._reads.reused

    @property
    def misses(self) -> int:
        return self._reads.fresh

    def __len__(self) -> int:
        return len(self._reads)
