"""The greedy engine: fairness-ordered, gang-aware, topology-aware best fit, vectorized
over nodes with numpy. Answers alone, as CP-SAT's fallback, and as its hint.

Input: a `Snapshot` (and optionally its `Problem`, if the caller built one). Output: a
`Decision` with engine "greedy" and status "GREEDY". It follows Volcano's actions:

1. *allocate* — queues are served in fairness order, re-evaluated after every turn
   (`proportion.go`'s QueueOrderFn): first queues whose next PodGroup still fits within
   their deserved share, then the rest (idle capacity may be overused, capability never);
   among those the lowest dominant share (allocated incl. this cycle's binds / deserved)
   along the queue's path from the root, then queue priority, then name. Within a queue,
   PodGroups by priority, then age, then key. A PodGroup's minimum (`gang_requirement`:
   min_member and, when they apply, each task's min_available, running pods counted,
   waiting tasks left out) is placed as one transaction (Volcano's `Statement`) and rolled back whole if it
   does not fit. Its further pods are then placed one per turn, each on its own, and
   the PodGroup goes back to its queue between turns, as Volcano pushes a ready job back.
   Worked example: 3 CPU, queue-a weight 1 and queue-b weight 2 (deserved 1 and 2 CPU),
   six 0.5-CPU jobs each → a, b, b, a, b, b: b gets 4 jobs, a gets 2.
2. *preempt*, then *reclaim* (`greedy.preempt.py`) for PodGroups still pending, each
   a transaction of evictions and binds together.

Hard topology: the gang goes whole into the first candidate domain (`greedy.topology`)
where its transaction succeeds; soft topology prefers such a domain, then the cluster.
A PodGroup with sub-groups (gangs inside the gang) fills that transaction sub-group by
sub-group, each whole inside one domain of its own tier (`greedy.sub_groups`).

Pod affinity, anti-affinity and topology spread (`greedy.interpod`) are filtered pod by pod
as kube-scheduler does, against the pods running and bound so far, and their preferred
parts order the nodes. Since the rules judge the cycle's end state, the engine then checks
it with the rules themselves; a PodGroup whose pods break one there (rare: a pod bound
later took away an earlier one's first-of-series exception) is placed again after all the
others in a new pass, and waits with the violation as its reason if it breaks one again.

Every PodGroup left pending carries reasons (`solver.reasons`); `solver.outcome` builds
the Decision. Deterministic: same snapshot, same placement (ties go to the lower node
index, i.e. snapshot order).

Not promised: optimality, or the fewest victims (`greedy.preempt`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass

import numpy as np

from models.placement import Bind, Decision, Eviction, Placement
from models.snapshot import PodGroupKey, Snapshot, gpu_devices
from solver import reasons
from solver.after import build_after
from solver.fragmentation import PackingName, TypicalShape, packing_score
from solver.greedy import sub_groups
from solver.greedy.explain import eligibility_error, fit_error, unplaceable_tasks
from solver.greedy.plan import GreedyFailure, GroupPlan, GroupPlans, PlanTask, dominant_share_of_row, dominant_shares
from solver.greedy.preempt import Preemptor, VictimPool, run_preemption
from solver.greedy.quota_hold import holding_capability
from solver.greedy.state import CycleState
from solver.greedy.topology import BestDomain, Domain, candidate_domains, key_resource
from solver.outcome import build_decision
from solver.problem import Problem, build_problem
from solver.rules import pod_affinity, topology_spread
from solver.rules import counted
from solver.rules.gang import members_missing, minimum_pods, task_shortfalls

__all__ = ["GreedyConfig", "solve_greedy", "GreedyEngine", "GroupPlan", "dominant_shares"]

ENGINE = "greedy"


@dataclass(frozen=True)
class GreedyConfig:
    """Which Volcano actions run after allocate."""

    preemption: bool = True
    reclaim: bool = True
    packing: PackingName = "fragmentation"
    """Node score: fragmentation growth first, then best fit (`solver.fragmentation`), or best fit alone."""
    typical_shapes: tuple[TypicalShape, ...] = ()
    """Expected pod shapes for the fragmentation score; empty: the snapshot's pending pods."""


def solve_greedy(
    snapshot: Snapshot, *, config: GreedyConfig = GreedyConfig(), problem: Problem | None = None
) -> Decision:
    """One greedy cycle over `snapshot`; see the module docstring."""
    started = time.perf_counter()
    snapshot = counted(snapshot)  # what `build_problem` reads (solver.rules.counted)
    problem = problem if problem is not None else build_problem(snapshot)
    engine = GreedyEngine(snapshot, problem, config)
    placement, group_reasons = engine.run()
    deferred: set[PodGroupKey] = set()
    dropped: dict[PodGroupKey, list[str]] = {}
    while breaches := engine.inter_pod_breaches(placement):
        # Rare: a pod bound later broke an earlier one's constraint in the end state. The
        # cycle is placed again with the PodGroups whose pods break a rule placed after all
        # others (then they see those others); one that breaks a rule again waits. Each
        # round defers or drops at least one more PodGroup, so this ends.
        for key, sentences in breaches.items():
            if key in deferred:
                dropped[key] = sentences
            deferred.add(key)
        engine = GreedyEngine(snapshot, problem, config, deferred=deferred - dropped.keys(), dropped=dropped)
        placement, group_reasons = engine.run()
    return build_decision(
        snapshot,
        placement,
        engine=ENGINE,
        status="GREEDY",
        solve_seconds=time.perf_counter() - started,
        reasons=group_reasons,
    )


class GreedyEngine:
    """One cycle: allocate, preempt, reclaim. Also the seam `greedy.preempt` works through."""

    def __init__(
        self,
        snapshot: Snapshot,
        problem: Problem,
        config: GreedyConfig,
        *,
        deferred: Set[PodGroupKey] = frozenset(),
        dropped: Mapping[PodGroupKey, Sequence[str]] | None = None,
    ):
        self.snapshot = snapshot
        self.problem = problem
        self.config = config
        self.state = CycleState(problem, snapshot)
        self.state.packing = packing_score(snapshot, problem, packing=config.packing, typical=config.typical_shapes)
        self.plans = GroupPlans(snapshot, problem)
        for key, sentences in unplaceable_tasks(snapshot, problem).items():  # they hold whatever else happens
            self.plans[problem.group_index[key]].static_reasons.extend(sentences)
        for key, sentences in (dropped or {}).items():  # their placement broke an inter-pod rule
            plan = self.plans[problem.group_index[key]]
            plan.failure = GreedyFailure.INTER_POD
            plan.reasons = [*sentences, *plan.static_reasons]
        self._deferred = {problem.group_index[key] for key in deferred}  # allocated after all the others
        self._head_demands: dict[int, np.ndarray] = {}  # PodGroup index → demand while it waits at a queue's head
        self._deserved_lists = problem.queue_deserved.tolist()
        self.victims = VictimPool(self)  # who preempt / reclaim may evict, asked once per kind of preemptor

    def run(self) -> tuple[Placement, dict[PodGroupKey, list[str]]]:
        self._allocate()
        if self.config.preemption:
            run_preemption(self, action="preempt")
        if self.config.reclaim:
            run_preemption(self, action="reclaim")
        keys = self.problem.group_keys
        return self._placement(), {keys[k]: _distinct(self.plans.reasons(k)) for k in range(len(keys))}

    def replay(self, placement: Placement) -> None:
        """Make the state the one after `placement`, another engine's answer: its evictions,
        then its binds on their own devices, all final (`commit`ted). What runs next judges
        or places in what that placement left (`solver.pending_reasons`, `solver.partition.fill`)."""
        state, problem = self.state, self.problem
        pod_index = {key: i for i, key in enumerate(problem.pod_keys)}
        for eviction in placement.evictions:
            state.evict(pod_index[eviction.pod], reason=eviction.reason, for_group=problem.group_index[eviction.for_])
        for bind in placement.binds:
            pod = pod_index[bind.pod]
            node = problem.node_index[bind.node]
            state.bind_on(pod, state.shape(int(problem.pod_task_row[pod])), node, gpus=bind.gpus, numa_cell=bind.numa_cell)
        state.forget()

    def inter_pod_breaches(self, placement: Placement) -> dict[PodGroupKey, list[str]]:
        """PodGroups whose bound pods break rule `pod_affinity` or `topology_spread` in the
        end state of `placement`, with the violations as reasons; {} when there is no
        inter-pod constraint at all (nothing is checked then)."""
        if self.state.inter_pod is None:
            return {}
        after = build_after(self.snapshot, placement)
        out: dict[PodGroupKey, list[str]] = {}
        for rule in (pod_affinity, topology_spread):
            for violation in rule.check(self.snapshot, after):
                pod = self.snapshot.pod_by_key[violation.subject]  # type: ignore[index]
                out.setdefault(pod.pod_group, []).append(reasons.inter_pod_breach(rule.NAME, violation.message))  # type: ignore[arg-type]
        return out

    def unbound(self, task: PlanTask, limit: int | None = None) -> list[int]:
        """Pending pods of `task` not bound yet, at most `limit`, in order."""
        binds, pods, out = self.state.binds, task.pending, []
        index = task.cursor
        while index < len(pods) and (limit is None or len(out) < limit):
            if pods[index] not in binds:
                out.append(pods[index])
            index += 1
        return out

    def commit(self, plan: GroupPlan) -> None:
        """Make this cycle's binds and evictions so far final, and move `plan`'s cursors past its bound pods."""
        self.state.forget()
        for task in plan.tasks:
            while task.cursor < len(task.pending) and task.pending[task.cursor] in self.state.binds:
                task.cursor += 1

    def minimum_counts(self, plan: GroupPlan) -> dict[int, int]:
        """Pods per task row the minimum still needs (`gang.minimum_pods`, running pods as they
        stand now): each task's minimum, then min_member filled from the tasks in `fill_order`
        (a task no node matches last, so it is asked for only when the others cannot meet the
        minimum). Example: min_member 5, tasks a (min 2, 4 pending) and b (min 2), nothing
        running → {a: 3, b: 2}; min_member 4, one task of min 20 (task minimums do not apply)
        with 20 pending → {task: 4}."""
        counts = minimum_pods(
            plan.requirement,
            self.running_per_task(plan),
            [(task.name, len(task.pending) - task.cursor) for task in plan.fill_order],
        )
        return {task.row: counts[task.name] for task in plan.tasks}

    def running_per_task(self, plan: GroupPlan) -> dict[str, int]:
        """Every task of the PodGroup → its pods running now (evictions this cycle taken off)."""
        running = self.state.running_by_task
        return {name: int(running[row]) for name, row in plan.task_rows.items()}

    def demand(self, plan: GroupPlan, counts: dict[int, int]) -> tuple[np.ndarray, int]:
        """Requests summed over `counts` pods per task row, and the whole GPU devices they take."""
        problem = self.problem
        total = np.zeros(len(problem.resource_names), dtype=np.int64)
        devices = 0
        for row, count in counts.items():
            total += count * problem.task_requests[row]
            gpu = int(problem.task_requests[row, problem.gpu_column])
            devices += count * gpu_devices(gpu)
        return total, devices

    # ---- allocate: fairness order ----

    def _allocate(self) -> None:
        self._allocate_some(lambda plan: plan.index not in self._deferred)
        if self._deferred:
            self._allocate_some(lambda plan: plan.index in self._deferred)

    def _allocate_some(self, chosen: Callable[[GroupPlan], bool]) -> None:
        queues: dict[int, deque[GroupPlan]] = {}
        for plan in sorted(self.plans.with_pending(), key=lambda p: p.order):
            if chosen(plan) and self._has_work(plan):
                queues.setdefault(plan.queue, deque()).append(plan)
        # A queue's key changes only when its head changes or a queue on its path gains
        # binds, so keys are cached and dropped for the queues sharing the served one's path.
        keys: dict[int, tuple[object, ...]] = {}
        related = self._related_queues()
        while queues:
            if len(queues) == 1:
                queue = next(iter(queues))
            else:
                for q in queues:
                    if q not in keys:
                        keys[q] = self._queue_key(q, queues[q][0])
                queue = min(queues, key=keys.__getitem__)
            plan = queues[queue].popleft()
            requeue = self._turn(plan, alone=len(queues) == 1 and not queues[queue])
            self._head_demands.pop(plan.index, None)
            for q in related[queue]:
                keys.pop(q, None)
            if requeue:
                queues[queue].appendleft(plan)
            if not queues[queue]:
                del queues[queue]

    def _related_queues(self) -> list[list[int]]:
        """Per queue, the queues whose path from the root shares a queue with its path."""
        under: dict[int, list[int]] = {}  # queue → the queues whose path passes through it
        for q, path in enumerate(self.problem.queue_ancestors):
            for a in path:
                under.setdefault(a, []).append(q)
        return [sorted({q for a in path for q in under[a]}) for path in self.problem.queue_ancestors]

    def _has_work(self, plan: GroupPlan) -> bool:
        return not plan.failure and any(self.unbound(task, 1) for task in plan.tasks)

    def dominant_shares(self) -> np.ndarray:
        """`[Q]` dominant share of every queue now (this cycle's binds included)."""
        return dominant_shares(self.state.queue_used, self.problem.queue_deserved)

    def _queue_key(self, queue: int, head: GroupPlan) -> tuple[object, ...]:
        """(would the head PodGroup take a queue on the path past its deserved share, then per
        queue on the path from the root: dominant share, −priority, name) — smaller goes first.
        Plain Python over a few short rows: cheaper than numpy at this size."""
        problem, used_rows = self.problem, self.state.queue_used
        demand = [(r, amount) for r, amount in enumerate(self._head_demand(head).tolist()) if amount > 0]
        over = False
        levels = []
        for a in reversed(problem.queue_ancestors[queue]):
            used, deserved = used_rows[a].tolist(), self._deserved_lists[a]
            over = over or any(used[r] + amount > deserved[r] for r, amount in demand)
            share = dominant_share_of_row(used, deserved)
            levels.append((share, -int(problem.queue_priority[a]), problem.queue_names[a]))
        return (over, tuple(levels))

    def _head_demand(self, plan: GroupPlan) -> np.ndarray:
        demand = self._head_demands.get(plan.index)
        if demand is None:
            demand = self._head_demands[plan.index] = self._compute_head_demand(plan)
        return demand

    def _compute_head_demand(self, plan: GroupPlan) -> np.ndarray:
        if not plan.minimum_met:
            return self.demand(plan, self.minimum_counts(plan))[0]
        for task in plan.tasks:
            if task.row not in plan.exhausted and self.unbound(task, 1):
                return self.problem.task_requests[task.row]
        return np.zeros(len(self.problem.resource_names), dtype=np.int64)

    def _turn(self, plan: GroupPlan, *, alone: bool) -> bool:
        """Serve `plan` once; True when it goes back to its queue for more."""
        if not plan.minimum_met:
            if not self.attempt(plan, action=None):
                return False
            if not alone:
                return self._has_extras(plan)
        return self._place_extras(plan, all_at_once=alone)

    def _has_extras(self, plan: GroupPlan) -> bool:
        return any(task.row not in plan.exhausted and self.unbound(task, 1) for task in plan.tasks)

    def _place_extras(self, plan: GroupPlan, *, all_at_once: bool) -> bool:
        """Pods beyond the minimum, each on its own (no rollback): all, or one per turn."""
        if plan.sub_groups:
            return sub_groups.place_extras(self, plan, all_at_once=all_at_once)
        for task in plan.tasks:
            if task.row in plan.exhausted:
                continue
            pods = self.unbound(task, None if all_at_once else 1)
            if not pods:
                continue
            got = self._place(plan, task, len(pods), plan.domain, preemptor=None)
            if got < len(pods) and plan.soft_topology and plan.domain is not None:
                got += self._place(plan, task, len(pods) - got, None, preemptor=None)
            if got < len(pods):
                plan.exhausted.add(task.row)
                if not self.state.running_count[plan.index] + self.state.bound_count[plan.index]:
                    self._explain_extras(plan, task)
            self.commit(plan)
            if not all_at_once and got:
                return self._has_extras(plan)
        return False

    def _explain_extras(self, plan: GroupPlan, task: PlanTask) -> None:
        """A PodGroup with no minimum that got no pod at all: say why — its queue's capability
        when that holds every pod it could start with (`greedy.quota_hold`), else why no node
        takes a pod the capability allows (`task`'s when it is one)."""
        quota = self.quota_holding(plan)
        if not quota:
            room, _ = self.state.quota_room(plan.queue, self.state.shape(task.row))
            task = task if room else (self._uncapped_task(plan) or task)
        why = quota or self.no_more_pods(plan, task.row, task.name)
        plan.reasons = [*why, *plan.static_reasons]

    def no_more_pods(self, plan: GroupPlan, row: int, name: str) -> list[str]:
        """Why one more pod of `plan`'s task `name` (task row `row`) does not place in the
        current state: its queue's capability, else the nodes' fit error."""
        state = self.state
        shape = state.shape(row)
        room, blocker = state.quota_room(plan.queue, shape)
        if room == 0 and blocker is not None:
            return [self._quota_exceeded(blocker, shape.requests)]
        return fit_error(state, shape, plan.group.task_by_name[name], plan.domain)

    def _quota_exceeded(self, blocker: tuple[int, int], asked: np.ndarray) -> reasons.Reason:
        """The quota reason for (queue, resource) `blocker`, the pods in question asking `asked` (`[R]`)."""
        queue, r = blocker
        return reasons.quota_exceeded(
            self.problem.queue_names[queue],
            resource=self.problem.resource_names[r],
            capability=int(self.problem.queue_capability[queue, r]),
            in_use=int(self.state.queue_used[queue, r]),
            needs=int(asked[r]),
        )

    # ---- one PodGroup ----

    def attempt(self, plan: GroupPlan, *, action: str | None, commit: bool = True) -> bool:
        """Place `plan`'s minimum (with evictions when `action` is "preempt"/"reclaim"),
        trying topology domains first; commit on success, and place extras right away
        when preempting. Records reasons on failure. `commit=False` only asks: a minimum
        that fits is rolled back and the plan left as it was (`solver.pending_reasons`)."""
        if not commit:
            mark = self.state.checkpoint()
            fits = self._attempt(plan, action=action, commit=False)
            self.state.rollback(mark)
            if fits and not any(self.minimum_counts(plan).values()):
                fits = self._one_pod_fits(plan)  # a minimum of nothing: the PodGroup waits for its first pod
            return fits
        return self._attempt(plan, action=action, commit=True)

    def _one_pod_fits(self, plan: GroupPlan) -> bool:
        """Does one pod of some task fit now? If not, `plan.reasons` say why the first does not."""
        waiting = [task for task in plan.tasks if self.unbound(task, 1)]
        for task in waiting:
            mark = self.state.checkpoint()
            got = self._place(plan, task, 1, plan.domain, preemptor=None)
            self.state.rollback(mark)
            if got:
                return True
        if waiting:
            self._explain_extras(plan, waiting[0])
        return False

    def _attempt(self, plan: GroupPlan, *, action: str | None, commit: bool) -> bool:
        counts = self.minimum_counts(plan)
        plan.sub_group_reasons = []  # this try's, said with the job's topology reason when no domain holds it
        for task in plan.tasks:
            if counts[task.row] and not self.problem.eligible_nodes(task.row).any():
                # A minimum that crosses its queue's capability waits for the quota as well.
                quota = self.quota_holding(plan)
                plan.failure = GreedyFailure.QUOTA if quota else GreedyFailure.ELIGIBILITY
                task_model = plan.group.task_by_name[task.name]
                plan.reasons = [*quota, *eligibility_error(self.state, task_model, task.row), *plan.static_reasons]
                return False
        if plan.tier_limit is not None or plan.soft_topology:
            domains, best = self._domains(plan, counts, action)
            for domain in domains:
                mask = domain.mask(self.problem)
                if self._minimum(plan, counts, mask, action):
                    if not commit:
                        return True
                    plan.domain = mask
                    return self._committed(plan, action)
            if plan.tier_limit is not None:
                if plan.failure not in (GreedyFailure.QUOTA, GreedyFailure.ELIGIBILITY):
                    plan.failure = GreedyFailure.TOPOLOGY
                    demand, _ = self.demand(plan, counts)
                    key = key_resource(self.problem, demand)
                    name = self.problem.resource_names[key]
                    plan.reasons = [
                        reasons.topology_no_domain(
                            tier=plan.tier_limit,
                            needs=self.problem.resources_dict(demand),
                            best=best.name if best else None,
                            best_free={name: best.free} if best else {},
                        ),
                        *plan.sub_group_reasons,
                        *plan.static_reasons,
                    ]
                    # No domain was tried, so no transaction met the queue's capability: say it
                    # too, or an autoscaler reads "a node would help" for a gang its quota holds.
                    quota = self.quota_holding(plan)
                    if quota:
                        plan.failure = GreedyFailure.QUOTA
                        plan.reasons[:0] = quota
                return False
        if self._minimum(plan, counts, None, action):
            if not commit:
                return True
            plan.domain = None
            return self._committed(plan, action)
        return False

    def _committed(self, plan: GroupPlan, action: str | None) -> bool:
        self.commit(plan)
        plan.minimum_met = True
        plan.failure = None
        plan.reasons = []
        if action is not None:
            self._place_extras(plan, all_at_once=True)
        return True

    def _domains(
        self, plan: GroupPlan, counts: dict[int, int], action: str | None
    ) -> tuple[list[Domain], BestDomain | None]:
        problem, state = self.problem, self.state
        available, whole = state.free, state.whole_free
        if action is not None:
            available, whole = Preemptor.hypothetical(self, plan, action)
        eligible_any = np.zeros(problem.node_count, dtype=bool)
        for task in plan.tasks:
            eligible_any |= problem.eligible_nodes(task.row)
        all_counts = {task.row: len(task.pending) - task.cursor for task in plan.tasks}
        demand_min, devices_min = self.demand(plan, counts)
        demand_all, devices_all = self.demand(plan, all_counts)
        return candidate_domains(
            problem,
            available=available,
            whole_available=whole,
            eligible_any=eligible_any,
            anchors=self.anchors(plan),
            demand_min=demand_min,
            devices_min=devices_min,
            demand_all=demand_all,
            devices_all=devices_all,
            tier_limit=plan.tier_limit,
            whole_only=plan.tier_limit is None,
            domain_free=state.domain_free if action is None else None,
        )

    def anchors(self, plan: GroupPlan) -> np.ndarray:
        """Nodes of the PodGroup's running pods that are not evicted."""
        problem, evicted = self.problem, self.state.evictions
        return np.array([problem.pod_node[p] for p in plan.running_pods if p not in evicted], dtype=np.int64)

    def _minimum(
        self, plan: GroupPlan, counts: dict[int, int], domain: np.ndarray | None, action: str | None
    ) -> bool:
        """The minimum inside `domain` (None: anywhere) as one Statement: all of it, or nothing
        (rolled back); a PodGroup with sub-groups places them whole (`greedy.sub_groups`)."""
        if plan.sub_groups:
            return sub_groups.transaction(self, plan, domain, action)
        return self._transaction(plan, counts, domain, action)

    def _transaction(
        self, plan: GroupPlan, counts: dict[int, int], domain: np.ndarray | None, action: str | None
    ) -> bool:
        """The minimum as one Statement: all of it, or nothing (rolled back)."""
        state = self.state
        mark = state.checkpoint()
        preemptor = Preemptor(self, plan, action) if action is not None else None
        placed = 0
        shortfalls = task_shortfalls(plan.requirement, self.running_per_task(plan))
        for task in plan.tasks:
            need = shortfalls[task.name]
            got = self._place(plan, task, need, domain, preemptor)
            placed += got
            if got < need:
                return self._fail(plan, task, counts, domain, mark, placed)
        remaining = members_missing(plan.requirement, int(state.running_count[plan.index]), placed)
        last = plan.tasks[-1] if plan.tasks else None
        for task in plan.fill_order:
            if remaining <= 0:
                break
            spare = len(self.unbound(task))
            if spare:
                last = task
                got = self._place(plan, task, min(remaining, spare), domain, preemptor)
                placed += got
                remaining -= got
        if remaining > 0 and last is not None:
            return self._fail(plan, last, counts, domain, mark, placed)
        return True

    def _place(
        self, plan: GroupPlan, task: PlanTask, count: int, domain: np.ndarray | None, preemptor: Preemptor | None
    ) -> int:
        if count <= 0:
            return 0
        return self.place_pods(plan, task.row, self.unbound(task, count), domain, preemptor)

    def place_pods(
        self, plan: GroupPlan, row: int, pods: list[int], domain: np.ndarray | None, preemptor: Preemptor | None
    ) -> int:
        """Bind `pods` (pending, of task row `row`) inside `domain` (None: anywhere) as far as
        they fit, evicting through `preemptor` when given; how many were bound."""
        state = self.state
        shape = state.shape(row)
        base = self.problem.eligible_nodes(row)
        if domain is not None:
            base = base & domain
        got = state.place_batch(shape, pods, base, queue=plan.queue)
        while preemptor is not None and got < len(pods) and preemptor.make_room(shape, state.inter_pod_base(row, base)):
            more = state.place_batch(shape, pods[got:], base, queue=plan.queue)
            if not more:
                break
            got += more
        return got

    def _fail(
        self, plan: GroupPlan, task: PlanTask, counts: dict[int, int], domain: np.ndarray | None, mark: int, placed: int
    ) -> bool:
        """Explain the failure in the state it happened in, then roll the transaction back."""
        state, problem = self.state, self.problem
        room, _ = state.quota_room(plan.queue, state.shape(task.row))
        explained = task if room else self._uncapped_task(plan)  # a capped pod: why the others did not go
        details = [] if explained is None else self._fit_error(plan, explained, domain)
        state.rollback(mark)
        demand, _ = self.demand(plan, counts)
        sentences = []
        minimum = plan.requirement.min_member
        if minimum > 1:
            key = key_resource(problem, demand)
            eligible_any = np.zeros(problem.node_count, dtype=bool)
            for each in plan.tasks:
                eligible_any |= problem.eligible_nodes(each.row)
            if domain is not None:
                eligible_any &= domain
            name = problem.resource_names[key]
            sentences.append(
                reasons.gang_shortfall(
                    placed=int(state.running_count[plan.index]) + placed,
                    minimum=minimum,
                    needs={name: int(demand[key])},
                    free={name: int(state.free[key][eligible_any].sum())},
                )
            )
        # The quota is said when it holds the gang whatever the nodes (`greedy.quota_hold`), whether
        # the capability or the nodes stopped this try: a capped pod the gang may start without
        # leaves the wait to the nodes, and a minimum that crosses a cap is held by it though
        # the nodes ran out first (an autoscaler must not buy for it).
        quota = self.quota_holding(plan)
        sentences += quota
        plan.failure = GreedyFailure.QUOTA if quota else GreedyFailure.CAPACITY
        plan.reasons = [*sentences, *(details if room or not quota else []), *plan.static_reasons]
        return False

    def _fit_error(self, plan: GroupPlan, task: PlanTask, domain: np.ndarray | None) -> list[reasons.Reason]:
        """Why no node takes one more pod of `task` (`explain.fit_error`) in the current state."""
        return fit_error(self.state, self.state.shape(task.row), plan.group.task_by_name[task.name], domain)

    def _uncapped_task(self, plan: GroupPlan) -> PlanTask | None:
        """The first task (`fill_order`) with a pod left whose next pod its queue's capabilities
        allow; None when every such pod is capped."""
        for task in plan.fill_order:
            if self.unbound(task, 1) and self.state.quota_room(plan.queue, self.state.shape(task.row))[0] > 0:
                return task
        return None

    def quota_holding(self, plan: GroupPlan) -> list[reasons.Reason]:
        """The quota reason of the capability that holds `plan`'s PodGroup whatever the nodes
        (`greedy.quota_hold`), the job needing the least it can start with; [] when none does."""
        held = holding_capability(
            self.state,
            plan,
            running_per_task=self.running_per_task(plan),
            pods_left={task.row: len(task.pending) - task.cursor for task in plan.tasks},
            preemptible=lambda: self._preemptible_in_queue(plan),
        )
        return [] if held is None else [self._quota_exceeded(*held)]

    def _preemptible_in_queue(self, plan: GroupPlan) -> np.ndarray:
        """`[R]` what the running pods of `plan`'s own queue that it may preempt now hold: what
        the preempt action may give back to the queue and its ancestors (`greedy.preempt`)."""
        victims, usable = self.victims.available(plan, "preempt")
        own = usable & (self.problem.group_queue[victims.group] == plan.queue)
        return victims.requests[own].sum(axis=0, dtype=np.int64)

    # ---- output ----

    def _placement(self) -> Placement:
        problem, snapshot = self.problem, self.snapshot
        binds = []
        for record in self.state.binds.values():
            devices = tuple(sorted(int(problem.gpu_index[record.node, slot]) for slot in record.slots))
            # model_construct: every field is already of its type; validating 10,000 binds costs more than the rest.
            binds.append(
                Bind.model_construct(
                    pod=problem.pod_keys[record.pod],
                    node=problem.node_names[record.node],
                    gpus=devices,
                    numa_cell=record.numa_cell,
                )
            )
        evictions = [
            Eviction.model_construct(
                pod=problem.pod_keys[pod],
                node=problem.node_names[int(problem.pod_node[pod])],
                reason=reason,
                for_=snapshot.pod_groups[for_group].key,
            )
            for pod, (reason, for_group) in self.state.evictions.items()
        ]
        claims = () if self.state.devices is None else self.state.devices.claims()
        return Placement.model_construct(binds=tuple(binds), evictions=tuple(evictions), claims=claims)


def _distinct(sentences: list[str]) -> list[str]:
    """`sentences` without repeats, in order (a failure's own sentence may also stand among
    the static ones, e.g. the eligibility of a task no node matches)."""
    return list(dict.fromkeys(sentences))
