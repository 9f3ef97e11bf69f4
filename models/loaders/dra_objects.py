"""Read DRA objects (`resource.k8s.io/v1`) into `models.dra`.

Kinds: DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate (what each field
becomes is in `models.dra`). Errors are `FieldError`s naming file, document, object and
field: a negative `count`, an `allocationMode` other than ExactCount / All, a request with
both or neither of `exactly` and `firstAvailable`, a slice with no or several of
`nodeName` / `nodeSelector` / `allNodes`, an attribute that holds no or several typed
values, a claim naming a device class the input lacks (`check_device_classes`).

Fields the API defines that placement does not use yet (class and claim `config`, request
`tolerations` and `capacity`, `distinctAttribute`, …) are collected in `DraUnused` and said
in ONE warning for the whole input (`DraUnused.warning`), so a cluster of thousands of
claims gets one line, not thousands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import TypeVar

from pydantic import BaseModel

from models.dra import (
    AttributeValue,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceClass,
    DeviceConstraint,
    DevicePool,
    DeviceRequest,
    DeviceResult,
    DeviceSubRequest,
    DeviceTaint,
    ExactDeviceRequest,
    PodResourceClaim,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    Version,
    qualified_name,
)
from models.errors import FieldError
from models.quantity import QuantityError, to_base_units

from .affinity_fields import read_node_selector
from .raw import Metadata, RawObject, build_model, describe

__all__ = [
    "DraUnused",
    "DraObject",
    "DraRecord",
    "check_device_classes",
    "read_device_class",
    "read_resource_slice",
    "read_resource_claim",
    "read_resource_claim_template",
    "read_pod_resource_claims",
]

Model = TypeVar("Model", bound=BaseModel)
_ALLOCATION_MODES = ("ExactCount", "All")
_ATTRIBUTE_TYPES = ("bool", "int", "string", "version")
_DEVICE_FIELDS_NOT_USED = (
    "allowMultipleAllocations",
    "bindsToNode",
    "bindingConditions",
    "bindingFailureConditions",
    "nodeName",
    "nodeSelector",
    "allNodes",
)
"""A device's own fields placement does not use yet (per-device node selection, binding
conditions, shared allocation): named in the one unused-fields warning."""


@dataclass
class DraUnused:
    """`Kind field.path` of every DRA field set in the input that placement does not use."""

    fields: set[str] = field(default_factory=set)

    def note(self, kind: str, obj: RawObject, *keys: str) -> None:
        """Note each of `keys` set on `obj` (`spec.devices.config` → `ResourceClaim spec.devices.config`)."""
        where = ".".join(str(part) for part in obj.path if isinstance(part, str))
        for key in keys:
            if obj.has(key):
                self.fields.add(f"{kind} {where}.{key}".replace(" .", " "))

    def warning(self) -> str | None:
        if not self.fields:
            return None
        return f"DRA fields read but not used by placement yet: {', '.join(sorted(self.fields))}"


DraObject = DeviceClass | ResourceSlice | ResourceClaim | ResourceClaimTemplate


@dataclass(frozen=True)
class DraRecord:
    """A DRA object with where it was read, for errors found across documents (a request's
    missing class, a name used twice)."""

    item: DraObject
    obj: RawObject

    @property
    def key(self) -> str:
        """What names it among its kind: `name`, or `namespace/name` for claims and templates."""
        return self.item.name if isinstance(self.item, DeviceClass | ResourceSlice) else self.item.key


def read_device_class(obj: RawObject, meta: Metadata, unused: DraUnused) -> DraRecord:
    spec = obj.child("spec")
    unused.note("DeviceClass", spec, "config", "extendedResourceName")
    return DraRecord(build_model(DeviceClass, obj.location, name=meta.name, selectors=_selectors(spec)), obj)


def read_resource_slice(obj: RawObject, meta: Metadata, unused: DraUnused) -> DraRecord:
    spec = obj.child("spec")
    unused.note("ResourceSlice", spec, "perDeviceNodeSelection")
    driver = spec.required_string("driver")
    pool = spec.child("pool")
    scopes = [key for key in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.has(key)]
    if spec.data.get("allNodes") is False:
        scopes.remove("allNodes")
    if len(scopes) != 1:
        said = ", ".join(scopes) if scopes else "none"
        scope_fields = "nodeName, nodeSelector, allNodes, perDeviceNodeSelection"
        raise spec.error(None, f"exactly one of {scope_fields} must be set, got {said}")
    devices = () if scopes == ["perDeviceNodeSelection"] else _devices(spec, driver, unused)
    resource_slice = _built(
        ResourceSlice,
        spec,
        name=meta.name,
        driver=driver,
        pool=DevicePool(
            name=pool.required_string("name"),
            generation=pool.integer("generation", 0, minimum=0),
            resource_slice_count=pool.integer("resourceSliceCount", 1, minimum=1),
        ),
        node_name=spec.optional_string("nodeName"),
        node_selector=read_node_selector(spec.child("nodeSelector")) if spec.has("nodeSelector") else (),
        all_nodes=spec.boolean("allNodes", False) or scopes == ["perDeviceNodeSelection"],
        devices=devices,
        shared_counters=tuple(
            CounterSet(name=counter_set.required_string("name"), counters=_counters(counter_set))
            for counter_set in spec.children("sharedCounters")
        ),
    )
    return DraRecord(resource_slice, obj)


def read_resource_claim_template(obj: RawObject, meta: Metadata, unused: DraUnused) -> DraRecord:
    devices = obj.child("spec").child("spec").child("devices")
    fields = _claim_fields(devices, "ResourceClaimTemplate", unused)
    return DraRecord(build_model(ResourceClaimTemplate, obj.location, namespace=meta.namespace, name=meta.name, **fields), obj)


def read_resource_claim(obj: RawObject, meta: Metadata, unused: DraUnused) -> DraRecord:
    fields = _claim_fields(obj.child("spec").child("devices"), "ResourceClaim", unused)
    status = obj.child("status")
    unused.note("ResourceClaim", status, "devices")
    allocation = status.child("allocation")
    unused.note("ResourceClaim", allocation.child("devices"), "config")
    claim = build_model(
        ResourceClaim,
        obj.location,
        namespace=meta.namespace,
        name=meta.name,
        **fields,
        allocation=_results(allocation) if status.has("allocation") else None,
        allocation_node_selector=(
            read_node_selector(allocation.child("nodeSelector")) if allocation.has("nodeSelector") else ()
        ),
        reserved_for=tuple(
            consumer.required_string("name")
            for consumer in status.children("reservedFor")
            if consumer.string("resource", "pods") == "pods"
        ),
        owner_pod=_owner_pod(obj.child("metadata")),
        pod_claim=meta.annotations.get(POD_CLAIM_NAME_ANNOTATION),
    )
    return DraRecord(claim, obj)


def check_device_classes(records: list[DraRecord]) -> None:
    """A request naming a device class the input lacks is an error at that request's field
    (Kubernetes would leave the pod pending forever: a mistake to say before solving)."""
    classes = {record.item.name for record in records if isinstance(record.item, DeviceClass)}
    for record in records:
        if not isinstance(record.item, ResourceClaim | ResourceClaimTemplate):
            continue
        requests = _devices_of(record).children("requests")
        for request, raw in zip(record.item.requests, requests, strict=True):
            if request.exactly is not None and request.exactly.device_class_name not in classes:
                missing = request.exactly.device_class_name
                raise raw.child("exactly").error("deviceClassName", f"no DeviceClass {missing!r} in the input")
            for index, sub in enumerate(request.first_available):
                if sub.device_class_name not in classes:
                    place = raw.children("firstAvailable")[index]
                    raise place.error("deviceClassName", f"no DeviceClass {sub.device_class_name!r} in the input")


def read_pod_resource_claims(spec: RawObject) -> tuple[PodResourceClaim, ...]:
    """A pod's `spec.resourceClaims[]`: each names a claim or a template, not both; names unique."""
    claims: list[PodResourceClaim] = []
    for raw in spec.children("resourceClaims"):
        claim = _built(
            PodResourceClaim,
            raw,
            name=raw.required_string("name"),
            resource_claim_name=raw.optional_string("resourceClaimName"),
            resource_claim_template_name=raw.optional_string("resourceClaimTemplateName"),
        )
        if any(known.name == claim.name for known in claims):
            raise raw.error("name", f"{claim.name!r} is listed twice (Kubernetes: Duplicate value)")
        claims.append(claim)
    return tuple(claims)


# ---- claims ----


def _devices_of(record: DraRecord) -> RawObject:
    spec = record.obj.child("spec")
    return (spec.child("spec") if isinstance(record.item, ResourceClaimTemplate) else spec).child("devices")


def _claim_fields(devices: RawObject, kind: str, unused: DraUnused) -> dict[str, object]:
    unused.note(kind, devices, "config")
    requests = []
    for raw in devices.children("requests"):
        name = raw.required_string("name")
        if raw.has("exactly") == raw.has("firstAvailable"):
            raise raw.error(None, f"request {name!r}: exactly one of exactly, firstAvailable must be set")
        exactly = None
        if raw.has("exactly"):
            choice = raw.child("exactly")
            unused.note(kind, choice, "tolerations", "capacity")
            exactly = _built(ExactDeviceRequest, choice, **_choice(choice), admin_access=choice.boolean("adminAccess", False))
        first_available = []
        for sub in raw.children("firstAvailable"):
            unused.note(kind, sub, "tolerations", "capacity")
            first_available.append(_built(DeviceSubRequest, sub, name=sub.required_string("name"), **_choice(sub)))
        requests.append(_built(DeviceRequest, raw, name=name, exactly=exactly, first_available=tuple(first_available)))
    constraints = []
    for raw in devices.children("constraints"):
        unused.note(kind, raw, "distinctAttribute")
        if not raw.has("matchAttribute"):
            continue
        constraints.append(
            DeviceConstraint(requests=raw.string_list("requests"), match_attribute=raw.required_string("matchAttribute"))
        )
    return {"requests": tuple(requests), "constraints": tuple(constraints)}


def _choice(choice: RawObject) -> dict[str, object]:
    """The fields `exactly` and a `firstAvailable` sub-request share, checked as the API does."""
    mode = choice.string("allocationMode", "ExactCount")
    if mode not in _ALLOCATION_MODES:
        raise choice.error("allocationMode", f"must be ExactCount or All, got {mode!r}")
    if mode == "All" and choice.has("count"):
        raise choice.error("count", "must not be set with allocationMode All (it takes every matching device)")
    return {
        "device_class_name": choice.required_string("deviceClassName"),
        "selectors": _selectors(choice),
        "allocation_mode": mode,
        "count": choice.integer("count", 1, minimum=1),
    }


def _selectors(spec: RawObject) -> tuple[str, ...]:
    """`selectors[].cel.expression`; a selector of another kind does not exist in v1."""
    expressions = []
    for selector in spec.children("selectors"):
        expressions.append(selector.child("cel").required_string("expression"))
    return tuple(expressions)


def _results(allocation: RawObject) -> tuple[DeviceResult, ...]:
    return tuple(
        DeviceResult(
            request=result.required_string("request"),
            driver=result.required_string("driver"),
            pool=result.required_string("pool"),
            device=result.required_string("device"),
            admin_access=result.boolean("adminAccess", False),
        )
        for result in allocation.child("devices").children("results")
    )


POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""Set by Kubernetes' resourceclaim controller on a claim it makes from a template: the
pod's `spec.resourceClaims` entry the claim is for."""


def _owner_pod(metadata: RawObject) -> str | None:
    for owner in metadata.children("ownerReferences"):
        if owner.optional_string("kind") == "Pod" and owner.boolean("controller", False):
            return owner.optional_string("name")
    return None


# ---- slices ----


def _devices(spec: RawObject, driver: str, unused: DraUnused) -> tuple[Device, ...]:
    devices = []
    for raw in spec.children("devices"):
        unused.note("ResourceSlice", raw, *_DEVICE_FIELDS_NOT_USED)
        devices.append(
            _built(
                Device,
                raw,
                name=raw.required_string("name"),
                driver=driver,
                attributes={
                    qualified_name(name, driver): _attribute(raw.child("attributes"), name, value)
                    for name, value in raw.entries("attributes")
                },
                capacity={
                    qualified_name(name, driver): _quantity(raw.child("capacity").child(name), "value")
                    for name, _ in raw.entries("capacity")
                },
                consumes_counters=tuple(
                    CounterConsumption(counter_set=use.required_string("counterSet"), counters=_counters(use))
                    for use in raw.children("consumesCounters")
                ),
                taints=tuple(
                    _built(
                        DeviceTaint,
                        taint,
                        key=taint.required_string("key"),
                        value=taint.string("value", ""),
                        effect=taint.required_string("effect"),
                    )
                    for taint in raw.children("taints")
                ),
            )
        )
    return tuple(devices)


def _attribute(attributes: RawObject, name: str, value: object) -> AttributeValue:
    """`{int: 3}` → 3, `{version: "1.2.3"}` → Version; exactly one typed value, of its type."""
    typed = attributes.child(name)
    present = [key for key in _ATTRIBUTE_TYPES if typed.data.get(key) is not None]
    if len(present) != 1:
        raise attributes.error(name, f"exactly one of bool, int, string, version must be set, got {describe(value)}")
    kind = present[0]
    if kind == "bool":
        return typed.boolean("bool", False)
    if kind == "int":
        return typed.integer("int", 0)
    text = typed.required_string(kind)
    if kind == "string":
        return text
    try:
        return Version.parse(text)
    except ValueError as error:
        raise typed.error("version", str(error)) from None


def _counters(owner: RawObject) -> dict[str, int]:
    return {name: _quantity(owner.child("counters").child(name), "value") for name, _ in owner.entries("counters")}


def _quantity(holder: RawObject, key: str) -> int:
    value = holder.raw(key)
    if value is None:
        raise holder.error(key, "required, got nothing")
    try:
        amount = to_base_units(value, scale=1)  # type: ignore[arg-type]
    except QuantityError as error:
        raise holder.error(key, str(error)) from None
    if amount < 0:
        raise holder.error(key, f"must not be negative, got {value}")
    return amount


def _built(model: type[Model], raw: RawObject, **fields: object) -> Model:
    """`build_model`, a rule the model enforces broken reported at `raw`'s own path."""
    try:
        return build_model(model, raw.location, **fields)
    except FieldError as error:
        raise FieldError(error.message, location=raw.location, path=(*raw.path, *error.path)) from None
