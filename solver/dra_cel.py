"""CEL device selectors of Dynamic Resource Allocation, evaluated as Kubernetes does.

A DeviceClass or a ResourceClaim request selects devices with CEL expressions over one
variable, `device`:

    device.driver                      string
    device.attributes["domain"].name   bool, int, string or semver version
    device.capacity["domain"].name     quantity

plus the functions Kubernetes' DRA environment adds: `quantity("40Gi")` and `semver("1.2.3")`
with `compareTo`, `isGreaterThan`, `isLessThan` (and `isQuantity`, `sign`, `isInteger`,
`asInteger`, `asApproximateFloat`, `add`, `sub`; `isSemver`, `major`, `minor`, `patch`,
`semver(text, true)` normalising), `cel.bind`,
and an empty map for a domain the device does not have (solver.dra_cel_rewrite).

Why these choices (numbers in docs/results.md, "CEL selectors"):
- The library is `common-expression-language` (Rust bindings, module `cel`): it evaluates a
  typical selector several times faster than the pure-Python `celpy`, and selectors run once
  per (selector, device). It carries no opaque host types, so a quantity travels through CEL as a
  one-key map holding its exact value as a normalised fraction, a version as a one-key map
  holding its canonical string: equal quantities (`1Gi`, `1024Mi`) are equal maps.
- A selector that does not parse, or calls a function or names a variable the environment
  does not define, is an input error naming where it was written (`DeviceClass
  gpu.nvidia.com selectors[0]`), as the API server rejects it. An error while evaluating on
  one device (a missing attribute, a comparison of mismatched types, a non-boolean result)
  means "this device does not match", as issue 33 asks; Kubernetes' allocator instead stops
  allocating the claim on that node. `Selector.failure` keeps the error for reasons to quote.
- Attribute values of type version are `models.semver.Version` objects (re-exported here);
  a plain string is a string attribute, never guessed to be a version.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Protocol

import cel

from models.dra import AttributeValue, qualified_name
from models.errors import FieldError
from models.quantity import parse_quantity
from models.semver import Version, is_semver
from solver.dra_cel_rewrite import rewrite_selector
from solver.dra_cel_strings import STRING_FUNCTIONS

__all__ = [
    "AttributeValue",
    "Device",
    "Selector",
    "SelectorCompileError",
    "Version",
    "compile_selector",
]


class SelectorCompileError(FieldError):
    """A CEL selector the API server would refuse: it does not parse or names an unknown function."""



class Device(Protocol):
    """What a selector reads of a device (models.dra devices expose exactly these fields).

    Keys are "domain/name"; a name without a domain belongs to the driver's domain.
    Capacities are in base units (bytes, counts).
    """

    @property
    def driver(self) -> str: ...

    @property
    def attributes(self) -> Mapping[str, AttributeValue]: ...

    @property
    def capacity(self) -> Mapping[str, int]: ...


# How the two opaque types cross into CEL: one-key maps, so equality of equal values holds.
_QUANTITY_KEY = "k8s.io/quantity"
_VERSION_KEY = "k8s.io/semver"


def _quantity_value(value: Fraction) -> dict[str, str]:
    return {_QUANTITY_KEY: str(value)}


def _version_value(version: Version) -> dict[str, str]:
    return {_VERSION_KEY: str(version)}


def _opaque(value: Any) -> Fraction | Version:
    """Back from CEL: a quantity or a version; anything else fails the evaluation (no match)."""
    if isinstance(value, Mapping) and len(value) == 1:
        if _QUANTITY_KEY in value:
            return Fraction(value[_QUANTITY_KEY])
        if _VERSION_KEY in value:
            return Version.parse(value[_VERSION_KEY])
    raise TypeError(f"expected a quantity or a semver version, got {value!r}")


def _as_quantity(value: Any) -> Fraction:
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    quantity = _opaque(value)
    if not isinstance(quantity, Fraction):
        raise TypeError(f"expected a quantity, got version {quantity}")
    return quantity


def _as_version(value: Any) -> Version:
    version = _opaque(value)
    if not isinstance(version, Version):
        raise TypeError(f"expected a semver version, got quantity {version}")
    return version


def _as_integer(value: Any) -> int:
    quantity = _as_quantity(value)
    if quantity.denominator != 1 or not -(2**63) <= quantity < 2**63:
        raise ValueError(f"quantity {quantity} is not an int64")  # as Kubernetes' asInteger
    return int(quantity)


def _compare(left: Any, right: Any) -> int:
    a, b = _opaque(left), _opaque(right)
    if type(a) is not type(b):
        raise TypeError("cannot compare a quantity with a version")
    return (a > b) - (a < b)


def _quantity(text: str) -> Fraction:
    """A quantity string's exact value; only strings, as Kubernetes' `quantity()` takes."""
    if not isinstance(text, str):
        raise TypeError(f"quantity() takes a string, got {text!r}")
    return Fraction(parse_quantity(text))


def _is_quantity(text: str) -> bool:
    try:
        _quantity(text)
    except (TypeError, ValueError):
        return False
    return True


# The library logs a warning each time one of these functions raises; here that is an answer
# (the device does not match), so only the library's errors are let through.
logging.getLogger("cel").setLevel(logging.ERROR)

_FUNCTIONS: dict[str, Any] = {
    "quantity": lambda text: _quantity_value(_quantity(text)),
    "isQuantity": _is_quantity,
    "sign": lambda value: (_as_quantity(value) > 0) - (_as_quantity(value) < 0),
    "isInteger": lambda value: _as_quantity(value).denominator == 1,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda value: float(_as_quantity(value)),
    "add": lambda left, right: _quantity_value(_as_quantity(left) + _as_quantity(right)),
    "sub": lambda left, right: _quantity_value(_as_quantity(left) - _as_quantity(right)),
    "semver": lambda text, normalize=False: _version_value(Version.parse(text, normalize)),
    "isSemver": is_semver,
    "major": lambda value: _as_version(value).major,
    "minor": lambda value: _as_version(value).minor,
    "patch": lambda value: _as_version(value).patch,
    "compareTo": _compare,
    "isGreaterThan": lambda left, right: _compare(left, right) > 0,
    "isLessThan": lambda left, right: _compare(left, right) < 0,
    **STRING_FUNCTIONS,
}

# CEL's standard functions and macros the library evaluates; operators appear as `_+_`, `!_`, `@in`.
_STANDARD_FUNCTIONS = frozenset(
    {
        "size", "int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "duration",
        "timestamp", "matches", "contains", "startsWith", "endsWith", "has", "all", "exists",
        "exists_one", "map", "filter",
    }
)  # fmt: skip


class Selector:
    """One compiled CEL selector; `matches` caches its answer per device content."""

    __slots__ = ("expression", "where", "_program", "_functions", "_results", "_reads")

    def __init__(self, expression: str, where: str, program: Any):
        self.expression = expression
        self.where = where
        self._program = program
        # Only the functions it calls: the library wraps each one given, per evaluation.
        self._functions = {name: _FUNCTIONS[name] for name in program.functions() if name in _FUNCTIONS}
        self._results: dict[tuple, tuple[bool, str | None]] = {}
        self._reads = fields_read(expression)

    def matches(self, device: Device) -> bool:
        return self._answer(device)[0]

    def failure(self, device: Device) -> str | None:
        """Why evaluating on `device` failed (a missing attribute, a non-boolean result), for
        reasons to quote; None when the selector answered true or false."""
        return self._answer(device)[1]

    def _answer(self, device: Device) -> tuple[bool, str | None]:
        key = _device_key(device, self._reads)
        answer = self._results.get(key)
        if answer is None:
            answer = self._results[key] = self._evaluate(key)
        return answer

    def _evaluate(self, key: tuple) -> tuple[bool, str | None]:
        context = cel.Context(variables={"device": _cel_device(key)}, functions=self._functions)
        try:
            result = self._program.execute(context)
        except Exception as error:  # any run-time failure on this device: it does not match
            return False, f"{self.where}: CEL run-time error: {type(error).__name__}: {error}"
        if not isinstance(result, bool):
            return False, f"{self.where}: CEL selector gave {result!r}, not a boolean"
        return result, None


def compile_selector(expression: str, *, where: str) -> Selector:
    """Compile once per (expression, where) (cached, with its answers per device, across
    snapshots); errors name `where` and the CEL message."""
    return _selector(expression, where)


@functools.lru_cache(maxsize=4096)
def _selector(expression: str, where: str) -> Selector:
    try:
        program = _program(expression)
    except ValueError as error:
        raise SelectorCompileError(f"{where}: CEL selector does not compile: {error}") from None
    return Selector(expression, where, program)


@functools.lru_cache(maxsize=4096)
def _program(expression: str) -> Any:
    cel.compile(expression)  # ValueError with the parser's message, on the text as written
    rewritten = rewrite_selector(expression)
    program = cel.compile(rewritten)
    unknown = sorted(
        name
        for name in program.functions()
        if name not in _FUNCTIONS and name not in _STANDARD_FUNCTIONS and name.isidentifier() and not name.startswith("_")
    )
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: no such function in the DRA CEL environment, in {expression!r}")
    # A macro's or cel.bind's variable is a variable of the program too; any other name is a typo.
    declared = {"device", *_MACRO_VARIABLE.findall(rewritten)}
    undeclared = sorted(set(program.variables()) - declared)
    if undeclared:
        raise ValueError(f"undeclared reference to {', '.join(undeclared)} (only `device` is defined), in {expression!r}")
    return program


_MACRO_VARIABLE = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")


_FIELD_READ = re.compile(
    r"device\.(attributes|capacity)\[\s*\"([^\"]+)\"\s*\]\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*\"([^\"]+)\"\s*\])"
)


def fields_read(expression: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The qualified attribute and capacity names `expression` reads, when it reads them
    only by name (`device.attributes["gpu.nvidia.com"].productName`); None when it reads the
    maps otherwise (`"x" in device.attributes`, a macro over them), so every field counts.
    Why: a device's UUID or index then does not split the cache — 8,000 GPUs that differ only
    there are one evaluation, not 8,000 (docs/results.md, "CEL selectors")."""
    reads: dict[str, set[str]] = {"attributes": set(), "capacity": set()}
    for kind, domain, name, quoted in _FIELD_READ.findall(expression):
        reads[kind].add(f"{domain}/{name or quoted}")
    if re.search(r"device\.(attributes|capacity)", _FIELD_READ.sub("", expression)):
        return None
    return frozenset(reads["attributes"]), frozenset(reads["capacity"])


def _device_key(device: Device, reads: tuple[frozenset[str], frozenset[str]] | None = None) -> tuple:
    """The device's content a selector reads (`fields_read`; all of it when None): two devices
    equal there get the same answer. Each value's type is part of it, since `True == 1` in
    Python but a CEL bool is no int."""
    attributes, capacity = device.attributes.items(), device.capacity.items()
    if reads is not None:
        driver = device.driver
        attributes = [(name, value) for name, value in attributes if qualified_name(name, driver) in reads[0]]
        capacity = [(name, value) for name, value in capacity if qualified_name(name, driver) in reads[1]]
    return (
        device.driver,
        tuple(sorted((name, type(value), value) for name, value in attributes)),
        tuple(sorted(capacity)),
    )


@functools.lru_cache(maxsize=65536)
def _cel_device(key: tuple) -> dict[str, Any]:
    driver, attributes, capacity = key
    return {
        "driver": driver,
        "attributes": _by_domain(driver, ((name, _attribute_value(v)) for name, _, v in attributes)),
        "capacity": _by_domain(driver, ((name, _quantity_value(Fraction(v))) for name, v in capacity)),
    }


def _attribute_value(value: AttributeValue) -> Any:
    return _version_value(value) if isinstance(value, Version) else value


def _by_domain(driver: str, items: Any) -> dict[str, dict[str, Any]]:
    grouped: dict[str, dict[str, Any]] = {}
    for qualified, value in items:
        domain, _, name = qualified.rpartition("/")
        grouped.setdefault(domain or driver, {})[name] = value
    return grouped
