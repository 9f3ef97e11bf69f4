"""The loader refuses input that holds no object, as `kubectl apply` does ("no objects passed
to apply"), naming every input read; one object anywhere among the files is enough."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.errors import InputFormatError
from models.loaders import load_snapshot_files
from models.loaders.kube_yaml import read_manifest_documents

NOTHING = ["", "\n", "---\n", "---\n---\n", "# a comment\n", "apiVersion: v1\nkind: List\nitems: []\n",
           "apiVersion: v1\nkind: PodList\nitems: []\n", "apiVersion: v1\nkind: List\nitems: null\n"]
NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n0}\nstatus: {allocatable: {cpu: '8', memory: 16Gi}}\n"

# each piece its own document: two pieces run together would be one mapping with its keys twice
files_of_nothing = st.lists(st.lists(st.sampled_from(NOTHING), max_size=3).map("---\n".join), min_size=1, max_size=3)


def _write(directory: Path, texts: list[str]) -> list[Path]:
    paths = [directory / f"f{index}.yaml" for index in range(len(texts))]
    for path, text in zip(paths, texts):
        path.write_text(text)
    return paths


@settings(max_examples=60, deadline=None)
@given(texts=files_of_nothing)
def test_files_that_hold_no_object_are_refused_naming_every_file(texts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        paths = _write(Path(directory), texts)
        with pytest.raises(InputFormatError) as raised:
            load_snapshot_files(paths)
    assert str(raised.value) == f"{', '.join(map(str, paths))}: {raised.value.message}"
    assert raised.value.message.startswith("no objects passed")


@settings(max_examples=60, deadline=None)
@given(texts=files_of_nothing, where=st.integers(min_value=0, max_value=10))
def test_one_object_anywhere_is_enough(texts: list[str], where: int) -> None:
    texts = list(texts)
    texts[where % len(texts)] += "---\n" + NODE
    with tempfile.TemporaryDirectory() as directory:
        snapshot = load_snapshot_files(_write(Path(directory), texts)).snapshot
    assert [node.name for node in snapshot.nodes] == ["n0"]


def test_a_list_with_items_is_objects(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n- " + NODE.replace("\n", "\n  "))
    assert len(read_manifest_documents([tmp_path / "list.yaml"])) == 1
