"""Typical shapes as people write them (`--typical-shapes FILE`, the API's `typical_shapes`):
read into exact milli units, and every mistake an error naming the entry and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.errors import FieldError, InputFormatError
from models.typical_shapes import MAX_TYPICAL_SHAPES, TypicalShape, load_typical_shapes, read_typical_shapes


def test_a_file_reads_into_milli_units_with_sorted_node_selectors(tmp_path: Path) -> None:
    path = tmp_path / "shapes.yaml"
    path.write_text(
        "shapes:\n"
        "  - {cpu: \"8\", gpu: 1, weight: 40}\n"
        "  - {cpu: 500m, gpu: 0.25, weight: 35}\n"
        "  - {cpu: \"4\", gpu: 2, weight: 5, nodeSelector: {zone: a, gpu: a100}}\n"
        "  - {cpu: \"2\"}\n"
    )
    assert load_typical_shapes(path) == (
        TypicalShape(cpu_milli=8000, gpu_milli=1000, weight=40.0),
        TypicalShape(cpu_milli=500, gpu_milli=250, weight=35.0),
        TypicalShape(cpu_milli=4000, gpu_milli=2000, weight=5.0, node_selector=(("gpu", "a100"), ("zone", "a"))),
        TypicalShape(cpu_milli=2000, gpu_milli=0, weight=1.0),
    )


def test_json_and_a_bare_list_read_the_same(tmp_path: Path) -> None:
    path = tmp_path / "shapes.json"
    path.write_text('[{"cpu": 1, "gpu": 0.5, "weight": 2}]')
    assert load_typical_shapes(path) == (TypicalShape(cpu_milli=1000, gpu_milli=500, weight=2.0),)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"shapes": [{"gpu": 1.5}]}, "f.yaml: shapes[0].gpu: 1.5 GPUs is neither whole GPUs nor a fraction of one (below 1)"),
        ({"shapes": [{"gpu": 0.0005}]}, "f.yaml: shapes[0].gpu: 0.0005 GPUs is not a whole number of thousandths"),
        ({"shapes": [{"gpu": -1}]}, "f.yaml: shapes[0].gpu: must be a number of GPUs >= 0, got -1"),
        ({"shapes": [{"gpu": "one"}]}, "f.yaml: shapes[0].gpu: must be a number of GPUs >= 0, got 'one'"),
        ({"shapes": [{"cpu": "lots"}]}, "f.yaml: shapes[0].cpu: 'lots' is not a Kubernetes quantity"),
        ({"shapes": [{"cpu": "1", "weight": 0}]}, "f.yaml: shapes[0].weight: must be a positive number, got 0"),
        ({"shapes": [{"cpu": "1", "wieght": 3}]}, "f.yaml: shapes[0]: unknown field(s) wieght; a shape has cpu, gpu, weight, nodeSelector"),
        ({"shapes": [{"nodeSelector": {"zone": 1}}]}, "f.yaml: shapes[0].nodeSelector: must map label keys to string values"),
        ({"shapes": ["8 cores"]}, "f.yaml: shapes[0]: must be a mapping"),
        ({"shapes": []}, "f.yaml: shapes: must be a non-empty list of shapes"),
        ({"shape": []}, "f.yaml: unknown field(s) shape; expected shapes"),
        ("nothing", "f.yaml: must be a non-empty list of shapes"),
        ([{"cpu": 1}] * (MAX_TYPICAL_SHAPES + 1), f"f.yaml: {MAX_TYPICAL_SHAPES + 1} shapes, more than {MAX_TYPICAL_SHAPES}"),
    ],
    ids=["gpu 1.5", "gpu too fine", "gpu negative", "gpu a word", "cpu a word", "weight 0", "a typo", "selector value",
         "not a mapping", "empty", "no shapes key", "a string", "too many"],
)
def test_each_mistake_names_its_entry_and_field(data: object, message: str) -> None:
    with pytest.raises(FieldError) as caught:
        read_typical_shapes(data, source="f.yaml")
    assert str(caught.value).startswith(message)


def test_a_file_that_does_not_parse_says_so(tmp_path: Path) -> None:
    path = tmp_path / "shapes.yaml"
    path.write_text("shapes: [{cpu: 1\n")
    with pytest.raises(InputFormatError, match="not valid YAML"):
        load_typical_shapes(path)
    with pytest.raises(InputFormatError, match="cannot read typical shapes"):
        load_typical_shapes(tmp_path / "missing.yaml")
