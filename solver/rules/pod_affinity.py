"""Required pod affinity and anti-affinity: a pod goes only where the pods its terms select
are (affinity) or are not (anti-affinity), domain by domain — kube-scheduler's
InterPodAffinity filter, judged on the cycle's end state.

The meaning, as Kubernetes has it (`PodAffinityTerm` in the core API):
  - a term selects a pod when the pod is in one of the term's namespaces (none listed: the
    namespace of the pod stating the term; `namespaceSelector: {}`: all) and its labels
    match the term's label selector (`matchLabels` and `matchExpressions` ANDed; an empty
    selector selects every pod, a missing one none);
  - a node's *domain* for a term is its value of the term's `topologyKey`
    (`kubernetes.io/hostname` is the node's name when the label is missing, as the kubelet
    sets it); nodes without the key are in no domain;
  - **affinity**: the pod's node must carry every required term's key, and each term's
    domain must hold some other pod that matches *all* the terms (kube-scheduler counts
    only such pods). The first pod of a series that selects itself is let in on any node
    with the keys: when the pod matches all its terms and no other pod that does sits on a
    node with any of their keys (kube-scheduler's exception, so such groups do not wait
    forever);
  - **anti-affinity**: no other pod that a required term selects may be in the pod's domain
    (a node without the key satisfies it); and, symmetrically, the pod may not enter the
    domain of a pod whose own required anti-affinity term selects it — a running pod's
    (`Pod.required_anti_affinity`) or another pod bound in the same cycle.
"Other pods" are the pods after the placement: running pods that stay and pods bound this
cycle. A pending pod is seen with its task's labels (`Task.labels`). Running pods are not
judged (`IgnoredDuringExecution`). Judging the end state, not pod by pod, is what a batch
means: a placement passes when the pods could have been bound one at a time in some order
with each passing kube-scheduler's filter.

Worked example: task `web` (labels app=web) with anti-affinity {app=web} on
`kubernetes.io/hostname`, three replicas, nodes n1 n2: at most one per node — two bind,
the third breaks the rule wherever it goes. Task `cache` with affinity {app=web} on
`zone`: its pods go only to zones that hold a web pod after the cycle.

Preferred terms are a preference, scored beside the filter as kube-scheduler's
InterPodAffinity plugin does both: `preference_missed` is, per bound pod, the weight of its
preferred affinity terms that select no other pod in its domain plus that of its preferred
anti-affinity terms that do (the objective's locality tier, `solver.objective`).

The predicates here (`selects`, `term_selects`, `domain`) are the definitions every engine
uses; `check` judges each pod bound this cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from models.pod_affinity import HOSTNAME_KEY, LabelSelector, PodAffinityTerm
from models.snapshot import Node, Snapshot, Task
from solver.after import After
from solver.violation import Violation

__all__ = [
    "NAME",
    "selects",
    "term_selects",
    "terms_select",
    "domain",
    "Member",
    "members_after",
    "Residents",
    "check",
    "preference_missed",
    "describe_selector",
]

NAME = "pod_affinity"


def selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """`metav1.LabelSelector` over `labels`; None selects nothing, an empty selector everything."""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in selector.match_labels.items()):
        return False
    for requirement in selector.match_expressions:
        present = requirement.key in labels
        if requirement.operator == "In" and not (present and labels[requirement.key] in requirement.values):
            return False
        if requirement.operator == "NotIn" and present and labels[requirement.key] in requirement.values:
            return False
        if requirement.operator == "Exists" and not present:
            return False
        if requirement.operator == "DoesNotExist" and present:
            return False
    return True


def term_selects(term: PodAffinityTerm, owner_namespace: str, namespace: str, labels: Mapping[str, str]) -> bool:
    """Does `term`, stated by a pod in `owner_namespace`, select a pod in `namespace` with `labels`?"""
    if not term.all_namespaces and namespace not in (term.namespaces or (owner_namespace,)):
        return False
    return selects(term.label_selector, labels)


def domain(node: Node, key: str) -> str | None:
    """The node's value of topology `key`; the node's name for the hostname key without the label."""
    value = node.labels.get(key)
    if value is None and key == HOSTNAME_KEY:
        return node.name
    return value


@dataclass(frozen=True)
class Member:
    """A pod after the placement, as inter-pod rules see it."""

    key: str
    namespace: str
    labels: Mapping[str, str]
    node: Node
    anti_terms: tuple[PodAffinityTerm, ...]
    bound: bool


def members_after(snapshot: Snapshot, after: After) -> list[Member]:
    """Running pods that stay, then pods bound this cycle (with their task's labels and terms)."""
    members = [
        Member(pod.key, pod.namespace, pod.labels, snapshot.node_by_name[pod.node], pod.required_anti_affinity, False)
        for pod in after.kept
        if pod.node is not None
    ]
    members += [
        Member(b.pod.key, b.pod.namespace, b.task.labels, b.node, b.task.inter_pod.required_anti_affinity, True)
        for b in after.bound
    ]
    return members


@dataclass
class Residents:
    """Members indexed by (topology key, domain), built per key on first use."""

    members: Sequence[Member]
    _by_domain: dict[str, dict[str, list[Member]]] = field(default_factory=dict)
    _holders: list[Member] | None = None

    def in_domain(self, key: str, value: str) -> list[Member]:
        index = self._by_domain.get(key)
        if index is None:
            index = {}
            for member in self.members:
                member_domain = domain(member.node, key)
                if member_domain is not None:
                    index.setdefault(member_domain, []).append(member)
            self._by_domain[key] = index
        return index.get(value, [])

    def selected(self, term: PodAffinityTerm, owner_namespace: str, value: str, *, besides: str) -> list[Member]:
        """Members other than `besides` in domain `value` that `term` selects."""
        return [
            m
            for m in self.in_domain(term.topology_key, value)
            if m.key != besides and term_selects(term, owner_namespace, m.namespace, m.labels)
        ]

    def anti_holders(self) -> list[Member]:
        if self._holders is None:
            self._holders = [m for m in self.members if m.anti_terms]
        return self._holders


def describe_selector(selector: LabelSelector | None) -> str:
    """People's form: "{app=web, tier In [a, b]}"; "nothing" for a missing selector."""
    if selector is None:
        return "nothing"
    parts = [f"{key}={value}" for key, value in sorted(selector.match_labels.items())]
    for r in selector.match_expressions:
        parts.append(f"{r.key} {r.operator}" + (f" [{', '.join(r.values)}]" if r.values else ""))
    return "{" + ", ".join(parts) + "}"


def terms_select(terms: Sequence[PodAffinityTerm], owner_namespace: str, namespace: str, labels: Mapping[str, str]) -> bool:
    """Do all of `terms` select the pod? How kube-scheduler counts a pod for required
    affinity: only a pod that matches every term. Example: terms {app=db}, {tier=cache}: a
    pod labelled app=db alone → False; app=db, tier=cache → True."""
    return all(term_selects(term, owner_namespace, namespace, labels) for term in terms)


def _matches_all(terms: Sequence[PodAffinityTerm], owner_namespace: str, member: Member) -> bool:
    return terms_select(terms, owner_namespace, member.namespace, member.labels)


def _first_of_series(task: Task, member: Member, residents: Residents) -> bool:
    """kube-scheduler's exception: the pod matches all its affinity terms, and no other pod
    that matches them all sits on a node with any of their keys."""
    terms = task.inter_pod.required_affinity
    if not _matches_all(terms, member.namespace, member):
        return False
    keys = {term.topology_key for term in terms}
    return not any(
        m.key != member.key and any(domain(m.node, key) is not None for key in keys) and _matches_all(terms, member.namespace, m)
        for m in residents.members
    )


def affinity_failures(task: Task, member: Member, residents: Residents) -> list[str]:
    """Why `member` (a pod of `task`) breaks its required affinity, one phrase per term; [] when
    it holds. As kube-scheduler counts it, a pod satisfies the terms only by matching all of
    them: each term's domain must hold some other pod that every term selects."""
    terms = task.inter_pod.required_affinity
    failures = []
    keys_missing = False
    for term in terms:
        value = domain(member.node, term.topology_key)
        if value is None:
            keys_missing = True
            failures.append(
                f"affinity {describe_selector(term.label_selector)} on {term.topology_key}: "
                f"node {member.node.name} has no {term.topology_key} label"
            )
        elif not any(
            m.key != member.key and _matches_all(terms, member.namespace, m)
            for m in residents.in_domain(term.topology_key, value)
        ):
            failures.append(
                f"affinity {describe_selector(term.label_selector)} on {term.topology_key}: "
                f"no pod it selects in {term.topology_key}={value}"
            )
    if not failures or keys_missing:
        return failures  # a node without a key fails even the first of a series, as in kube-scheduler
    return [] if _first_of_series(task, member, residents) else failures


def anti_affinity_failures(task: Task, member: Member, residents: Residents) -> list[str]:
    """Why `member` breaks required anti-affinity, its own terms and other pods' terms; [] when it holds."""
    failures = []
    for term in task.inter_pod.required_anti_affinity:
        value = domain(member.node, term.topology_key)
        if value is None:
            continue
        others = residents.selected(term, member.namespace, value, besides=member.key)
        if others:
            failures.append(
                f"anti-affinity {describe_selector(term.label_selector)} on {term.topology_key}: "
                f"{term.topology_key}={value} holds {_names(others)}"
            )
    for holder in residents.anti_holders():
        if holder.key == member.key or holder.bound:
            continue  # a pod bound this cycle reports its own terms
        for term in holder.anti_terms:
            value = domain(member.node, term.topology_key)
            if value is None or domain(holder.node, term.topology_key) != value:
                continue
            if term_selects(term, holder.namespace, member.namespace, member.labels):
                failures.append(
                    f"pod {holder.key} in {term.topology_key}={value} has anti-affinity "
                    f"{describe_selector(term.label_selector)}, which selects it"
                )
    return failures


def _names(members: Iterable[Member]) -> str:
    keys = sorted(m.key for m in members)
    return ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Each pod bound this cycle keeps its required pod affinity and anti-affinity, and
    every other pod's required anti-affinity, in the end state."""
    if not any(b.task.inter_pod.required_affinity or b.task.inter_pod.required_anti_affinity for b in after.bound) and not (
        after.bound and any(p.required_anti_affinity for p in after.kept)
    ):
        return []
    members = members_after(snapshot, after)
    residents = Residents(members)
    by_key = {m.key: m for m in members if m.bound}
    violations = []
    for b in after.bound:
        member = by_key[b.pod.key]
        failures = affinity_failures(b.task, member, residents) + anti_affinity_failures(b.task, member, residents)
        violations.extend(
            Violation(rule=NAME, subject=b.pod.key, message=f"pod {b.pod.key} on node {b.node.name}: {failure}")
            for failure in failures
        )
    return violations


def preference_missed(snapshot: Snapshot, after: After) -> int:
    """Σ over bound pods of the weight of preferred affinity terms selecting no other pod in
    the pod's domain, plus that of preferred anti-affinity terms selecting some."""
    bound = [b for b in after.bound if b.task.inter_pod.preferred_affinity or b.task.inter_pod.preferred_anti_affinity]
    if not bound:
        return 0
    members = members_after(snapshot, after)
    residents = Residents(members)
    total = 0
    for b in bound:
        for weighted in b.task.inter_pod.preferred_affinity:
            value = domain(b.node, weighted.term.topology_key)
            if value is None or not residents.selected(weighted.term, b.pod.namespace, value, besides=b.pod.key):
                total += weighted.weight
        for weighted in b.task.inter_pod.preferred_anti_affinity:
            value = domain(b.node, weighted.term.topology_key)
            if value is not None and residents.selected(weighted.term, b.pod.namespace, value, besides=b.pod.key):
                total += weighted.weight
    return total
