"""Kubernetes resource quantities as exact integers in base units.

Input: the strings and numbers Kubernetes manifests carry (`"500m"`, `"100Mi"`, `"1.5Gi"`,
`4`, `"2e3"`, `"1k"`). Output: integers — CPU in millicores, memory in bytes, GPUs in
milli-GPUs — so every later sum and comparison is exact.

Rounding follows apimachinery's `Quantity.MilliValue()` / `Value()`: a fraction that does
not fit the base unit rounds *up* (a pod asking `"0.5m"` CPU reserves 1 millicore), because
rounding down would let the scheduler promise less than the pod will take.

It does not promise to accept everything apimachinery accepts in every corner (e.g. it
rejects `"+-1"`), only the grammar `[+-]digits[.digits][suffix | e[+-]digits]`.

**Ceilings.** Parsing is exact at any size, but the solver is not: `solver.problem` keeps
amounts in numpy int64 and CP-SAT wants every linear expression within ±(2^62 − 1). So each
amount has a ceiling, checked where the Snapshot validates (`models.snapshot`) and, with
the manifest's own field path, where a loader reads it; above it is a `FieldError`, never
an overflow. One ceiling per resource for a node's allocatable, a pod's (or task's)
requests and a NUMA cell; queue capability / deserved / guarantee and a PodGroup's
minResources, which describe up to a whole cluster, get `QUOTA_NODES` times that.

    resource             ceiling (base units)              about
    cpu (millicores)     2^35 = 34,359,738,368             34 million cores
    memory (bytes)       2^42 = 4,398,046,511,104          4 TiB
    gpu (milli-GPU)      1,024,000                         1,024 devices (MAX_GPUS_PER_NODE)
    pods (count)         2^20 = 1,048,576                  twice the pods a snapshot may hold
    any other resource   2^42                              4 Ti of bytes or counts

Why these numbers — the largest sums the solver forms, over the largest supported
cluster, rounded up to powers of two: ≤ 2^17 = 131,072 nodes (100,000 supported),
≤ 500,000 < 2^19 pods (`SnapshotLimits.max_pods`), throughput weight (1 + dense rank of
PodGroup priorities) ≤ 100,001 < 2^17 (`max_pod_groups` + 1), age class ≤ 27 (times lie
in Kubernetes' years 1–9999: < 2^27 hours, `solver.objective.age_class`):

- numpy (`solver.problem`, greedy): a resource summed over nodes ≤ 2^17 · 2^42 = 2^59;
  over pods (node usage, queue allocation, a gang's demand) ≤ 2^19 · 2^42 = 2^61; free =
  allocatable − usage ≥ −2^61; quotas ≤ 2^17 · 2^42 = 2^59. All inside int64 (2^63).
- CP-SAT queue allocation (`cpsat.constraints.Allocation.after`: allocated + pending binds −
  evictions, the allocated constant counted again by the fairness division, which also
  adds the in-queue preemption credit, at most the binds): ≤ 2 · 500,000 · 2^42 = 4.40 · 10^18 < 2^62 − 1 = 4.61 · 10^18 — the binding constraint, and
  why memory stops at 4 TiB: 2^43 would not fit.
- throughput (`solver.objective`): a pod's value 1 + ⌊cpu/1000⌋ + gpu_milli ≤ 1 +
  34,359,738 + 1,024,000 = 35,383,739; times weight and pods: 35,383,739 · 100,001 ·
  500,000 = 1.77 · 10^18 < 2^62. 2^36 m would still fit (3.5 · 10^18); 2^35 keeps a
  margin of 2.6 and is already ten thousand times the largest machine.
- disruption: per victim ≤ 100,001 · (1000 + 1,024,000 · 27) = 2.77 · 10^12; over
  500,000 pods 1.38 · 10^18 < 2^62.
- fairness: ≤ 1000 per queue; 1000 · target is counted in coarser units past 2^40.
- merged stages (`solver.cpsat.objective.plan_stages`): tiers share a stage only while
  Σ weight · |tier| ≤ 2^53, so a stage's value is exact in a double as well as in int64.
- NUMA cells: below `solver.problem.UNLIMITED` (2^60), the marker of an unknown cell.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

__all__ = [
    "QuantityError",
    "parse_quantity",
    "to_base_units",
    "format_milli",
    "format_bytes",
    "CPU_MILLI_CEILING",
    "MEMORY_BYTES_CEILING",
    "GPU_MILLI_CEILING",
    "POD_COUNT_CEILING",
    "OTHER_RESOURCE_CEILING",
    "QUOTA_NODES",
    "resource_ceiling",
    "quota_ceiling",
    "ceiling_problem",
]

CPU_MILLI_CEILING = 2**35
MEMORY_BYTES_CEILING = 2**42
GPU_MILLI_CEILING = 1024 * 1000
"""1,024 devices: the most GPUs a node may have, and so the most a pod may ask."""
POD_COUNT_CEILING = 2**20
OTHER_RESOURCE_CEILING = 2**42
QUOTA_NODES = 2**17
"""A quota may describe a whole cluster: this many nodes at the ceiling (≥ 100,000)."""

_CEILINGS = {"cpu": CPU_MILLI_CEILING, "memory": MEMORY_BYTES_CEILING, "gpu": GPU_MILLI_CEILING, "pods": POD_COUNT_CEILING}
_UNITS = {"cpu": "millicores", "memory": "bytes", "gpu": "milli-GPU", "pods": "pods"}

_BINARY_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_GRAMMAR = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<exponent>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity (the message quotes it)."""


def parse_quantity(value: str | int | float) -> Decimal:
    """Return the exact decimal value of a quantity: `"1.5Gi"` → `Decimal(1610612736)`."""
    if isinstance(value, bool):
        raise QuantityError(f"expected a quantity, got boolean {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"expected a finite quantity, got {value!r}")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"expected a quantity string or number, got {type(value).__name__}")
    text = value.strip()
    match = _GRAMMAR.match(text)
    if match is None:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity (e.g. 500m, 100Mi, 1.5Gi, 4, 2e3)")
    try:
        number = Decimal(match["number"])
    except InvalidOperation as error:  # pragma: no cover - the grammar admits only decimals
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from error
    if match["exponent"]:
        exponent = int(match["exponent"][1:])
        if abs(exponent) > 30:
            raise QuantityError(f"{value!r}: exponent out of range")
        return number.scaleb(exponent)
    suffix = match["suffix"] or ""
    if suffix in _BINARY_SUFFIX:
        return number * _BINARY_SUFFIX[suffix]
    return number * _DECIMAL_SUFFIX[suffix]


def to_base_units(value: str | int | float, *, scale: int) -> int:
    """Parse a quantity and return it times `scale`, rounded up to an integer.

    `scale=1000` gives millicores / milli-GPUs, `scale=1` gives bytes or counts.
    Example: `to_base_units("500m", scale=1000) == 500`, `to_base_units("1.5Gi", scale=1) == 1610612736`,
    `to_base_units("0.1m", scale=1000) == 1` (rounded up, as apimachinery does).
    """
    exact = parse_quantity(value) * scale
    return int(exact.to_integral_value(rounding=ROUND_CEILING))


def resource_ceiling(resource: str) -> int:
    """The most of `resource` (a snapshot name: `cpu`, `memory`, `gpu`, …) one node, pod or
    NUMA cell may state, in base units: `resource_ceiling("memory") == 2**42`."""
    return _CEILINGS.get(resource, OTHER_RESOURCE_CEILING)


def quota_ceiling(resource: str) -> int:
    """The most of `resource` a queue's capability / deserved / guarantee or a PodGroup's
    minResources may state: a whole cluster of `QUOTA_NODES` nodes at the ceiling."""
    return QUOTA_NODES * resource_ceiling(resource)


def ceiling_problem(resource: str, amount: int, *, quota: bool = False) -> str | None:
    """None when `amount` (base units) is within the ceiling, else the sentence saying so:
    `"10000000000000000000 bytes is above the ceiling of 4398046511104 bytes (4Ti)"`."""
    ceiling = quota_ceiling(resource) if quota else resource_ceiling(resource)
    if amount <= ceiling:
        return None
    unit = _UNITS.get(resource, "units")
    what = "quota ceiling" if quota else "ceiling"
    return f"{amount} {unit} is above the {what} of {ceiling} {unit} ({_for_people(resource, ceiling)})"


def _for_people(resource: str, amount: int) -> str:
    if resource == "memory":
        return format_bytes(amount)
    if resource == "cpu":
        return f"{format_milli(amount)} cores"
    if resource == "gpu":
        return f"{format_milli(amount)} GPUs"
    return f"2^{amount.bit_length() - 1}" if amount & (amount - 1) == 0 else str(amount)


def format_milli(milli: int) -> str:
    """`2500` → `"2.5"`, `500` → `"0.5"`: milli-units for people."""
    whole, rest = divmod(abs(milli), 1000)
    sign = "-" if milli < 0 else ""
    return f"{sign}{whole}" if rest == 0 else f"{sign}{whole}.{rest:03d}".rstrip("0")


def format_bytes(memory_bytes: int) -> str:
    """`1610612736` → `"1.5Gi"`: the largest binary unit that keeps one decimal."""
    for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if abs(memory_bytes) >= factor:
            value = memory_bytes / factor
            return f"{value:.1f}".rstrip("0").rstrip(".") + suffix
    return str(memory_bytes)
