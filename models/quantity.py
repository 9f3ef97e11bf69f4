"""Kubernetes resource quantities as exact integers in base units.

Input: the strings and numbers Kubernetes manifests carry (`"500m"`, `"100Mi"`, `"1.5Gi"`,
`4`, `"2e3"`, `"1k"`). Output: integers — CPU in millicores, memory in bytes, GPUs in
milli-GPUs — so every later sum and comparison is exact.

Rounding follows apimachinery's `Quantity.MilliValue()` / `Value()`: a fraction that does
not fit the base unit rounds *up* (a pod asking `"0.5m"` CPU reserves 1 millicore), because
rounding down would let the scheduler promise less than the pod will take.

It does not promise to accept everything apimachinery accepts in every corner (e.g. it
rejects `"+-1"`), only the grammar `[+-]digits[.digits][suffix | e[+-]digits]`.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

__all__ = ["QuantityError", "parse_quantity", "to_base_units", "format_milli", "format_bytes"]

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
