"""Why a PodGroup stays pending: one function per reason, each returning a `Reason` whose
sentence is rendered from the rule, code and numbers it carries (`models.reason`).

Engines call the functions below with numbers, as kube-scheduler's `FitError` folds per-node
statuses into "0/120 nodes: 80 insufficient gpu, 40 outside tier 2" and `RunFilterPlugins`
stamps the plugin's name on a status. Each function is declared with its code and the rule
it speaks for (`@_says("exceeded", "quota")`), so the code that acts on a reason reads
`reason.rule` and `reason.code` — `quota_exceeded.code`, the rule's `NAME` — and never parses
the words; every sentence starts with its rule ("quota: queue ml …") for the people reading it.

A reason's rule is a rule's `NAME` (`solver.rules.RULES`) or a source that is no rule
(`NOT_RULES`); `REASON_MAKERS` lists every function, so a test can walk them and the
controller's table of PodGroup conditions can be checked against every rule they produce.

Each function also says whether nodes added to the cluster could lift its reason
(`nodes_help`), which is what an autoscaler needs to know: Cluster Autoscaler and Karpenter
buy nodes for a pending pod whose `PodScheduled` condition has reason `Unschedulable` and
for no other. A gang short of free GPUs, a task no node's labels admit, a topology tier
with no domain big enough, an overdue gang waiting for the nodes it holds to drain — a node
could lift these (the overdue gang starts on a bought node instead of waiting for the drain;
measured in docs/results.md, "An autoscaled cluster"). A queue at its capability, a closed
queue, a dependency not yet running, scheduling gates, a gang with fewer pods than its
minimum, pods that fit but the search ended first — no node lifts these, and a node bought
for them idles. `nodes_would_help(reasons)` says it of a
PodGroup: every one of its reasons must be one a node could lift.

Quantities are formatted for people: cpu in cores ("2.5 cpu"), gpu in devices ("8 gpu",
"0.5 gpu"), memory in binary units ("1.5Gi memory"), other resources as plain integers.

Not promised: the exact wording after the rule — it may gain detail; rule and code stay.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, ParamSpec

from models.duration import format_minutes
from models.quantity import format_bytes, format_milli
from models.reason import Reason
from models.snapshot import CPU, GPU, MEMORY, PODS

__all__ = [
    "NOT_RULES",
    "REASON_MAKERS",
    "nodes_would_help",
    "Reason",
    "Says",
    "format_quantity",
    "format_resources",
    "capacity_fit_error",
    "dependency_waits",
    "dependency_starting",
    "waiting_task",
    "eligibility_none",
    "evicted",
    "eviction_refused",
    "fits_after",
    "gang_below_minimum",
    "gang_released",
    "gang_message",
    "gang_assigned_message",
    "EVENT_MESSAGE_CHARS",
    "gang_shortfall",
    "gang_too_few_pods",
    "sub_group_no_room",
    "sub_group_too_few_pods",
    "sub_groups_short",
    "gated_waiting",
    "inter_pod_breach",
    "inter_pod_fit_error",
    "cluster_dispatch",
    "no_one_cluster",
    "not_in_cluster",
    "numa_no_cell",
    "pods_full",
    "preemption_not_enough",
    "reclaim_past_share",
    "queue_closed",
    "queue_missing",
    "quota_exceeded",
    "backfill_clause",
    "reservation_holding",
    "topology_no_domain",
    "unplaced",
    "left_out",
    "usage_not_judged",
    "colocation_not_oversubscribed",
    "gpu_not_lent",
    "dra_no_allocation",
]

NOT_RULES: Mapping[str, str] = {
    "queue": "its queue is missing or closed, judged before any rule (Volcano's enqueue)",
    "unplaced": "no rule refuses it: the search ended first, or the placement leaves it out",
    "eviction": "the API server refused an eviction its placement needs (the controller)",
    "cluster": "a fleet's job fits in no one cluster (`solver.fleet`)",
}
"""The sources of reasons that are no rule of `RULES`, and what each means."""

P = ParamSpec("P")


class Says(Generic[P]):
    """A reason function: called with its numbers, it returns the `Reason` rendered from them.
    `code` and `rules` (the rule it speaks for, or the ones a `rule` argument may name) are
    what callers and tests compare a reason against: `reason.code == pods_full.code`.
    `nodes_help`: whether nodes added to the cluster could lift it (`nodes_would_help`)."""

    def __init__(self, code: str, rules: tuple[str, ...], render: Callable[P, str], *, nodes_help: bool) -> None:
        self.code, self.rules, self.render, self.nodes_help = code, rules, render, nodes_help
        parameters = inspect.signature(render).parameters
        self._positional = tuple(name for name, p in parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD)
        self._defaults = {name: p.default for name, p in parameters.items() if p.default is not p.empty}
        self._takes_rule = "rule" in parameters
        functools.update_wrapper(self, render)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Reason:
        if len(args) > len(self._positional) or kwargs.keys() & set(self._positional[: len(args)]):
            raise TypeError(f"{self.render.__name__}: arguments {args} {kwargs} do not match its parameters")
        numbers = {**self._defaults, **dict(zip(self._positional, args)), **kwargs}
        rule = numbers.pop("rule") if self._takes_rule else self.rules[0]
        if rule not in self.rules:
            raise ValueError(f"{self.render.__name__}: rule {rule!r} is none of {self.rules}")
        sentence = self.render(**({"rule": rule} if self._takes_rule else {}), **numbers)  # type: ignore[arg-type]
        return Reason(sentence, rule=rule, code=self.code, numbers=numbers)  # type: ignore[arg-type]


_MAKERS: list[Says] = []  # type: ignore[type-arg]


def _says(code: str, *rules: str, nodes_help: bool) -> Callable[[Callable[P, str]], Says[P]]:
    """Declare a reason function: its `code`, the rule it speaks for — or, when it takes a
    `rule` argument, every rule that argument may name — and whether nodes added to the
    cluster could lift it (`nodes_would_help`)."""

    def declare(render: Callable[P, str]) -> Says[P]:
        made = Says(code, rules, render, nodes_help=nodes_help)
        _MAKERS.append(made)
        return made

    return declare


def format_quantity(resource: str, amount: int) -> str:
    """`("cpu", 2500)` → "2.5 cpu"; `("gpu", 8000)` → "8 gpu"; `("memory", 2**31)` → "2Gi memory"."""
    if resource in (CPU, GPU):
        return f"{format_milli(amount)} {resource}"
    if resource == MEMORY:
        return f"{format_bytes(amount)} memory"
    return f"{amount} {resource}"


def format_resources(amounts: Mapping[str, int]) -> str:
    """`{"cpu": 80000, "gpu": 8000}` → "8 gpu, 80 cpu": GPUs first, zeros left out, and the
    pod count too — every pod asks one, and a full node has its own sentence (`pods_full`)."""
    order = sorted((name for name, amount in amounts.items() if amount and name != PODS), key=_resource_order)
    return ", ".join(format_quantity(name, amounts[name]) for name in order) or "nothing"


def _resource_order(name: str) -> tuple[int, str]:
    return ({GPU: 0, CPU: 1, MEMORY: 2}.get(name, 3), name)


def _fold(counts: Mapping[str, int]) -> str:
    """`{"insufficient cpu": 2, "untolerated taint": 1}` → "2 insufficient cpu, 1 untolerated taint"."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count} {what}" for what, count in ordered if count)


@_says("missing", "queue", nodes_help=False)
def queue_missing(queue: str) -> str:
    return f"queue: queue {queue} does not exist"


@_says("closed", "queue", nodes_help=False)
def queue_closed(queue: str) -> str:
    return f"queue: queue {queue} is closed"


@_says("exceeded", "quota", nodes_help=False)
def quota_exceeded(queue: str, *, resource: str, capability: int, in_use: int, needs: int) -> str:
    """"quota: queue ml-team capability 64 gpu, 60 in use, job needs 8"."""
    unit = format_quantity(resource, capability)
    return (
        f"quota: queue {queue} capability {unit}, {_bare(resource, in_use)} in use, "
        f"job needs {_bare(resource, needs)}"
    )


def _bare(resource: str, amount: int) -> str:
    """The number of `format_quantity` without the unit word: ("gpu", 8000) → "8"."""
    text = format_quantity(resource, amount)
    return text.removesuffix(f" {resource}").removesuffix(" memory")


@_says("waits", "dependency", nodes_help=False)
def dependency_waits(task: str, *, dependency: str, running: int, total: int) -> str:
    """"dependency: task-b waits for task-a (1 of 2 running)"."""
    return f"dependency: {task} waits for {dependency} ({running} of {total} running)"


@_says("not_running", "dependency", nodes_help=False)
def dependency_starting(*, dependency: str, running: int, total: int) -> str:
    """A pod the controller holds out of the cycle while its dependency's pods are bound but
    not all Running yet: "dependency: waits for task-a to run (1 of 2 running)"."""
    return f"dependency: waits for {dependency} to run ({running} of {total} running)"


def waiting_task(reason: str) -> tuple[str, str] | None:
    """The (task, dependency) a `dependency_waits` reason names, None for any other reason:
    what a status line shows of a started gang ("task-b waiting on dependency task-a")."""
    reason = Reason.read(reason)
    if (reason.rule, reason.code) != (dependency_waits.rules[0], dependency_waits.code):
        return None
    return str(reason.numbers["task"]), str(reason.numbers["dependency"])


@_says("no_node", "eligibility", nodes_help=True)
def eligibility_none(task: str, *, nodes: int, counts: Mapping[str, int]) -> str:
    """"eligibility: task worker: 0/3 nodes: 2 node selector mismatch, 1 untolerated taint"."""
    return f"eligibility: task {task}: 0/{nodes} nodes: {_fold(counts) or 'the cluster has no nodes'}"


@_says("no_allocation", "dra", nodes_help=True)
def dra_no_allocation(claim: str, request: str, *, nodes: int, counts: Mapping[str, int]) -> str:
    """"dra: claim train-0-gpus request gpus: 0/12 nodes: 9 fewer than 8 free devices of class
    gpu.nvidia.com, 3 no 8 free devices share gpu.nvidia.com/nvlinkDomain"."""
    asked = f" request {request}" if request else ""  # a claim allocated already names no request
    return f"dra: claim {claim}{asked}: 0/{nodes} nodes: {_fold(counts)}"


@_says("no_fit", "capacity", nodes_help=True)
def capacity_fit_error(task: str, *, nodes: int, fitting: int, counts: Mapping[str, int]) -> str:
    """"capacity: task worker: 0/120 nodes fit another pod: 80 insufficient gpu, 40 node selector mismatch"."""
    return f"capacity: task {task}: {fitting}/{nodes} nodes fit another pod: {_fold(counts)}"


@_says("no_fit", "pod_affinity", "topology_spread", nodes_help=True)
def inter_pod_fit_error(rule: str, task: str, *, nodes: int, fitting: int, counts: Mapping[str, int]) -> str:
    """The nodes with room that an inter-pod rule (`pod_affinity`, `topology_spread`) turns
    away, folded as `capacity_fit_error`'s: "pod_affinity: task web: 0/3 nodes fit another
    pod: 2 anti-affinity {app=web} on kubernetes.io/hostname"; "topology_spread: task web:
    0/3 nodes fit another pod: 3 spread {app=web} over zone (maxSkew 1): zone=a would end 3
    above the emptiest"."""
    return f"{rule}: task {task}: {fitting}/{nodes} nodes fit another pod: {_fold(counts)}"


@_says("breach", "pod_affinity", "topology_spread", nodes_help=True)
def inter_pod_breach(rule: str, message: str) -> str:
    """A PodGroup whose placement broke an inter-pod rule in the cycle's end state, so it
    waits: "pod_affinity: pod default/cache-0 on node n1: affinity {app=web} on zone: no pod
    it selects in zone=a (at the end of the cycle)"."""
    return f"{rule}: {message} (at the end of the cycle)"


@_says("pods_full", "capacity", nodes_help=True)
def pods_full(task: str, *, node: str, allows: int, in_use: int, more_nodes: int = 0) -> str:
    """"capacity: task worker: pods: node n1 allows 3, 3 in use" (", and 4 more nodes full"):
    the kubelet's pod count, named for one node, as kube-scheduler's "Too many pods"."""
    more = f", and {more_nodes} more nodes full" if more_nodes else ""
    return f"capacity: task {task}: pods: node {node} allows {allows}, {in_use} in use{more}"


@_says("shortfall", "gang", nodes_help=True)
def gang_shortfall(*, placed: int, minimum: int, needs: Mapping[str, int], free: Mapping[str, int]) -> str:
    """"gang: 6 of min 20 pods fit (needs 80 cpu, 24 cpu free)"."""
    return f"gang: {placed} of min {minimum} pods fit (needs {format_resources(needs)}, {format_resources(free)} free)"


@_says("too_few_pods", "gang", nodes_help=False)
def gang_too_few_pods(*, minimum: int, pods: int, task: str | None = None) -> str:
    """"gang: min 8 pods but only 5 exist" (or per task: "task worker needs min 4 pods but only 2 exist")."""
    if task is None:
        return f"gang: min {minimum} pods but only {pods} exist"
    return f"gang: task {task} needs min {minimum} pods but only {pods} exist"


@_says("sub_group_no_room", "gang", nodes_help=True)
def sub_group_no_room(sub_group: str, *, job: str, placed: int, minimum: int, tier: int | None = None) -> str:
    """A sub-group (`SubGroup`) whose minimum fits in no domain of its tier, or at all:
    "gang: subgroup decode-1 of llm-serve: 3 of min 4 pods fit in any tier-1 domain"."""
    where = "" if tier is None else f" in any tier-{tier} domain"
    return f"gang: subgroup {sub_group} of {job}: {placed} of min {minimum} pods fit{where}"


@_says("sub_group_too_few_pods", "gang", nodes_help=False)
def sub_group_too_few_pods(sub_group: str, *, job: str, minimum: int, pods: int) -> str:
    """"gang: subgroup decode-1 of llm-serve needs min 4 pods but only 2 exist"."""
    return f"gang: subgroup {sub_group} of {job} needs min {minimum} pods but only {pods} exist"


@_says("sub_groups_short", "gang", nodes_help=True)
def sub_groups_short(policy: str, *, job: str, started: int, minimum: int) -> str:
    """A PodGroup whose policy starts fewer sub-groups than its `min_sub_groups`:
    "gang: llm-serve: 1 of min 2 sub-groups of policy decode start"."""
    return f"gang: {job}: {started} of min {minimum} sub-groups of policy {policy} start"


@_says("waiting", "gated", nodes_help=False)
def gated_waiting(gates: Sequence[str]) -> str:
    """Pods held by scheduling gates (`solver.rules.gated`), each gate named once:
    "gated: waiting for example.com/quota-check"."""
    return f"gated: waiting for {', '.join(gates)}"


@_says("no_domain", "topology", nodes_help=True)
def topology_no_domain(*, tier: int, needs: Mapping[str, int], best: str | None, best_free: Mapping[str, int]) -> str:
    """"topology: no domain of tier ≤ 1 holds the whole gang (needs 16 gpu; best: leaf-a with 8 gpu)"."""
    best_text = f"best: {best} with {format_resources(best_free)}" if best else "no domain has room"
    return f"topology: no domain of tier ≤ {tier} holds the whole gang (needs {format_resources(needs)}; {best_text})"


@_says("no_cell", "numa", nodes_help=True)
def numa_no_cell(task: str, *, nodes: int, needs: Mapping[str, int]) -> str:
    """"numa: task worker: 3 nodes have room but none on one NUMA cell (needs 4 gpu, 16 cpu)"."""
    return f"numa: task {task}: {nodes} nodes have room but none on one NUMA cell (needs {format_resources(needs)})"


@_says("not_enough", "preemption", nodes_help=True)
def preemption_not_enough(*, action: str, victims: int) -> str:
    """"preemption: evicting all 5 eligible victims (preempt) would still not make room"."""
    return f"preemption: evicting all {victims} eligible victims ({action}) would still not make room"


@_says("past_share", "preemption", nodes_help=True)
def reclaim_past_share(queue: str, *, resource: str, deserved: int, in_use: int, needs: int) -> str:
    """"preemption: reclaim stops at queue team-b's deserved 2 cpu, 2 in use, job needs 1"."""
    unit = format_quantity(resource, deserved)
    return (
        f"preemption: reclaim stops at queue {queue}'s deserved {unit}, {_bare(resource, in_use)} in use, "
        f"job needs {_bare(resource, needs)}"
    )


@_says("evicted", "preemption", nodes_help=False)
def evicted(*, pods: int, reason: str, for_groups: Sequence[str]) -> str:
    """"preemption: 1 pod evicted (preempt) for default/high"."""
    noun = "pod" if pods == 1 else "pods"
    return f"preemption: {pods} {noun} evicted ({reason}) for {', '.join(for_groups)}"


@_says("refused", "eviction", nodes_help=True)
def eviction_refused(pod: str, *, message: str) -> str:
    """An eviction the API server refused, so the room it was to make is not there:
    "eviction: ns/victim-0 refused by the API server: …" (the controller says it)."""
    return f"eviction: {pod} refused by the API server: {message}"


@_says("below_minimum", "gang", nodes_help=True)
def gang_below_minimum(*, placed: int, minimum: int) -> str:
    """"gang: 10 of min 11 pods running or placed"."""
    return f"gang: {placed} of min {minimum} pods running or placed"


@_says("released", "gang", nodes_help=True)
def gang_released(*, placed: int, minimum: int, held_s: float) -> str:
    """A partly bound gang released so its GPUs are not held idle (the controller):
    "gang: 1 of min 4 bound for 60 s; released to be placed whole"."""
    return f"gang: {placed} of min {minimum} bound for {held_s:.0f} s; released to be placed whole"


@_says("holding", "reservation", nodes_help=True)
def reservation_holding(
    domain: str,
    *,
    nodes: int,
    waited_s: float,
    limit_s: float,
    drain_gpus: int,
    free_gpus: int,
    total_gpus: int,
    drained_in_s: float | None = None,
) -> str:
    """A PodGroup past its sla-waiting-time that holds nodes (`solver.rules.reservation`):
    "reservation: waiting 47 min > 30 min; holding leaf-3 (2 nodes held, 8 GPUs to drain), 24 of 64
    GPUs free; backfill allowed for jobs ending within 38 min"; "...; no backfill: a pod on the
    nodes to drain has no activeDeadlineSeconds" when they drain at no known time (`drained_in_s` None)."""
    return (
        f"reservation: waiting {format_minutes(waited_s)} > {format_minutes(limit_s)}; "
        f"holding {domain} ({nodes} node{'s' if nodes != 1 else ''} held, {drain_gpus} GPUs to drain), "
        f"{free_gpus} of {total_gpus} GPUs free{backfill_clause(drained_in_s)}"
    )


def backfill_clause(drained_in_s: float | None, *, lead: str = "backfill allowed") -> str:
    """What may run on held nodes meanwhile: "; backfill allowed for jobs ending within 38 min";
    "" when nothing is left to drain; "; no backfill: …" when the drain has no known end."""
    if drained_in_s is None:
        return "; no backfill: a pod on the nodes to drain has no activeDeadlineSeconds"
    if drained_in_s <= 0:
        return ""  # nothing to drain: the holder can start now
    return f"; {lead} for jobs ending within {format_minutes(drained_in_s)}"


@_says("dispatch", "cluster", nodes_help=True)
def cluster_dispatch(clusters: Sequence[str]) -> str:
    """Where a fleet's submitted job went, a sentence per cluster (`solver.fleet`):
    "cluster: gpu-west: placed, 64 gpu on 8 nodes; gpu-east: 52 gpu short (12 free, 64 to start)"."""
    return "cluster: " + "; ".join(clusters)


@_says("no_one_cluster", "cluster", nodes_help=True)
def no_one_cluster(clusters: Sequence[str]) -> str:
    """A fleet's job kept in one cluster that fits in none, said instead of the topology
    reason of a cluster tier it never asked for: "cluster: the gang fits in no one cluster:
    gpu-west: 440 cpu short (360 cpu free, 800 cpu to start); gpu-east: …"."""
    return f"cluster: the gang fits in no one cluster: {'; '.join(clusters)}"


@_says("not_in_cluster", "cluster", nodes_help=True)
def not_in_cluster(cluster: str, *, why: str) -> str:
    """The same, of a job pinned to one cluster: "cluster: the gang does not fit in gpu-west:
    440 cpu short (…)"."""
    return f"cluster: the gang does not fit in {cluster}: {why}"


@_says("fits_after", "unplaced", nodes_help=False)
def fits_after(*, pending: int, status: str) -> str:
    """A minimum that fits beside the placement, left out because the search stopped:
    "unplaced: 2 pending pods fit after this placement; the search ended first (FEASIBLE)"."""
    return f"unplaced: {pending} pending pods fit after this placement; the search ended first ({status})"


@_says("not_placed", "unplaced", nodes_help=True)
def unplaced(*, pending: int) -> str:
    """The generic reason an engine's silence gets: "unplaced: 3 pending pods not placed this cycle"."""
    return f"unplaced: {pending} pending pods not placed this cycle"


@_says("left_out", "unplaced", nodes_help=False)
def left_out(task: str, *, pending: int, status: str) -> str:
    """A started PodGroup's pods that a node could still take, which the placement leaves
    out (a search that ended first, a topology domain, the objective's order):
    "unplaced: task worker: 2 pending pods fit beside this placement, which leaves them out (FEASIBLE)"."""
    return f"unplaced: task {task}: {pending} pending pods fit beside this placement, which leaves them out ({status})"



def gang_message(*, min_member: int, placed: int, total_pods: int, why: Sequence[str]) -> str:
    """Volcano's gang condition, "3/20 tasks in gang unschedulable: …", with the reasons
    after the colon: the first number is min_member minus the pods placed (or, once that is
    met, the pods still unplaced), the second the PodGroup's pods. The controller writes it
    on the PodGroup and its pending pods; the dashboard shows the same text."""
    unready = max(min_member - placed, 0) or max(total_pods - placed, 0)
    text = "; ".join(why) if why else "no reason given"
    return f"{unready}/{total_pods} tasks in gang unschedulable: {text}"


EVENT_MESSAGE_CHARS = 1024
"""Where an Event's message is cut (the controller writes no longer one)."""


def gang_assigned_message(assignments: Sequence[tuple[str, str]]) -> str:
    """The gang's one Scheduled Event, kube-scheduler's "Successfully assigned ns/pod to node"
    said once for all its pods (`(pod key, node)` pairs): "Successfully assigned 10 pods to
    2 nodes: node-a (job-0, job-1, …), node-b (job-8, job-9)" — nodes and pods sorted, pods
    by name, the Event being in their namespace. Past EVENT_MESSAGE_CHARS a node gives its count of pods instead
    ("node-a (8 pods)"), and past that the nodes left over are counted ("… and 12 more
    nodes"); each pod's own node is on the pod (`kubectl get pods -o wide`)."""
    by_node: dict[str, list[str]] = {}
    for pod, node in assignments:
        by_node.setdefault(node, []).append(pod.rpartition("/")[2])
    pods, nodes = len(assignments), len(by_node)
    head = f"Successfully assigned {pods} pod{'s' if pods != 1 else ''} to {nodes} node{'s' if nodes != 1 else ''}: "
    named = head + ", ".join(f"{node} ({', '.join(sorted(names))})" for node, names in sorted(by_node.items()))
    if len(named) <= EVENT_MESSAGE_CHARS:
        return named
    parts: list[str] = []
    for index, (node, names) in enumerate(sorted(by_node.items())):
        part = f"{node} ({len(names)} pod{'s' if len(names) != 1 else ''})"
        rest = f", … and {nodes - index} more nodes"
        if len(head) + len(", ".join([*parts, part])) + len(rest) > EVENT_MESSAGE_CHARS:
            return head + ", ".join(parts) + rest
        parts.append(part)
    return head + ", ".join(parts)


@_says("no_oversubscribed_room", "colocation", nodes_help=True)
def colocation_not_oversubscribed(*, stale: int, missing: int, unmeasured: int, colocation_nodes: int) -> str:
    """Beside a reason that counts nodes short of `kubernetes.io/batch-*`: how many colocation
    nodes offered offline pods only what online pods have not requested, and why. Example:
    "colocation: 2 of 3 colocation nodes offer offline pods no oversubscribed room (fail
    safe): 1 with stale usage, 1 without usage"; with none: "colocation: offline pods go to
    the 3 colocation nodes only"."""
    parts = _unjudged_nodes(stale, missing, (unmeasured, "whose offline pods' usage is not measured apart"))
    total = stale + missing + unmeasured
    nodes = f"{colocation_nodes} colocation node{'s' if colocation_nodes != 1 else ''}"
    if not total:
        return f"colocation: offline pods go to the {nodes} only"
    verb = "offers" if total == 1 else "offer"
    return f"colocation: {total} of {nodes} {verb} offline pods no oversubscribed room (fail safe): {', '.join(parts)}"


@_says("no_gpu_lent", "colocation", nodes_help=True)
def gpu_not_lent(*, stale: int, missing: int, unmeasured: int, colocation_nodes: int) -> str:
    """Beside the reasons of an offline PodGroup asking a fraction of a GPU: how many
    colocation nodes lend no GPU device, and why. Example: "colocation: 2 of 3 colocation
    nodes lend offline pods no GPU (fail safe: no GPU lent: per-device online usage stale,
    missing or not measured): 1 with stale usage, 1 without per-device usage" — the words
    after "fail safe: " are `solver.rules.colocation.REASON_NO_GPU_LENDING`."""
    parts = _unjudged_nodes(stale, missing, (unmeasured, "without per-device usage"))
    total = stale + missing + unmeasured
    verb = "lends" if total == 1 else "lend"
    return (
        f"colocation: {total} of {colocation_nodes} colocation node{'s' if colocation_nodes != 1 else ''} {verb} offline "
        f"pods no GPU (fail safe: no GPU lent: per-device online usage stale, missing or not measured): {', '.join(parts)}"
    )


def _unjudged_nodes(stale: int, missing: int, unmeasured: tuple[int, str]) -> list[str]:
    """`["1 with stale usage", "2 without usage", …]`, the counts that are not zero."""
    counted = ((stale, "with stale usage"), (missing, "without usage"), unmeasured)
    return [f"{count} {words}" for count, words in counted if count]


@_says("not_judged", "usage", nodes_help=True)
def usage_not_judged(*, stale: int, missing: int, max_age_s: float) -> str:
    """Beside a reason that counts nodes too loaded to take a pod: the nodes whose load was
    not judged, which were candidates like any other. Example: "usage: 3 nodes not judged
    for load (never held back): 1 with a reading older than 300 s, 2 without one"."""
    parts = []
    if stale:
        parts.append(f"{stale} with a reading older than {max_age_s:g} s")
    if missing:
        parts.append(f"{missing} without one")
    total = stale + missing
    return f"usage: {total} node{'s' if total != 1 else ''} not judged for load (never held back): {', '.join(parts)}"


REASON_MAKERS: tuple[Says, ...] = tuple(_MAKERS)  # type: ignore[type-arg]
"""Every reason function above, in the order declared."""


_NODES_HELP: Mapping[tuple[str, str], bool] = {
    (rule, made.code): made.nodes_help for made in REASON_MAKERS for rule in made.rules
}


def nodes_would_help(reasons: Sequence[str]) -> bool:
    """Whether nodes added to the cluster could start a PodGroup that waits for `reasons`
    (module docstring): there is a reason, and each is one a node could lift — one reason of
    policy holds the group whatever the nodes. A sentence read back from JSON, whose code is
    lost, counts as one no node lifts: no node is bought on a guess.

    A task waiting on a dependency waits on another task of the same PodGroup, whose own
    reasons are among these: so a dependency's reason decides nothing by itself — alone it
    holds the group (no node starts a task that waits for pods to run), beside others those
    decide. Example: task t1 depends on t0, t0 fits no node → ["eligibility: task t0: …",
    "dependency: t1 waits for t0 (0 of 1 running)"] → True: a node lets t0 start (and its
    gang minimum leaves t1 out until then).

    Example: ["capacity: task worker: 0/3 nodes fit another pod: 3 insufficient gpu"] → True;
    the same with "quota: queue ml capability 64 gpu, 60 in use, job needs 8" → False."""
    deciding = [reason for reason in map(Reason.read, reasons) if reason.rule != _DEPENDENCY]
    return bool(deciding) and all(_NODES_HELP.get((reason.rule, reason.code), False) for reason in deciding)


_DEPENDENCY = "dependency"
