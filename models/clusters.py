"""Several clusters as one Snapshot, and one Placement back as one per cluster.

Input of `merge_clusters`: a validated `Snapshot` per cluster (its nodes, HyperNodes,
running and pending pods) and, optionally, a `jobs` Snapshot (what is submitted to the
manager and belongs to no cluster yet: queues, priority classes, PodGroups and their
pending pods; no nodes, no HyperNodes, no running pods). Output: a `Fleet` whose
`snapshot` any engine solves as it solves one cluster — the solver never learns that
clusters exist. `split_placement` takes that solve's `Placement` back to each cluster's
own names, and `dispatches` says where each submitted job went.

How the clusters become one snapshot (one way, used by the CLI, the API, what-if and the
manager controller alike):
  - **The cluster is the top network tier.** Each cluster becomes a HyperNode named after
    it, of tier `cluster_tier` = one above the highest tier any cluster declares (1 when
    none declares any), holding the cluster's top HyperNodes and the nodes in none. Every
    node carries the label `batchplace.io/cluster: NAME`.
  - **A submitted job stays inside one cluster**: its PodGroup gets hard network topology
    with `highest_tier_allowed` = `cluster_tier` (a tighter hard limit it already states
    is kept), so the topology rule (rule 5) keeps every gang in one cluster domain. Its
    soft-mode preference, if it had one, gives way to that hard limit: the solver has one
    topology mode per PodGroup. A job that must run in a given cluster says so with the
    node selector `batchplace.io/cluster: NAME`.
  - **What is already in a cluster stays there**: its pending PodGroups get the node
    selector `batchplace.io/cluster: NAME` on every task (their topology is kept as is);
    running pods hold their nodes.
  - **Names are qualified where they could collide.** Nodes and HyperNodes become
    `cluster/name`; a cluster's pods and PodGroups keep their namespace and become
    `namespace/cluster/name` (key `team-a/gpu-west/llm`). Kubernetes names cannot contain
    '/', so a qualified name is never a real one and splits back unambiguously. The
    namespace is kept so that pod (anti-)affinity, which selects by namespace, means the
    same across clusters. A node's `kubernetes.io/hostname` label, when it has one,
    becomes its qualified name, so two clusters' `n1` are two hostname domains. Other
    topology labels (zones) keep their values: two clusters naming a zone alike share
    that zone for inter-pod rules, so name zones per cluster.
  - **Queues are global** (MultiKueue's choice: the manager's ClusterQueue holds the
    quota, whichever worker runs the job). A queue is one queue over the whole fleet: its
    capability caps what it runs in all clusters together, its deserved share and
    guarantee are fleet-wide, and fair shares are computed over the fleet. A queue (and
    a PriorityClass) declared in several inputs must be declared the same in each; a
    difference is an error naming the cluster and the field. Why not per-cluster queues:
    a submitted job's cluster is what the solve decides, so its queue cannot already be
    one cluster's.

Errors: `models.errors.FieldError`, its `location.source` the cluster (`clusters.gpu-west`)
or `jobs`, its path the field (`queues[team-a].weight`). No other exception escapes.

What it does not promise: that a job dispatched to a cluster runs there (the worker's
admission, a worker that goes away); that is the manager controller's to follow.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NewType

from pydantic import BaseModel, ValidationError

from models.errors import FieldError, Location
from models.placement import Bind, Eviction, Placement
from models.pod_affinity import HOSTNAME_KEY
from models.snapshot import (
    HyperNode,
    NetworkTopology,
    Node,
    NodeName,
    Pod,
    PodGroup,
    PodGroupKey,
    PodKey,
    Snapshot,
)

__all__ = [
    "CLUSTER_LABEL",
    "ClusterName",
    "Dispatch",
    "check_cluster_name",
    "Fleet",
    "asks_tighter_topology",
    "cluster_of_node",
    "confine_to_one_cluster",
    "dispatches",
    "local_node_name",
    "local_pod_key",
    "merge_clusters",
    "split_placement",
]

ClusterName = NewType("ClusterName", str)
CLUSTER_LABEL = "batchplace.io/cluster"
"""Node label: the cluster a node belongs to; a job's node selector on it pins the job there."""

_CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_CLUSTER_NAME = 63


@dataclass(frozen=True)
class Fleet:
    """Several clusters merged into one snapshot (module docstring)."""

    snapshot: Snapshot
    clusters: tuple[ClusterName, ...]
    cluster_tier: int
    jobs: tuple[PodGroupKey, ...]
    """The submitted jobs (the `jobs` input's PodGroups), in input order: what a solve dispatches."""
    kept_in_one_cluster: frozenset[PodGroupKey] = frozenset()
    """The submitted jobs whose hard topology limit is the fleet's (`confine_to_one_cluster`), not
    a tighter one they ask: a topology reason of theirs is about clusters, not a tier they chose."""


@dataclass(frozen=True)
class Dispatch:
    """A submitted job and the cluster one solve placed it in (None: it stays pending)."""

    pod_group: PodGroupKey
    cluster: ClusterName | None


def merge_clusters(clusters: Mapping[str, Snapshot], *, jobs: Snapshot | None = None) -> Fleet:
    """One snapshot of `clusters` (name → snapshot) and the submitted `jobs` (module docstring)."""
    if not clusters:
        raise FieldError("at least one cluster is needed", location=Location("clusters"))
    for name in clusters:
        check_cluster_name(name)
    if jobs is not None:
        _check_jobs_hold_no_cluster_objects(jobs)
    cluster_tier = 1 + max((h.tier for s in clusters.values() for h in s.hypernodes), default=0)
    nodes: list[Node] = []
    hypernodes: list[HyperNode] = []
    pod_groups: list[PodGroup] = []
    pods: list[Pod] = []
    for name, cluster in clusters.items():
        cluster_name = ClusterName(name)
        nodes += [_qualified_node(cluster_name, node) for node in cluster.nodes]
        hypernodes += _qualified_hypernodes(cluster_name, cluster, cluster_tier)
        pod_groups += [_qualified_pod_group(cluster_name, group) for group in cluster.pod_groups]
        pods += [_qualified_pod(cluster_name, pod) for pod in cluster.pods]
    job_groups = [confine_to_one_cluster(group, cluster_tier) for group in (jobs.pod_groups if jobs else ())]
    sources = [("jobs", jobs)] if jobs is not None else []
    sources += [(f"clusters.{name}", cluster) for name, cluster in clusters.items()]
    try:
        snapshot = Snapshot.model_validate(
            {
                "nodes": nodes,
                "hypernodes": hypernodes,
                "queues": _same_everywhere(sources, "queues"),
                "pod_groups": [*job_groups, *pod_groups],
                "pods": [*(jobs.pods if jobs else ()), *pods],
                "priority_classes": _same_everywhere(sources, "priority_classes"),
                "usage_policy": (jobs if jobs is not None else next(iter(clusters.values()))).usage_policy,
            }
        )
    except ValidationError as error:
        first = error.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        raise FieldError(f"the merged clusters are not one valid snapshot: {message}", location=Location("clusters")) from None
    return Fleet(
        snapshot=snapshot,
        clusters=tuple(ClusterName(name) for name in clusters),
        cluster_tier=cluster_tier,
        jobs=tuple(group.key for group in job_groups),
        kept_in_one_cluster=frozenset(g.key for g in (jobs.pod_groups if jobs else ()) if not asks_tighter_topology(g, cluster_tier)),
    )


def asks_tighter_topology(group: PodGroup, cluster_tier: int) -> bool:
    """Whether `group` states a hard topology limit below `cluster_tier` (one it would keep
    inside one cluster by itself)."""
    topology = group.network_topology
    return (
        topology is not None
        and topology.mode == "hard"
        and topology.highest_tier_allowed is not None
        and topology.highest_tier_allowed < cluster_tier
    )


def confine_to_one_cluster(group: PodGroup, cluster_tier: int) -> PodGroup:
    """`group` with hard topology at most `cluster_tier`: its gang never spans two clusters.

    Example: no topology, cluster tier 3 → hard, tier ≤ 3; hard ≤ 1 → kept (tier-1 domains
    lie inside one cluster); soft ≤ 2 → hard ≤ 3 (module docstring)."""
    if asks_tighter_topology(group, cluster_tier):
        return group
    return group.model_copy(update={"network_topology": NetworkTopology(mode="hard", highest_tier_allowed=cluster_tier)})


def cluster_of_node(node: str) -> ClusterName:
    """`"gpu-west/n1"` → `"gpu-west"`."""
    return ClusterName(node.split("/", 1)[0])


def local_node_name(node: str) -> NodeName:
    """`"gpu-west/n1"` → `"n1"`: the node's name in its own cluster."""
    return NodeName(node.split("/", 1)[1])


def local_pod_key(key: str) -> str:
    """A pod's or PodGroup's key in its own cluster: `"team-a/gpu-west/llm-0"` → `"team-a/llm-0"`;
    a submitted job's own key (`"team-a/llm-0"`) is the same everywhere and comes back unchanged."""
    parts = key.split("/")
    return f"{parts[0]}/{parts[2]}" if len(parts) == 3 else key


def split_placement(fleet: Fleet, placement: Placement) -> dict[ClusterName, Placement]:
    """Each cluster's binds and evictions, in that cluster's own names (every cluster listed)."""
    binds: dict[ClusterName, list[Bind]] = {name: [] for name in fleet.clusters}
    evictions: dict[ClusterName, list[Eviction]] = {name: [] for name in fleet.clusters}
    for bind in placement.binds:
        binds[cluster_of_node(bind.node)].append(
            bind.model_copy(update={"pod": PodKey(local_pod_key(bind.pod)), "node": local_node_name(bind.node)})
        )
    for eviction in placement.evictions:
        evictions[cluster_of_node(eviction.node)].append(
            eviction.model_copy(
                update={
                    "pod": PodKey(local_pod_key(eviction.pod)),
                    "node": local_node_name(eviction.node),
                    "for_": PodGroupKey(local_pod_key(eviction.for_)),
                }
            )
        )
    return {name: Placement(binds=tuple(binds[name]), evictions=tuple(evictions[name])) for name in fleet.clusters}


def dispatches(fleet: Fleet, placement: Placement) -> tuple[Dispatch, ...]:
    """Where each submitted job went: the cluster of its binds (one, by the topology rule)."""
    cluster_of_pod = {bind.pod: cluster_of_node(bind.node) for bind in placement.binds}
    result = []
    for key in fleet.jobs:
        chosen = {cluster_of_pod[p.key] for p in fleet.snapshot.pods_by_group[key] if p.key in cluster_of_pod}
        result.append(Dispatch(pod_group=key, cluster=min(chosen) if chosen else None))
    return tuple(result)


# ---- merge steps ----


def check_cluster_name(name: object) -> None:
    """A cluster name is a DNS label (it names a HyperNode and prefixes node names); FieldError otherwise."""
    if not isinstance(name, str) or len(name) > _MAX_CLUSTER_NAME or not _CLUSTER_NAME.match(name):
        raise FieldError(
            f"cluster name {name!r} must be a DNS label: lower-case letters, digits and '-', at most "
            f"{_MAX_CLUSTER_NAME} characters, starting and ending with a letter or digit",
            location=Location("clusters"),
            path=(str(name),),
        )


def _check_jobs_hold_no_cluster_objects(jobs: Snapshot) -> None:
    """Nodes, HyperNodes and running pods are a cluster's: in `jobs` they would belong to none."""
    for field, objects in (("nodes", jobs.nodes), ("hypernodes", jobs.hypernodes)):
        if objects:
            raise FieldError(
                f"{field} belong to a cluster: give them in that cluster's input, not with the submitted jobs",
                location=Location("jobs"),
                path=(field, 0),
            )
    for index, pod in enumerate(jobs.pods):
        if pod.phase == "running":
            raise FieldError(
                f"running pod {pod.key} belongs to the cluster it runs in, not with the submitted jobs",
                location=Location("jobs"),
                path=("pods", index),
            )


def _qualified(cluster: ClusterName, name: str) -> str:
    return f"{cluster}/{name}"


def _qualified_node(cluster: ClusterName, node: Node) -> Node:
    name = NodeName(_qualified(cluster, node.name))
    labels = {**node.labels, CLUSTER_LABEL: cluster}
    if HOSTNAME_KEY in labels:
        labels[HOSTNAME_KEY] = name
    return node.model_copy(update={"name": name, "labels": labels})


def _qualified_hypernodes(cluster: ClusterName, snapshot: Snapshot, cluster_tier: int) -> list[HyperNode]:
    """The cluster's HyperNodes, qualified, under one HyperNode named after the cluster."""
    contained = {member for h in snapshot.hypernodes for member in h.hypernode_members}
    qualified = [
        h.model_copy(
            update={
                "name": _qualified(cluster, h.name),
                "node_members": tuple(NodeName(_qualified(cluster, n)) for n in h.node_members),
                "hypernode_members": tuple(_qualified(cluster, m) for m in h.hypernode_members),
            }
        )
        for h in snapshot.hypernodes
    ]
    top = HyperNode(
        name=cluster,
        tier=cluster_tier,
        node_members=tuple(NodeName(_qualified(cluster, n)) for n, chain in snapshot.hypernode_chain.items() if not chain),
        hypernode_members=tuple(_qualified(cluster, h.name) for h in snapshot.hypernodes if h.name not in contained),
    )
    return [*qualified, top]


def _qualified_pod_group(cluster: ClusterName, group: PodGroup) -> PodGroup:
    tasks = tuple(task.model_copy(update={"node_selector": {**task.node_selector, CLUSTER_LABEL: cluster}}) for task in group.tasks)
    return group.model_copy(update={"name": _qualified(cluster, group.name), "tasks": tasks})


def _qualified_pod(cluster: ClusterName, pod: Pod) -> Pod:
    update: dict[str, object] = {"name": _qualified(cluster, pod.name)}
    if pod.pod_group is not None:
        namespace, name = pod.pod_group.split("/", 1)
        update["pod_group"] = PodGroupKey(f"{namespace}/{_qualified(cluster, name)}")
    if pod.node is not None:
        update["node"] = NodeName(_qualified(cluster, pod.node))
    return pod.model_copy(update=update)


def _same_everywhere(sources: Sequence[tuple[str, Snapshot]], field: str) -> list[BaseModel]:
    """The union of `field` (queues, priority classes) over `sources`, one per name; a name
    declared differently in two sources is an error naming the second and the first field
    that differs (module docstring: queues are global)."""
    chosen: dict[str, tuple[str, BaseModel]] = {}
    for source, snapshot in sources:
        for item in getattr(snapshot, field):
            name = item.name  # type: ignore[attr-defined]
            if name not in chosen:
                chosen[name] = (source, item)
                continue
            first_source, first = chosen[name]
            if item != first:
                differs = next(f for f in type(item).model_fields if getattr(item, f) != getattr(first, f))
                raise FieldError(
                    f"{field[:-1].replace('_', ' ')} {name!r} is global and must be declared the same in every "
                    f"input, but its {differs} is {getattr(item, differs)!r} here and {getattr(first, differs)!r} "
                    f"in {first_source}",
                    location=Location(source),
                    path=(field, name, differs),
                )
    return [item for _, item in chosen.values()]
