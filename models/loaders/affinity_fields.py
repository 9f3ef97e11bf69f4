"""A pod spec's affinity fields: required node affinity is read, the rest is named as not read.

Input: the `spec` of a Pod or of a vcjob task's template, as a `RawObject`. Output: the
`NodeSelectorTerm`s of `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`
(validated by `models.node_affinity`, so a malformed term is a `FieldError` at the
manifest's path, e.g. `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
.nodeSelectorTerms[0].matchExpressions[1].values: operator In needs at least one value`),
and the paths of the scheduling fields batchplace does not read, for the loader's warning.

Not read, and why (the warning names each one a pending pod sets):
  - `affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`: a score in
    kube-scheduler; batchplace's objective has no tier for it yet;
  - `affinity.podAffinity`, `affinity.podAntiAffinity`, `topologySpreadConstraints`: they
    relate pods to each other node by node, which the engines' aggregation of a task's
    interchangeable pods over node classes does not express.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from models.errors import FieldError
from models.node_affinity import NodeFieldRequirement, NodeSelectorRequirement, NodeSelectorTerm

from .raw import RawObject, pydantic_message

__all__ = ["REQUIRED_NODE_AFFINITY", "read_required_node_affinity", "unread_scheduling_fields"]

REQUIRED_NODE_AFFINITY = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
Requirement = TypeVar("Requirement", bound=BaseModel)


def read_required_node_affinity(spec: RawObject) -> tuple[NodeSelectorTerm, ...]:
    """The ORed terms; `()` when the pod requires nothing."""
    node_affinity = spec.child("affinity").child("nodeAffinity")
    if not node_affinity.has(REQUIRED_NODE_AFFINITY):
        return ()
    required = node_affinity.child(REQUIRED_NODE_AFFINITY)
    terms = required.children("nodeSelectorTerms")
    if not terms:
        raise required.error("nodeSelectorTerms", "must have at least one node selector term")
    return tuple(
        NodeSelectorTerm(
            match_expressions=tuple(
                _requirement(NodeSelectorRequirement, item) for item in term.children("matchExpressions")
            ),
            match_fields=tuple(_requirement(NodeFieldRequirement, item) for item in term.children("matchFields")),
        )
        for term in terms
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


def unread_scheduling_fields(spec: RawObject) -> tuple[str, ...]:
    """The set scheduling fields batchplace ignores, as paths: `("spec.affinity.podAntiAffinity",)`."""
    affinity = spec.child("affinity")
    unread = []
    if affinity.child("nodeAffinity").has(_PREFERRED):
        unread.append(f"spec.affinity.nodeAffinity.{_PREFERRED}")
    unread.extend(f"spec.affinity.{key}" for key in ("podAffinity", "podAntiAffinity") if affinity.has(key))
    if spec.children("topologySpreadConstraints"):
        unread.append("spec.topologySpreadConstraints")
    return tuple(unread)
