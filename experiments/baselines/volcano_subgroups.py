"""Volcano-like sub-groups: Volcano 1.14's allocate action with sub-group policies and the
network-topology-aware plugin at its defaults — sub-groups placed one after another, each
into the best-scoring domain of its tier inside the job's domain; no joint choice across
sub-groups or jobs, no backtracking across jobs.

Source (volcano-sh/volcano, read, not copied):
- `pkg/scheduler/actions/allocate/allocate.go`, `allocateForJob`: the job's candidate
  HyperNodes come in gradients (`HyperNodeGradientForJobFn`: lowest tier first, up to the
  job's `highestTierAllowed`); in every HyperNode of a gradient it dry-runs the job's
  sub-jobs in order — the ones needed to meet `minSubGroups` first, then the rest
  (`organizeJobWorksheet`) — each with `allocateForSubJob`, stopping once the job is ready;
  of the HyperNodes where the job got ready it keeps the one with the highest sum of its
  sub-jobs' scores (`selectBestHyperNodeForJob`), and tries the next gradient only when none
  did. A job without hard topology has one candidate, the whole cluster.
- `allocateForSubJob`: the same for one sub-job inside the job's HyperNode — gradients of
  HyperNodes of tier ≤ its own limit, every one tried, the best by `HyperNodeOrderFn`.
- `pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go`:
  `hyperNodeGradientFn` keeps HyperNodes whose idle resources cover the (sub-)job's minimum
  (`isEligibleHyperNode`; a running job's search starts at the HyperNode it already holds,
  `getSearchRoot`); `HyperNodeOrderFn` scores a HyperNode by bin packing — the weighted mean
  over resources of (used + asked) / allocatable, cpu and memory at weight 1 and no extended
  resource unless configured (`getPriorityWeight`: the default), 0 when one would overflow.
Ties between equal HyperNode scores go to the first in name order (Volcano keeps map
order). Nodes inside a HyperNode are chosen by the binpack node score the other Volcano-like
baselines use (`experiments.baselines.volcano_like.binpack_score`), pods in order, a
sub-group's Statement rolled back when one pod finds no node. Jobs go oldest first (one
queue, equal priority: Volcano's job order), a running job's unplaced sub-groups included.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
import numpy as np

from experiments.baselines.volcano_like import binpack_score
from experiments.cluster_state import Assignment, ClusterState, best_fit_devices
from experiments.subgroup_workload import SubGroupCluster, SubGroupJob

__all__ = ["VolcanoSubGroups", "SubGroupBind", "hypernode_binpack_score"]

SubGroupBind = tuple[SubGroupJob, int, int, Assignment]
"""(job, sub-group index, replica, where)."""


def hypernode_binpack_score(state: ClusterState, mask: np.ndarray, asked_cpu_milli: int, asked_memory_mib: int) -> float:
    """The network-topology-aware plugin's HyperNode score at its defaults: the mean over
    cpu and memory of (used + asked) / allocatable in the domain; 0 when one overflows.
    Example: 2 nodes of 100 cpu, 40 used, 60 asked → cpu 0.5; memory likewise → 0.5."""
    scores = []
    for capacity, free, asked in (
        (state.cpu_capacity, state.cpu_free, asked_cpu_milli),
        (state.memory_capacity, state.memory_free, asked_memory_mib),
    ):
        allocatable = float(capacity[mask].sum())
        used = allocatable - float(free[mask].sum())
        if used + asked > allocatable:
            return 0.0
        scores.append((used + asked) / allocatable)
    return sum(scores) / len(scores)


class VolcanoSubGroups:
    """See the module docstring. `cycle` binds into `state` and returns what it bound; the
    caller records the binds in the jobs (or releases them)."""

    name = "volcano"

    def __init__(self, cluster: SubGroupCluster):
        self.cluster = cluster
        self._domains = [[ids == d for d in range(len(names))] for ids, names in zip(cluster.domains, cluster.domain_names)]
        """Tier t's domains (`[t - 1]`), each a `[N]` node mask."""
        self._everything = np.ones(cluster.nodes.count, dtype=bool)

    def cycle(self, state: ClusterState, jobs: Sequence[SubGroupJob]) -> tuple[list[SubGroupBind], float]:
        """Binds for the jobs with unplaced sub-groups, oldest first; and the seconds it took."""
        started = time.perf_counter()
        binds: list[SubGroupBind] = []
        for job in sorted(jobs, key=lambda j: (j.arrival_s, j.ident)):
            binds.extend(self._job(state, job))
        return binds, time.perf_counter() - started

    def _job(self, state: ClusterState, job: SubGroupJob) -> list[SubGroupBind]:
        waiting = self._order(job)
        if not waiting:
            return []
        for gradient in self._job_gradients(state, job):
            best: tuple[float, list[SubGroupBind]] | None = None
            for domain in gradient:
                score, placed, ready = self._dry_run(state, job, waiting, domain)
                if ready and placed and (best is None or score > best[0]):
                    best = (score, placed)
            if best is not None:
                return [(job, sub, replica, state.bind(job.request(sub, replica), assignment.node, assignment.devices))
                        for _, sub, replica, assignment in best[1]]  # fmt: skip
        return []

    def _order(self, job: SubGroupJob) -> list[int]:
        """Unplaced sub-groups, the ones `min_sub_groups` still needs first (`organizeJobWorksheet`)."""
        started = job.started_sub_groups()
        have = {policy: sum(1 for s in started if job.sub_groups[s].policy == policy) for policy in job.min_sub_groups}
        required, rest = [], []
        for index, sub in enumerate(job.sub_groups):
            if index in started:
                continue
            if have.get(sub.policy, 0) < job.min_sub_groups.get(sub.policy, 0):
                have[sub.policy] += 1
                required.append(index)
            else:
                rest.append(index)
        return required + rest

    def _job_gradients(self, state: ClusterState, job: SubGroupJob) -> list[list[np.ndarray]]:
        if job.tier is None:
            return [[self._everything]]
        held = {a.node for a in job.assignments.values()}
        need = sum(job.sub_groups[s].pods for s in self._order(job)[: sum(self._missing(job).values())]) * job.gpus_per_pod * 1000
        gradients = []
        for tier in range(1, job.tier + 1):
            eligible = [mask for mask in self._domains[tier - 1]
                        if all(mask[n] for n in held) and float(state.left_total[mask].sum()) >= need]  # fmt: skip
            if eligible:
                gradients.append(eligible)
        return gradients

    @staticmethod
    def _missing(job: SubGroupJob) -> dict[str, int]:
        """Policy → sub-groups still to start before the job is ready (`JobReady`)."""
        started = job.started_sub_groups()
        return {policy: max(0, count - sum(1 for s in started if job.sub_groups[s].policy == policy))
                for policy, count in job.min_sub_groups.items()}  # fmt: skip

    def _dry_run(self, state: ClusterState, job: SubGroupJob, waiting: list[int], domain: np.ndarray) -> tuple[float, list[SubGroupBind], bool]:
        """Sub-groups in order inside `domain` until the job is ready (a running job: every
        one that fits); whether it got ready (a running job: one more sub-group started).
        What it bound is released before returning."""
        placed: list[SubGroupBind] = []
        score = 0.0
        missing = self._missing(job)
        running = not any(missing.values())
        for sub in waiting:
            got = self._sub_group(state, job, sub, domain)
            if got is None:
                continue
            sub_score, binds = got
            placed.extend(binds)
            score += sub_score
            policy = job.sub_groups[sub].policy
            if missing.get(policy, 0) > 0:
                missing[policy] -= 1
            if not running and not any(missing.values()):
                break
        ready = bool(placed) and not any(missing.values())
        for _, sub, replica, assignment in reversed(placed):
            state.release(job.request(sub, replica), assignment)
        return score, placed, ready

    def _sub_group(self, state: ClusterState, job: SubGroupJob, sub: int, inside: np.ndarray) -> tuple[float, list[SubGroupBind]] | None:
        """The sub-group bound in the best domain of the lowest tier where one takes it."""
        spec = job.sub_groups[sub]
        pod = job.request(sub, 0)
        need = spec.pods * pod.total_gpu_milli
        for tier in range(1, spec.tier + 1):
            best: tuple[float, np.ndarray] | None = None
            for domain in self._domains[tier - 1]:
                mask = domain & inside
                if not mask.any() or not (domain <= inside).all() or float(state.left_total[mask].sum()) < need:
                    continue
                binds = self._bind_pods(state, job, sub, mask)
                if binds is None:
                    continue
                for _, s, replica, assignment in reversed(binds):
                    state.release(job.request(s, replica), assignment)
                score = hypernode_binpack_score(state, mask, spec.pods * pod.cpu_milli, spec.pods * pod.memory_mib)
                if best is None or score > best[0]:
                    best = (score, mask)
            if best is not None:
                binds = self._bind_pods(state, job, sub, best[1])
                assert binds is not None  # the same dry run, on the same state
                return best[0], binds
        return None

    @staticmethod
    def _bind_pods(state: ClusterState, job: SubGroupJob, sub: int, mask: np.ndarray) -> list[SubGroupBind] | None:
        """Every pod of the sub-group on the best binpack node in `mask`, or None (rolled back)."""
        binds: list[SubGroupBind] = []
        for replica in range(job.sub_groups[sub].pods):
            pod = job.request(sub, replica)
            nodes = np.flatnonzero(state.feasible(pod) & mask)
            if not nodes.size:
                for _, s, r, assignment in reversed(binds):
                    state.release(job.request(s, r), assignment)
                return None
            node = int(nodes[int(np.argmax(binpack_score(state, pod, nodes)))])
            binds.append((job, sub, replica, state.bind(pod, node, best_fit_devices(state.gpu_left[node].tolist(), pod))))
        return binds
