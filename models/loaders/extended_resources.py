"""Extended resources as the API server validates them: whole numbers, and in a container
requests equal to limits, so batchplace never places a pod Kubernetes would refuse.

An extended resource is a resource name with a domain prefix outside `kubernetes.io/`
(`nvidia.com/gpu`, `example.com/foo`, and batchplace's own `batchplace.io/gpu-milli`, which
counts milli-GPUs in whole numbers). Devices are handed out whole by their device plugins;
there is no half of a `nvidia.com/gpu` (a share of one GPU is `batchplace.io/gpu-milli`
or Volcano's vGPU resources). The rules, from kube's `pkg/apis/core/validation/validation.go`
(`ValidateResourceQuantityValue`, `ValidateResourceRequirements`) and `pkg/apis/core/helper`
(`IsExtendedResourceName`, `IsOvercommitAllowed`), with their wording:

- a node's capacity / allocatable and a container's requests / limits of an extended
  resource must be whole: `Invalid value: "0.5": must be an integer`;
- a container's request of a resource that may not be overcommitted (extended resources
  and `hugepages-*`) must equal its limit: `Invalid value: "1": must be equal to
  nvidia.com/gpu limit of 2`, and a request without a limit is refused: `Required value:
  Limit must be set for non overcommitable resources`. A limit alone is fine: Kubernetes
  defaults the request to it (`kube_fields.container_requests`).

Hugepages are native resources (byte quantities, so not whole numbers of anything): only
the request-equals-limit rule applies to them. Queue and PodGroup quotas are not Kubernetes
resource requirements and keep their own rules.
"""

from __future__ import annotations

from decimal import Decimal

from models.quantity import QuantityError, parse_quantity

from .object_names import qualified_name_problem
from .raw import RawObject

__all__ = ["is_extended_resource", "check_whole", "check_requests_equal_limits"]

_NATIVE_PREFIX = "kubernetes.io/"
_QUOTA_PREFIX = "requests."
_HUGEPAGES_PREFIX = "hugepages-"


def is_extended_resource(name: str) -> bool:
    """`IsExtendedResourceName`: prefixed, not in `*kubernetes.io/`, and a qualified name
    once Kubernetes' quota prefix `requests.` is put in front. `nvidia.com/gpu` → True;
    `cpu`, `hugepages-2Mi`, `kubernetes.io/something` → False."""
    if "/" not in name or _NATIVE_PREFIX in name or name.startswith(_QUOTA_PREFIX):
        return False
    return qualified_name_problem(_QUOTA_PREFIX + name) is None


def _overcommit_allowed(name: str) -> bool:
    """`IsOvercommitAllowed`: native resources, hugepages excepted."""
    native = "/" not in name or _NATIVE_PREFIX in name
    return native and not name.startswith(_HUGEPAGES_PREFIX)


def check_whole(mapping: RawObject, name: str, value: str | int | float) -> None:
    """An extended resource's amount must be a whole number (the value already parses)."""
    if is_extended_resource(name) and parse_quantity(value) % 1 != 0:
        raise mapping.error(name, f'Invalid value: "{value}": must be an integer')


def check_requests_equal_limits(resources: RawObject) -> None:
    """A container's `resources`: each request of a resource that may not be overcommitted
    equals its limit, and has one. Quantities that do not parse are left to the reader."""
    requests = resources.child("requests")
    limits = resources.child("limits")
    for name, value in requests.data.items():
        if not isinstance(name, str) or _overcommit_allowed(name):
            continue
        limit = limits.data.get(name)
        if limit is None:
            message = f"Required value: Limit must be set for non overcommitable resources ({name} is requested)"
            raise resources.error("limits", message)
        request_amount, limit_amount = _exact(value), _exact(limit)
        if request_amount is not None and limit_amount is not None and request_amount != limit_amount:
            raise requests.error(name, f'Invalid value: "{value}": must be equal to {name} limit of {limit}')


def _exact(value: object) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None
