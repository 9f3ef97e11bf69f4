"""`models.node_affinity`: label integers as `Gt` / `Lt` read them (Go's `ParseInt`, base 10,
64 bits), and the snapshot JSON refusing what Kubernetes refuses, with the field's loc."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from models.node_affinity import NodeSelectorRequirement, PreferredSchedulingTerm, parse_label_integer


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12", 12), ("+3", 3), ("-7", -7), ("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None), ("9" * 5000, None), ("1.5", None), ("", None), ("+", None), ("0x1", None),
        ("٣", None), (" 1", None),
    ],
)
def test_a_label_value_is_an_integer_only_as_go_parses_one(text: str, value: int | None) -> None:
    assert parse_label_integer(text) == value


@pytest.mark.parametrize(
    ("fields", "loc"),
    [
        ({"key": "gen", "operator": "Gt", "values": ["9" * 5000]}, ("values",)),
        ({"key": "gen", "operator": "In", "values": []}, ("values",)),
        ({"key": "", "operator": "Exists"}, ("key",)),
        ({"key": "gen", "operator": "Near", "values": ["1"]}, ("operator",)),
    ],
    ids=["Gt past int64", "In without values", "an empty key", "an unknown operator"],
)
def test_a_malformed_requirement_in_snapshot_json_names_its_field(fields: dict[str, object], loc: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as caught:
        NodeSelectorRequirement.model_validate(fields)
    assert caught.value.errors()[0]["loc"] == loc


@pytest.mark.parametrize("weight", [0, 101])
def test_a_preferred_weight_outside_1_to_100_is_refused(weight: int) -> None:
    with pytest.raises(ValidationError) as caught:
        PreferredSchedulingTerm.model_validate({"weight": weight, "preference": {}})
    assert caught.value.errors()[0]["loc"] == ("weight",)
