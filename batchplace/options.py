"""Command-line options that more than one command takes, each defined once."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from pathlib import Path

from models.errors import SnapshotError
from models.quantity import QuantityError, to_base_units
from models.typical_shapes import TypicalShape, load_typical_shapes
from solver.isolation import DEFAULT_MEMORY_LIMIT_BYTES
from solver.place import MIN_MEMORY_LIMIT_BYTES

__all__ = ["SolverMemoryOption", "solver_memory_bytes", "TypicalShapesOption", "typical_shapes_of_file"]

SolverMemoryOption = Annotated[
    Optional[str],
    typer.Option(
        "--solver-memory",
        help="What one CP-SAT search may allocate: a quantity (512Mi, 8Gi) or none. Default 4Gi. The search "
        "runs in a child process: past this, or if it crashes or hangs, that one answer is greedy's "
        "(FALLBACK) and this process carries on.",
    ),
]


def solver_memory_bytes(text: str | None) -> int | None:
    """`--solver-memory` in bytes (None: no ceiling); a bad value is a `typer.BadParameter`."""
    if text is None:
        return DEFAULT_MEMORY_LIMIT_BYTES
    if text.strip().lower() == "none":
        return None
    try:
        amount = to_base_units(text, scale=1)
    except QuantityError as error:
        raise typer.BadParameter(str(error), param_hint="--solver-memory") from None
    if amount < MIN_MEMORY_LIMIT_BYTES:
        raise typer.BadParameter(f"{text!r} is below the minimum, 64Mi", param_hint="--solver-memory")
    return amount


TypicalShapesOption = Annotated[
    Optional[Path],
    typer.Option(
        "--typical-shapes",
        help="YAML or JSON file of the pod shapes the cluster expects, with weights "
        "(shapes: [{cpu: \"8\", gpu: 1, weight: 40}, {cpu: 500m, gpu: 0.25, weight: 35}]): the packing "
        "keeps room for them. Default: the pending pods' shapes (the controller: the shapes it has seen).",
    ),
]


def typical_shapes_of_file(path: Path | None) -> tuple[TypicalShape, ...]:
    """`--typical-shapes` read (() when not given); a bad file is one line naming the entry
    and field, and exit status 2 (a usage error), before the command starts anything."""
    if path is None:
        return ()
    try:
        return load_typical_shapes(path)
    except SnapshotError as error:
        typer.echo(f"error: --typical-shapes: {error}", err=True)
        raise typer.Exit(2) from None
