"""Hypothesis strategies for quantities at the edge: one manifest field, any quantity text.

`quantity_cases()` draws a `QuantityCase`: one resource field of a small cluster (a Node's
allocatable, a Pod's container request, a Queue's capability, a PodGroup's minResources)
set to a quantity drawn across the whole int64 range and beyond — 0, 2^31, 2^42 ± 1,
2^53, 2^62, 2^63 − 1, 2^63, 2^64, 10^30, any integer up to 2^70 — written as a YAML
integer, a plain string, with every suffix (m, k, Ki, M, Mi, G, Gi, T, Ti, P, Pi, E, Ei),
as a fraction, as an exponent (`1e16`, up to e40), negative, or not a number at all.

`case.expected_amount()` is what the field means in base units (None when the text is not
a quantity), computed with `models.quantity.to_base_units`, which `test_quantity` pins.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml
from hypothesis import strategies as st

from models.loaders.extended_resources import is_extended_resource
from models.quantity import QuantityError, parse_quantity, quota_ceiling, resource_ceiling, to_base_units

SUFFIXES = ("", "m", "k", "Ki", "M", "Mi", "G", "Gi", "T", "Ti", "P", "Pi", "E", "Ei")
EDGES = (0, 1, 999, 2**31, 2**35, 2**42 - 1, 2**42, 2**42 + 1, 2**53, 2**62, 2**63 - 1, 2**63, 2**64, 10**16, 10**30)
NAMESPACE = "default"


@dataclass(frozen=True)
class Field:
    """A resource field of the small cluster: which object, where in it, and the
    snapshot resource it becomes."""

    kind: str  # Node, Pod, Queue, PodGroup
    path: str  # the manifest's field path, as errors name it
    resource: str  # the manifest's resource name
    snapshot_resource: str  # batchplace's name: cpu, memory, gpu, pods, or the same
    scale: int  # base units per unit: 1000 for cpu and GPUs
    quota: bool  # a queue's or PodGroup's list (quota ceiling)

    @property
    def ceiling(self) -> int:
        return quota_ceiling(self.snapshot_resource) if self.quota else resource_ceiling(self.snapshot_resource)


def _field(kind: str, prefix: str, resource: str, *, quota: bool = False) -> Field:
    snapshot = {"nvidia.com/gpu": "gpu"}.get(resource, resource)
    scale = 1000 if resource in ("cpu", "nvidia.com/gpu") else 1
    return Field(kind, f"{prefix}.{resource}", resource, snapshot, scale, quota)


FIELDS = (
    *(_field("Node", "status.allocatable", r) for r in ("cpu", "memory", "nvidia.com/gpu", "pods", "example.com/widgets")),
    *(_field("Pod", "spec.containers[0].resources.requests", r) for r in ("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage")),
    *(_field("Queue", "spec.capability", r, quota=True) for r in ("cpu", "memory", "nvidia.com/gpu")),
    *(_field("PodGroup", "spec.minResources", r, quota=True) for r in ("cpu", "memory")),
)


@dataclass(frozen=True)
class QuantityCase:
    field: Field
    value: str | int  # as written in the YAML

    def expected_amount(self) -> int | None:
        """The field in base units, or None when the value is not a quantity."""
        try:
            return to_base_units(self.value, scale=self.field.scale)
        except QuantityError:
            return None

    @property
    def fractional(self) -> bool:
        """Not a whole number (so refused for an extended resource: `must be an integer`)."""
        try:
            return parse_quantity(self.value) % 1 != 0
        except QuantityError:
            return False

    def documents(self) -> list[dict[str, Any]]:
        """A node with 8 GPUs, a queue, a PodGroup and its one pending pod, with the drawn
        value in the drawn field."""
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}},
        }
        queue: dict[str, Any] = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "q"},
            "spec": {"weight": 1, "capability": {"cpu": "64"}},
        }
        group: dict[str, Any] = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": NAMESPACE},
            "spec": {"queue": "q", "minMember": 1, "minResources": {"cpu": "1"}},
        }
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": NAMESPACE, "annotations": {"scheduling.k8s.io/group-name": "pg"}},
            "spec": {
                "schedulerName": "batchplace",
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
            },
        }
        target = {
            "Node": node["status"]["allocatable"],
            "Pod": pod["spec"]["containers"][0]["resources"]["requests"],
            "Queue": queue["spec"]["capability"],
            "PodGroup": group["spec"]["minResources"],
        }[self.field.kind]
        target[self.field.resource] = self.value
        if self.field.kind == "Pod" and is_extended_resource(self.field.resource):
            pod["spec"]["containers"][0]["resources"]["limits"] = {self.field.resource: self.value}  # request == limit
        return [node, queue, group, pod]

    def yaml_text(self) -> str:
        return yaml.safe_dump_all(self.documents(), sort_keys=False)


def _decimal_text(number: int, suffix: str) -> str:
    return f"{number}{suffix}"


@st.composite
def quantity_values(draw: st.DrawFn) -> str | int:
    """A quantity as a manifest may write it, from zero to far past int64, or not one at all."""
    number = draw(st.one_of(st.sampled_from(EDGES), st.integers(0, 2**70)))
    form = draw(st.sampled_from(["yaml int", "suffix", "suffix", "fraction", "exponent", "negative", "garbage"]))
    suffix = draw(st.sampled_from(SUFFIXES))
    if form == "yaml int":
        return number
    if form == "suffix":
        return _decimal_text(number, suffix)
    if form == "fraction":
        return f"{Decimal(number) / 1000}{suffix}"
    if form == "exponent":
        mantissa = draw(st.sampled_from([1, 5, 9, 12, 9223372]))
        return f"{mantissa}e{draw(st.integers(0, 40))}"
    if form == "negative":
        return f"-{max(number, 1)}{suffix}"
    return draw(st.sampled_from(["ten", "1e", "--1", "1Ki1", "0x10", "1.2.3", "∞", "NaN", "1 Gi"]))


@st.composite
def quantity_cases(draw: st.DrawFn) -> QuantityCase:
    return QuantityCase(field=draw(st.sampled_from(FIELDS)), value=draw(quantity_values()))
