"""batchplace in the LLM timeline: each cycle is one `Snapshot` of everything, solved by
`solver.place` (checker included), the decision applied to the simulator.

Input: a `timeline_llm.World`. The snapshot has the 128 nodes, the leaf and spine
HyperNodes, the three weighted queues, and one PodGroup per job that runs or waits
(`min_member` = its pods, its priority, arrival as `creation_time`, hard or soft network
topology); running pods carry their node and GPU indices. Output: a `CycleOutcome` —
evicted jobs are released whole here (a training gang cannot run short of its
`min_member`) before the binds are applied, so the binds see the capacity the solver saw.
The snapshot's clock is the simulator's, and every job's waiting time is the scenario's
`sla_waiting_s` (the controller's `--sla-waiting-time`): past it, a pending job holds
nodes (`solver.rules.reservation`), whose GPUs the outcome reports as reserved. Each job's
time limit (`Job.active_deadline_s`) is its pods' `active_deadline_s`, which lets a job
that will be gone in time backfill nodes held for another. A queue may have a GPU
capability (`capabilities`, milli-GPU); the outcome names the pending jobs whose reasons a
node added to the cluster could lift (`CycleOutcome.waiting_for_nodes`), which is what the
controller's PodScheduled condition tells an autoscaler. The node list may change between
cycles (an autoscaled cluster): the snapshot's nodes follow the `ClusterState`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from experiments.cluster_state import WHOLE, ClusterState
from experiments.timeline_llm import QUEUE_WEIGHTS, CycleOutcome, Job, World
from models.snapshot import Node, NodeName, Snapshot
from solver.place import SolveConfig, place
from solver.reasons import nodes_would_help
from solver.rules.reservation import reservations

__all__ = ["BatchplaceCycle"]

NAMESPACE = "llm"
MIB = 1024 * 1024


class BatchplaceCycle:
    """One `solver.place` per cycle; see the module docstring."""

    def __init__(self, engine: str, *, time_limit_s: float = 2.0, sla_waiting_s: float | None = None,
                 capabilities: Mapping[str, int] | None = None):  # fmt: skip
        self.name = engine
        self.config = SolveConfig(engine=engine, time_limit_s=time_limit_s, workers=1)  # type: ignore[arg-type]
        self.sla_waiting_s = sla_waiting_s
        self.capabilities = dict(capabilities or {})  # queue → GPU capability, milli-GPU
        self._names: tuple[str, ...] = ()
        self._nodes: list[Node] | None = None
        self._hypernodes: list[dict[str, Any]] | None = None

    def cycle(self, world: World) -> CycleOutcome:
        snapshot = self.snapshot(world)
        decision = place(snapshot, self.config)
        state = world.state
        jobs = {f"{NAMESPACE}/j{job.ident}": job for job in (*world.running, *world.pending)}
        evicted: dict[int, Job] = {}
        evicted_for: dict[int, int] = {}
        for eviction in decision.placement.evictions:
            job = jobs[eviction.pod.rsplit("-", 1)[0]]
            evicted[job.ident] = job
            evicted_for[job.ident] = jobs[eviction.for_].ident
        for job in evicted.values():
            for replica, assignment in job.assignments.items():
                state.release(job.request(replica), assignment)
        binds = []
        row_of = {name: n for n, name in enumerate(state.nodes.names)}
        for bind in decision.placement.binds:
            key, replica = bind.pod.rsplit("-", 1)
            job = jobs[key]
            assignment = state.bind(job.request(int(replica)), row_of[bind.node], bind.gpus)
            binds.append((job, int(replica), assignment))
        held = {node for reservation in reservations(snapshot) for node in reservation.nodes}
        reserved = sum(int(state.gpu_count[row_of[node]]) * WHOLE for node in held)
        waiting_for_nodes = frozenset(jobs[outcome.name].ident for outcome in decision.podgroups
                                      if outcome.state == "pending" and nodes_would_help(outcome.reasons))  # fmt: skip
        return CycleOutcome(binds=tuple(binds), evicted=tuple(evicted.values()), solve_seconds=decision.solve_seconds,
                            reserved_gpu_milli=reserved, evicted_for=tuple(evicted_for.items()),
                            waiting_for_nodes=waiting_for_nodes)  # fmt: skip

    def snapshot(self, world: World) -> Snapshot:
        state = world.state
        if self._nodes is None or self._names != state.nodes.names:
            self._names = state.nodes.names
            self._nodes = [_node(state, n) for n in range(state.node_count)]
            self._hypernodes = _hypernodes(world)
        groups, pods = [], []
        for job in (*world.running, *world.pending):
            groups.append(_pod_group(job))
            for replica in range(job.pods):
                pods.append(_pod(state, job, replica, world.now_s))
        return Snapshot.model_validate(
            {
                "nodes": self._nodes,
                "hypernodes": self._hypernodes,
                "queues": [_queue(q, w, self.capabilities.get(q)) for q, w in QUEUE_WEIGHTS.items()],
                "pod_groups": groups,
                "pods": pods,
                "reservation_policy": {"sla_waiting_s": self.sla_waiting_s, "judged_at_s": world.now_s},
            }
        )


def _queue(name: str, weight: int, capability_gpu_milli: int | None) -> dict[str, Any]:
    queue: dict[str, Any] = {"name": name, "weight": weight}
    if capability_gpu_milli is not None:
        queue["capability"] = {"gpu": capability_gpu_milli}
    return queue


def _node(state: ClusterState, n: int) -> Node:
    return Node.model_validate(
        {
            "name": NodeName(state.nodes.names[n]),
            "allocatable": {
                "cpu": int(state.cpu_capacity[n]),
                "memory": int(state.memory_capacity[n]) * MIB,
                "gpu": int(state.gpu_count[n]) * WHOLE,
            },
        }
    )


def _hypernodes(world: World) -> list[dict[str, Any]]:
    names = world.state.nodes.names
    leaves = [
        {"name": f"leaf-{leaf}", "tier": 1, "node_members": [names[n] for n in range(len(names)) if world.leaf[n] == leaf]}
        for leaf in range(int(world.leaf.max()) + 1)
    ]
    spines = [
        {"name": f"spine-{spine}", "tier": 2,
         "hypernode_members": sorted({f"leaf-{int(world.leaf[n])}" for n in range(len(names)) if world.spine[n] == spine})}
        for spine in range(int(world.spine.max()) + 1)
    ]  # fmt: skip
    return leaves + spines


def _requests(job: Job) -> dict[str, int]:
    gpu = job.num_gpu * WHOLE if job.gpu_milli == WHOLE else job.gpu_milli
    return {"cpu": job.cpu_milli, "memory": job.memory_mib * MIB, "gpu": gpu}


def _pod_group(job: Job) -> dict[str, Any]:
    group: dict[str, Any] = {
        "namespace": NAMESPACE,
        "name": f"j{job.ident}",
        "queue": job.queue,
        "priority": job.priority,
        "min_member": job.pods,
        "creation_time": job.arrival_s,
        "tasks": [{"name": "main", "requests": _requests(job), "active_deadline_s": job.active_deadline_s}],
    }
    if job.topology != "none" and job.pods > 1:
        group["network_topology"] = {"mode": job.topology, "highest_tier_allowed": job.tier}
    return group


def _pod(state: ClusterState, job: Job, replica: int, now_s: float) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "namespace": NAMESPACE,
        "name": f"j{job.ident}-{replica}",
        "pod_group": f"{NAMESPACE}/j{job.ident}",
        "task": "main",
        "requests": _requests(job),
        "priority": job.priority,
        "active_deadline_s": job.active_deadline_s,
    }
    assignment = job.assignments.get(replica)
    if assignment is None:
        pod["phase"] = "pending"
    else:
        pod.update(phase="running", node=state.nodes.names[assignment.node], gpu_indices=list(assignment.devices),
                   start_time=job.start_s if job.start_s is not None else now_s)  # fmt: skip
    return pod
