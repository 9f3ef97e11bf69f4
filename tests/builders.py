"""Small builders that keep each test case to one line (cf. kube-scheduler `testing/wrappers.go`).

Units, as a person writes them: `cpu` in cores (→ ×1000 millicores), `memory` in GiB
(→ bytes), `gpus` in whole devices (→ ×1000 milli-GPU); `gpu_milli=` for a fraction of
one device (`gpu_milli=500`). `resources(cpu=4, gpus=2)` converts a ResourceList the same
way, for queue capabilities and the like.

    n1 = make_node("n1", cpu=32, gpus=8, leaf="sw-a", spine="sp")
    llm = make_gang("llm", replicas=2, gpus=4, queue="team-a", topology_tier=1)
    snapshot = make_snapshot(nodes=[n1], groups=[llm], queues=[make_queue("team-a")])
    placement = make_placement(binds=[make_bind(llm.pods[0], "n1", gpus=(0, 1, 2, 3))])

`make_node` returns a `NodeSpec` (the `Node` plus its `leaf`/`spine` hints);
`make_snapshot` turns the hints into tier-1 / tier-2 HyperNodes. `make_gang` returns a
`Gang` (the `PodGroup` plus its pods, pending or running). Everything else returns the
model object itself. Names default to namespace `default`; pods are named
`<group>-<task>-<i>`, e.g. `default/llm-worker-0`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from models.node_affinity import NodeSelectorTerm, PreferredSchedulingTerm
from models.placement import Bind, Decision, Eviction, Placement
from models.pod_affinity import InterPodConstraints, PodAffinityTerm
from models.snapshot import (
    GPU,
    HostPort,
    HyperNode,
    Node,
    NodeUsage,
    NumaCell,
    Pod,
    PodGroup,
    Queue,
    ReservationPolicy,
    ResourceList,
    Snapshot,
    Taint,
    Task,
    Toleration,
    UsagePolicy,
)
from solver.after import build_after
from solver.checker import check_placement
from solver.place import SolveConfig, place
from solver.violation import Violation

__all__ = [
    "GIB",
    "USAGE_OBSERVED_S",
    "NodeSpec",
    "TaskSpec",
    "Gang",
    "resources",
    "make_node",
    "make_term",
    "make_task",
    "make_gang",
    "make_running",
    "make_queue",
    "make_snapshot",
    "make_bind",
    "make_eviction",
    "make_placement",
    "bind_gang",
    "rule_violations",
    "pod_term",
    "spread",
    "with_pod_rules",
    "labelled",
]

GIB = 2**30
USAGE_OBSERVED_S = 1_714_564_800.0
"""When `make_node(usage=...)` readings were taken: 2024-05-01T12:00:00Z."""


def resources(*, cpu: float = 0, memory: float = 0, gpus: int = 0, gpu_milli: int = 0, **extra: int) -> ResourceList:
    """Person units → base units, zeros left out: `resources(cpu=4, gpus=2)` → {cpu: 4000, gpu: 2000}."""
    amounts = {"cpu": int(cpu * 1000), "memory": int(memory * GIB), GPU: gpus * 1000 + gpu_milli, **extra}
    return {name: amount for name, amount in amounts.items() if amount}


@dataclass(frozen=True)
class NodeSpec:
    """A `Node` and where it sits: `leaf` (tier-1 HyperNode) and `spine` (tier 2) names."""

    node: Node
    leaf: str | None = None
    spine: str | None = None

    @property
    def name(self) -> str:
        return self.node.name


def make_node(
    name: str,
    *,
    cpu: float = 32,
    memory: float = 256,
    gpus: int = 0,
    leaf: str | None = None,
    spine: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint | str] = (),
    unschedulable: bool = False,
    numa_cells: int = 0,
    cell_cpu: float | None = None,
    gpu_used_milli: Mapping[int, int] | None = None,
    pods: int | None = None,
    extra: Mapping[str, int] | None = None,
    usage: NodeUsage | Mapping[str, float] | None = None,
) -> NodeSpec:
    """A node; `taints` may be strings `"key=value:Effect"`.

    `pods=3` lets it run 3 pods; without, it allows the kubelet's default (110).

    `numa_cells=2` splits the GPUs evenly over cells 0 and 1 (GPUs 0–3 on cell 0 of 8) and,
    with `cell_cpu=16`, gives each cell 16 cores. `gpu_used_milli={4: 100}` marks 100
    milli of device 4 used by work the snapshot lists no pod for.

    `usage={"cpu_percent": 91.5}` is a reading observed at `USAGE_OBSERVED_S` (the
    snapshot's newest, so fresh unless `observed_at_s` says otherwise).
    """
    used = gpu_used_milli or {}
    per_cell = max(1, gpus // numa_cells) if numa_cells else 1
    devices = [
        {"index": i, "numa_cell": (i // per_cell if numa_cells else 0), "used_milli": used.get(i, 0)}
        for i in range(gpus)
    ]
    cells = [NumaCell(id=c, cpu_milli=None if cell_cpu is None else int(cell_cpu * 1000)) for c in range(numa_cells)]
    node = Node.model_validate(
        {
            "name": name,
            "allocatable": {
                **resources(cpu=cpu, memory=memory, gpus=gpus),
                **({} if pods is None else {"pods": pods}),
                **(extra or {}),
            },
            "labels": dict(labels or {}),
            "taints": [_taint(t) for t in taints],
            "unschedulable": unschedulable,
            "gpus": devices,
            "numa_cells": cells,
            "usage": None if usage is None else usage if isinstance(usage, NodeUsage) else {"observed_at_s": USAGE_OBSERVED_S, **usage},
        }
    )
    return NodeSpec(node=node, leaf=leaf, spine=spine)


def _taint(taint: Taint | str) -> Taint:
    if isinstance(taint, Taint):
        return taint
    key_value, effect = taint.split(":")
    key, _, value = key_value.partition("=")
    return Taint(key=key, value=value, effect=effect)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TaskSpec:
    """A `Task` and how many pods (`replicas`) it has."""

    task: Task
    replicas: int


def make_term(*expressions: str, fields: Sequence[str] = ()) -> NodeSelectorTerm:
    """A node selector term from "key Operator value,value" lines (ANDed): `make_term("gpu In
    h100,a100", "gen Gt 7")`; `fields=["metadata.name In a100-0"]` for `matchFields`."""

    def requirement(text: str) -> dict[str, object]:
        key, operator, *values = text.split()
        return {"key": key, "operator": operator, "values": values[0].split(",") if values else []}

    return NodeSelectorTerm.model_validate(
        {
            "match_expressions": [requirement(text) for text in expressions],
            "match_fields": [requirement(text) for text in fields],
        }
    )


def make_task(
    name: str = "worker",
    *,
    replicas: int = 1,
    cpu: float = 1,
    memory: float = 0,
    gpus: int = 0,
    gpu_milli: int = 0,
    min_available: int | None = None,
    depends_on: Sequence[str] = (),
    numa_policy: str = "none",
    node_selector: Mapping[str, str] | None = None,
    required_node_affinity: Sequence[NodeSelectorTerm] = (),
    preferred_node_affinity: Sequence[PreferredSchedulingTerm] = (),
    tolerations: Sequence[Toleration] = (),
    extra: Mapping[str, int] | None = None,
) -> TaskSpec:
    """A task of `replicas` identical pods; `min_available` defaults to `replicas`.

    `extra={"rdma": 1}` adds other resources, in their own units.
    """
    task = Task.model_validate(
        {
            "name": name,
            "min_available": replicas if min_available is None else min_available,
            "requests": {**resources(cpu=cpu, memory=memory, gpus=gpus, gpu_milli=gpu_milli), **(extra or {})},
            "node_selector": dict(node_selector or {}),
            "required_node_affinity": list(required_node_affinity),
            "preferred_node_affinity": list(preferred_node_affinity),
            "tolerations": list(tolerations),
            "depends_on": list(depends_on),
            "numa_policy": numa_policy,
        }
    )
    return TaskSpec(task=task, replicas=replicas)


@dataclass(frozen=True)
class Gang:
    """A `PodGroup` and its pods (pending and running), in task order."""

    group: PodGroup
    pods: tuple[Pod, ...] = field(default=())

    @property
    def key(self) -> str:
        return self.group.key

    @property
    def pending(self) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if p.phase == "pending")

    @property
    def running(self) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if p.phase == "running")

    def pods_of(self, task: str) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if p.task == task)


def make_gang(
    name: str,
    *,
    replicas: int = 1,
    cpu: float = 1,
    memory: float = 0,
    gpus: int = 0,
    gpu_milli: int = 0,
    queue: str = "default",
    priority: int = 0,
    min_member: int | None = None,
    topology_tier: int | None = None,
    numa_policy: str = "none",
    node_selector: Mapping[str, str] | None = None,
    required_node_affinity: Sequence[NodeSelectorTerm] = (),
    preferred_node_affinity: Sequence[PreferredSchedulingTerm] = (),
    tolerations: Sequence[Toleration] = (),
    preemptable: bool = True,
    extra: Mapping[str, int] | None = None,
    tasks: Sequence[TaskSpec] | None = None,
    running_on: Mapping[str, Sequence[str]] | Sequence[str] = (),
    namespace: str = "default",
) -> Gang:
    """A PodGroup with one task `worker` built from the keyword shorthand, or with `tasks`.

    `min_member` defaults to the sum of the tasks' min_available (all replicas);
    `topology_tier=1` sets hard network topology with highest_tier_allowed 1.
    `running_on=["n1", "n2"]` makes the first pods of the first task run on those nodes
    (`{"prep": ["n3"]}` per task); whole-GPU pods get devices in order per node, 0.. then
    on, a fractional pod device 0. Every other pod is pending.
    """
    specs = (
        list(tasks)
        if tasks is not None
        else [
            make_task(
                "worker",
                replicas=replicas,
                cpu=cpu,
                memory=memory,
                gpus=gpus,
                gpu_milli=gpu_milli,
                numa_policy=numa_policy,
                node_selector=node_selector,
                required_node_affinity=required_node_affinity,
                preferred_node_affinity=preferred_node_affinity,
                tolerations=tolerations,
                extra=extra,
            )
        ]
    )
    group = PodGroup.model_validate(
        {
            "namespace": namespace,
            "name": name,
            "queue": queue,
            "priority": priority,
            "min_member": sum(s.task.min_available for s in specs) if min_member is None else min_member,
            "preemptable": preemptable,
            "tasks": [s.task for s in specs],
            "network_topology": None
            if topology_tier is None
            else {"mode": "hard", "highest_tier_allowed": topology_tier},
        }
    )
    running = dict(running_on) if isinstance(running_on, Mapping) else {specs[0].task.name: list(running_on)}
    next_gpu: dict[str, int] = {}
    pods: list[Pod] = []
    for spec in specs:
        nodes = list(running.get(spec.task.name, ()))
        for i in range(spec.replicas):
            pod_name = f"{name}-{spec.task.name}-{i}"
            if i < len(nodes):
                gpu_milli_asked = spec.task.requests.get(GPU, 0)
                whole = gpu_milli_asked // 1000 if gpu_milli_asked % 1000 == 0 else 0
                start = next_gpu.get(nodes[i], 0)
                indices = tuple(range(start, start + whole)) if whole else ((0,) if gpu_milli_asked else ())
                next_gpu[nodes[i]] = start + whole
                pods.append(
                    make_running(
                        pod_name,
                        node=nodes[i],
                        group=group,
                        task=spec.task.name,
                        gpu_indices=indices,
                        namespace=namespace,
                    )
                )
            else:
                pods.append(
                    Pod(
                        namespace=namespace,
                        name=pod_name,
                        phase="pending",
                        pod_group=group.key,
                        task=spec.task.name,
                        requests=spec.task.requests,
                        priority=priority,
                        preemptable=preemptable,
                    )
                )
    return Gang(group=group, pods=tuple(pods))


def with_sub_groups(
    gang: Gang,
    size: int,
    *,
    tier: int | None = None,
    policy: str = "shard",
    min_sub_groups: int | None = None,
    minimum: int | None = None,
) -> Gang:
    """`gang` with its pods, in order, cut into sub-groups of `size` (`<name>-0`, `<name>-1`,
    …; the last may be smaller), each of minimum `minimum` (default `size`), of `policy`,
    each inside one domain of tier `tier` when given (hard); `min_sub_groups` of them must
    start. Example: a 4-pod gang, size 2 → job-0 {pods 0, 1}, job-1 {pods 2, 3}."""
    count = -(-len(gang.pods) // size)
    name = gang.group.name
    subs = [
        {
            "name": f"{name}-{i}",
            "policy": policy,
            "min_member": size if minimum is None else minimum,
            "network_topology": None if tier is None else {"mode": "hard", "highest_tier_allowed": tier},
        }
        for i in range(count)
    ]
    group = PodGroup.model_validate(
        {
            **gang.group.model_dump(),
            "sub_groups": subs,
            "min_sub_groups": {} if min_sub_groups is None else {policy: min_sub_groups},
        }
    )
    pods = tuple(
        pod.model_copy(update={"sub_group": f"{name}-{i // size}"}) for i, pod in enumerate(gang.pods)
    )
    return Gang(group=group, pods=pods)


def gated(gang: Gang, *gates: str, pods: int = 1) -> Gang:
    """`gang` with its first `pods` pending pods held by scheduling gates `gates`:
    `gated(job, "example.com/quota-check")`."""
    chosen = {pod.key for pod in gang.pending[:pods]}
    return replace(
        gang,
        pods=tuple(pod.model_copy(update={"scheduling_gates": gates}) if pod.key in chosen else pod for pod in gang.pods),
    )


def with_host_ports(gang: Gang, *ports: HostPort) -> Gang:
    """`gang` with every task and pod binding host `ports` (rule nodeports):
    `with_host_ports(make_gang("web"), HostPort(port=8080))`."""
    tasks = tuple(task.model_copy(update={"host_ports": ports}) for task in gang.group.tasks)
    return replace(
        gang,
        group=gang.group.model_copy(update={"tasks": tasks}),
        pods=tuple(pod.model_copy(update={"host_ports": ports}) for pod in gang.pods),
    )


def make_running(
    name: str,
    *,
    node: str,
    cpu: float = 1,
    memory: float = 0,
    gpus: int = 0,
    gpu_milli: int = 0,
    gpu_indices: Sequence[int] | None = None,
    group: PodGroup | None = None,
    task: str | None = None,
    numa_cell: int | None = None,
    priority: int | None = None,
    preemptable: bool | None = None,
    namespace: str = "default",
) -> Pod:
    """A running pod on `node`. With `group` (and `task`, default its first) it takes the
    task's requests, priority and preemptability; without, it is another scheduler's pod
    asking `cpu`/`memory`/`gpus`. `gpu_indices` defaults to 0..gpus-1 (device 0 for a fraction).
    """
    if group is not None:
        task_name = task or group.tasks[0].name
        requests = group.task_by_name[task_name].requests
    else:
        task_name = None
        requests = resources(cpu=cpu, memory=memory, gpus=gpus, gpu_milli=gpu_milli)
    if gpu_indices is None:
        asked = requests.get(GPU, 0)
        gpu_indices = tuple(range(asked // 1000)) if asked % 1000 == 0 else (0,)
    return Pod(
        namespace=namespace,
        name=name,
        phase="running",
        pod_group=None if group is None else group.key,
        task=task_name,
        requests=requests,
        node=node,
        gpu_indices=tuple(gpu_indices),
        numa_cell=numa_cell,
        priority=(group.priority if group is not None else 0) if priority is None else priority,
        preemptable=(group.preemptable if group is not None else True) if preemptable is None else preemptable,
    )


def make_queue(
    name: str,
    *,
    parent: str | None = None,
    weight: int = 1,
    capability: ResourceList | None = None,
    deserved: ResourceList | None = None,
    guarantee: ResourceList | None = None,
    reclaimable: bool = True,
    state: str = "open",
) -> Queue:
    """A queue; pass amounts through `resources(...)`: `make_queue("a", capability=resources(gpus=16))`."""
    return Queue.model_validate(
        {
            "name": name,
            "parent": parent,
            "weight": weight,
            "capability": capability,
            "deserved": deserved,
            "guarantee": guarantee or {},
            "reclaimable": reclaimable,
            "state": state,
        }
    )


def make_snapshot(
    *,
    nodes: Iterable[NodeSpec | Node] = (),
    groups: Iterable[Gang] = (),
    running: Iterable[Pod] = (),
    queues: Iterable[Queue] = (),
    hypernodes: Iterable[HyperNode] = (),
    usage_policy: UsagePolicy | None = None,
    reservation_policy: ReservationPolicy | None = None,
) -> Snapshot:
    """A validated Snapshot; HyperNodes come from the nodes' `leaf`/`spine` hints plus `hypernodes`.

    A leaf is tier 1 and holds its nodes; a spine is tier 2 and holds its leaves (or, for a
    node with a spine and no leaf, the node itself).
    """
    specs = [n if isinstance(n, NodeSpec) else NodeSpec(node=n) for n in nodes]
    leaves: dict[str, list[str]] = {}
    spines: dict[str, list[str]] = {}
    for spec in specs:
        if spec.leaf is not None:
            leaves.setdefault(spec.leaf, []).append(spec.name)
            if spec.spine is not None and spec.leaf not in spines.setdefault(spec.spine, []):
                spines[spec.spine].append(spec.leaf)
        elif spec.spine is not None:
            spines.setdefault(spec.spine, []).append(spec.name)
    leaf_names = set(leaves)
    built = [HyperNode(name=leaf, tier=1, node_members=tuple(members)) for leaf, members in leaves.items()]
    built += [
        HyperNode(
            name=spine,
            tier=2,
            hypernode_members=tuple(m for m in members if m in leaf_names),
            node_members=tuple(m for m in members if m not in leaf_names),
        )
        for spine, members in spines.items()
    ]
    gangs = list(groups)
    data: dict[str, Any] = {
        "nodes": [spec.node for spec in specs],
        "hypernodes": [*built, *hypernodes],
        "queues": list(queues),
        "pod_groups": [gang.group for gang in gangs],
        "pods": [*(pod for gang in gangs for pod in gang.pods), *running],
    }
    if usage_policy is not None:
        data["usage_policy"] = usage_policy
    if reservation_policy is not None:
        data["reservation_policy"] = reservation_policy
    return Snapshot.model_validate(data)


def make_bind(pod: Pod | str, node: str, *, gpus: Sequence[int] = (), numa_cell: int | None = None) -> Bind:
    """Bind `pod` (a Pod or its key "ns/name") to `node`."""
    key = pod if isinstance(pod, str) else pod.key
    return Bind(pod=key, node=node, gpus=tuple(gpus), numa_cell=numa_cell)  # type: ignore[arg-type]


def make_eviction(pod: Pod | str, node: str | None = None, *, for_: Gang | str, reason: str = "preempt") -> Eviction:
    """Evict `pod` (from its own node unless `node` says otherwise) to make room for `for_`."""
    key = pod if isinstance(pod, str) else pod.key
    on = node if node is not None else (pod.node if isinstance(pod, Pod) else None)
    group_key = for_ if isinstance(for_, str) else for_.key
    return Eviction.model_validate({"pod": key, "node": on, "reason": reason, "for": group_key})


def make_placement(*, binds: Iterable[Bind] = (), evictions: Iterable[Eviction] = ()) -> Placement:
    return Placement(binds=tuple(binds), evictions=tuple(evictions))


def bind_gang(
    gang: Gang,
    nodes: Sequence[str],
    *,
    task: str | None = None,
    first_gpu: Mapping[str, int] | None = None,
    numa_cell: int | None = None,
) -> list[Bind]:
    """Bind the pending pods of `gang` (of `task`, if given) in order to `nodes`, one node per pod.

    Whole-GPU pods get consecutive devices per node starting at `first_gpu[node]` (default 0);
    a fractional pod gets device `first_gpu[node]`. Example: a 4-GPU gang over ["n1", "n1"]
    binds devices (0, 1, 2, 3) and (4, 5, 6, 7).
    """
    pending = [p for p in gang.pending if task is None or p.task == task]
    if len(nodes) > len(pending):
        raise ValueError(f"{gang.key} has {len(pending)} pending pods, asked to bind {len(nodes)}")
    next_gpu = dict(first_gpu or {})
    binds = []
    for pod, node in zip(pending, nodes, strict=False):
        asked = pod.requests.get(GPU, 0)
        start = next_gpu.get(node, 0)
        if asked and asked % 1000 == 0:
            gpus = tuple(range(start, start + asked // 1000))
            next_gpu[node] = start + asked // 1000
        else:
            gpus = (start,) if asked else ()
        binds.append(make_bind(pod, node, gpus=gpus, numa_cell=numa_cell))
    return binds


def rule_violations(rule: Any, snapshot: Snapshot, placement: Placement) -> list[Violation]:
    """One rule module's `check` alone: `rule_violations(capacity, snapshot, placement)`."""
    return rule.check(snapshot, build_after(snapshot, placement))


def created_at(gang: Gang, at_s: float) -> Gang:
    """`gang` with its PodGroup created at `at_s` (unix seconds): for tie-break cases."""
    return replace(gang, group=gang.group.model_copy(update={"creation_time": at_s}))


def two_queues_of_tied_jobs() -> Snapshot:
    """Queues a (weight 1) and b (weight 2); six 2×1-CPU jobs in a, four 1×2-CPU jobs in b,
    all created at the same second; 9 CPU on two nodes. Greedy gives a one job and b three,
    CP-SAT a two and b two — as fair, as much CPU, one pod more (throughput 14 against 13):
    the engines differ here by the objective, and within each queue the first jobs start."""
    jobs_a = [created_at(make_gang(f"job-a-{i}", replicas=2, cpu=1, queue="a"), 1000.0) for i in range(1, 7)]
    jobs_b = [created_at(make_gang(f"job-b-{i}", cpu=2, queue="b"), 1000.0) for i in range(1, 5)]
    return make_snapshot(
        nodes=[make_node("n1", cpu=6), make_node("n2", cpu=3)],
        groups=[*jobs_a, *jobs_b],
        queues=[make_queue("a"), make_queue("b", weight=2)],
    )


def solve_checked(snapshot: Snapshot, engine: str, *, time_limit_s: float = 10.0) -> Decision:
    """`place()` with `engine`, its placement judged by the independent checker first."""
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=time_limit_s))  # type: ignore[arg-type]
    assert check_placement(snapshot, decision.placement) == ()
    return decision


def pod_term(key: str = "kubernetes.io/hostname", *, namespaces: Sequence[str] = (), **match_labels: str) -> dict[str, Any]:
    """A pod (anti-)affinity term selecting `match_labels` on topology `key`, as snapshot JSON:
    `pod_term("zone", app="web")`."""
    return {"label_selector": {"match_labels": match_labels}, "namespaces": list(namespaces), "topology_key": key}


def spread(key: str = "zone", *, max_skew: int = 1, hard: bool = True, **fields: Any) -> dict[str, Any]:
    """A topology spread constraint as snapshot JSON; `app="web"` keywords are the selector's
    match labels, `min_domains=`, `node_affinity_policy=` and the like are fields."""
    known = {"min_domains", "node_affinity_policy", "node_taints_policy"}
    return {
        "max_skew": max_skew,
        "topology_key": key,
        "when_unsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "label_selector": {"match_labels": {k: v for k, v in fields.items() if k not in known}},
        **{k: v for k, v in fields.items() if k in known},
    }


def with_pod_rules(
    gang: Gang, *, labels: Mapping[str, str] | None = None, task: str | None = None, **inter_pod: Any
) -> Gang:
    """`gang` with its task (`task`, default the first) carrying `labels` and inter-pod
    constraints (`InterPodConstraints` fields as keywords: `required_anti_affinity=[pod_term(app="web")]`)."""
    name = task or gang.group.tasks[0].name
    tasks = [
        t.model_copy(update={"labels": dict(labels or t.labels), "inter_pod": InterPodConstraints.model_validate(inter_pod)})
        if t.name == name
        else t
        for t in gang.group.tasks
    ]
    group = PodGroup.model_validate({**gang.group.model_dump(), "tasks": tasks})
    return Gang(group=group, pods=gang.pods)


def labelled(pod: Pod, labels: Mapping[str, str], *, anti_affinity: Sequence[dict[str, Any]] = ()) -> Pod:
    """A running pod with `labels` and required anti-affinity terms (`pod_term(...)`)."""
    terms = tuple(PodAffinityTerm.model_validate(term) for term in anti_affinity)
    return pod.model_copy(update={"labels": dict(labels), "required_anti_affinity": terms})
