"""One solve over several clusters: which cluster each submitted job goes to, and why not the others.

Input: a `models.clusters.Fleet` (the clusters merged into one snapshot, the cluster the top
network tier) and a `SolveConfig`. Output of `place_fleet`: a `FleetDecision` — the
`Decision` over the merged snapshot (checked, as every `place()` answer is), each
cluster's binds and evictions in its own names, and per submitted job a `JobDispatch`:
the cluster it went to and one sentence per cluster, "cluster: gpu-west: placed, 64 gpu on
8 nodes; gpu-east: 12 gpu short (52 free, 64 to start)".

The per-cluster sentences are GPU arithmetic in the state after the solve, as what-if's
`gpus_short` (`solver.whatif`): the GPUs the job's gang needs to start against the
whole devices (or free milli, for fractional jobs) on that cluster's nodes the job may
run on. A cluster that has the GPUs but did not get the job (quota, topology inside the
cluster, how free devices split over nodes, another job served first) says "gang of 64
gpu fits in 70 free"; the job's own reasons (its `PodGroupOutcome`) say what blocked it.
A job that asks no GPUs gets the same arithmetic over what it asks: "gpu-west: 440 cpu short
(360 cpu free, 800 cpu to start)". Its PodGroup's reasons never name the cluster tier that
keeps it in one cluster: "cluster: the gang fits in no one cluster: …" says that instead.
A what-if (`fleet_what_if`) answers "why not the others" exactly: it solves once per other
cluster with the jobs pinned there.

Pure: no I/O, no clock; imports `models` and `solver` only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from models.clusters import (
    CLUSTER_LABEL,
    ClusterName,
    Fleet,
    asks_tighter_topology,
    cluster_of_node,
    confine_to_one_cluster,
    dispatches,
    local_node_name,
    local_pod_key,
    split_placement,
)
from models.placement import Decision, Eviction, Placement
from models.snapshot import CPU, GPU, GPU_MILLI_PER_DEVICE, MEMORY, PODS, NodeName, PodGroup, PodGroupKey, PodKey, Snapshot
from solver import reasons
from solver.after import After, build_after
from solver.place import SolveConfig, place
from solver.reasons import Reason
from solver.rules import topology
from solver.whatif import (
    ChangedSnapshot,
    Changes,
    JobVerdict,
    apply_changes,
    amount_free_eligible,
    amount_to_start,
    job_verdicts,
)

__all__ = [
    "ClusterVerdict",
    "FleetDecision",
    "FleetJobVerdict",
    "FleetWhatIf",
    "JobDispatch",
    "explain_dispatch",
    "fleet_decision",
    "fleet_what_if",
    "place_fleet",
]

Solve = Callable[[Snapshot, SolveConfig], Decision]


@dataclass(frozen=True)
class JobDispatch:
    """A submitted job: the cluster one solve put it in (None: pending) and a sentence per cluster."""

    pod_group: PodGroupKey
    cluster: ClusterName | None
    clusters: tuple[str, ...]

    @property
    def reason(self) -> Reason:
        """`"cluster: gpu-west: placed, 64 gpu on 8 nodes; gpu-east: 12 gpu short (52 free, 64 to start)"`."""
        return reasons.cluster_dispatch(self.clusters)


@dataclass(frozen=True)
class FleetDecision:
    decision: Decision
    """Over the merged snapshot: names qualified (`models.clusters`)."""
    placements: Mapping[ClusterName, Placement]
    """Each cluster's binds and evictions, in its own names."""
    jobs: tuple[JobDispatch, ...]

    def to_contract(self) -> dict[str, Any]:
        """The output contract of one cluster (merged names) plus `clusters` (each cluster's own
        binds and evictions) and `dispatch` (where each submitted job went, and why)."""
        return {
            **self.decision.to_contract(),
            "clusters": {
                name: {
                    "binds": [bind.model_dump() for bind in placement.binds],
                    "evictions": [eviction.model_dump(by_alias=True) for eviction in placement.evictions],
                }
                for name, placement in self.placements.items()
            },
            "dispatch": [
                {"podgroup": job.pod_group, "cluster": job.cluster, "reasons": list(job.clusters)} for job in self.jobs
            ],
        }


def place_fleet(fleet: Fleet, config: SolveConfig = SolveConfig(), *, solve: Solve = place) -> FleetDecision:
    """Solve the merged snapshot once and split the answer back per cluster."""
    return fleet_decision(fleet, solve(fleet.snapshot, config))


def fleet_decision(fleet: Fleet, decision: Decision) -> FleetDecision:
    """A decision over the merged snapshot, split back per cluster and explained per job."""
    jobs = explain_dispatch(fleet, decision.placement)
    said = {job.pod_group: reasons.no_one_cluster(job.clusters) for job in jobs}
    return FleetDecision(
        decision=_in_cluster_words(fleet, decision, said),
        placements=split_placement(fleet, decision.placement),
        jobs=jobs,
    )


def _in_cluster_words(fleet: Fleet, decision: Decision, said: Mapping[PodGroupKey, Reason]) -> Decision:
    """A submitted job that asked no tighter topology is kept in one cluster by a hard limit
    at the cluster tier (`models.clusters`); the topology rule's sentence about it ("no
    domain of tier ≤ 2 holds the whole gang") would name a constraint the job never asked
    for. It becomes `said[job]`, what it means with each cluster's numbers: "cluster: the
    gang fits in no one cluster: gpu-west: 440 cpu short (360 cpu free, 800 cpu to start);
    gpu-east: …"."""
    outcomes = []
    for outcome in decision.podgroups:
        if outcome.name not in said or outcome.name not in fleet.kept_in_one_cluster:
            outcomes.append(outcome)
            continue
        words = said[outcome.name]
        rewritten = tuple(dict.fromkeys(words if r.rule == topology.NAME else r for r in outcome.reasons))
        outcomes.append(outcome.model_copy(update={"reasons": rewritten}))
    return decision.model_copy(update={"podgroups": tuple(outcomes)})


def explain_dispatch(fleet: Fleet, placement: Placement) -> tuple[JobDispatch, ...]:
    """Per submitted job, its cluster and a sentence per cluster (module docstring)."""
    snapshot = fleet.snapshot
    after = build_after(snapshot, placement)
    nodes_of = {name: [n for n in snapshot.nodes if cluster_of_node(n.name) == name] for name in fleet.clusters}
    result = []
    for dispatch in dispatches(fleet, placement):
        group = snapshot.pod_group_by_key[dispatch.pod_group]
        sentences = tuple(
            _cluster_sentence(snapshot, after, group, cluster=name, nodes=nodes_of[name], chosen=dispatch.cluster)
            for name in fleet.clusters
        )
        result.append(JobDispatch(pod_group=dispatch.pod_group, cluster=dispatch.cluster, clusters=sentences))
    return tuple(result)


def _cluster_sentence(
    snapshot: Snapshot, after: After, group: PodGroup, *, cluster: ClusterName, nodes: Sequence[Any], chosen: ClusterName | None
) -> str:
    """Example: placed → "gpu-west: placed, 64 gpu on 8 nodes"; elsewhere with 12 devices free
    for a 64-GPU gang → "gpu-east: 52 gpu short (12 free, 64 to start)"."""
    if cluster == chosen:
        bound = after.bound_of(group.key)
        gpu_milli = sum(b.pod.requests.get(GPU, 0) for b in bound)
        return f"{cluster}: placed, {_gpus(gpu_milli)} gpu on {len({b.node.name for b in bound})} nodes"
    pods = snapshot.pods_by_group[group.key]
    to_start = amount_to_start(snapshot, group, pods)
    if to_start == 0:
        return _sentence_without_gpus(snapshot, after, group, cluster=cluster, nodes=nodes)
    free = amount_free_eligible(snapshot, after, group, nodes=nodes)
    if free >= to_start:
        return f"{cluster}: gang of {_gpus(to_start)} gpu fits in {_gpus(free)} free"
    return f"{cluster}: {_gpus(to_start - free)} gpu short ({_gpus(free)} free, {_gpus(to_start)} to start)"


def _sentence_without_gpus(
    snapshot: Snapshot, after: After, group: PodGroup, *, cluster: ClusterName, nodes: Sequence[Any]
) -> str:
    """The same arithmetic for a job that asks no GPUs, over what it does ask (cpu, then
    memory, then the rest): the first resource short, else the first it asks, fitting.
    Example: 2 pods × 400 cpu, 360 cpu free → "gpu-west: 440 cpu short (360 cpu free, 800
    cpu to start)"; a job that asks nothing → "gpu-west: the gang asks no resources"."""
    pods = snapshot.pods_by_group[group.key]
    asked = sorted({r for task in group.tasks for r, amount in task.requests.items() if amount > 0 and r not in (GPU, PODS)},
                   key=lambda r: ({CPU: 0, MEMORY: 1}.get(r, 2), r))
    sums = [(r, amount_to_start(snapshot, group, pods, resource=r)) for r in asked]
    sums = [(r, to_start, amount_free_eligible(snapshot, after, group, nodes=nodes, resource=r)) for r, to_start in sums if to_start]
    if not sums:
        return f"{cluster}: the gang asks no resources"
    for resource, to_start, free in sums:
        if free < to_start:
            amount = partial(reasons.format_quantity, resource)
            return f"{cluster}: {amount(to_start - free)} short ({amount(free)} free, {amount(to_start)} to start)"
    resource, to_start, free = sums[0]
    return f"{cluster}: gang of {reasons.format_quantity(resource, to_start)} fits in {reasons.format_quantity(resource, free)} free"


def _gpus(gpu_milli: int) -> str:
    """8000 → "8"; 500 → "0.5"."""
    return f"{gpu_milli / GPU_MILLI_PER_DEVICE:g}"


# ---- what-if across clusters ----


class ClusterVerdict(BaseModel):
    """What the job would do in one cluster, in that cluster's own names."""

    model_config = ConfigDict(frozen=True)

    cluster: str = Field(description="the cluster")
    chosen: bool = Field(description="the cluster the fleet-wide solve put the job in")
    starts: bool = Field(description="its gang starts there this cycle (chosen: in the fleet-wide solve; "
                         "otherwise: in a solve with the added jobs pinned to this cluster)")
    nodes: tuple[NodeName, ...] = Field((), description="nodes of this cluster its pods are bound to, sorted")
    preempts: tuple[Eviction, ...] = Field((), description="running pods of this cluster evicted for it")
    blocking: tuple[str, ...] = Field((), description="why it does not start there: the rule and the numbers")
    gpus_short: float = Field(0.0, description="in devices: 0 when it starts there; else the GPUs it is short in this cluster "
                              "alone: to start, less those free on its eligible nodes of this cluster")


class FleetJobVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: JobVerdict = Field(description="the fleet-wide solve's verdict (merged names); a job starts in one "
                                "cluster, so its `gpus_free_eligible` is the most free in one cluster and its "
                                "`gpus_short` the fewest of `clusters[].gpus_short` (0 when it starts)")
    cluster: str | None = Field(description="where the fleet-wide solve put it; None: it stays pending")
    clusters: tuple[ClusterVerdict, ...] = Field(description="one per cluster: where inside it, whom it preempts, why not")


@dataclass(frozen=True)
class FleetWhatIf:
    changed: ChangedSnapshot
    decision: FleetDecision
    jobs: tuple[FleetJobVerdict, ...]


def fleet_what_if(
    fleet: Fleet, changes: Changes, *, config: SolveConfig, submitted_at_s: float, solve: Solve = place
) -> FleetWhatIf:
    """Add `changes` to the fleet (nodes and drains by qualified name, `cluster/node`), solve
    once over all clusters, then once per cluster with the added jobs pinned there (node
    selector `batchplace.io/cluster`) — so each job's verdict in a cluster it was not put in
    is that cluster's real answer, not arithmetic. The pinned solves place the added jobs
    among everything else pending, as the fleet-wide one does; they compete with one another."""
    applied = apply_changes(fleet.snapshot, changes, submitted_at_s=submitted_at_s)
    added = set(applied.added_jobs)
    kept = {g.key for g in applied.snapshot.pod_groups if g.key in added and not asks_tighter_topology(g, fleet.cluster_tier)}
    changed = _confined(applied, fleet.cluster_tier)
    added_fleet = Fleet(
        snapshot=changed.snapshot,
        clusters=fleet.clusters,
        cluster_tier=fleet.cluster_tier,
        jobs=(*fleet.jobs, *changed.added_jobs),
        kept_in_one_cluster=fleet.kept_in_one_cluster | kept,
    )
    decision = place_fleet(added_fleet, config, solve=solve)
    fleet_verdicts = job_verdicts(changed, decision.decision)
    chosen = {job.pod_group: job.cluster for job in decision.jobs}
    per_cluster: dict[ClusterName, dict[PodGroupKey, ClusterVerdict]] = {}
    for cluster in fleet.clusters:
        if all(chosen[key] == cluster for key in changed.added_jobs):
            verdicts = fleet_verdicts
        else:
            pinned = _pinned(changed, cluster)
            verdicts = job_verdicts(pinned, _pinned_decision(replace(added_fleet, snapshot=pinned.snapshot), cluster, config, solve))
        per_cluster[cluster] = {
            v.name: _cluster_verdict(v, cluster=cluster, chosen=chosen[v.name] == cluster) for v in verdicts
        }
    jobs = []
    for verdict in fleet_verdicts:
        clusters = tuple(
            _from_fleet(verdict, cluster) if chosen[verdict.name] == cluster else per_cluster[cluster][verdict.name]
            for cluster in fleet.clusters
        )
        jobs.append(
            FleetJobVerdict(
                verdict=_in_one_cluster(added_fleet, decision.decision, verdict, clusters),
                cluster=chosen[verdict.name],
                clusters=clusters,
            )
        )
    return FleetWhatIf(changed=changed, decision=decision, jobs=tuple(jobs))


def _in_one_cluster(fleet: Fleet, decision: Decision, verdict: JobVerdict, clusters: Sequence[ClusterVerdict]) -> JobVerdict:
    """The fleet-wide verdict's GPU figures for a job that runs in one cluster: free, the most
    free in one cluster after the fleet-wide solve; short, the fewest of the clusters' (the
    GPUs that must come free where it comes nearest). Summed over the fleet they would say
    "0 short" of a 24-GPU gang beside 16 free in each of two clusters, 8 short in each."""
    snapshot = fleet.snapshot
    after = build_after(snapshot, decision.placement)
    group = snapshot.pod_group_by_key[verdict.name]
    free = max(
        amount_free_eligible(snapshot, after, group, nodes=[n for n in snapshot.nodes if cluster_of_node(n.name) == name])
        for name in fleet.clusters
    )
    return verdict.model_copy(
        update={
            "gpus_free_eligible": free / GPU_MILLI_PER_DEVICE,
            "gpus_short": 0.0 if verdict.starts else min(c.gpus_short for c in clusters),
        }
    )


def _pinned_decision(fleet: Fleet, cluster: ClusterName, config: SolveConfig, solve: Solve) -> Decision:
    """The solve with the added jobs pinned to `cluster`, a topology reason of theirs said of
    that cluster: "cluster: the gang does not fit in gpu-west: 440 cpu short (…)"."""
    decision = solve(fleet.snapshot, config)
    index = fleet.clusters.index(cluster)
    said = {
        job.pod_group: reasons.not_in_cluster(cluster, why=job.clusters[index])
        for job in explain_dispatch(fleet, decision.placement)
    }
    return _in_cluster_words(fleet, decision, said)


def _confined(changed: ChangedSnapshot, cluster_tier: int) -> ChangedSnapshot:
    """The added jobs kept inside one cluster, as `merge_clusters` keeps submitted jobs."""
    added = set(changed.added_jobs)
    groups = [confine_to_one_cluster(g, cluster_tier) if g.key in added else g for g in changed.snapshot.pod_groups]
    return _with_groups(changed, groups)


def _pinned(changed: ChangedSnapshot, cluster: ClusterName) -> ChangedSnapshot:
    """The added jobs pinned to `cluster` by its node label."""
    added = set(changed.added_jobs)
    groups = [
        g.model_copy(
            update={"tasks": tuple(t.model_copy(update={"node_selector": {**t.node_selector, CLUSTER_LABEL: cluster}}) for t in g.tasks)}
        )
        if g.key in added
        else g
        for g in changed.snapshot.pod_groups
    ]
    return _with_groups(changed, groups)


def _with_groups(changed: ChangedSnapshot, groups: Sequence[PodGroup]) -> ChangedSnapshot:
    base = changed.snapshot
    snapshot = base.replaced(pod_groups=groups)
    return ChangedSnapshot(
        snapshot=snapshot,
        added_jobs=changed.added_jobs,
        added_nodes=changed.added_nodes,
        drained=changed.drained,
        warnings=changed.warnings,
    )


def _cluster_verdict(verdict: JobVerdict, *, cluster: ClusterName, chosen: bool) -> ClusterVerdict:
    """A verdict of a solve with the job pinned to `cluster`, in that cluster's names."""
    return ClusterVerdict(
        cluster=cluster,
        chosen=chosen,
        starts=verdict.starts,
        nodes=tuple(local_node_name(n) for n in verdict.nodes),
        preempts=tuple(_local_eviction(e) for e in verdict.preempts),
        blocking=verdict.blocking,
        gpus_short=verdict.gpus_short,
    )


def _from_fleet(verdict: JobVerdict, cluster: ClusterName) -> ClusterVerdict:
    return _cluster_verdict(verdict, cluster=cluster, chosen=True)


def _local_eviction(eviction: Eviction) -> Eviction:
    return eviction.model_copy(
        update={
            "pod": PodKey(local_pod_key(eviction.pod)),
            "node": local_node_name(eviction.node),
            "for_": PodGroupKey(local_pod_key(eviction.for_)),
        }
    )
