"""A validated `Node` joins any number of snapshots as itself (its checks ran when it was
made); a node given as data is checked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from models.snapshot import Node, Snapshot


def test_a_node_instance_joins_snapshots_as_itself() -> None:
    node = Node.model_validate({"name": "n0", "allocatable": {"cpu": 4000, "gpu": 2000}})
    one = Snapshot.model_validate({"nodes": [node]})
    other = Snapshot(nodes=(node,))
    assert one.nodes[0] is node and other.nodes[0] is node
    assert [gpu.index for gpu in node.gpus] == [0, 1]


def test_a_node_given_as_data_is_still_checked() -> None:
    with pytest.raises(ValidationError, match="node lists 1 GPU devices but allocatable gpu is 2"):
        Snapshot.model_validate({"nodes": [{"name": "n0", "allocatable": {"gpu": 2000}, "gpus": [{"index": 0}]}]})
    with pytest.raises(ValidationError, match="GPU indices repeat"):
        Node.model_validate({"name": "n0", "allocatable": {"gpu": 2000}, "gpus": [{"index": 1}, {"index": 1}]})
