"""Turn cluster records into snapshot models: Nodes with their GPUs and NUMA cells, and
HyperNodes with their selectors resolved into concrete members.

Input: the `NodeRecord`s, `NumaTopologyRecord`s and `HyperNodeRecord`s of every document.
Output: `Node` and `HyperNode` models, in input order.

NUMA cells of a node: its Numatopology's cells when there is one (every cell the
`batchplace.io/gpu-numa` annotation names must be among them), else one cell per distinct
value of the annotation, with CPU and memory unknown (None), else none.

HyperNode members are resolved after every node is read, against the nodes (for `Node`
members) and HyperNodes (for `HyperNode` members) of the input, in input order. A selector
that matches nothing is valid (Volcano allows it), an exact name missing from the input
gets a warning; a node or HyperNode selected by two HyperNodes is an error naming both.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.errors import FieldError, Location
from models.snapshot import Gpu, HyperNode, Node, NumaCell

from .cluster_objects import (
    GPU_NUMA_PATH,
    HyperNodeRecord,
    MemberRecord,
    NodeRecord,
    NumaTopologyRecord,
)
from .raw import Warnings, build_model
from .step_memo import NO_STEP_MEMO, StepMemo

__all__ = ["build_nodes", "resolve_hypernodes"]


def build_nodes(
    records: Sequence[NodeRecord],
    topologies: Sequence[NumaTopologyRecord],
    warnings: Warnings,
    steps: StepMemo = NO_STEP_MEMO,
) -> list[Node]:
    names = {record.name for record in records}
    topology_of: dict[str, NumaTopologyRecord] = {}
    for topology in topologies:
        if topology.node_name in names:
            topology_of[topology.node_name] = topology
        else:
            warnings.add(topology.location, f"names no Node in the input ({topology.node_name!r}); skipped")
    return [_remembered_node(record, topology_of.get(record.name), steps) for record in records]


def _remembered_node(record: NodeRecord, topology: NumaTopologyRecord | None, steps: StepMemo) -> Node:
    return steps.built("node", (record, topology), (), lambda: _build_node(record, topology))


def _build_node(record: NodeRecord, topology: NumaTopologyRecord | None) -> Node:
    gpu_cells = record.gpu_numa_cells
    gpus = [Gpu(index=index, numa_cell=cell) for index, cell in enumerate(gpu_cells)] if gpu_cells else []
    return build_model(
        Node,
        record.location,
        name=record.name,
        allocatable=record.allocatable,
        labels=record.labels,
        taints=record.taints,
        unschedulable=record.unschedulable,
        gpu_model=record.gpu_model,
        gpus=gpus,
        numa_cells=_numa_cells(record, topology),
        usage=record.usage,
    )


def _numa_cells(record: NodeRecord, topology: NumaTopologyRecord | None) -> tuple[NumaCell, ...]:
    gpu_cells = sorted(set(record.gpu_numa_cells or ()))
    if topology is None:
        return tuple(NumaCell(id=cell) for cell in gpu_cells)
    known = {cell.id for cell in topology.cells}
    missing = [cell for cell in gpu_cells if cell not in known]
    if missing:
        message = (
            f"puts a GPU on NUMA cell {missing[0]}, but Numatopology {topology.node_name} has cells "
            f"{', '.join(str(cell) for cell in sorted(known)) or 'none'}"
        )
        raise FieldError(message, location=record.location, path=(*record.path, *GPU_NUMA_PATH))
    return topology.cells


def resolve_hypernodes(
    records: Sequence[HyperNodeRecord], nodes: Sequence[Node], warnings: Warnings
) -> list[HyperNode]:
    parent_of: dict[str, HyperNodeRecord] = {}
    hypernodes = []
    for record in records:
        node_members: list[str] = []
        hypernode_members: list[str] = []
        for member in record.members:
            if member.member_type == "Node":
                selected = _select_nodes(record, member, nodes, warnings)
                node_members += selected
            else:
                selected = _select_hypernodes(record, member, records, warnings)
                hypernode_members += selected
            for name in selected:
                _claim(parent_of, name, record, member)
        hypernodes.append(
            build_model(
                HyperNode,
                record.location,
                name=record.name,
                tier=record.tier,
                node_members=_unique(node_members),
                hypernode_members=_unique(hypernode_members),
            )
        )
    return hypernodes


def _select_nodes(
    record: HyperNodeRecord, member: MemberRecord, nodes: Sequence[Node], warnings: Warnings
) -> list[str]:
    selected: list[str] = [node.name for node in nodes if member.selects(node.name, node.labels)]
    if member.exact_name is not None and not selected:
        warnings.add(record.location, f"member Node {member.exact_name!r} is not in the input; left out")
    return selected


def _select_hypernodes(
    record: HyperNodeRecord, member: MemberRecord, records: Sequence[HyperNodeRecord], warnings: Warnings
) -> list[str]:
    if member.labels is not None:
        warnings.add(record.location, "labelMatch applies to Node members only (as in Volcano); member ignored")
        return []
    selected = [other.name for other in records if other.name != record.name and member.selects(other.name, {})]
    if member.exact_name is not None and not selected:
        warnings.add(record.location, f"member HyperNode {member.exact_name!r} is not in the input; left out")
    return selected


def _claim(parent_of: dict[str, HyperNodeRecord], name: str, record: HyperNodeRecord, member: MemberRecord) -> None:
    first = parent_of.get(name)
    if first is not None and first.name != record.name:
        raise FieldError(
            f"selects {name!r}, already a member of HyperNode {first.name!r} ({_where(first.location)}); "
            "a node or HyperNode has one parent",
            location=record.location,
            path=member.path,
        )
    parent_of[name] = record


def _where(location: Location) -> str:
    return str(location) or "the input"


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))
