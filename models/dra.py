"""Dynamic Resource Allocation objects (`resource.k8s.io/v1`) as the solver will read them.

Why: since Kubernetes 1.34 GPUs, MIG slices and NICs are handed out through DRA — drivers
publish `ResourceSlice`s, admins `DeviceClass`es, pods ask through `ResourceClaim`s — and
the scheduler is the one that allocates. These models hold what a later allocation rule
needs, in the API's own terms:

    DeviceClass            name, CEL selectors (strings; `solver.dra_cel` evaluates them)
    ResourceSlice          driver, pool (name, generation, slice count), where its devices are
                           (nodeName | nodeSelector | allNodes), devices, shared counters
    ResourceClaim          requests (exactly | firstAvailable), matchAttribute constraints,
                           the allocation already written (results, reservedFor)
    ResourceClaimTemplate  the same requests and constraints, for claims made per pod

A device's attributes and capacities are keyed by their fully qualified name, as the DRA
CEL environment groups them: an unqualified name belongs to the driver's domain
(`productName` of driver `gpu.nvidia.com` is `gpu.nvidia.com/productName`). Attribute
values keep the API's type (bool, int, string, `Version`); capacities and counters are
quantities in base units (`"80Gi"` → 85899345920).

Which devices count (`counted_devices`): per (driver, pool) only the slices of the newest
generation, and only when that generation is complete (as many slices as
`resourceSliceCount`), as kube-scheduler's structured allocator reads pools; a device an
existing claim's `status.allocation` names is taken by that claim.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.cached import cached_property
from models.node_affinity import NodeSelectorTerm
from models.semver import Version

__all__ = [
    "AttributeValue",
    "CountedDevice",
    "CounterConsumption",
    "ClaimSpec",
    "CounterSet",
    "Device",
    "DeviceClass",
    "DeviceConstraint",
    "DevicePool",
    "DeviceRequest",
    "DeviceResult",
    "DeviceSubRequest",
    "DeviceTaint",
    "DraObjects",
    "ExactDeviceRequest",
    "PodResourceClaim",
    "PoolCensus",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "Version",
    "counted_devices",
    "current_slices",
    "holders",
    "qualified_name",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", ignored_types=(cached_property,))


def qualified_name(name: str, driver: str) -> str:
    """`productName` of driver `gpu.nvidia.com` → `gpu.nvidia.com/productName`; a name that
    already has a domain (`resource.kubernetes.io/pcieRoot`) stays as it is."""
    return name if "/" in name else f"{driver}/{name}"


AttributeValue = bool | int | str | Version
"""A device attribute's typed value, as the API's `DeviceAttribute` holds exactly one."""
AllocationMode = Literal["ExactCount", "All"]


class DeviceTaint(_Frozen):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "NoExecute", "None"]


class CounterConsumption(_Frozen):
    """What one partitionable device draws from a shared counter set (`consumesCounters[]`)."""

    counter_set: str
    counters: dict[str, int] = Field(description="counter name → amount in base units")


class CounterSet(_Frozen):
    """A slice's `sharedCounters[]`: amounts its partitionable devices draw from together."""

    name: str
    counters: dict[str, int] = Field(description="counter name → amount in base units")


class Device(_Frozen):
    """One device of a slice: the view the CEL module reads is `driver`, `attributes` and
    `capacity`, both keyed by fully qualified name (`gpu.nvidia.com/productName`)."""

    name: str
    driver: str
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)
    capacity: dict[str, int] = Field(default_factory=dict, description="qualified name → base units")
    consumes_counters: tuple[CounterConsumption, ...] = ()
    taints: tuple[DeviceTaint, ...] = ()


class DevicePool(_Frozen):
    name: str
    generation: int = Field(ge=0)
    resource_slice_count: int = Field(ge=1)


class ResourceSlice(_Frozen):
    name: str
    driver: str
    pool: DevicePool
    node_name: str | None = Field(None, description="devices of this node only")
    node_selector: tuple[NodeSelectorTerm, ...] = Field((), description="devices reachable from nodes it selects")
    all_nodes: bool = False
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()

    @model_validator(mode="after")
    def _one_node_scope(self) -> ResourceSlice:
        scopes = [self.node_name is not None, bool(self.node_selector), self.all_nodes]
        if sum(scopes) != 1:
            raise ValueError("exactly one of nodeName, nodeSelector, allNodes must be set")
        return self


class DeviceClass(_Frozen):
    name: str
    selectors: tuple[str, ...] = Field((), description="CEL expressions a device must all satisfy")


class _DeviceChoice(_Frozen):
    """What `exactly` and a `firstAvailable` sub-request share."""

    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: AllocationMode = "ExactCount"
    count: int = Field(1, ge=1, description="devices asked; only with ExactCount")


class ExactDeviceRequest(_DeviceChoice):
    admin_access: bool = Field(False, description="monitoring access: the device is not taken from others")


class DeviceSubRequest(_DeviceChoice):
    name: str


class DeviceRequest(_Frozen):
    """`spec.devices.requests[]`: either `exactly` or, in order of preference, `first_available`."""

    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()

    @model_validator(mode="after")
    def _exactly_or_alternatives(self) -> DeviceRequest:
        if (self.exactly is None) == (not self.first_available):
            raise ValueError(f"request {self.name!r}: exactly one of exactly, firstAvailable must be set")
        return self

    @property
    def device_class_names(self) -> tuple[str, ...]:
        if self.exactly is not None:
            return (self.exactly.device_class_name,)
        return tuple(sub.device_class_name for sub in self.first_available)


class DeviceConstraint(_Frozen):
    """`constraints[]`: the requests named (all when empty) agree on `match_attribute`."""

    requests: tuple[str, ...] = ()
    match_attribute: str = Field(description="fully qualified attribute name")


class DeviceResult(_Frozen):
    """One device an allocation gave: `status.allocation.devices.results[]`."""

    request: str = Field(description="the request, or `request/subrequest` for firstAvailable")
    driver: str = Field(description="the device's driver, e.g. gpu.nvidia.com")
    pool: str = Field(description="the ResourceSlice pool it is published in (a node's own pool is usually its name)")
    device: str = Field(description="the device's name in its pool, e.g. gpu-3")
    admin_access: bool = Field(False, description="monitoring access: the device is not taken from others")


class ClaimSpec(_Frozen):
    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class ResourceClaimTemplate(ClaimSpec):
    pass


class ResourceClaim(ClaimSpec):
    allocation: tuple[DeviceResult, ...] | None = Field(None, description="None: not allocated yet")
    allocation_node_selector: tuple[NodeSelectorTerm, ...] = Field(
        (), description="where the allocated devices can be used; empty: anywhere"
    )
    reserved_for: tuple[str, ...] = Field((), description="names of the pods it is reserved for")
    owner_pod: str | None = Field(None, description="the pod a template made it for (its controller owner)")
    pod_claim: str | None = Field(None, description="that pod's `spec.resourceClaims` entry it was made for")


class PodResourceClaim(_Frozen):
    """A pod's `spec.resourceClaims[]`: its local name, and the claim or the template it names."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None

    @model_validator(mode="after")
    def _names_one_source(self) -> PodResourceClaim:
        if (self.resource_claim_name is None) == (self.resource_claim_template_name is None):
            raise ValueError(
                f"resource claim {self.name!r}: exactly one of resourceClaimName, resourceClaimTemplateName must be set"
            )
        return self


class DraObjects(_Frozen):
    """Every DRA object of a snapshot (empty when the cluster has none)."""

    device_classes: tuple[DeviceClass, ...] = ()
    resource_slices: tuple[ResourceSlice, ...] = ()
    resource_claims: tuple[ResourceClaim, ...] = ()
    resource_claim_templates: tuple[ResourceClaimTemplate, ...] = ()

    @model_validator(mode="after")
    def _classes_exist(self) -> DraObjects:
        known = {device_class.name for device_class in self.device_classes}
        for claim in (*self.resource_claims, *self.resource_claim_templates):
            for request in claim.requests:
                missing = [name for name in request.device_class_names if name not in known]
                if missing:
                    raise ValueError(f"claim {claim.key} request {request.name!r} names unknown device class {missing[0]!r}")
        return self

    @cached_property
    def device_class_by_name(self) -> dict[str, DeviceClass]:
        return {device_class.name: device_class for device_class in self.device_classes}

    @cached_property
    def claim_by_key(self) -> dict[str, ResourceClaim]:
        return {claim.key: claim for claim in self.resource_claims}

    @cached_property
    def template_by_key(self) -> dict[str, ResourceClaimTemplate]:
        return {template.key: template for template in self.resource_claim_templates}

    @cached_property
    def claim_made_for(self) -> dict[tuple[str, str, str | None], ResourceClaim]:
        """Claims a template made for a pod, by (namespace, pod name, the pod's claim entry)."""
        return {
            (claim.namespace, claim.owner_pod, claim.pod_claim): claim
            for claim in self.resource_claims
            if claim.owner_pod is not None
        }


class CountedDevice(_Frozen):
    """A device that counts for allocation, with the slice it came from and its holder."""

    device: Device
    slice_name: str
    pool: str
    taken_by: str | None = Field(None, description="the claim (`ns/name`) whose allocation holds it")


class PoolCensus(_Frozen):
    """What `counted_devices` found: the devices that count, and pools left out as incomplete
    (an `All` request may not be allocated while one of its pools is being updated)."""

    devices: tuple[CountedDevice, ...] = ()
    incomplete_pools: tuple[tuple[str, str], ...] = Field((), description="(driver, pool) pairs")


def counted_devices(slices: Iterable[ResourceSlice], claims: Iterable[ResourceClaim] = ()) -> PoolCensus:
    """The devices that count: per (driver, pool), those of the slices of the newest
    generation, when that generation has `resourceSliceCount` slices; an older generation is
    being replaced, an incomplete newest one is still being written. A device named by a
    claim's allocation (not admin access) is `taken_by` that claim."""
    current, incomplete = current_slices(slices)
    held_by = holders(claims)
    devices = [
        CountedDevice.model_construct(  # every field is of its type already
            device=device,
            slice_name=resource_slice.name,
            pool=resource_slice.pool.name,
            taken_by=held_by.get((resource_slice.driver, resource_slice.pool.name, device.name)),
        )
        for resource_slice in current
        for device in resource_slice.devices
    ]
    return PoolCensus.model_construct(devices=tuple(devices), incomplete_pools=tuple(incomplete))


def current_slices(slices: Iterable[ResourceSlice]) -> tuple[list[ResourceSlice], list[tuple[str, str]]]:
    """The slices whose devices count (`counted_devices`), and the (driver, pool) pairs left
    out as incomplete."""
    pools: dict[tuple[str, str], list[ResourceSlice]] = defaultdict(list)
    for resource_slice in slices:
        pools[resource_slice.driver, resource_slice.pool.name].append(resource_slice)
    current: list[ResourceSlice] = []
    incomplete: list[tuple[str, str]] = []
    for (driver, pool), members in pools.items():
        newest = max(member.pool.generation for member in members)
        members = [member for member in members if member.pool.generation == newest]
        if len(members) != members[0].pool.resource_slice_count:
            incomplete.append((driver, pool))
        else:
            current += members
    return current, incomplete


def holders(claims: Iterable[ResourceClaim]) -> Mapping[tuple[str, str, str], str]:
    """(driver, pool, device) → the claim whose allocation takes it (admin access takes none)."""
    return {
        (result.driver, result.pool, result.device): claim.key
        for claim in claims
        for result in claim.allocation or ()
        if not result.admin_access
    }
