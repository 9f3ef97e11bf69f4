"""Nested gangs in the greedy engine: a PodGroup whose pods form sub-groups (`SubGroup`:
a data-parallel shard, a serving replica, a prefill or decode role), each placed whole
inside one domain of its own tier, all of them inside the job's domain (rules 3 and 5).

The engine (`greedy.engine`) tries the job's domains as for any gang — HyperNodes of tier
≤ the job's hard limit best fit first (`greedy.topology`), the whole cluster when it has
none, a soft job topology its domains then the cluster — and asks `transaction` to place
the job's minimum inside one of them as one Statement:
  1. each policy's `min_sub_groups`: its sub-groups not started yet (a partly running one
     first, then the largest minimum first, `_start_order`) are started one by one until
     enough have started;
  2. the job's own minimum (min_member, task minimums where they apply), running pods
     counted: further pods of started sub-groups (inside the sub-group's domain), then
     further whole sub-groups, then pods in no sub-group — the most constrained first, so
     a loose pod does not take a shard's room — until it is met.
Anything that fails rolls the whole job back, and the engine tries its next domain: a job
whose second shard fits no leaf under the spine its first shard chose moves both shards
to the next spine.

A sub-group starts (`_start`) with its minimum, less its running pods, as a transaction of
its own inside the job's domain: hard topology — into the first of its candidate domains
(tier ≤ its limit, anchored by its running pods, those holding all its pods first, then
lowest tier, then fewest free GPUs: best fit, so whole racks stay free) where all of it
binds; soft — a domain holding all its pods first, then anywhere in the job's domain; no
topology — anywhere in the job's domain. Its further pods go to the domain it started in,
then to the widest HyperNode of its tier holding its pods (still inside the job's).

Beyond the minimum (`place_extras`, one unit per turn as the engine serves extras): more
pods of started sub-groups, then more whole sub-groups, then pods in no sub-group anywhere
in the job's domain (soft job topology: then anywhere).

Sub-groups alike — same minimum, topology and pods' shapes, nothing placed (`_alike`) — start
or not alike in one state: once one does not, the rest are not tried until something binds.
A LeaderWorkerSet of 5,000 replicas on a full cluster costs one try, not 5,000.

A pod in no sub-group counts for the job only: toward its min_member, task minimums and
topology, never toward a sub-group's minimum or started count (`solver.rules.gang`).

Example: 5 nodes × 8 GPUs, spine sp (leaf sw-a: a1, a2; leaf sw-b: b1, b2), spine sq (leaf
sw-c: c1); a job of 4 × 8-GPU pods on one spine, shards of 2 on one leaf each, min_member
4 → shard job-0 on sw-a, job-1 on sw-b, both under sp; with b2 busy, no spine holds both
shards and the job waits: "gang: subgroup job-1 of job: 1 of min 2 pods fit in any tier-1
domain".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from solver import reasons
from solver.greedy.explain import fit_error
from solver.greedy.plan import GreedyFailure, GroupPlan, SubGroupPlan
from solver.greedy.preempt import AllocatingEngine, Preemptor
from solver.greedy.topology import candidate_domains, key_resource
from solver.problem import Problem
from solver.rules.dra import has_claims
from solver.rules.gang import is_met, started_sub_groups, sub_groups_missing
from solver.rules.topology import domains_within

__all__ = ["NestingEngine", "transaction", "place_extras"]


class NestingEngine(AllocatingEngine, Protocol):
    """What nested gangs need of the engine (`solver.greedy.engine.GreedyEngine`) besides
    what preemption does: binding pods, committing, its running counts and quota reasons."""

    def place_pods(
        self, plan: GroupPlan, row: int, pods: list[int], domain: np.ndarray | None, preemptor: Preemptor | None
    ) -> int: ...

    def commit(self, plan: GroupPlan) -> None: ...

    def running_per_task(self, plan: GroupPlan) -> dict[str, int]: ...

    def quota_holding(self, plan: GroupPlan) -> list[reasons.Reason]: ...


FIT_PROBES = 3
"""Domains of a sub-group's tier probed, most free first, to say how many of its pods fit
when no candidate domain holds its minimum (the reason's count)."""

Pods = list[tuple[int, int]]  # (task row, pod index), snapshot order


def transaction(engine: NestingEngine, plan: GroupPlan, domain: np.ndarray | None, action: str | None) -> bool:
    """The job's minimum inside `domain` (None: anywhere), evicting for `action` when given:
    all of it, or nothing — rolled back, with `plan.reasons` naming the first sub-group that
    would not start (one sentence, however many shards the job has)."""
    state, group = engine.state, plan.group
    mark = state.checkpoint()
    failures: list[str] = []
    tried: set[str] = set()
    for sub in plan.sub_groups:
        if not _started(engine, sub):
            sub.domain = None
    missing = sub_groups_missing(group, _placed_per_sub_group(engine, plan))
    # Every policy's candidates in one order (`_start_order`), not policy by policy: a small
    # shard of the first policy must not take the one domain a large shard of the next fits in.
    refused: set[_Alike] = set()
    for sub in _start_order(engine, [sub for policy in missing for sub in _startable(engine, plan, policy)]):
        if not missing.get(sub.sub.policy):
            continue
        tried.add(sub.sub.name)
        if (alike := _alike(engine, sub)) in refused:  # None is never refused
            continue
        why = _start(engine, plan, sub, domain, action)
        if why is None:
            missing[sub.sub.policy] -= 1
            refused.clear()
        else:
            failures.append(why.sentence(sub, job=group.name))
            if alike is not None:
                refused.add(alike)
    for policy, short_by in missing.items():
        if short_by:
            started = started_sub_groups(group, _placed_per_sub_group(engine, plan))[policy]
            short = reasons.sub_groups_short(policy, job=group.name, started=started, minimum=group.min_sub_groups[policy])
            return _fail(engine, plan, mark, [short, *failures[:1]])
    while not is_met(plan.requirement, placed := _placed_per_task(engine, plan)):
        if not _fill(engine, plan, placed, domain, action, tried, failures):
            return _fail(engine, plan, mark, failures[:1] or _loose_fit_error(engine, plan, domain))
    return True


def why_left_out(engine: NestingEngine, plan: GroupPlan, sub_names: Iterable[str]) -> dict[str, str]:
    """Why each of the sub-groups `sub_names` of a started job does not start in the engine's
    state (a `reasons.sub_group_no_room` or `sub_group_too_few_pods` sentence); those whose
    minimum would start there are left out. Nothing it tries stays bound. Inside the job's
    domain: the widest HyperNode of tier ≤ the job's hard limit holding the job's placed pods.
    For the pods a started job leaves pending (`solver.pending_reasons`), which otherwise read
    "fit beside this placement" when no rack takes the shard whole. Sub-groups alike
    (`_alike`) are tried once: a LeaderWorkerSet of 5,000 replicas asks one try, not 5,000."""
    state = engine.state
    region = _job_region(engine, plan)
    outcomes: dict[_Alike, _NotStarted | None] = {}
    subs = {sub.sub.name: sub for sub in plan.sub_groups}
    why: dict[str, str] = {}
    for name in sub_names:
        sub = subs[name]
        alike = _alike(engine, sub)
        if alike is None or alike not in outcomes:
            mark = state.checkpoint()
            outcome = _start(engine, plan, sub, region, None)
            state.rollback(mark)
            if alike is not None:
                outcomes[alike] = outcome
        else:
            outcome = outcomes[alike]
        if outcome is not None:
            why[name] = outcome.sentence(sub, job=plan.group.name)
    return why


def _job_region(engine: NestingEngine, plan: GroupPlan) -> np.ndarray | None:
    """The nodes of the job's domain in the engine's state (None: anywhere): the widest
    HyperNode of tier ≤ its hard limit holding its running and bound pods (every one that
    holds them may take the rest)."""
    problem, state = engine.problem, engine.state
    if plan.tier_limit is None:
        return None
    members = np.flatnonzero(problem.pod_group == plan.index).tolist()
    running = [int(problem.pod_node[p]) for p in members if problem.pod_node[p] >= 0 and p not in state.evictions]
    bound = [state.binds[p].node for p in members if p in state.binds]
    nodes = {problem.node_names[n] for n in (*running, *bound)}
    if not nodes:
        return None
    snapshot = engine.snapshot
    shared = set.intersection(*(set(domains_within(snapshot, node, plan.tier_limit)) for node in nodes))
    if not shared:  # one node outside every HyperNode of the tier holds them all
        return np.isin(np.arange(problem.node_count), [problem.node_index[node] for node in nodes])
    name = max(shared, key=lambda hypernode: snapshot.hypernode_by_name[hypernode].tier)
    for position, names in enumerate(problem.domain_names):
        if name in names:
            return problem.domain_of[position] == names.index(name)
    return None


def place_extras(engine: NestingEngine, plan: GroupPlan, *, all_at_once: bool) -> bool:
    """Pods beyond the job's minimum (no rollback but a sub-group's own): all of them, or one
    unit — a pod, or a whole sub-group's minimum — per turn. True when more may follow."""
    if all_at_once:
        while _extra_step(engine, plan, all_at_once=True):
            pass
        return False
    return _extra_step(engine, plan, all_at_once=False) and _has_extras(engine, plan)


# ---- the minimum ----


def _fill(
    engine: NestingEngine,
    plan: GroupPlan,
    placed: dict[str, int],
    domain: np.ndarray | None,
    action: str | None,
    tried: set[str],
    failures: list[str],
) -> bool:
    """Place more of what the job's minimum still lacks (see the module docstring, step 2);
    False when nothing more goes, the sub-groups that would not start said in `failures`."""
    wanted = _wanted(plan, placed)
    preemptor = Preemptor(engine, plan, action) if action is not None else None
    refused: set[tuple[_Alike, int]] = set()
    for sub in plan.sub_groups:
        if not _started(engine, sub):
            continue
        for row, pods in _by_row(_unbound(engine, sub.pending)):
            count = wanted(row)
            if count and _place_in_sub_group(engine, plan, sub, row, pods[:count], domain, preemptor):
                return True
    for sub in _start_order(engine, plan.sub_groups):
        if sub.sub.name in tried or _started(engine, sub):
            continue
        if not any(wanted(row) for row, _ in _unbound(engine, sub.pending)):
            continue
        tried.add(sub.sub.name)
        asked = max(wanted(row) for row, _ in _by_row(_unbound(engine, sub.pending)))
        if ((alike := _alike(engine, sub)), asked) in refused:  # None is never refused
            continue
        why = _start(engine, plan, sub, domain, action, job_wants=asked)
        if why is None:
            return True
        failures.append(why.sentence(sub, job=plan.group.name))
        if alike is not None:
            refused.add((alike, asked))
    for row, pods in _by_row(_unbound(engine, plan.loose)):
        count = wanted(row)
        if count and engine.place_pods(plan, row, pods[:count], domain, preemptor):
            return True
    return False


def _wanted(plan: GroupPlan, placed: dict[str, int]) -> Callable[[int], int]:
    """Task row → pods of it the job's minimum still asks for: the task minimums first, then min_member."""
    requirement = plan.requirement
    short = {
        task: minimum - placed.get(task, 0)
        for task, minimum in requirement.min_per_task.items()
        if placed.get(task, 0) < minimum
    }
    members = max(0, requirement.min_member - sum(placed.values()))
    names = {task.row: task.name for task in plan.tasks}
    if short:
        return lambda row: short.get(names[row], 0)
    return lambda row: members


def _start(
    engine: NestingEngine,
    plan: GroupPlan,
    sub: SubGroupPlan,
    domain: np.ndarray | None,
    action: str | None,
    *,
    job_wants: int = 0,
    explain: bool = True,
) -> _NotStarted | None:
    """Start `sub`: its minimum, less its pods running and bound, bound whole inside one of its
    domains within `domain`; None when it started, else why it did not (rolled back). With
    `explain` off, the count of pods that fit is not probed beyond the domains tried (the
    caller needs only whether it started).

    When the job's minimum still wants `job_wants` pods of it, more than its own minimum, that
    many are tried first, in one domain that holds them: started at its minimum alone, a shard
    would go to the fullest domain (best fit) and could not grow there. Example (Volcano's
    soft-job, hard-sub-group allocate case): min_member 3, the master in leaf s0, workers of
    minimum 1 → two workers together go to leaf s1, where one alone would have taken s0's last
    slot and left the job at 2."""
    have = _placed(engine, sub)
    need = sub.minimum - have
    waiting = _unbound(engine, sub.pending)
    if need <= 0:
        return None
    if len(waiting) < need:
        return _NotStarted(pods=have + len(waiting), too_few=True)
    larger = min(len(waiting), job_wants)
    if larger > need and _bind_in_one_domain(engine, plan, sub, domain, waiting[:larger], waiting, action) == larger:
        return None
    pods = waiting[:need]
    most = _bind_in_one_domain(engine, plan, sub, domain, pods, waiting, action)
    if most == len(pods):
        return None
    if sub.tier_limit is not None and explain:
        most = max(most, _most_that_fit(engine, plan, sub, domain, pods))
    return _NotStarted(pods=have + most, too_few=False)


@dataclass(frozen=True)
class _NotStarted:
    """Why a sub-group did not start, as counts: too few pods exist (`pods` of them, running,
    bound and pending), or only `pods` fit in one domain. The sentence names the sub-group
    (`sentence`), so alike sub-groups (`_alike`) share one outcome."""

    pods: int
    too_few: bool

    def sentence(self, sub: SubGroupPlan, *, job: str) -> str:
        name = sub.sub.name
        if self.too_few:
            return reasons.sub_group_too_few_pods(name, job=job, minimum=sub.minimum, pods=self.pods)
        return reasons.sub_group_no_room(name, job=job, placed=self.pods, minimum=sub.minimum, tier=sub.tier_limit)


_Alike = tuple[int, int | None, bool, tuple[int, ...]]


def _alike(engine: NestingEngine, sub: SubGroupPlan) -> _Alike | None:
    """What `_start` reads of a sub-group with no pod running or bound: its minimum, topology
    and its pods' task rows in order (a pod's row fixes its shape, eligible nodes and inter-pod
    terms; which pod it is, only the name its bind carries). Two sub-groups with the same key
    start or not alike in one state, so one that did not start answers for the rest — a
    LeaderWorkerSet's replicas, a JobSet's jobs. None for a sub-group with pods placed (its
    running pods anchor its domains) or a pod that names DRA claims (a claim is the pod's own,
    perhaps allocated on one node already)."""
    if _placed(engine, sub):
        return None
    if has_claims(engine.snapshot):
        problem, snapshot = engine.problem, engine.snapshot
        if any(snapshot.pod_by_key[problem.pod_keys[pod]].resource_claims for _, pod in sub.pending):
            return None
    return sub.minimum, sub.tier_limit, sub.soft_topology, tuple(row for row, _ in sub.pending)


def _bind_in_one_domain(
    engine: NestingEngine,
    plan: GroupPlan,
    sub: SubGroupPlan,
    domain: np.ndarray | None,
    pods: Pods,
    waiting: Pods,
    action: str | None,
) -> int:
    """Bind all `pods` of `sub` inside the first of its domains (`_sub_group_domains`) that
    takes them, set as its domain, and return how many: all of them, or — nothing bound —
    the most any domain took."""
    state = engine.state
    most = 0
    for region in _sub_group_domains(engine, plan, sub, domain, pods, waiting, action):
        mark = state.checkpoint()
        got = _place_all(engine, plan, pods, region, action)
        if got == len(pods):
            sub.domain = region
            return got
        most = max(most, got)
        state.rollback(mark)
    return most


def _sub_group_domains(
    engine: NestingEngine,
    plan: GroupPlan,
    sub: SubGroupPlan,
    domain: np.ndarray | None,
    pods: Pods,
    waiting: Pods,
    action: str | None,
) -> list[np.ndarray | None]:
    """Where `sub`'s minimum `pods` may go, in the order tried: its candidate domains inside
    `domain` (`candidate_domains`: tier ≤ its limit, anchored by its running pods, best fit
    first); soft topology: domains holding all its `waiting` pods, then `domain`; none: `domain`."""
    if sub.tier_limit is None and not sub.soft_topology:
        return [domain]
    problem, state = engine.problem, engine.state
    available, whole = state.free, state.whole_free
    if action is not None:
        available, whole = Preemptor.hypothetical(engine, plan, action)
    eligible = _eligible(problem, waiting, domain)
    demand_min, devices_min = engine.demand(plan, _counts(pods))
    demand_all, devices_all = engine.demand(plan, _counts(waiting))
    anchors = np.array([problem.pod_node[p] for p in _kept(engine, sub)], dtype=np.int64)
    found, _ = candidate_domains(
        problem,
        available=available,
        whole_available=whole,
        eligible_any=eligible,
        anchors=anchors,
        demand_min=demand_min,
        devices_min=devices_min,
        demand_all=demand_all,
        devices_all=devices_all,
        tier_limit=sub.tier_limit,
        whole_only=sub.tier_limit is None,
        domain_free=state.domain_free if action is None else None,
    )
    masks: list[np.ndarray | None] = [_within(found_domain.mask(problem), domain) for found_domain in found]
    return [*masks, domain] if sub.soft_topology else masks


def _most_that_fit(
    engine: NestingEngine, plan: GroupPlan, sub: SubGroupPlan, domain: np.ndarray | None, pods: Pods
) -> int:
    """For the reason: the most of `pods` that bind inside one domain of `sub`'s widest tier
    (or one node when no tier is within its limit), probing the `FIT_PROBES` with most free
    key resource, each rolled back."""
    problem, state = engine.problem, engine.state
    eligible = _eligible(problem, pods, domain)
    demand, _ = engine.demand(plan, _counts(pods))
    free = np.where(eligible, state.free[key_resource(problem, demand)], 0)
    positions = [i for i, tier in enumerate(problem.tiers) if sub.tier_limit is not None and tier <= sub.tier_limit]
    if positions:
        owner = problem.domain_of[positions[-1]]
        sums = np.bincount(owner + 1, weights=free, minlength=len(problem.domain_names[positions[-1]]) + 1)[1:]
        regions = [owner == ident for ident in np.argsort(-sums, kind="stable")[:FIT_PROBES]]
    else:
        regions = [np.arange(problem.node_count) == node for node in np.argsort(-free, kind="stable")[:FIT_PROBES]]
    most = 0
    for region in regions:
        mark = state.checkpoint()
        most = max(most, _place_all(engine, plan, pods, _within(region, domain), None))
        state.rollback(mark)
    return most


def _fail(engine: NestingEngine, plan: GroupPlan, mark: int, sentences: list[str]) -> bool:
    """Roll the job back and record why (the quota first when it holds the job whatever the nodes)."""
    engine.state.rollback(mark)
    for sub in plan.sub_groups:
        if not _started(engine, sub):
            sub.domain = None
    quota = engine.quota_holding(plan)
    plan.failure = GreedyFailure.QUOTA if quota else GreedyFailure.CAPACITY
    plan.sub_group_reasons = list(sentences)
    plan.reasons = [*quota, *sentences, *plan.static_reasons]
    return False


def _loose_fit_error(engine: NestingEngine, plan: GroupPlan, domain: np.ndarray | None) -> list[str]:
    """Why no node takes one more pod in no sub-group (no sub-group to blame), of its first task with one left."""
    left = _unbound(engine, plan.loose)
    if not left:
        return []
    row = left[0][0]
    name = next(task.name for task in plan.tasks if task.row == row)
    return fit_error(engine.state, engine.state.shape(row), plan.group.task_by_name[name], domain)


# ---- beyond the minimum ----


def _extra_step(engine: NestingEngine, plan: GroupPlan, *, all_at_once: bool) -> bool:
    """Place the first unit beyond the minimum that goes (marking those that do not as
    exhausted); True when something was bound."""
    for sub in plan.sub_groups:
        if sub.exhausted or not _started(engine, sub):
            continue
        for row, pods in _by_row(_unbound(engine, sub.pending)):
            take = pods if all_at_once else pods[:1]
            got = _place_in_sub_group(engine, plan, sub, row, take, plan.domain, None)
            engine.commit(plan)
            if got:
                return True
        sub.exhausted = True
    refused: set[_Alike] = set()
    for sub in plan.sub_groups:
        if sub.exhausted or _started(engine, sub) or not _unbound(engine, sub.pending):
            continue
        if (alike := _alike(engine, sub)) not in refused:  # None is never refused
            if _start(engine, plan, sub, plan.domain, None, explain=False) is None:
                engine.commit(plan)
                return True
            if alike is not None:
                refused.add(alike)
        sub.exhausted = True
    for row, pods in _by_row(_unbound(engine, plan.loose)):
        if row in plan.exhausted:
            continue
        take = pods if all_at_once else pods[:1]
        got = engine.place_pods(plan, row, take, plan.domain, None)
        if got < len(take) and plan.soft_topology and plan.domain is not None:
            got += engine.place_pods(plan, row, take[got:], None, None)
        if got < len(take):
            plan.exhausted.add(row)
        engine.commit(plan)
        if got:
            return True
    return False


def _has_extras(engine: NestingEngine, plan: GroupPlan) -> bool:
    if any(not sub.exhausted and _unbound(engine, sub.pending) for sub in plan.sub_groups):
        return True
    return any(row not in plan.exhausted for row, _ in _unbound(engine, plan.loose))


def _place_in_sub_group(
    engine: NestingEngine,
    plan: GroupPlan,
    sub: SubGroupPlan,
    row: int,
    pods: list[int],
    domain: np.ndarray | None,
    preemptor: Preemptor | None,
) -> int:
    """Bind more pods of a started sub-group: in the domain it started in, then anywhere its
    topology still allows (hard: the widest HyperNode of its tier holding its pods; soft or
    none: the job's `domain`); how many were bound."""
    regions: list[np.ndarray | None] = [] if sub.domain is None else [sub.domain]
    regions.append(domain if sub.tier_limit is None else _within(_widest_region(engine, sub), domain))
    got = 0
    for region in regions:
        got += engine.place_pods(plan, row, pods[got:], region, preemptor)
        if got == len(pods):
            break
    return got


def _widest_region(engine: NestingEngine, sub: SubGroupPlan) -> np.ndarray:
    """The nodes a started hard sub-group may still take: the widest HyperNode of tier ≤ its
    limit holding all its pods (kept and bound), or their one node; none when they share neither."""
    problem, state = engine.problem, engine.state
    nodes = np.array(
        [problem.pod_node[p] for p in _kept(engine, sub)] + [state.binds[p].node for p in _bound(engine, sub)],
        dtype=np.int64,
    )
    region = np.zeros(problem.node_count, dtype=bool)
    if np.unique(nodes).size == 1:
        region[nodes[0]] = True
    for position, tier in enumerate(problem.tiers):
        if sub.tier_limit is None or tier > sub.tier_limit:
            break
        owners = np.unique(problem.domain_of[position][nodes])
        if owners.size == 1 and owners[0] >= 0:
            region = problem.domain_of[position] == owners[0]
    return region


# ---- counts ----


def _unbound(engine: NestingEngine, pods: Pods) -> Pods:
    binds = engine.state.binds
    return [(row, pod) for row, pod in pods if pod not in binds]


def _by_row(pods: Pods) -> list[tuple[int, list[int]]]:
    """`pods` as (task row, its pods in order), rows in the order they first appear."""
    out: dict[int, list[int]] = {}
    for row, pod in pods:
        out.setdefault(row, []).append(pod)
    return list(out.items())


def _counts(pods: Pods) -> dict[int, int]:
    return {row: len(batch) for row, batch in _by_row(pods)}


def _place_all(engine: NestingEngine, plan: GroupPlan, pods: Pods, region: np.ndarray | None, action: str | None) -> int:
    """Bind as many of `pods` as fit inside `region` (evicting for `action`); how many did."""
    preemptor = Preemptor(engine, plan, action) if action is not None else None
    return sum(engine.place_pods(plan, row, batch, region, preemptor) for row, batch in _by_row(pods))


def _eligible(problem: Problem, pods: Pods, domain: np.ndarray | None) -> np.ndarray:
    """Nodes some task of `pods` may run on, inside `domain`."""
    eligible = np.zeros(problem.node_count, dtype=bool)
    for row in {row for row, _ in pods}:
        eligible |= problem.eligible_nodes(row)
    return eligible if domain is None else eligible & domain


def _within(region: np.ndarray, domain: np.ndarray | None) -> np.ndarray:
    return region if domain is None else region & domain


def _kept(engine: NestingEngine, sub: SubGroupPlan) -> list[int]:
    """Its pods running now (this cycle's evictions taken off)."""
    evicted = engine.state.evictions
    return [pod for pod in sub.running if pod not in evicted]


def _bound(engine: NestingEngine, sub: SubGroupPlan) -> list[int]:
    binds = engine.state.binds
    return [pod for _, pod in sub.pending if pod in binds]


def _placed(engine: NestingEngine, sub: SubGroupPlan) -> int:
    return len(_kept(engine, sub)) + len(_bound(engine, sub))


def _started(engine: NestingEngine, sub: SubGroupPlan) -> bool:
    return _placed(engine, sub) >= sub.minimum


def _placed_per_sub_group(engine: NestingEngine, plan: GroupPlan) -> dict[str, int]:
    return {sub.sub.name: _placed(engine, sub) for sub in plan.sub_groups}


def _startable(engine: NestingEngine, plan: GroupPlan, policy: str) -> list[SubGroupPlan]:
    """`policy`'s sub-groups not started, in the order `_start_order` gives."""
    return _start_order(engine, [sub for sub in plan.sub_groups if sub.sub.policy == policy and not _started(engine, sub)])


def _start_order(engine: NestingEngine, subs: list[SubGroupPlan]) -> list[SubGroupPlan]:
    """The order sub-groups are started in: a partly running one first (it completes what
    runs), then the largest minimum first, then PodGroup order — first fit decreasing, so a
    small shard does not take the only domain a large one fits in. Example (Volcano's
    partition-policy allocate cases): a 2-node leaf and a lone node; shard a of 1 pod and
    shard b of 2 → b takes the leaf, a the lone node (a first would strand b)."""
    return sorted(subs, key=lambda sub: (not _kept(engine, sub), -sub.minimum))


def _placed_per_task(engine: NestingEngine, plan: GroupPlan) -> dict[str, int]:
    """Every task → its pods running now plus bound this cycle."""
    placed = engine.running_per_task(plan)
    binds = engine.state.binds
    for task in plan.tasks:
        placed[task.name] += sum(1 for pod in task.pending if pod in binds)
    return placed
