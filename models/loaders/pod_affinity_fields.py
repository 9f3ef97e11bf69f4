"""A pod spec's inter-pod fields: `affinity.podAffinity`, `affinity.podAntiAffinity` and
`topologySpreadConstraints`, read into `models.pod_affinity.InterPodConstraints`.

Input: the `spec` of a Pod or of a vcjob task's template, with the pod's namespace and
labels. Output: the constraints, with what depends on the pod itself resolved here so the
rules never look at the pod again:
  - a term without `namespaces` and `namespaceSelector` applies to the pod's namespace;
    `namespaceSelector: {}` to every namespace;
  - `matchLabelKeys` adds `key In [the pod's value]` to the selector, `mismatchLabelKeys`
    (pod (anti-)affinity terms) `key NotIn [the pod's value]`; keys the pod has no label
    for are skipped, as Kubernetes does.
A malformed field is a `FieldError` at the manifest's path, e.g.
`spec.topologySpreadConstraints[0].maxSkew: must be >= 1, got 0`.

Not read: a `namespaceSelector` with selectors (it needs the Namespace objects' labels,
which the snapshot does not hold); the term then applies to its `namespaces` (or the pod's
namespace), and the field is named in the loader's "not read" warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from models.errors import FieldError
from models.pod_affinity import (
    InterPodConstraints,
    LabelSelector,
    LabelSelectorRequirement,
    PodAffinityTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)

from .affinity_fields import PREFERRED_NODE_AFFINITY as PREFERRED
from .affinity_fields import REQUIRED_NODE_AFFINITY as REQUIRED
from .raw import RawObject, pydantic_message

__all__ = ["read_inter_pod"]

Model = TypeVar("Model", bound=BaseModel)


def read_inter_pod(spec: RawObject, labels: Mapping[str, str]) -> tuple[InterPodConstraints, tuple[str, ...]]:
    """The constraints, and the paths of the parts not read (see the module docstring)."""
    unread: list[str] = []
    affinity = spec.child("affinity")
    sides = {}
    for side in ("podAffinity", "podAntiAffinity"):
        block = affinity.child(side)
        required = tuple(_term(t, labels, unread) for t in block.children(REQUIRED))
        preferred = []
        for item in block.children(PREFERRED):
            weight = item.optional_integer("weight")
            if weight is None or not 1 <= weight <= 100:
                raise item.error("weight", f"must be 1-100, got {weight}")
            term = _term(item.child("podAffinityTerm"), labels, unread)
            preferred.append(WeightedPodAffinityTerm(weight=weight, term=term))
        sides[side] = (required, tuple(preferred))
    spread = tuple(_spread(item, labels) for item in spec.children("topologySpreadConstraints"))
    constraints = InterPodConstraints(
        required_affinity=sides["podAffinity"][0],
        preferred_affinity=sides["podAffinity"][1],
        required_anti_affinity=sides["podAntiAffinity"][0],
        preferred_anti_affinity=sides["podAntiAffinity"][1],
        topology_spread=spread,
    )
    return constraints, tuple(dict.fromkeys(unread))


_MANIFEST_NAMES = {
    "label_selector": "labelSelector",
    "topology_key": "topologyKey",
    "when_unsatisfiable": "whenUnsatisfiable",
    "min_domains": "minDomains",
    "node_affinity_policy": "nodeAffinityPolicy",
    "node_taints_policy": "nodeTaintsPolicy",
}


def _validated(model: type[Model], item: RawObject, fields: dict[str, object]) -> Model:
    """`model` from `fields`; a broken rule is a FieldError at the manifest's path and name."""
    try:
        return model.model_validate(fields)
    except ValidationError as error:
        path, message = pydantic_message(error)
        path = tuple(_MANIFEST_NAMES.get(part, part) if isinstance(part, str) else part for part in path)
        raise FieldError(message, location=item.location, path=(*item.path, *path)) from None


def _selector(item: RawObject, key: str, labels: Mapping[str, str], *, same: tuple[str, ...], differ: tuple[str, ...]) -> LabelSelector | None:
    """`item[key]` as a selector, with `same` keys pinned to the pod's values and `differ` keys excluded."""
    if not item.has(key) or item.raw(key) is None:
        return None
    selector = item.child(key)
    expressions = [
        _validated(
            LabelSelectorRequirement,
            expression,
            {
                "key": expression.optional_string("key") or "",
                "operator": expression.optional_string("operator") or "",
                "values": expression.string_list("values"),
            },
        )
        for expression in selector.children("matchExpressions")
    ]
    expressions += [LabelSelectorRequirement(key=k, operator="In", values=(labels[k],)) for k in same if k in labels]
    expressions += [LabelSelectorRequirement(key=k, operator="NotIn", values=(labels[k],)) for k in differ if k in labels]
    return LabelSelector(match_labels=selector.string_map("matchLabels"), match_expressions=tuple(expressions))


def _term(term: RawObject, labels: Mapping[str, str], unread: list[str]) -> PodAffinityTerm:
    all_namespaces = False
    if term.has("namespaceSelector") and term.raw("namespaceSelector") is not None:
        namespace_selector = term.child("namespaceSelector")
        if namespace_selector.string_map("matchLabels") or namespace_selector.children("matchExpressions"):
            unread.append("spec.affinity.*.namespaceSelector")
        else:
            all_namespaces = True
    return _validated(
        PodAffinityTerm,
        term,
        {
            "label_selector": _selector(
                term,
                "labelSelector",
                labels,
                same=term.string_list("matchLabelKeys"),
                differ=term.string_list("mismatchLabelKeys"),
            ),
            "namespaces": term.string_list("namespaces"),
            "all_namespaces": all_namespaces,
            "topology_key": term.optional_string("topologyKey") or "",
        },
    )


def _spread(item: RawObject, labels: Mapping[str, str]) -> TopologySpreadConstraint:
    max_skew = item.optional_integer("maxSkew")
    if max_skew is None or max_skew < 1:
        raise item.error("maxSkew", f"must be >= 1, got {max_skew}")
    return _validated(
        TopologySpreadConstraint,
        item,
        {
            "max_skew": max_skew,
            "topology_key": item.optional_string("topologyKey") or "",
            "when_unsatisfiable": item.optional_string("whenUnsatisfiable") or "",
            "label_selector": _selector(item, "labelSelector", labels, same=item.string_list("matchLabelKeys"), differ=()),
            "min_domains": item.optional_integer("minDomains"),
            "node_affinity_policy": item.optional_string("nodeAffinityPolicy") or "Honor",
            "node_taints_policy": item.optional_string("nodeTaintsPolicy") or "Ignore",
        },
    )
