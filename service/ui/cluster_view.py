"""The Cluster page's picture: the HyperNode tree, each node a row of GPU cells, and the totals.

Input: an `Analysis` (snapshot + this cycle's decision). Output: a frozen
`ClusterView` the template walks — domains (HyperNodes, tier N → … → tier 1) holding node
rows, each row's GPU cells already written as HTML (`Markup`), and a pod index the page's
script reads for hover text and the what-if overlay.

A GPU cell's state, first match wins:
  - `w` whole: a running whole-GPU pod holds the device (its queue's color);
  - `s` shared: running fractional pods and/or `used_milli` fill part of it; `--f` is the
    filled fraction (0.5 = half the device), the color is the fullest pod's queue;
  - `r` reserved: nothing runs there, and this cycle's placement binds a pending pod of a
    gang to it — the gang's room, before the binds land;
  - free otherwise.
A cell also gets `x` when a pod on it is evicted this cycle, and `o` (no queue color)
when what holds it belongs to no queue (another scheduler's pod, or `used_milli`).
Cells are `<i>` elements with `data-p` = ids into `pods` (space-separated when shared):
8,000 cells make ~250 kB of HTML, which Chromium lays out in well under a second.

Fragmentation (FGD, Weng et al., USENIX ATC '23, with this snapshot's pending pods as
the workload): for each pending GPU pod shape (devices × milli per device, CPU), a node's
free GPU milli is fragment when the shape does not fit on the node (all of it), else only
the devices with less free than the shape needs; weighted by how many pending pods have
each shape, summed over nodes, reported as a share of all free GPU milli. With nothing
pending on GPUs the shape is one whole GPU, so only partly used devices count.
Worked example: one pending shape 2 × 1000 milli; a node with devices free (1000, 1000,
400) fits it: fragment 400 of 2400 free; a node with (1000, 300) does not: all 1300.

Whole domains: a HyperNode whose every GPU is free after this cycle (none held, shared,
reserved by a bind, or held by a pod evicted but not yet gone) is `whole` — the rack or
leaf a gang that wants one domain of its own can still have; the totals count the tier-1
ones (`whole_racks` of `racks`), what a placement that packs sub-groups tightly leaves.

Allocation ratio: GPU milli (and CPU, memory) held by running pods and `used_milli` over
the allocatable of every node, now and after this cycle's binds and evictions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from markupsafe import Markup

from models.clusters import CLUSTER_LABEL
from models.snapshot import CPU, GPU, GPU_MILLI_PER_DEVICE, MEMORY, HyperNode, Node, NodeName, Pod, PodKey, Snapshot
from service.ui.analysis import Analysis
from service.ui.units import gpus_text, queue_slots
from solver.rules.reservation import reserved_for

__all__ = ["CellPod", "NodeRow", "Domain", "Ratio", "ClusterView", "build_cluster_view", "fragmentation"]


@dataclass(frozen=True)
class CellPod:
    """One pod the picture shows: its id is its place in `ClusterView.pods`."""

    key: PodKey
    group: str
    queue: str
    gpu: str
    state: str  # running, evicted, reserved


@dataclass(frozen=True)
class NodeRow:
    name: NodeName
    gpu_model: str
    unschedulable: bool
    gpus_total: int
    gpus_free: int
    cpu_used_fraction: float
    cells: Markup
    gpu_indices: tuple[int, ...]
    held_for: str | None = None  # the overdue PodGroup this node is held for (solver.rules.reservation)


@dataclass(frozen=True)
class Domain:
    name: str
    tier: int | None
    children: tuple["Domain", ...]
    nodes: tuple[NodeRow, ...]
    gpus_total: int
    gpus_free: int
    node_count: int
    cluster: bool = False
    """A cluster of a fleet (`models.clusters`): the top of the tree, named after the cluster."""
    whole: bool = False
    """Every GPU of its nodes is free after this cycle (module docstring); False without GPUs."""


@dataclass(frozen=True)
class Ratio:
    resource: str
    now: float
    after: float


@dataclass(frozen=True)
class ClusterView:
    domains: tuple[Domain, ...]
    node_count: int
    gpu_cells: int
    gpus_free: int
    gpus_reserved: int
    fragmentation: float
    fragmented_gpus: float
    ratios: tuple[Ratio, ...]
    pods: tuple[CellPod, ...]
    queue_slots: Mapping[str, int]
    cell_counts: Mapping[str, int] = field(default_factory=dict)
    racks: int = 0  # tier-1 HyperNodes with GPUs
    whole_racks: int = 0  # of them, those whole after this cycle


@dataclass
class _Device:
    milli: int = 0
    whole: int | None = None  # pod id
    shared: list[tuple[int, int]] = field(default_factory=list)  # (pod id, milli)
    reserved: list[int] = field(default_factory=list)
    evicted: bool = False
    other: bool = False


def build_cluster_view(analysis: Analysis) -> ClusterView:
    snapshot, after = analysis.snapshot, analysis.after
    slots = queue_slots(snapshot)
    pods: list[CellPod] = []
    devices: dict[NodeName, dict[int, _Device]] = {
        node.name: {gpu.index: _Device(milli=gpu.used_milli, other=gpu.used_milli > 0) for gpu in node.gpus}
        for node in snapshot.nodes
    }
    evicted = {eviction.pod for eviction in analysis.decision.placement.evictions}
    queue_of_group = {group.key: group.queue for group in snapshot.pod_groups}
    cpu_used: Counter[str] = Counter()
    for pod in snapshot.pods:
        if pod.phase != "running" or pod.node is None:
            continue
        cpu_used[pod.node] += pod.requests.get(CPU, 0)
        gpu_milli = pod.requests.get(GPU, 0)
        if gpu_milli <= 0:
            continue
        state = "evicted" if pod.key in evicted else "running"
        pod_id = _add_pod(pods, pod, queue_of_group, state)
        for index in pod.gpu_indices:
            device = devices[pod.node].get(index)
            if device is None:
                continue
            device.evicted |= pod.key in evicted
            if gpu_milli >= GPU_MILLI_PER_DEVICE:
                device.whole = pod_id
                device.milli = GPU_MILLI_PER_DEVICE
            else:
                device.shared.append((pod_id, gpu_milli))
                device.milli += gpu_milli
    for bound in after.bound:
        if bound.pod.requests.get(GPU, 0) <= 0:
            continue
        pod_id = _add_pod(pods, bound.pod, queue_of_group, "reserved")
        for index in bound.gpus:
            device = devices[bound.node.name].get(index)
            if device is not None:
                device.reserved.append(pod_id)
    counts: Counter[str] = Counter()
    held = reserved_for(snapshot)
    rows = {
        node.name: _node_row(node, devices[node.name], pods, slots, cpu_used[node.name], counts, held.get(node.name))
        for node in snapshot.nodes
    }
    fragment, free = fragmentation(snapshot)
    domains = _domains(snapshot, rows)
    racks = [domain for domain in _walk(domains) if domain.tier == 1 and domain.gpus_total > 0]
    return ClusterView(
        domains=domains,
        racks=len(racks),
        whole_racks=sum(1 for domain in racks if domain.whole),
        node_count=len(snapshot.nodes),
        gpu_cells=sum(len(node.gpus) for node in snapshot.nodes),
        gpus_free=counts["free"],
        gpus_reserved=counts["r"],
        fragmentation=fragment / free if free else 0.0,
        fragmented_gpus=fragment / GPU_MILLI_PER_DEVICE,
        ratios=_ratios(analysis),
        pods=tuple(pods),
        queue_slots=slots,
        cell_counts=dict(counts),
    )


def _add_pod(pods: list[CellPod], pod: Pod, queue_of_group: Mapping[str, str], state: str) -> int:
    group = pod.pod_group or ""
    pods.append(
        CellPod(key=pod.key, group=group, queue=queue_of_group.get(group, ""), gpu=gpus_text(pod.requests.get(GPU, 0)), state=state)
    )
    return len(pods) - 1


def _node_row(
    node: Node, devices: Mapping[int, _Device], pods: Sequence[CellPod], slots: Mapping[str, int], cpu_used: int, counts: Counter[str],
    held_for: str | None = None,
) -> NodeRow:
    cells = []
    free = 0
    for index in sorted(devices):
        device = devices[index]
        classes = ["g"]
        ids: list[int] = []
        style = ""
        if device.whole is not None:
            classes.append("w")
            ids = [device.whole]
            counts["w"] += 1
        elif device.shared or device.milli > 0:
            classes.append("s")
            ids = [pod_id for pod_id, _ in sorted(device.shared, key=lambda item: -item[1])]
            style = f' style="--f:{min(device.milli, GPU_MILLI_PER_DEVICE) / GPU_MILLI_PER_DEVICE:.3g}"'
            counts["s"] += 1
            if device.reserved:
                classes.append("rs")
                ids += device.reserved
        elif device.reserved:
            classes.append("r")
            ids = list(device.reserved)
            counts["r"] += 1
        else:
            free += 1
            counts["free"] += 1
            if held_for is not None:  # a free GPU no pod but its holder's may take
                classes.append("h")
                counts["h"] += 1
        if ids:
            queue = pods[ids[0]].queue
            classes.append(f"q{slots[queue]}" if queue in slots else "o")
        elif device.other:
            classes.append("o")
        if device.evicted:
            classes.append("x")
            counts["x"] += 1
        data = f' data-p="{" ".join(map(str, ids))}"' if ids else ""
        cells.append(f'<i class="{" ".join(classes)}"{style}{data}></i>')
    cpu_total = node.allocatable.get(CPU, 0)
    return NodeRow(
        name=node.name,
        gpu_model=node.gpu_model or "",
        unschedulable=node.unschedulable,
        gpus_total=len(devices),
        gpus_free=free,
        cpu_used_fraction=min(1.0, cpu_used / cpu_total) if cpu_total else 0.0,
        cells=Markup("".join(cells)),
        gpu_indices=tuple(sorted(devices)),
        held_for=held_for,
    )


def _domains(snapshot: Snapshot, rows: Mapping[NodeName, NodeRow]) -> tuple[Domain, ...]:
    """HyperNode roots first (by name), each with its member HyperNodes and nodes; then the
    nodes in no HyperNode as one domain without a tier."""
    by_name = snapshot.hypernode_by_name
    members = {member for hypernode in snapshot.hypernodes for member in hypernode.hypernode_members}
    clusters = {node.labels[CLUSTER_LABEL] for node in snapshot.nodes if CLUSTER_LABEL in node.labels}
    placed: set[str] = set()

    def build(hypernode: HyperNode, seen: frozenset[str]) -> Domain:
        children = tuple(
            build(by_name[name], seen | {name}) for name in sorted(hypernode.hypernode_members) if name in by_name and name not in seen
        )
        nodes = tuple(rows[name] for name in sorted(hypernode.node_members) if name in rows and name not in placed)
        placed.update(row.name for row in nodes)
        domain = _domain(hypernode.name, hypernode.tier, children, nodes)
        return replace(domain, cluster=hypernode.name in clusters and not seen - {hypernode.name})

    roots = [build(hypernode, frozenset({hypernode.name})) for hypernode in sorted(snapshot.hypernodes, key=lambda h: h.name)
             if hypernode.name not in members]
    loose = tuple(row for name, row in rows.items() if name not in placed)
    if loose:
        roots.append(_domain("not in any HyperNode" if roots else "all nodes", None, (), loose))
    return tuple(roots)


def _domain(name: str, tier: int | None, children: tuple[Domain, ...], nodes: tuple[NodeRow, ...]) -> Domain:
    gpus_total = sum(row.gpus_total for row in nodes) + sum(child.gpus_total for child in children)
    gpus_free = sum(row.gpus_free for row in nodes) + sum(child.gpus_free for child in children)
    return Domain(
        name=name,
        tier=tier,
        children=children,
        nodes=nodes,
        gpus_total=gpus_total,
        gpus_free=gpus_free,
        node_count=len(nodes) + sum(child.node_count for child in children),
        whole=gpus_total > 0 and gpus_free == gpus_total,
    )


def _walk(domains: Iterable[Domain]) -> Iterable[Domain]:
    for domain in domains:
        yield domain
        yield from _walk(domain.children)


def _ratios(analysis: Analysis) -> tuple[Ratio, ...]:
    snapshot, after = analysis.snapshot, analysis.after
    total: Counter[str] = Counter()
    now: Counter[str] = Counter()
    later: Counter[str] = Counter()
    for node in snapshot.nodes:
        total.update({name: node.allocatable.get(name, 0) for name in (GPU, CPU, MEMORY)})
        held = sum(gpu.used_milli for gpu in node.gpus)
        now[GPU] += held
        for name in (GPU, CPU, MEMORY):
            later[name] += after.node_used.get(node.name, {}).get(name, 0)
        later[GPU] += held
    for pod in snapshot.pods:
        if pod.phase == "running":
            now.update({name: pod.requests.get(name, 0) for name in (GPU, CPU, MEMORY)})
    return tuple(
        Ratio(resource=name, now=now[name] / total[name], after=later[name] / total[name])
        for name in (GPU, CPU, MEMORY)
        if total[name] > 0
    )


def fragmentation(snapshot: Snapshot) -> tuple[int, int]:
    """(fragmented GPU milli, free GPU milli) of the snapshot as it runs now (module docstring)."""
    shapes = Counter(_shapes(snapshot.pods))
    if not shapes:
        shapes = Counter({(1, GPU_MILLI_PER_DEVICE, 0): 1})
    weight = sum(shapes.values())
    free_of: dict[NodeName, list[int]] = {}
    cpu_free: dict[NodeName, int] = {}
    for node in snapshot.nodes:
        if node.unschedulable or not node.gpus:
            continue
        free_of[node.name] = [GPU_MILLI_PER_DEVICE - gpu.used_milli for gpu in node.gpus]
        cpu_free[node.name] = node.allocatable.get(CPU, 0)
    index_of = {name: {gpu.index: i for i, gpu in enumerate(snapshot.node_by_name[name].gpus)} for name in free_of}
    for pod in snapshot.pods:
        if pod.phase != "running" or pod.node not in free_of:
            continue
        cpu_free[pod.node] -= pod.requests.get(CPU, 0)
        per_device = min(pod.requests.get(GPU, 0), GPU_MILLI_PER_DEVICE)
        for index in pod.gpu_indices:
            position = index_of[pod.node].get(index)
            if position is not None:
                free_of[pod.node][position] = max(0, free_of[pod.node][position] - per_device)
    fragment = 0.0
    free_total = 0
    for name, free in free_of.items():
        node_free = sum(free)
        free_total += node_free
        for (devices, milli, cpu), count in shapes.items():
            usable = [value for value in free if value >= milli]
            if cpu_free[name] >= cpu and len(usable) >= devices:
                fragment += count * sum(value for value in free if value < milli)
            else:
                fragment += count * node_free
    return round(fragment / weight), free_total


def _shapes(pods: Iterable[Pod]) -> Iterable[tuple[int, int, int]]:
    for pod in pods:
        gpu_milli = pod.requests.get(GPU, 0)
        if pod.phase != "pending" or gpu_milli <= 0:
            continue
        if gpu_milli >= GPU_MILLI_PER_DEVICE:
            yield gpu_milli // GPU_MILLI_PER_DEVICE, GPU_MILLI_PER_DEVICE, pod.requests.get(CPU, 0)
        else:
            yield 1, gpu_milli, pod.requests.get(CPU, 0)
