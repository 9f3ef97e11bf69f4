"""Node templates (`models.node_templates`): the Node a template builds, and every bad
template an error naming file, template and field — never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from models.errors import FieldError, InputFormatError
from models.node_templates import load_node_templates, read_node_templates
from models.snapshot import NodeName
from tests.builders import make_node, make_snapshot

P5: dict[str, Any] = {"name": "p5", "allocatable": {"cpu": 192000, "gpu": 8000}, "price_per_hour": 98.32, "max_count": 4}


def test_a_template_builds_the_node_a_bought_one_is() -> None:
    (template,) = read_node_templates(
        {"templates": [{**P5, "labels": {"pool": "gpu"}, "taints": [{"key": "gpu", "effect": "NoSchedule"}]}]}, source="t.yaml"
    ).templates
    node = template.node(NodeName("p5-1"))
    assert (node.name, node.labels, node.allocatable) == ("p5-1", {"pool": "gpu"}, {"cpu": 192000, "gpu": 8000, "pods": 110})
    assert [gpu.index for gpu in node.gpus] == list(range(8))
    assert template.price_milli_per_hour == 98320


@pytest.mark.parametrize(
    ("templates", "message"),
    [
        ([{**P5, "price_per_hour": -1}], "t.yaml: templates[0].price_per_hour: Input should be greater than or equal to 0"),
        ([{**P5, "max_count": -1}], "t.yaml: templates[0].max_count: Input should be greater than or equal to 0"),
        ([{**P5, "max_count": 10_001}], "t.yaml: templates[0].max_count: Input should be less than or equal to 10000"),
        ([P5, {**P5, "colour": "red"}], "t.yaml: templates[1].colour: Extra inputs are not permitted"),
        ([{**P5, "allocatable": {"gpu": 8500}}], "t.yaml: templates[0]: allocatable gpu must be whole devices, got 8500 milli-GPU"),
        ([{**P5, "name": "P5_Large"}], "t.yaml: templates[0].name: String should match pattern"),
        ([{**P5, "new_hypernode": {"size": 0}}], "t.yaml: templates[0].new_hypernode.size: Input should be greater than or equal to 1"),
        ([P5, P5], "t.yaml: duplicate template 'p5'"),
        ("p5", "t.yaml: must be a mapping {templates: [...]} or a list of templates"),
    ],
    ids=["negative price", "negative max count", "max count past the ceiling", "unknown key", "GPUs not whole devices",
         "a name no node can take", "an empty new domain", "a name twice", "not a list"],
)
def test_a_bad_template_is_an_error_naming_file_template_and_field(templates: object, message: str) -> None:
    with pytest.raises(FieldError) as raised:
        read_node_templates(templates, source="t.yaml")
    assert str(raised.value).startswith(message)


def test_hypernodes_are_checked_against_the_snapshot() -> None:
    snapshot = make_snapshot(nodes=[make_node("n1", leaf="leaf-a", spine="spine")])
    ok = read_node_templates([{**P5, "hypernodes": ["leaf-a"], "new_hypernode": {"size": 4, "parent": "spine"}}], source="t")
    ok.check_against(snapshot)
    for fields, message in (
        ({"hypernodes": ["leaf-b"]}, "t: templates[0].hypernodes[0]: no HyperNode 'leaf-b' in the snapshot"),
        ({"new_hypernode": {"size": 4, "parent": "leaf-a"}}, "t: templates[0].new_hypernode.parent: HyperNode 'leaf-a' is of tier 1"),
    ):
        with pytest.raises(FieldError) as raised:
            read_node_templates([{**P5, **fields}], source="t").check_against(snapshot, source="t")
        assert str(raised.value).startswith(message)


def test_a_file_that_does_not_parse_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "templates.yaml"
    bad.write_text("templates: [unclosed\n")
    with pytest.raises(InputFormatError, match=rf"^{bad}: not valid YAML"):
        load_node_templates(bad)
    with pytest.raises(InputFormatError, match="cannot read node templates"):
        load_node_templates(tmp_path / "missing.json")
