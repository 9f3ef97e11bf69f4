"""Inter-pod constraints for the greedy engine: required pod affinity and anti-affinity and
`DoNotSchedule` topology spread as a filter over nodes, their preferred and `ScheduleAnyway`
parts as a per-node penalty — kube-scheduler's InterPodAffinity and PodTopologySpread
plugins, one pod at a time, over numpy.

Input: the `Snapshot` and its `Problem`; `InterPod.build` returns None when no task has
inter-pod constraints and no running pod has required anti-affinity, and the engine then
never calls in here (the common path costs nothing). Output, for one pod of a task against
the cluster as it stands (running pods not evicted + pods bound so far this cycle):
`allowed(row)` — an `[N]` mask of the nodes where it passes — `explain(row, nodes)` — why
the others fail, per rule — and `preference_missed(row, nodes)` — the locality weight it
would add on each node.

What is counted, and how: every pod selector of a task (a term's, a spread constraint's)
is a *matcher*; for each (matcher, topology key, set of nodes counted) a *counter* holds
how many current pods it selects per domain of the key (`solver.rules.pod_affinity.domain`;
the last slot stands for "no such label" and is never counted). Running pods' and bound
pods' required anti-affinity terms are *holders*, counted per domain of their key. Binds
and evictions update the counters through `update`, which `CycleState` calls from the
same code that applies and rolls back its log, so a gang transaction that rolls back
rolls these back too. Which pods a selector selects is asked of the rules' predicates
(`term_selects`, `counts_nodes`), once per kind of pod.

The filter, for a pod of task T (its labels are T's):
  - each required affinity term: the node's domain holds a pod the term selects (a node
    without the key fails), unless no pod anywhere matches any of T's terms and the pod
    matches all of them (the first of a series; the node must still carry every key, as
    kube-scheduler asks);
  - each required anti-affinity term of T: the node's domain holds no pod it selects;
    and no current pod whose own required anti-affinity selects the pod is in the node's
    domain for that term's key (the symmetric half);
  - each DoNotSchedule spread constraint: the node is one of the constraint's eligible
    nodes, and its domain's count (+1 when the pod matches the selector) is at most
    maxSkew above the emptiest eligible domain (0 with fewer domains than minDomains) —
    kube-scheduler's `matchNum + selfMatch - minMatchNum <= maxSkew`;
  - and, because the rules judge the end state, the pod does not push a domain where
    another task has bound pods under a DoNotSchedule constraint selecting it past that
    constraint's maxSkew (kube-scheduler does not ask this; a batch must).
Worked example: web (app=web, anti-affinity {app=web} on the hostname), nodes n1 n2,
one web pod bound on n1 → `allowed` is [False, True].

`protected(pod)`: a running pod that a bound pod's required affinity or DoNotSchedule
spread counts on — selected by such a matcher of a task with pods bound this cycle — is
not evicted (preempt, reclaim), since its leaving could break them.

Not promised: that the end state passes the rules in every case (a pod bound later can
still take away an earlier pod's first-of-series exception); the engine checks the end
state with the rules and drops what breaks (`solver.greedy`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from models.pod_affinity import PodAffinityTerm, TopologySpreadConstraint
from models.snapshot import Snapshot, Task
from solver.problem import Problem
from solver.rules import pod_affinity, topology_spread
from solver.rules.pod_affinity import describe_selector, term_selects, terms_select
from solver.rules.topology_spread import counts_nodes, describe_constraint

__all__ = ["InterPod"]

_MatcherKey = tuple[tuple[bool, tuple[str, ...], str], ...]  # per term: all namespaces, namespaces, selector


@dataclass
class _Counter:
    """Current pods a matcher selects, per domain of `key`, on `nodes` (None: all nodes)."""

    matcher: int
    key: str
    nodes: np.ndarray | None
    counts: np.ndarray  # [D + 1]; the last slot: nodes without the key, never counted


@dataclass
class _Spread:
    constraint: TopologySpreadConstraint
    counter: int
    eligible: np.ndarray  # [N] bool: counts_nodes
    present: np.ndarray  # [D] bool: domains with an eligible node
    self_match: int  # 1 when the task's pods match the selector


@dataclass
class _TaskRules:
    """One task's constraints as counters."""

    row: int
    task: Task
    namespace: str
    affinity: list[tuple[PodAffinityTerm, int]] = field(default_factory=list)  # (term, counter)
    anti: list[tuple[PodAffinityTerm, int]] = field(default_factory=list)
    preferred_affinity: list[tuple[int, int]] = field(default_factory=list)  # (weight, counter)
    preferred_anti: list[tuple[int, int]] = field(default_factory=list)
    hard_spread: list[_Spread] = field(default_factory=list)
    soft_spread: list[_Spread] = field(default_factory=list)
    matches_own_affinity: bool = False

    @property
    def constrained(self) -> bool:
        return bool(
            self.affinity or self.anti or self.preferred_affinity or self.preferred_anti or self.hard_spread or self.soft_spread
        )

    @property
    def soft(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti or self.soft_spread)


@dataclass
class _Member:
    """What a kind of pod (namespace, labels, anti terms) changes when it comes or goes."""

    counters: tuple[int, ...]
    holders: tuple[int, ...]


class InterPod:
    """Per-domain counts of the current pods, and the filter and penalty read from them."""

    @staticmethod
    def build(snapshot: Snapshot, problem: Problem) -> InterPod | None:
        tasks = any(not task.inter_pod.empty for group in snapshot.pod_groups for task in group.tasks)
        holders = any(pod.required_anti_affinity for pod in snapshot.pods if pod.phase == "running")
        return InterPod(snapshot, problem) if tasks or holders else None

    def __init__(self, snapshot: Snapshot, problem: Problem):
        self.snapshot, self.problem = snapshot, problem
        self._domains: dict[str, tuple[np.ndarray, list[str]]] = {}
        self._matchers: list[tuple[tuple[PodAffinityTerm, ...], str]] = []
        self._matcher_ids: dict[_MatcherKey, int] = {}
        self._counters: list[_Counter] = []
        self._counter_ids: dict[tuple[int, str, bytes | None], int] = {}
        self._holders: list[tuple[PodAffinityTerm, str]] = []  # (term, the holder's namespace)
        self._holder_ids: dict[tuple[str, str], int] = {}
        self._holder_counts: list[np.ndarray] = []  # [D + 1] per holder term
        self._rules: dict[int, _TaskRules] = {}
        self._members: dict[object, _Member] = {}
        self._bound: dict[int, dict[int, int]] = {}  # task row → node → pods bound this cycle
        self._bound_total: dict[int, int] = {}
        self._dependents: dict[int, list[tuple[int, _Spread | None]]] = {}  # matcher → (row, spread or None: affinity)
        self._row_matchers: dict[int, frozenset[int]] = {}
        self._row_holders: dict[int, tuple[int, ...]] = {}
        self._namespace = [group.namespace for group in snapshot.pod_groups]
        # Every selector first, then every running pod counted once.
        for group in snapshot.pod_groups:
            for task in group.tasks:
                if not task.inter_pod.empty:
                    self._register(problem.task_row[(group.key, task.name)], task, group.namespace)
                for term in task.inter_pod.required_anti_affinity:
                    self._holder(term, group.namespace)
        for pod in snapshot.pods:
            for term in pod.required_anti_affinity if pod.phase == "running" else ():
                self._holder(term, pod.namespace)
        for p in np.flatnonzero(problem.pod_running).tolist():
            self.update(p, int(problem.pod_node[p]), 1)

    # ---- registration ----

    def _domain(self, key: str) -> tuple[np.ndarray, list[str]]:
        """`[N]` domain id per node (D for nodes without the key) and the domain names."""
        found = self._domains.get(key)
        if found is None:
            names: dict[str, int] = {}
            values = [pod_affinity.domain(node, key) for node in self.snapshot.nodes]
            ids = [names.setdefault(v, len(names)) if v is not None else -1 for v in values]
            dom = np.array(ids, dtype=np.int64)
            dom[dom < 0] = len(names)
            found = self._domains[key] = (dom, list(names))
        return found

    def _matcher(self, terms: tuple[PodAffinityTerm, ...], owner_namespace: str) -> int:
        """The pods all of `terms` select (one term, or a task's required affinity terms,
        which kube-scheduler counts a pod for only when it matches every one)."""
        key = tuple(
            (
                term.all_namespaces,
                () if term.all_namespaces else tuple(sorted(term.namespaces or (owner_namespace,))),
                "<none>" if term.label_selector is None else term.label_selector.model_dump_json(),
            )
            for term in terms
        )
        index = self._matcher_ids.get(key)
        if index is None:
            index = self._matcher_ids[key] = len(self._matchers)
            self._matchers.append((terms, owner_namespace))
        return index

    def _selects(self, matcher: int, namespace: str, labels: Mapping[str, str]) -> bool:
        terms, owner = self._matchers[matcher]
        return terms_select(terms, owner, namespace, labels)

    def _counter(self, matcher: int, key: str, nodes: np.ndarray | None) -> int:
        ident = (matcher, key, None if nodes is None else np.packbits(nodes).tobytes())
        index = self._counter_ids.get(ident)
        if index is None:
            dom, names = self._domain(key)
            index = self._counter_ids[ident] = len(self._counters)
            self._counters.append(_Counter(matcher, key, nodes, np.zeros(len(names) + 1, dtype=np.int64)))
        return index

    def _holder(self, term: PodAffinityTerm, namespace: str) -> int:
        ident = (namespace, term.model_dump_json())
        index = self._holder_ids.get(ident)
        if index is None:
            index = self._holder_ids[ident] = len(self._holders)
            self._holders.append((term, namespace))
            self._holder_counts.append(np.zeros(len(self._domain(term.topology_key)[1]) + 1, dtype=np.int64))
        return index

    def _register(self, row: int, task: Task, namespace: str) -> None:
        rules = _TaskRules(row=row, task=task, namespace=namespace)
        constraints = task.inter_pod
        if constraints.required_affinity:
            matcher = self._matcher(constraints.required_affinity, namespace)
            for term in constraints.required_affinity:
                rules.affinity.append((term, self._counter(matcher, term.topology_key, None)))
            self._dependents.setdefault(matcher, []).append((row, None))
        for term in constraints.required_anti_affinity:
            rules.anti.append((term, self._counter(self._matcher((term,), namespace), term.topology_key, None)))
        for weighted in constraints.preferred_affinity:
            term = weighted.term
            rules.preferred_affinity.append(
                (weighted.weight, self._counter(self._matcher((term,), namespace), term.topology_key, None))
            )
        for weighted in constraints.preferred_anti_affinity:
            term = weighted.term
            rules.preferred_anti.append(
                (weighted.weight, self._counter(self._matcher((term,), namespace), term.topology_key, None))
            )
        for constraint in constraints.topology_spread:
            # The spread's selector as a term of the task's namespace: what `spread_of` counts.
            as_term = PodAffinityTerm(
                label_selector=constraint.label_selector, namespaces=(namespace,), topology_key=constraint.topology_key
            )
            matcher = self._matcher((as_term,), namespace)
            eligible = self._eligible(task, constraint)
            dom, names = self._domain(constraint.topology_key)
            spread = _Spread(
                constraint=constraint,
                counter=self._counter(matcher, constraint.topology_key, eligible),
                eligible=eligible,
                present=np.bincount(dom[eligible], minlength=len(names) + 1)[: len(names)] > 0,
                self_match=int(term_selects(as_term, namespace, namespace, task.labels)),
            )
            if constraint.when_unsatisfiable == "DoNotSchedule":
                rules.hard_spread.append(spread)
                self._dependents.setdefault(matcher, []).append((row, spread))
            else:
                rules.soft_spread.append(spread)
        rules.matches_own_affinity = all(
            term_selects(term, namespace, namespace, task.labels) for term in constraints.required_affinity
        )
        self._rules[row] = rules

    def _eligible(self, task: Task, constraint: TopologySpreadConstraint) -> np.ndarray:
        """`[N]` counts_nodes, asked once per (node class, has the key)."""
        problem, nodes = self.problem, self.snapshot.nodes
        keys = {c.topology_key for c in task.inter_pod.topology_spread if c.when_unsatisfiable == constraint.when_unsatisfiable}
        has_keys = np.ones(len(nodes), dtype=bool)
        for key in keys:  # counts_nodes asks for every key of the constraints of its kind
            dom, names = self._domain(key)
            has_keys &= dom < len(names)
        kinds = problem.node_class * 2 + has_keys
        answer: dict[int, bool] = {}
        out = np.zeros(len(nodes), dtype=bool)
        for n, kind in enumerate(kinds.tolist()):
            if kind not in answer:
                answer[kind] = counts_nodes(nodes[n], task, constraint)
            out[n] = answer[kind]
        return out

    # ---- members ----

    def _member(self, pod: int) -> tuple[_Member, int]:
        """What `pod` changes, and its task row when it is pending (−1 when running)."""
        problem = self.problem
        if problem.pod_running[pod]:
            spec = self.snapshot.pods[pod]
            anti_ident = tuple(term.model_dump_json() for term in spec.required_anti_affinity)
            ident: object = (spec.namespace, tuple(sorted(spec.labels.items())), anti_ident)
            namespace, labels, anti, row = spec.namespace, spec.labels, spec.required_anti_affinity, -1
        else:
            row = int(problem.pod_task_row[pod])
            key, name = problem.task_keys[row]
            task = self.snapshot.pod_group_by_key[key].task_by_name[name]
            namespace = self._namespace[int(problem.pod_group[pod])]
            ident, labels, anti = ("task", row), task.labels, task.inter_pod.required_anti_affinity
        member = self._members.get(ident)
        if member is None:
            matchers = {m for m in range(len(self._matchers)) if self._selects(m, namespace, labels)}
            counters = tuple(c for c, counter in enumerate(self._counters) if counter.matcher in matchers)
            holders = tuple(self._holder_ids[(namespace, term.model_dump_json())] for term in anti)
            member = self._members[ident] = _Member(counters=counters, holders=holders)
        return member, row

    def update(self, pod: int, node: int, sign: int) -> None:
        """`pod` comes to (`sign` 1) or leaves (−1) `node`: a bind, an eviction, or their undo."""
        member, row = self._member(pod)
        for c in member.counters:
            counter = self._counters[c]
            if counter.nodes is None or counter.nodes[node]:
                d = self._domains[counter.key][0][node]
                if d < counter.counts.size - 1:
                    counter.counts[d] += sign
        for h in member.holders:
            term = self._holders[h][0]
            d = self._domains[term.topology_key][0][node]
            if d < self._holder_counts[h].size - 1:
                self._holder_counts[h][d] += sign
        if row >= 0:
            on = self._bound.setdefault(row, {})
            on[node] = on.get(node, 0) + sign
            self._bound_total[row] = self._bound_total.get(row, 0) + sign

    # ---- queries ----

    def _seen_as(self, row: int) -> tuple[str, Mapping[str, str]]:
        """The namespace and labels other pods' selectors see on the pods of task `row`."""
        key, name = self.problem.task_keys[row]
        group = self.snapshot.pod_group_by_key[key]
        return group.namespace, group.task_by_name[name].labels

    def _task_matchers(self, row: int) -> frozenset[int]:
        found = self._row_matchers.get(row)
        if found is None:
            namespace, labels = self._seen_as(row)
            found = self._row_matchers[row] = frozenset(
                m for m in range(len(self._matchers)) if self._selects(m, namespace, labels)
            )
        return found

    def _selecting_holders(self, row: int) -> tuple[int, ...]:
        """Holder terms that select the pods of task `row`."""
        found = self._row_holders.get(row)
        if found is None:
            namespace, labels = self._seen_as(row)
            found = self._row_holders[row] = tuple(
                h for h, (term, owner) in enumerate(self._holders) if term_selects(term, owner, namespace, labels)
            )
        return found

    def _spread_dependents(self, row: int) -> Iterator[tuple[int, _Spread]]:
        """DoNotSchedule constraints of other tasks with bound pods that select the pods of `row`."""
        for matcher in self._task_matchers(row):
            for other, spread in self._dependents.get(matcher, ()):
                if spread is not None and other != row and self._bound_total.get(other, 0) > 0:
                    yield other, spread

    def involved(self, row: int) -> bool:
        """Does anything here constrain where the pods of task `row` go, or how nodes rank?"""
        rules = self._rules.get(row)
        if rules is not None and rules.constrained:
            return True
        if any(self._holder_counts[h][:-1].any() for h in self._selecting_holders(row)):
            return True
        return next(self._spread_dependents(row), None) is not None

    def has_soft(self, row: int) -> bool:
        rules = self._rules.get(row)
        return rules is not None and rules.soft

    def _minimum(self, spread: _Spread) -> int:
        counts = self._counters[spread.counter].counts[:-1]
        domains = int(spread.present.sum())
        minimum_domains = spread.constraint.min_domains
        if not domains or (minimum_domains is not None and domains < minimum_domains):
            return 0
        return int(counts[spread.present].min())

    def _checks(self, row: int) -> Iterator[tuple[str, np.ndarray, object]]:
        """(rule name, `[N]` mask of the nodes that fail, phrase per failing node) for each
        filter the pods of `row` face now. A phrase is a string, or a function of the node."""
        rules = self._rules.get(row)
        if rules is not None and rules.affinity:
            unmet = []
            for term, c in rules.affinity:
                counter = self._counters[c]
                dom = self._domains[counter.key][0]
                unmet.append((term, counter.counts[dom] == 0, counter.counts[:-1].sum() == 0, dom))
            if rules.matches_own_affinity and all(nowhere for _, _, nowhere, _ in unmet):
                for term, _, _, dom in unmet:  # the first of a series: anywhere with every key
                    yield pod_affinity.NAME, dom == len(self._domains[term.topology_key][1]), (
                        f"no {term.topology_key} label"
                    )
            else:
                for term, fails, _, _ in unmet:
                    yield pod_affinity.NAME, fails, f"affinity {describe_selector(term.label_selector)} on {term.topology_key}"
        if rules is not None:
            for term, c in rules.anti:
                counter = self._counters[c]
                dom = self._domains[counter.key][0]
                yield pod_affinity.NAME, counter.counts[dom] > 0, (
                    f"anti-affinity {describe_selector(term.label_selector)} on {term.topology_key}"
                )
        for h in self._selecting_holders(row):
            counts = self._holder_counts[h]
            if counts[:-1].any():
                term, _ = self._holders[h]
                dom = self._domains[term.topology_key][0]
                yield pod_affinity.NAME, counts[dom] > 0, (
                    f"a pod there has anti-affinity {describe_selector(term.label_selector)} on {term.topology_key}"
                )
        for spread in rules.hard_spread if rules is not None else ():
            yield from self._spread_check(spread, spread.self_match, None)
        for other, spread in self._spread_dependents(row):
            yield from self._spread_check(spread, 1, other)

    def _spread_check(self, spread: _Spread, adds: int, other: int | None) -> Iterator[tuple[str, np.ndarray, object]]:
        constraint = spread.constraint
        counts = self._counters[spread.counter].counts
        dom, names = self._domains[constraint.topology_key]
        minimum = self._minimum(spread)
        over = counts + adds - minimum > constraint.max_skew  # [D + 1]
        over[-1] = False
        if other is None:
            fails = ~spread.eligible | over[dom]
        else:  # only domains where the other task has bound pods
            occupied = np.zeros(over.size, dtype=bool)
            for node, count in self._bound.get(other, {}).items():
                if count > 0:
                    occupied[dom[node]] = True
            fails = spread.eligible & over[dom] & occupied[dom]
        if not fails.any():
            return
        what = describe_constraint(constraint)
        if other is not None:
            key, name = self.problem.task_keys[other]
            what = f"{what} of task {name} ({key})"

        def phrase(node: int) -> str:
            d = int(dom[node])
            if not spread.eligible[node]:
                return f"{what}: not an eligible node" if d < len(names) else f"{what}: no {constraint.topology_key} label"
            return f"{what}: {constraint.topology_key}={names[d]} would end {int(counts[d]) + adds - minimum} above the emptiest"

        yield topology_spread.NAME, fails, phrase

    def allowed(self, row: int) -> np.ndarray | None:
        """`[N]` bool: nodes where one more pod of task `row` passes every filter now; None: all."""
        mask = None
        for _, fails, _ in self._checks(row):
            mask = ~fails if mask is None else mask & ~fails
        return mask

    def explain(self, row: int, nodes: np.ndarray) -> tuple[dict[str, dict[str, int]], np.ndarray]:
        """Per rule, phrase → how many of `nodes` (`[N]` bool) fail first there; and the
        `[N]` mask of those that fail any."""
        counts: dict[str, dict[str, int]] = {}
        left = nodes.copy()
        for rule, fails, phrase in self._checks(row):
            hit = left & fails
            if not hit.any():
                continue
            left &= ~fails
            per = counts.setdefault(rule, {})
            if isinstance(phrase, str):
                per[phrase] = per.get(phrase, 0) + int(hit.sum())
            else:
                for node in np.flatnonzero(hit).tolist():
                    text = phrase(node)  # type: ignore[operator]
                    per[text] = per.get(text, 0) + 1
        return counts, nodes & ~left

    def preference_missed(self, row: int, nodes: np.ndarray) -> np.ndarray:
        """Locality weight one more pod of task `row` adds on each of `nodes` (indices): its
        preferred affinity terms no pod in the domain meets, its preferred anti-affinity
        terms one does, and how far each ScheduleAnyway domain would end above the emptiest
        + maxSkew — what `pod_affinity.preference_missed` and `topology_spread.skew_excess`
        count, as the cluster stands now."""
        rules = self._rules[row]
        missed = np.zeros(nodes.size, dtype=np.int64)
        for weight, c in rules.preferred_affinity:
            counter = self._counters[c]
            missed += weight * (counter.counts[self._domains[counter.key][0][nodes]] == 0)
        for weight, c in rules.preferred_anti:
            counter = self._counters[c]
            missed += weight * (counter.counts[self._domains[counter.key][0][nodes]] > 0)
        for spread in rules.soft_spread:
            constraint = spread.constraint
            counts = self._counters[spread.counter].counts
            dom = self._domains[constraint.topology_key][0][nodes]
            excess = np.maximum(0, counts[dom] + spread.self_match - self._minimum(spread) - constraint.max_skew)
            missed += np.where(spread.eligible[nodes], excess, constraint.max_skew + 1)
        return missed

    # ---- evictions ----

    def protected(self, pod: int) -> bool:
        """Is running `pod` counted on by the required affinity or DoNotSchedule spread of
        a task with pods bound this cycle?"""
        member, _ = self._member(pod)
        for c in member.counters:
            for row, _ in self._dependents.get(self._counters[c].matcher, ()):
                if self._bound_total.get(row, 0) > 0:
                    return True
        return False

    def protected_mask(self, pods: np.ndarray) -> np.ndarray:
        """`protected` for each of `pods`."""
        if not any(self._bound_total.get(row, 0) > 0 for deps in self._dependents.values() for row, _ in deps):
            return np.zeros(pods.size, dtype=bool)
        return np.array([self.protected(int(p)) for p in pods], dtype=bool)
