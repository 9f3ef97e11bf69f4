"""Node templates: the kinds of node a cluster can grow by, for the scale-up plan
(`solver.scale_up`, `batchplace solve --scale-up FILE`, `POST /v1/what-if` `scale_up`).

A template is a `models.snapshot.Node` without its name — labels, taints, allocatable in
the snapshot's base units (cpu millicores, memory bytes, gpu milli-GPU, pods a count, any
extended resource in its own unit), GPU devices and NUMA cells as a Node has them — plus
what buying one means: its price per node-hour, how many may be bought (`max_count`), and
where in the network a new node lands. `node(name)` builds the Node a bought one would be,
so every rule judges a template node exactly as it judges a node of the cluster.

Where a new node lands (one of, per node; none given: in no HyperNode, as a node `what-if`
adds):
  - `hypernodes`: existing HyperNodes it may join as a member (a leaf switch with free
    ports): it is then inside that HyperNode and every one above it;
  - `new_hypernode`: new HyperNodes of `tier` holding up to `size` nodes each, under
    `parent` (an existing HyperNode) or under none — a new rack or leaf switch.

The file, YAML or JSON (a bare list is read as `templates`):

    templates:
      - name: p5-48xlarge
        labels: {node.kubernetes.io/instance-type: p5.48xlarge}
        taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
        allocatable: {cpu: 192000, memory: 2199023255552, gpu: 8000, pods: 110}
        gpu_model: H100
        price_per_hour: 98.32
        max_count: 16
        new_hypernode: {tier: 1, size: 4, parent: spine-0}

Errors are `models.errors.FieldError`s naming the file, the template and the field
(`templates.yaml: templates[1].price_per_hour: Input should be greater than or equal to 0`);
unknown keys are errors. Whether a named HyperNode exists is the snapshot's business and
is checked against it (`check_against`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from models.errors import FieldError, Location
from models.loaders.raw import pydantic_message
from models.option_files import read_option_file
from models.snapshot import (
    INT32_MAX,
    Gpu,
    HyperNode,
    Node,
    NodeName,
    NumaCell,
    ResourceList,
    Snapshot,
    Taint,
)

__all__ = [
    "MAX_TEMPLATES",
    "MAX_COUNT_CEILING",
    "NewHyperNode",
    "NodeTemplate",
    "NodeTemplates",
    "read_node_templates",
    "load_node_templates",
]

MAX_TEMPLATES = 1000
MAX_COUNT_CEILING = 10_000
"""More nodes of one kind than this in one plan is a typo, not a plan."""

TemplateName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")]
"""Lower-case DNS-style, since bought nodes are named after it (`p5-48xlarge-1`)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NewHyperNode(_Frozen):
    """New network domains bought nodes may fill: HyperNodes of `tier`, each holding at most
    `size` nodes, each a member of `parent` when given."""

    tier: int = Field(1, ge=1, le=INT32_MAX, description="the new HyperNodes' tier (1: a leaf switch)")
    size: int = Field(ge=1, le=MAX_COUNT_CEILING, description="nodes one new HyperNode holds at most")
    parent: str | None = Field(None, description="an existing HyperNode of a higher tier the new ones join; None: none")


class NodeTemplate(_Frozen):
    """One kind of node the cluster may buy (module docstring)."""

    name: TemplateName
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: ResourceList = Field(description="as a Node's, in base units; `pods` defaults to the kubelet's 110")
    gpu_model: str | None = None
    gpus: tuple[Gpu, ...] = Field((), description="one entry per device; filled as indices 0..n-1 when omitted")
    numa_cells: tuple[NumaCell, ...] = ()
    price_per_hour: float = Field(ge=0, le=1e9, allow_inf_nan=False, description="what one node costs per hour")
    max_count: int = Field(ge=0, le=MAX_COUNT_CEILING, description="how many of it may be bought in all")
    hypernodes: tuple[str, ...] = Field((), description="existing HyperNodes a new node may join (each joins one)")
    new_hypernode: NewHyperNode | None = Field(None, description="new HyperNodes new nodes may fill")

    @model_validator(mode="after")
    def _is_a_node(self) -> "NodeTemplate":
        """The Node it builds must be valid (GPU devices match allocatable, …): checked once, here."""
        try:
            self.node(NodeName("template"))
        except ValidationError as error:
            raise ValueError(pydantic_message(error)[1]) from None
        if len(set(self.hypernodes)) != len(self.hypernodes):
            raise ValueError(f"hypernodes repeat: {list(self.hypernodes)}")
        return self

    def node(self, name: NodeName) -> Node:
        """The Node one bought node of this template is."""
        return Node.model_validate(
            {
                "name": name,
                "allocatable": dict(self.allocatable),
                "labels": dict(self.labels),
                "taints": self.taints,
                "gpu_model": self.gpu_model,
                "gpus": self.gpus,
                "numa_cells": self.numa_cells,
            }
        )

    @property
    def price_milli_per_hour(self) -> int:
        """The price in thousandths, an integer for CP-SAT: 98.32 → 98320."""
        return round(self.price_per_hour * 1000)


class NodeTemplates(_Frozen):
    templates: tuple[NodeTemplate, ...] = Field(max_length=MAX_TEMPLATES)

    @model_validator(mode="after")
    def _names_are_unique(self) -> "NodeTemplates":
        seen: set[str] = set()
        for template in self.templates:
            if template.name in seen:
                raise ValueError(f"duplicate template {template.name!r}")
            seen.add(template.name)
        return self

    def check_against(self, snapshot: Snapshot, *, source: str = "templates") -> None:
        """Every HyperNode a template names exists in `snapshot`, of a higher tier than a new
        domain it parents; else a `FieldError` naming the template and field."""
        location = Location(source=source)
        by_name: dict[str, HyperNode] = snapshot.hypernode_by_name
        for index, template in enumerate(self.templates):
            for position, name in enumerate(template.hypernodes):
                if name not in by_name:
                    raise FieldError(
                        f"no HyperNode {name!r} in the snapshot", location=location, path=("templates", index, "hypernodes", position)
                    )
            domain = template.new_hypernode
            if domain is not None and domain.parent is not None:
                path = ("templates", index, "new_hypernode", "parent")
                parent = by_name.get(domain.parent)
                if parent is None:
                    raise FieldError(f"no HyperNode {domain.parent!r} in the snapshot", location=location, path=path)
                if parent.tier <= domain.tier:
                    raise FieldError(
                        f"HyperNode {parent.name!r} is of tier {parent.tier}, not above the new domains' tier {domain.tier}",
                        location=location,
                        path=path,
                    )


def read_node_templates(data: object, *, source: str) -> NodeTemplates:
    """Templates from parsed YAML/JSON: `{templates: [...]}` or the bare list."""
    location = Location(source=source)
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        data = {"templates": list(data)}
    if not isinstance(data, dict):
        raise FieldError("must be a mapping {templates: [...]} or a list of templates", location=location)
    try:
        return NodeTemplates.model_validate(data)
    except ValidationError as error:
        path, message = pydantic_message(error)
        raise FieldError(message, location=location, path=path) from None


def load_node_templates(path: Path) -> NodeTemplates:
    """`read_node_templates` of a YAML or JSON file; one that does not parse is an `InputFormatError`."""
    return read_node_templates(read_option_file(path, what="node templates"), source=str(path))
