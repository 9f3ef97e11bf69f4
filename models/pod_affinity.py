"""Inter-pod constraints as the snapshot holds them: pod affinity, pod anti-affinity and
topology spread constraints, validated.

Input: a pod spec's `affinity.podAffinity`, `affinity.podAntiAffinity` and
`topologySpreadConstraints`, read by `models.loaders.affinity_fields` (which resolves what
depends on the pod itself: the default namespace of a term, `matchLabelKeys`,
`mismatchLabelKeys`), or the same structure in snapshot JSON. Output: frozen models that
`solver.rules.pod_affinity` and `solver.rules.topology_spread` judge placements by.

What is checked here is what the API server's validation checks, so a constraint that
Kubernetes would refuse is refused with the field named:
  - a label selector's `In` / `NotIn` need at least one value, `Exists` / `DoesNotExist`
    none (`metav1.LabelSelectorRequirement`);
  - a term's `topologyKey` is not empty; a weighted term's `weight` is 1–100;
  - a spread constraint's `maxSkew` is at least 1, `minDomains` at least 1 and only with
    `whenUnsatisfiable: DoNotSchedule`.
Worked example: `{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}` fails at
`max_skew` with "Input should be greater than or equal to 1".

What the constraints mean (which pods a selector selects, which domain a node is in, when a
placement breaks one) lives in the rules, not here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from models.node_affinity import check_set_operator_values

__all__ = [
    "HOSTNAME_KEY",
    "LabelSelectorRequirement",
    "LabelSelector",
    "PodAffinityTerm",
    "WeightedPodAffinityTerm",
    "TopologySpreadConstraint",
    "InterPodConstraints",
]

HOSTNAME_KEY = "kubernetes.io/hostname"
"""The well-known node label whose value is the node's name: one node, one domain."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LabelSelectorRequirement(_Frozen):
    """One `matchExpressions` entry of a `metav1.LabelSelector`, over a pod's labels."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

    @field_validator("values")
    @classmethod
    def _values_fit_the_operator(cls, values: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        check_set_operator_values(info.data.get("operator"), values)
        return values


class LabelSelector(_Frozen):
    """`matchLabels` and `matchExpressions`, ANDed; an empty selector selects every pod."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


class PodAffinityTerm(_Frozen):
    """Pods the selector selects, in the term's namespaces, on nodes with the same value of
    `topology_key` as the pod's node. A missing selector selects no pod (Kubernetes)."""

    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = Field(
        (), description="empty and not all_namespaces: the namespace of the pod that states the term"
    )
    all_namespaces: bool = Field(False, description="namespaceSelector {} (every namespace)")
    topology_key: str = Field(min_length=1)


class WeightedPodAffinityTerm(_Frozen):
    weight: int = Field(ge=1, le=100)
    term: PodAffinityTerm


class TopologySpreadConstraint(_Frozen):
    """Matching pods spread over the domains of `topology_key` with at most `max_skew`
    between the fullest domain a pod lands in and the emptiest eligible domain."""

    max_skew: int = Field(ge=1)
    topology_key: str = Field(min_length=1)
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: int | None = Field(None, ge=1)
    node_affinity_policy: Literal["Honor", "Ignore"] = "Honor"
    node_taints_policy: Literal["Honor", "Ignore"] = "Ignore"

    @model_validator(mode="after")
    def _min_domains_only_when_hard(self) -> "TopologySpreadConstraint":
        if self.min_domains is not None and self.when_unsatisfiable != "DoNotSchedule":
            raise ValueError("minDomains is allowed only with whenUnsatisfiable DoNotSchedule")
        return self


class InterPodConstraints(_Frozen):
    """A task's constraints against other pods; every field empty: none."""

    required_affinity: tuple[PodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
            or self.topology_spread
        )
