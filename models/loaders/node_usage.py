"""The node usage annotation, `batchplace.io/usage`: a node's measured load in a file.

Offline (snapshot files, `batchplace solve`, the HTTP API's YAML) nothing measures a node,
so whoever writes the file states its load in this annotation, in the form the controller
would read from metrics:

    batchplace.io/usage: "cpu=91.5,memory=40,gpu=70,observed=2024-05-01T12:00:00Z,window=300"

- `cpu`, `memory`, `gpu`: percent of the node's allocatable in use (GPU: mean utilisation of
  its devices), 0 to `USAGE_PERCENT_CEILING`, an optional `%` after the number; each may be
  left out (not measured).
- `online-cpu`, `online-memory`: the part of `cpu` / `memory` that is not offline pods'
  (online pods, system daemons), for colocation (`solver.rules.colocation`); left out, the
  whole usage stands for it on a node no offline pod runs on.
- `online-gpu<i>` (`online-gpu0`, `online-gpu1`, …): percent of GPU device `i` used by
  online work, for lending a shared device's unused part to offline pods; a device left out
  is not measured (its unused part is not lent). `i` must be one of the node's devices.
- `observed` (required): when the readings were taken (the end of their averaging window),
  an RFC 3339 time or unix seconds. Their age decides whether they are judged at all
  (`solver.rules.usage`).
- `window`: the seconds they are averaged over, an optional `s` after the number (0).

Output: a `NodeUsage`, or None when the annotation is absent. A bad part is a `FieldError`
at `metadata.annotations.batchplace.io/usage` whose message names the part:
"cpu: expected a percent from 0 to 1000 such as 73.5, got 'hot'";
"online-gpu9: the node has GPU devices 0-7".

Example: `"online-gpu0=35,online-gpu1=80,observed=2024-05-01T12:00:00Z"` — online pods
use 35 % of device 0 and 80 % of device 1; the other devices are not measured.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from models.errors import FieldError, PathPart
from models.snapshot import EARLIEST_TIME_S, INT32_MAX, LATEST_TIME_S, USAGE_PERCENT_CEILING, NodeUsage

from .keys import USAGE_ANNOTATION
from .raw import Metadata, RawObject

__all__ = ["USAGE_PATH", "read_node_usage", "parse_usage"]

USAGE_PATH: tuple[PathPart, ...] = ("metadata", "annotations", USAGE_ANNOTATION)
_PERCENTS = {
    "cpu": "cpu_percent",
    "memory": "memory_percent",
    "gpu": "gpu_percent",
    "online-cpu": "online_cpu_percent",
    "online-memory": "online_memory_percent",
}
_DEVICE_PART = "online-gpu"
"""`online-gpu<i>`: one device's online percent (module docstring)."""
_PARTS = (*_PERCENTS, "observed", "window")


class _PartError(ValueError):
    pass


def read_node_usage(obj: RawObject, meta: Metadata, gpu_count: int) -> NodeUsage | None:
    """The node's annotation as a `NodeUsage`; None when it has none. `gpu_count`: the
    node's devices, 0..gpu_count-1, which `online-gpu<i>` must name."""
    text = meta.annotations.get(USAGE_ANNOTATION)
    if text is None:
        return None
    try:
        usage = parse_usage(text)
        for index in sorted(usage.online_gpu_device_percent or {}):
            if index >= gpu_count:
                devices = f"GPU devices 0-{gpu_count - 1}" if gpu_count else "no GPU devices"
                raise _PartError(f"{_DEVICE_PART}{index}: the node has {devices}")
        return usage
    except _PartError as error:
        raise FieldError(str(error), location=obj.location, path=(*obj.path, *USAGE_PATH)) from None


def parse_usage(text: str) -> NodeUsage:
    """`"cpu=91.5,observed=1714564800"` → `NodeUsage(cpu_percent=91.5, observed_at_s=1714564800.0)`;
    a `ValueError` whose message names the part otherwise."""
    fields: dict[str, float] = {}
    devices: dict[int, float] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, equals, value = item.partition("=")
        name, value = name.strip(), value.strip()
        index = _device_index(name)
        if equals and index is not None:
            if index in devices:
                raise _PartError(f"{name}: given twice")
            devices[index] = _percent(name, value)
            continue
        if not equals or name not in _PARTS:
            raise _PartError(
                f"expected name=value parts named {', '.join(_PARTS)}, got {item!r} (and per GPU device {_DEVICE_PART}<i>)"
            )
        if name in fields or (name in _PERCENTS and _PERCENTS[name] in fields):
            raise _PartError(f"{name}: given twice")
        if name in _PERCENTS:
            fields[_PERCENTS[name]] = _percent(name, value)
        elif name == "observed":
            fields["observed_at_s"] = _time(value)
        else:
            fields["window_s"] = _seconds(value)
    if "observed_at_s" not in fields:
        raise _PartError("observed: required, the time the readings were taken (e.g. observed=2024-05-01T12:00:00Z)")
    return NodeUsage.model_validate({**fields, "online_gpu_device_percent": devices or None})


def _device_index(name: str) -> int | None:
    """`"online-gpu3"` → 3; None for any other name (`"online-gpu"`, `"online-gpux"`, `"online-gpu-1"`)."""
    digits = name.removeprefix(_DEVICE_PART)
    if digits == name or not digits.isdigit() or not digits.isascii():
        return None
    index = int(digits)
    if index > INT32_MAX:
        raise _PartError(f"{name}: a GPU index is at most {INT32_MAX}")
    return index


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _percent(name: str, text: str) -> float:
    number = _number(text.removesuffix("%").strip())
    if number is None or not 0 <= number <= USAGE_PERCENT_CEILING:
        raise _PartError(f"{name}: expected a percent from 0 to {USAGE_PERCENT_CEILING:g} such as 73.5, got {text!r}")
    return number


def _seconds(text: str) -> float:
    number = _number(text.removesuffix("s").strip())
    if number is None or not 0 <= number <= LATEST_TIME_S:
        raise _PartError(f"window: expected seconds such as 300, got {text!r}")
    return number


def _time(text: str) -> float:
    number = _number(text)
    if number is None:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise _PartError(
                f"observed: expected an RFC 3339 time such as 2024-05-01T12:00:00Z or unix seconds, got {text!r}"
            ) from None
        number = (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()
    if not EARLIEST_TIME_S <= number <= LATEST_TIME_S:
        raise _PartError(f"observed: {text!r} is outside the years 1-9999")
    return number
