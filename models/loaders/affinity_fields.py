"""A pod spec's node affinity fields, required and preferred.

Input: the `spec` of a Pod or of a vcjob task's template, as a `RawObject`. Output: the
`NodeSelectorTerm`s of `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`
and the weighted terms of `…preferredDuringSchedulingIgnoredDuringExecution` (validated by
`models.node_affinity`, so a malformed term is a `FieldError` at the manifest's path, e.g.
`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
.nodeSelectorTerms[0].matchExpressions[1].values: operator In needs at least one value`).
Pod (anti-)affinity and topology spread are `pod_affinity_fields`'.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from models.errors import FieldError
from models.node_affinity import (
    NodeFieldRequirement,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
)

from .raw import RawObject, pydantic_message

__all__ = [
    "REQUIRED_NODE_AFFINITY",
    "PREFERRED_NODE_AFFINITY",
    "read_required_node_affinity",
    "read_preferred_node_affinity",
    "read_node_selector",
]

REQUIRED_NODE_AFFINITY = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_NODE_AFFINITY = "preferredDuringSchedulingIgnoredDuringExecution"
Requirement = TypeVar("Requirement", bound=BaseModel)


def read_required_node_affinity(spec: RawObject) -> tuple[NodeSelectorTerm, ...]:
    """The ORed terms; `()` when the pod requires nothing."""
    node_affinity = spec.child("affinity").child("nodeAffinity")
    if not node_affinity.has(REQUIRED_NODE_AFFINITY):
        return ()
    return read_node_selector(node_affinity.child(REQUIRED_NODE_AFFINITY))


def read_node_selector(selector: RawObject) -> tuple[NodeSelectorTerm, ...]:
    """A `NodeSelector` (`nodeSelectorTerms`, ORed): a pod's required node affinity, or where a
    DRA ResourceSlice's devices can be used."""
    terms = selector.children("nodeSelectorTerms")
    if not terms:
        raise selector.error("nodeSelectorTerms", "must have at least one node selector term")
    return tuple(_term(term) for term in terms)


def read_preferred_node_affinity(spec: RawObject) -> tuple[PreferredSchedulingTerm, ...]:
    """The weighted terms, in order; `()` when the pod prefers nothing."""
    preferred = spec.child("affinity").child("nodeAffinity").children(PREFERRED_NODE_AFFINITY)
    terms = []
    for item in preferred:
        weight = item.optional_integer("weight")
        if weight is None or not 1 <= weight <= 100:
            raise item.error("weight", f"must be 1-100, got {weight}")
        terms.append(PreferredSchedulingTerm(weight=weight, preference=_term(item.child("preference"))))
    return tuple(terms)


def _term(term: RawObject) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=tuple(_requirement(NodeSelectorRequirement, item) for item in term.children("matchExpressions")),
        match_fields=tuple(_requirement(NodeFieldRequirement, item) for item in term.children("matchFields")),
    )


def _requirement(model: type[Requirement], item: RawObject) -> Requirement:
    """One `{key, operator, values}`, the model's rule broken reported at the manifest's path."""
    fields = {
        "key": item.optional_string("key") or "",
        "operator": item.optional_string("operator") or "",
        "values": item.string_list("values"),
    }
    try:
        return model.model_validate(fields)
    except ValidationError as error:
        path, message = pydantic_message(error)
        raise FieldError(message, location=item.location, path=(*item.path, *path)) from None
