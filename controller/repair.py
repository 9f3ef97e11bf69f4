"""repair: which bound pods to evict so that no node is over its allocatable and no GPU is
held twice. Pure: no I/O, no clock.

A node can end up overcommitted only by a write nobody planned together: a bind of unknown
outcome that landed, a paused leader's late binds, two schedulers on one node. The pods are
bound; their resources are in use whatever a scheduler thinks. So the snapshot must count
them all — leaving one out (as a pod the loader cannot fit) shows its room as free and
invites the next overcommit — and the node is repaired by evicting pods until it fits.

Which pods: on each overcommitted node, its bound pods are taken in the order they were
bound (the PodScheduled condition's time, else the pod's creation time; then the name), and
each is kept when it fits beside the pods kept before it — resources, pod count, and GPU
devices judged by the loader's own device rule (`models.loaders.gpu_assignment`) — and
evicted otherwise. The pods bound last go first, and a later pod that fits beside the
earlier ones (a small CPU pod after a clash on a GPU) is not evicted for nothing.
Example: 8 GPUs, a (6 GPUs, bound 10:00), b (4 GPUs, 10:01), c (1 GPU, 10:02) → b is
evicted, c stays.

Only pods of the schedulers this controller serves are evicted: another scheduler's pods
(DaemonSets, kube-scheduler's) are counted first, as if bound before every one of ours —
evicting one would only see it recreated on the same node.

Gangs: a gang the repair leaves with fewer bound pods than its `minMember` cannot run, so
its other bound pods are evicted too, on every node, and it is placed again whole.

Offline pods on colocation nodes are colocation's to judge (`counted`), not the repair's.

Not judged here: node usage, topology, affinity — a repaired node fits its allocatable and
its devices, nothing more. Terminating pods are not counted (they are leaving).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from models.errors import FieldError, Location
from models.snapshot import GPU, PODS, Node, NodeName, PodGroupKey, PodKey, ResourceList
from models.loaders.gpu_assignment import RunningGpuPod, assign_gpus
from solver.rules.colocation import BATCH_RESOURCES

__all__ = ["HeldPod", "Holding", "RepairEviction", "repair_evictions", "over_allocatable", "counted"]


@dataclass(frozen=True)
class HeldPod:
    """A pod bound to a node (not terminating): what it holds there and since when."""

    key: PodKey
    node: NodeName
    requests: ResourceList  # the models' units: milli-cpu, bytes, milli-GPU
    gpus: tuple[int, ...] | None  # `batchplace.io/gpus`; None: the device plugin chose
    bound_at_s: float  # when it was bound (seconds since the epoch); +inf for a bind the watch has not shown yet
    group: PodGroupKey | None = None
    offline: bool = False  # an offline pod may borrow a lent device's room (`solver.rules.colocation`)
    ours: bool = True  # placed by a scheduler name this controller serves; another's pod is never evicted


class Holding(Protocol):
    """What the sum against a node's allocatable reads of a bound pod: a `HeldPod`, or the
    Snapshot's own `Pod` when only whether the node fits is asked."""

    @property
    def requests(self) -> ResourceList: ...

    @property
    def offline(self) -> bool: ...


@dataclass(frozen=True)
class RepairEviction:
    pod: PodKey
    node: NodeName  # where the pod is bound
    overcommitted: NodeName  # the node whose repair evicts it (another node for a gang's other pods)
    group: PodGroupKey | None
    overflow: str  # what `overcommitted` exceeded: "gpu 10000 > 8000", "GPU 2 of node n1 is already taken …"
    message: str  # why this pod, for its Event and the log


def repair_evictions(
    nodes: Mapping[NodeName, Node], pods: Sequence[HeldPod], min_member: Mapping[PodGroupKey, int]
) -> tuple[RepairEviction, ...]:
    """The evictions that make every node fit (module docstring), ordered by node then bind
    order; () when every node fits. Pods on a node not in `nodes` are not judged."""
    by_node: dict[NodeName, list[HeldPod]] = {}
    for pod in pods:
        if pod.node in nodes and counted(pod, nodes[pod.node]):
            by_node.setdefault(pod.node, []).append(pod)
    victims: dict[PodKey, RepairEviction] = {}
    for name in sorted(by_node):
        node, held = nodes[name], sorted(by_node[name], key=lambda pod: (pod.ours, pod.bound_at_s, pod.key))
        overflow = _overflow(node, held)
        if not overflow:
            continue
        kept: list[HeldPod] = []  # counted in the node's allocatable
        placed: list[HeldPod] = []  # counted on the devices: another scheduler's pod that clashes is not
        for pod in held:
            uses_gpu = bool(pod.requests.get(GPU, 0)) or pod.gpus is not None
            asked = {resource for resource, amount in pod.requests.items() if amount > 0}
            clash = _device_clash(node, [*placed, pod]) if uses_gpu else ""
            if pod.ours and (over_allocatable(node, [*kept, pod], asked) or clash):
                victims[pod.key] = RepairEviction(
                    pod=pod.key, node=name, overcommitted=name, group=pod.group, overflow=overflow,
                    message=(
                        f"node {name} is overcommitted ({overflow}); {pod.key} does not fit beside "
                        "the pods bound before it, evicted"
                    ),
                )
                continue
            kept.append(pod)
            if not clash:
                placed.append(pod)
    return (*victims.values(), *_cut_gangs(pods, victims, min_member))


def counted(pod: Holding, node: Node) -> bool:
    """Whether the repair counts `pod` on `node`: not an offline pod on a colocation node —
    there it uses what online pods requested but do not use, judged by measured usage, and
    `solver.offline_evictions` makes it leave when that room shrinks."""
    return not (pod.offline and node.colocation)


def _cut_gangs(
    pods: Sequence[HeldPod], victims: Mapping[PodKey, RepairEviction], min_member: Mapping[PodGroupKey, int]
) -> list[RepairEviction]:
    """The other bound pods of each gang the repair cuts below its `minMember`."""
    cut_at: dict[PodGroupKey, RepairEviction] = {}
    for victim in victims.values():
        if victim.group is not None:
            cut_at.setdefault(victim.group, victim)
    bound: dict[PodGroupKey, list[HeldPod]] = {}
    for pod in pods:
        if pod.group in cut_at:
            bound.setdefault(pod.group, []).append(pod)
    evictions = []
    for group in sorted(cut_at):
        members = sorted(bound[group], key=lambda pod: (pod.node, pod.bound_at_s, pod.key))
        left = sum(1 for pod in members if pod.key not in victims)
        minimum = min_member.get(group, 1)
        if left >= minimum:
            continue
        first = cut_at[group]
        for pod in members:
            if pod.key not in victims:
                evictions.append(
                    RepairEviction(
                        pod=pod.key, node=pod.node, overcommitted=first.overcommitted, group=group, overflow=first.overflow,
                        message=(
                            f"gang {group} is cut to {left} bound pod(s), below its minMember {minimum}, by the repair of "
                            f"node {first.overcommitted}; evicted whole, to be placed again"
                        ),
                    )
                )
    return evictions


def over_allocatable(node: Node, pods: Sequence[Holding], asked: Collection[str] | None = None) -> str:
    """Which of `node`'s allocatable `pods` together exceed, its pod count included ("" when
    none): "gpu 10000 > 8000"; only the resources in `asked` when given. Offline pods' batch
    resources are colocation's to judge."""
    used: dict[str, int] = {}
    for pod in pods:
        for resource, amount in pod.requests.items():
            used[resource] = used.get(resource, 0) + amount
    over = [
        f"{resource} {amount} > {node.allocatable.get(resource, 0)}"
        for resource, amount in sorted(used.items())
        if resource not in BATCH_RESOURCES and amount > node.allocatable.get(resource, 0)
        and (asked is None or resource in asked)
    ]
    if len(pods) > node.allocatable.get(PODS, 0):
        over.append(f"{len(pods)} pods > {node.allocatable.get(PODS, 0)}")
    return ", ".join(over)


def _overflow(node: Node, pods: Sequence[HeldPod]) -> str:
    """What `pods` together overflow on `node`, allocatable then devices ("" when they fit)."""
    return over_allocatable(node, pods) or _device_clash(node, pods)


def _device_clash(node: Node, pods: Sequence[HeldPod]) -> str:
    """Why the GPU pods among `pods` cannot hold their devices together (the loader's rule,
    `models.loaders.gpu_assignment`); "" when they can."""
    gpu_pods = [
        RunningGpuPod(key=pod.key, gpu_milli=pod.requests.get(GPU, 0), annotated=pod.gpus, location=Location(), offline=pod.offline)
        for pod in pods
        if pod.requests.get(GPU, 0) or pod.gpus is not None
    ]
    try:
        assign_gpus(node, gpu_pods)
    except FieldError as error:
        return error.message
    return ""
