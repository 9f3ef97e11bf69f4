"""The loader's read memo: a load through it builds the Snapshot and warnings a load without
it builds, reads an object's version once, and reads again what changed or has no version."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from models.loaders import load_snapshot_documents
from models.loaders.read_memo import ReadMemo
from models.loaders.step_memo import StepMemo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _versioned(path: Path) -> list[tuple[str, int, Any]]:
    """The example's documents, each object given a uid and a resourceVersion as a server would."""
    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    for number, doc in enumerate(documents, start=1):
        metadata = doc.setdefault("metadata", {})
        metadata["uid"], metadata["resourceVersion"] = f"uid-{number}", str(number)
    return [(path.name, number, doc) for number, doc in enumerate(documents, start=1)]


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_a_load_through_the_memo_is_the_load_without_it(example: str) -> None:
    documents = _versioned(EXAMPLES / example)
    plain = load_snapshot_documents(documents)
    memo = ReadMemo()
    first = load_snapshot_documents(documents, memo=memo)
    again = load_snapshot_documents(copy.deepcopy(documents), memo=memo)
    assert first.snapshot == plain.snapshot and again.snapshot == plain.snapshot
    assert first.warnings == plain.warnings and again.warnings == plain.warnings
    assert (memo.misses, memo.hits) == (len(documents), len(documents))


def test_a_new_version_is_read_again_and_the_old_one_forgotten() -> None:
    documents = _versioned(EXAMPLES / "hello-volcano-job.yaml")
    memo = ReadMemo()
    load_snapshot_documents(documents, memo=memo)
    changed = copy.deepcopy(documents)
    source, number, queue = next(d for d in changed if d[2]["kind"] == "Queue")
    queue["spec"]["weight"] = 7
    queue["metadata"]["resourceVersion"] = "changed"
    result = load_snapshot_documents(changed, memo=memo)
    assert {q.name: q.weight for q in result.snapshot.queues}[queue["metadata"]["name"]] == 7
    assert memo.misses == len(documents) + 1
    assert len(memo) == len(documents)  # the queue's old version is gone


def test_an_object_without_a_version_is_read_every_time() -> None:
    documents = _versioned(EXAMPLES / "hello-volcano-job.yaml")
    for _, _, doc in documents:
        del doc["metadata"]["resourceVersion"]
    memo = ReadMemo()
    load_snapshot_documents(documents, memo=memo)
    load_snapshot_documents(documents, memo=memo)
    assert (memo.hits, memo.misses, len(memo)) == (0, 0, 0)


def test_a_moved_document_is_a_miss_not_a_record_with_the_wrong_location() -> None:
    documents = _versioned(EXAMPLES / "hello-volcano-job.yaml")
    memo = ReadMemo()
    load_snapshot_documents(documents, memo=memo)
    moved = [(source, number + 1, doc) for source, number, doc in documents]
    assert load_snapshot_documents(moved, memo=memo).snapshot == load_snapshot_documents(moved).snapshot
    assert memo.hits == 0


def test_what_did_not_change_is_the_same_model_again() -> None:
    documents = _versioned(EXAMPLES / "gang-min-available-4.yaml")
    memo = ReadMemo()
    first = load_snapshot_documents(documents, memo=memo).snapshot
    again = load_snapshot_documents(copy.deepcopy(documents), memo=memo).snapshot
    assert first.pods and all(a is b for a, b in zip(first.pods, again.pods, strict=True))
    assert all(a is b for a, b in zip(first.nodes, again.nodes, strict=True))
    assert all(a is b for a, b in zip(first.pod_groups, again.pod_groups, strict=True))
    assert len(memo.steps) == len(first.nodes) + len(first.pods) + len(first.pod_groups)  # a vcjob's tasks are its own


def test_an_entry_stays_under_the_key_it_was_first_stored_with() -> None:
    """The key a later load builds to find an entry dies with the call: the memo holds none of
    its parts (`models.loaders.step_memo`), so the collector walks no new key per record."""
    memo = StepMemo()
    record = object()
    memo.begin()
    assert memo.built("step", (record,), ("derived", "value"), lambda: "built") == "built"
    memo.end()
    later_values = ("derived", "".join(["val", "ue"]))  # equal to the first, another object
    before = sys.getrefcount(later_values)
    memo.begin()
    assert memo.built("step", (record,), later_values, lambda: "built again") == "built"
    memo.end()
    assert sys.getrefcount(later_values) == before, "the memo holds the later load's key"
    assert len(memo) == 1
