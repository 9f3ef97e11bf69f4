"""Node affinity as the snapshot holds it: Kubernetes' `NodeSelectorTerm`s, validated.

Input: a task's `required_node_affinity` — the pod's
`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`
— and `preferred_node_affinity` — its `preferredDuringSchedulingIgnoredDuringExecution`,
weighted terms — read by `models.loaders.affinity_fields`, or the same structure in
snapshot JSON. Output: frozen models that `solver.rules.node_affinity` judges nodes by.

What is checked here is what the API server's validation checks, so a term that
Kubernetes would refuse is refused with the field named, never half-read:
  - `In` / `NotIn` need at least one value; `Exists` / `DoesNotExist` take none;
    `Gt` / `Lt` take exactly one, an integer (`Gt ["7"]`: a label value above 7);
  - `matchFields` name only `metadata.name`, with `In` / `NotIn` and exactly one value
    (the only field selector Kubernetes accepts on nodes);
  - a preferred term's `weight` is 1–100.
Worked example: `{key: gpu, operator: In, values: []}` fails at `values` with
"operator In needs at least one value".

What the terms mean (ORed terms, ANDed requirements, an empty term matching no node) lives
in the rule, not here: this module only says what is well formed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

__all__ = [
    "NodeSelectorOperator",
    "NodeSelectorRequirement",
    "NodeFieldRequirement",
    "NodeSelectorTerm",
    "PreferredSchedulingTerm",
    "parse_label_integer",
    "check_set_operator_values",
]

NodeSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NodeSelectorRequirement(_Frozen):
    """One `matchExpressions` entry, over a node label."""

    key: str = Field(min_length=1)
    operator: NodeSelectorOperator
    values: tuple[str, ...] = ()

    @field_validator("values")
    @classmethod
    def _values_fit_the_operator(cls, values: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        operator = info.data.get("operator")
        check_set_operator_values(operator, values)
        if operator in ("Gt", "Lt"):
            if len(values) != 1:
                raise ValueError(f"operator {operator} takes exactly one value, got {list(values)}")
            if parse_label_integer(values[0]) is None:
                raise ValueError(f"operator {operator} compares integers, got {values[0]!r}")
        return values


class NodeFieldRequirement(_Frozen):
    """One `matchFields` entry: Kubernetes accepts only the node's name, In or NotIn one value."""

    key: Literal["metadata.name"]
    operator: Literal["In", "NotIn"]
    values: tuple[str] = Field(description="exactly one node name")


class NodeSelectorTerm(_Frozen):
    """Requirements that must all hold (ANDed); a term with none matches no node."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeFieldRequirement, ...] = ()


class PreferredSchedulingTerm(_Frozen):
    """A node the term selects is preferred by `weight` (kube-scheduler sums the weights of
    the terms a node matches)."""

    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


def check_set_operator_values(operator: object, values: tuple[str, ...]) -> None:
    """The API server's rule for set-based label requirements, node and pod selectors alike:
    `In` / `NotIn` need a value, `Exists` / `DoesNotExist` take none (a `ValueError` otherwise)."""
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"operator {operator} takes no values, got {list(values)}")


def parse_label_integer(text: str) -> int | None:
    """A label value as `Gt`/`Lt` read it (Go's `strconv.ParseInt(v, 10, 64)`): "12" → 12,
    "+3" → 3, "1.5" / "" / "0x1" / out of int64 → None."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or len(body) > 19 or not body.isascii() or not body.isdigit():  # int64 has 19 digits
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None
