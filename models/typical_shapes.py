"""Typical pod shapes: the workload the cluster expects, which the packing tier keeps room for.

FGD (Weng et al., ATC '23) scores a node's free GPU by how much of it the *typical* pods
could not use. Which pods are typical is the operator's knowledge, not the snapshot's: the
controller learns it from the pods it sees (`controller.shape_history`), `batchplace solve`
reads it from `--typical-shapes FILE`, the API from `typical_shapes`; without any, the
engines take the pending pods' shapes (`solver.fragmentation.typical_shapes_of`).

The file (YAML or JSON), and the API field, as people write it:

    shapes:
      - {cpu: "8", gpu: 1, weight: 40}            # 8 cores, one whole GPU, 40 % of pods
      - {cpu: 500m, gpu: 0.25, weight: 35}        # a quarter of one GPU
      - {cpu: "4", gpu: 2, weight: 5, nodeSelector: {gpu: a100}}
      - {cpu: "2", weight: 20}                    # CPU only

`gpu` is whole GPUs (1, 2, 8) or a fraction of one below 1 in thousandths (0.25 → 250
milli-GPU), as a pod asks (`nvidia.com/gpu`, `batchplace.io/gpu-milli`); `cpu` a
Kubernetes quantity; `weight` any positive number (the engines normalise the weights);
`nodeSelector` the labels a node needs for the shape to use it. A bare list is read as
`shapes`. Errors name the entry and field: `shapes[1].gpu: 1.5 GPUs is neither whole GPUs
nor a fraction of one (below 1)`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from models.errors import FieldError, Location, PathPart
from models.option_files import read_option_file
from models.quantity import QuantityError, resource_ceiling, to_base_units
from models.snapshot import CPU, GPU, GPU_MILLI_PER_DEVICE

__all__ = ["TypicalShape", "MAX_TYPICAL_SHAPES", "read_typical_shapes", "load_typical_shapes"]

MAX_TYPICAL_SHAPES = 1000
"""More distinct shapes than this is no longer a *typical* workload; the list is refused."""


class TypicalShape(BaseModel):
    """One expected pod shape and how often it comes. `gpu_milli` is the pod's `gpu`
    request as in `Task.requests`: 2000 = two whole devices, 460 = a share of one, 0 none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_milli: int = Field(ge=0, le=resource_ceiling(CPU))
    gpu_milli: int = Field(ge=0, le=resource_ceiling(GPU))
    weight: float = Field(gt=0, allow_inf_nan=False)
    node_selector: tuple[tuple[str, str], ...] = Field(
        (), description="labels a node must have for this shape to use it, sorted (empty: any node)"
    )

    @field_validator("gpu_milli")
    @classmethod
    def _whole_or_fraction(cls, gpu_milli: int) -> int:
        if gpu_milli > GPU_MILLI_PER_DEVICE and gpu_milli % GPU_MILLI_PER_DEVICE:
            raise ValueError(f"{gpu_milli} milli-GPU is neither whole GPUs nor a fraction of one")
        return gpu_milli


def _gpu_milli(value: object, location: Location, path: tuple[PathPart, ...]) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise FieldError(f"must be a number of GPUs >= 0, got {value!r}", location=location, path=path)
    milli = round(value * GPU_MILLI_PER_DEVICE)
    if abs(milli - value * GPU_MILLI_PER_DEVICE) > 1e-6:
        raise FieldError(f"{value} GPUs is not a whole number of thousandths", location=location, path=path)
    if milli > GPU_MILLI_PER_DEVICE and milli % GPU_MILLI_PER_DEVICE:
        raise FieldError(f"{value} GPUs is neither whole GPUs nor a fraction of one (below 1)", location=location, path=path)
    if milli > resource_ceiling(GPU):
        raise FieldError(f"{value} GPUs is more than a node can hold", location=location, path=path)
    return milli


def _shape(entry: object, location: Location, path: tuple[PathPart, ...]) -> TypicalShape:
    if not isinstance(entry, Mapping):
        raise FieldError(f"must be a mapping such as {{cpu: \"4\", gpu: 1, weight: 10}}, got {entry!r}", location=location, path=path)
    unknown = sorted(str(key) for key in entry if key not in ("cpu", "gpu", "weight", "nodeSelector"))
    if unknown:
        raise FieldError(f"unknown field(s) {', '.join(unknown)}; a shape has cpu, gpu, weight, nodeSelector", location=location, path=path)
    try:
        cpu_milli = to_base_units(entry.get("cpu", 0), scale=1000)  # type: ignore[arg-type]
    except (QuantityError, TypeError) as error:
        raise FieldError(str(error), location=location, path=(*path, "cpu")) from None
    if cpu_milli < 0 or cpu_milli > resource_ceiling(CPU):
        raise FieldError(f"must be 0 to {resource_ceiling(CPU)}m, got {cpu_milli}m", location=location, path=(*path, "cpu"))
    weight = entry.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight <= 0:
        raise FieldError(f"must be a positive number, got {weight!r}", location=location, path=(*path, "weight"))
    selector = entry.get("nodeSelector") or {}
    if not isinstance(selector, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in selector.items()):
        raise FieldError("must map label keys to string values", location=location, path=(*path, "nodeSelector"))
    return TypicalShape(
        cpu_milli=cpu_milli,
        gpu_milli=_gpu_milli(entry.get("gpu", 0), location, (*path, "gpu")),
        weight=float(weight),
        node_selector=tuple(sorted(selector.items())),
    )


def read_typical_shapes(data: object, *, source: str) -> tuple[TypicalShape, ...]:
    """Shapes from parsed YAML/JSON: `{shapes: [...]}` or the bare list (module docstring)."""
    location = Location(source=source)
    path: tuple[PathPart, ...] = ()
    if isinstance(data, Mapping):
        unknown = sorted(str(key) for key in data if key != "shapes")
        if unknown:
            raise FieldError(f"unknown field(s) {', '.join(unknown)}; expected shapes", location=location)
        data, path = data.get("shapes"), ("shapes",)
    if not isinstance(data, list) or not data:
        raise FieldError("must be a non-empty list of shapes", location=location, path=path)
    if len(data) > MAX_TYPICAL_SHAPES:
        raise FieldError(f"{len(data)} shapes, more than {MAX_TYPICAL_SHAPES}", location=location, path=path)
    return tuple(_shape(entry, location, (*path, i)) for i, entry in enumerate(data))


def load_typical_shapes(path: Path) -> tuple[TypicalShape, ...]:
    """`read_typical_shapes` of a YAML or JSON file; a file that does not parse is an `InputFormatError`."""
    return read_typical_shapes(read_option_file(path, what="typical shapes"), source=str(path))
