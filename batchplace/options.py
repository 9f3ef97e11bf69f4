"""Command-line options that more than one command takes, each defined once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from models.errors import SnapshotError
from models.quantity import QuantityError, to_base_units
from models.snapshot import ColocationPolicy, UsagePolicy
from models.typical_shapes import TypicalShape, load_typical_shapes
from solver.isolation import DEFAULT_MEMORY_LIMIT_BYTES
from solver.place import MIN_MEMORY_LIMIT_BYTES

__all__ = [
    "SolverMemoryOption",
    "solver_memory_bytes",
    "TypicalShapesOption",
    "typical_shapes_of_file",
    "UsageThresholdOption",
    "UsageWeightOption",
    "UsageMaxAgeOption",
    "usage_policy_of",
    "colocation_policy_of",
    "ColocationMarginOption",
    "ColocationOption",
    "scheduler_names_of",
    "RayAddressOption",
    "ray_address_of",
    "PartitionPartsOption",
]

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


RayAddressOption = Annotated[
    Optional[str],
    typer.Option(
        "--ray-address",
        help="Solve the parts of a partitioned cycle (one too large for one CP-SAT model in the time limit) as "
        "tasks on this Ray cluster: ray://HEAD:10001, auto (on a node of the cluster), or local (a cluster "
        "started in this process). The answers are those of the local pool with as many workers as the "
        "cluster has CPUs. Needs the ray extra. Default: processes on this machine.",
    ),
]
PartitionPartsOption = Annotated[
    int,
    typer.Option(
        "--partition-parts",
        min=1,
        help="Solve each cycle in this many parts along the topology and queues, side by side, merged and "
        "repaired on the whole (engine cpsat-partitioned); for cycles too large for one CP-SAT model in the "
        "time limit. Default 1: the whole cycle at once (on the bench's large clusters greedy on the whole "
        "strands fewer GPUs than the parts merged).",
    ),
]


def ray_address_of(text: str | None) -> str | None:
    """`--ray-address`, checked by connecting once (the CPUs it reports are the parts solved
    at a time); an unreachable cluster or a missing `ray` is a `typer.BadParameter`."""
    if text is None:
        return None
    from solver.partition.ray_pool import RayUnavailable, ray_cpus

    try:
        ray_cpus(text)
    except RayUnavailable as error:
        raise typer.BadParameter(str(error), param_hint="--ray-address") from None
    return text


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


UsageThresholdOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--usage-threshold",
        help="A node whose measured usage of RESOURCE is above PERCENT takes no new pod: RESOURCE=PERCENT "
        "(cpu, memory, gpu; `off` judges nothing for it), repeatable. Default cpu=80, memory=80, gpu=off. "
        "Usage comes from the batchplace.io/usage node annotation (the controller: also --usage-source).",
    ),
]
UsageWeightOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--usage-weight",
        help="How much RESOURCE counts in the usage tier of the objective (nodes with low load preferred): "
        "RESOURCE=WEIGHT, 0-100, repeatable. Default 1 each.",
    ),
]
UsageMaxAgeOption = Annotated[
    Optional[float],
    typer.Option(
        "--usage-max-age",
        min=1,
        help="Seconds after which a usage reading is stale: never judged, never blocks a node. Default 300.",
    ),
]


ColocationMarginOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--colocation-margin",
        help="Percent of a colocation node's allocatable RESOURCE kept from offline pods above the online pods' "
        "measured usage: RESOURCE=PERCENT (cpu, memory, gpu — gpu: of each lent device), repeatable. Default "
        "cpu=10, memory=10, gpu=10. Offline pods (volcano.sh/qos-level: BE) use allocatable − online usage − margin "
        "on nodes labelled volcano.sh/oversubscription=true (or volcano.sh/colocation=true), and the unused part of "
        "GPUs that online pods share where per-device usage is measured.",
    ),
]
ColocationOption = Annotated[
    bool,
    typer.Option(
        "--colocation/--no-colocation",
        help="Online/offline colocation on nodes labelled for it; --no-colocation treats offline pods as any pod.",
    ),
]


def colocation_policy_of(margins: list[str] | None, enabled: bool = True) -> ColocationPolicy:
    """The `ColocationPolicy` of `--colocation-margin` and `--colocation/--no-colocation`."""
    fields: dict[str, object] = {"enabled": enabled}
    for text in margins or ():
        resource, value = _resource_pair(text, "--colocation-margin")
        fields[f"{resource}_margin_percent"] = value
    try:
        return ColocationPolicy.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        resource = str(first["loc"][0]).split("_", 1)[0] if first["loc"] else ""
        raise typer.BadParameter(f"{resource}: {first['msg']}", param_hint="--colocation-margin") from None


def usage_policy_of(
    thresholds: list[str] | None, weights: list[str] | None, max_age_s: float | None
) -> UsagePolicy:
    """The `UsagePolicy` of `--usage-threshold`, `--usage-weight` and `--usage-max-age`; a bad
    value is a `typer.BadParameter` naming the flag and the part."""
    fields: dict[str, object] = {}
    for text in thresholds or ():
        resource, value = _resource_pair(text, "--usage-threshold")
        fields[f"{resource}_threshold_percent"] = None if value.lower() == "off" else value
    for text in weights or ():
        resource, value = _resource_pair(text, "--usage-weight")
        fields[f"{resource}_weight"] = value
    if max_age_s is not None:
        fields["max_age_s"] = max_age_s
    try:
        return UsagePolicy.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        flag = "--usage-threshold" if name.endswith("_percent") else "--usage-weight" if name.endswith("_weight") else "--usage-max-age"
        resource = name.split("_", 1)[0]
        raise typer.BadParameter(f"{resource}: {first['msg']}", param_hint=flag) from None


def _resource_pair(text: str, flag: str) -> tuple[str, str]:
    resource, equals, value = text.partition("=")
    resource = resource.strip().lower()
    if not equals or resource not in ("cpu", "memory", "gpu") or not value.strip():
        raise typer.BadParameter(f"expected cpu=…, memory=… or gpu=…, got {text!r}", param_hint=flag)
    return resource, value.strip()


def scheduler_names_of(values: list[str] | None, *, default: tuple[str, ...]) -> tuple[str, ...]:
    """`--scheduler-name` values (`default` when none is given). A blank one is a usage error:
    no pod's spec.schedulerName is blank (the API server fills in default-scheduler), so it
    would match nothing and place nothing, without a word."""
    if not values:
        return default
    for value in values:
        if not value.strip():
            raise typer.BadParameter(
                f"{value!r} is blank; give the spec.schedulerName of the pods to place (default: {', '.join(default)})",
                param_hint="--scheduler-name",
            )
    return tuple(values)
