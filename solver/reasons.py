"""Why a PodGroup stays pending: reason constants and the sentences they fold into.

Engines call the functions below with numbers; each returns one sentence that starts with
the rule's name, as kube-scheduler's `FitError` folds per-node statuses into
"0/120 nodes: 80 insufficient gpu, 40 outside tier 2" and `RunFilterPlugins` stamps the
plugin's name on a status. The prefixes are the constants (`GANG`, `QUOTA`, …), so a test
or a dashboard matches `reason.startswith(QUOTA)` and never parses the numbers.

Quantities are formatted for people: cpu in cores ("2.5 cpu"), gpu in devices ("8 gpu",
"0.5 gpu"), memory in binary units ("1.5Gi memory"), other resources as plain integers.

Not promised: the exact wording after the prefix — it may gain detail; the prefix stays.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from models.quantity import format_bytes, format_milli
from models.snapshot import CPU, GPU, MEMORY, PODS

__all__ = [
    "CAPACITY",
    "DEPENDENCY",
    "ELIGIBILITY",
    "GANG",
    "GATED",
    "NUMA",
    "POD_AFFINITY",
    "PREEMPTION",
    "QUEUE",
    "QUOTA",
    "TOPOLOGY",
    "TOPOLOGY_SPREAD",
    "UNPLACED",
    "USAGE",
    "RESERVATION",
    "format_quantity",
    "format_resources",
    "capacity_fit_error",
    "dependency_waits",
    "waiting_task",
    "eligibility_none",
    "evicted",
    "fits_after",
    "gang_below_minimum",
    "gang_message",
    "gang_assigned_message",
    "EVENT_MESSAGE_CHARS",
    "gang_shortfall",
    "gang_too_few_pods",
    "gated_waiting",
    "inter_pod_breach",
    "inter_pod_fit_error",
    "numa_no_cell",
    "pods_full",
    "preemption_not_enough",
    "reclaim_past_share",
    "queue_closed",
    "queue_missing",
    "quota_exceeded",
    "topology_no_domain",
    "unplaced",
    "left_out",
    "usage_not_judged",
    "colocation_not_oversubscribed",
    "gpu_not_lent",
]

CAPACITY = "capacity: "
DEPENDENCY = "dependency: "
ELIGIBILITY = "eligibility: "
GANG = "gang: "
GATED = "gated: "
NUMA = "numa: "
POD_AFFINITY = "pod_affinity: "
PREEMPTION = "preemption: "
QUEUE = "queue: "
QUOTA = "quota: "
RESERVATION = "reservation: "
TOPOLOGY = "topology: "
TOPOLOGY_SPREAD = "topology_spread: "
UNPLACED = "unplaced: "
USAGE = "usage: "
COLOCATION = "colocation: "


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


def queue_missing(queue: str) -> str:
    return f"{QUEUE}queue {queue} does not exist"


def queue_closed(queue: str) -> str:
    return f"{QUEUE}queue {queue} is closed"


def quota_exceeded(queue: str, *, resource: str, capability: int, in_use: int, needs: int) -> str:
    """"quota: queue ml-team capability 64 gpu, 60 in use, job needs 8"."""
    unit = format_quantity(resource, capability)
    return (
        f"{QUOTA}queue {queue} capability {unit}, {_bare(resource, in_use)} in use, "
        f"job needs {_bare(resource, needs)}"
    )


def _bare(resource: str, amount: int) -> str:
    """The number of `format_quantity` without the unit word: ("gpu", 8000) → "8"."""
    text = format_quantity(resource, amount)
    return text.removesuffix(f" {resource}").removesuffix(" memory")


def dependency_waits(task: str, *, dependency: str, running: int, total: int) -> str:
    """"dependency: task-b waits for task-a (1 of 2 running)"."""
    return f"{DEPENDENCY}{task} waits for {dependency} ({running} of {total} running)"


_DEPENDENCY_WAIT = re.compile(rf"^{DEPENDENCY}(?P<task>\S+) waits for (?P<dependency>\S+) \(")


def waiting_task(sentence: str) -> tuple[str, str] | None:
    """The (task, dependency) a `dependency_waits` sentence names, None for any other
    sentence: what a status line shows of a started gang ("task-b waiting on dependency task-a")."""
    found = _DEPENDENCY_WAIT.match(sentence)
    return (found["task"], found["dependency"]) if found else None


def eligibility_none(task: str, *, nodes: int, counts: Mapping[str, int]) -> str:
    """"eligibility: task worker: 0/3 nodes: 2 node selector mismatch, 1 untolerated taint"."""
    return f"{ELIGIBILITY}task {task}: 0/{nodes} nodes: {_fold(counts) or 'the cluster has no nodes'}"


def capacity_fit_error(task: str, *, nodes: int, fitting: int, counts: Mapping[str, int]) -> str:
    """"capacity: task worker: 0/120 nodes fit another pod: 80 insufficient gpu, 40 node selector mismatch"."""
    return f"{CAPACITY}task {task}: {fitting}/{nodes} nodes fit another pod: {_fold(counts)}"


def inter_pod_fit_error(rule: str, task: str, *, nodes: int, fitting: int, counts: Mapping[str, int]) -> str:
    """The nodes with room that an inter-pod rule (`pod_affinity`, `topology_spread`) turns
    away, folded as `capacity_fit_error`'s: "pod_affinity: task web: 0/3 nodes fit another
    pod: 2 anti-affinity {app=web} on kubernetes.io/hostname"; "topology_spread: task web:
    0/3 nodes fit another pod: 3 spread {app=web} over zone (maxSkew 1): zone=a would end 3
    above the emptiest"."""
    return f"{rule}: task {task}: {fitting}/{nodes} nodes fit another pod: {_fold(counts)}"


def inter_pod_breach(rule: str, message: str) -> str:
    """A PodGroup whose placement broke an inter-pod rule in the cycle's end state, so it
    waits: "pod_affinity: pod default/cache-0 on node n1: affinity {app=web} on zone: no pod
    it selects in zone=a (at the end of the cycle)"."""
    return f"{rule}: {message} (at the end of the cycle)"


def pods_full(task: str, *, node: str, allows: int, in_use: int, more_nodes: int = 0) -> str:
    """"capacity: task worker: pods: node n1 allows 3, 3 in use" (", and 4 more nodes full"):
    the kubelet's pod count, named for one node, as kube-scheduler's "Too many pods"."""
    more = f", and {more_nodes} more nodes full" if more_nodes else ""
    return f"{CAPACITY}task {task}: pods: node {node} allows {allows}, {in_use} in use{more}"


def gang_shortfall(*, placed: int, minimum: int, needs: Mapping[str, int], free: Mapping[str, int]) -> str:
    """"gang: 6 of min 20 pods fit (needs 80 cpu, 24 cpu free)"."""
    return f"{GANG}{placed} of min {minimum} pods fit (needs {format_resources(needs)}, {format_resources(free)} free)"


def gang_too_few_pods(*, minimum: int, pods: int, task: str | None = None) -> str:
    """"gang: min 8 pods but only 5 exist" (or per task: "task worker needs min 4 pods but only 2 exist")."""
    if task is None:
        return f"{GANG}min {minimum} pods but only {pods} exist"
    return f"{GANG}task {task} needs min {minimum} pods but only {pods} exist"


def gated_waiting(gates: Sequence[str]) -> str:
    """Pods held by scheduling gates (`solver.rules.gated`), each gate named once:
    "gated: waiting for example.com/quota-check"."""
    return f"{GATED}waiting for {', '.join(gates)}"


def topology_no_domain(*, tier: int, needs: Mapping[str, int], best: str | None, best_free: Mapping[str, int]) -> str:
    """"topology: no domain of tier ≤ 1 holds the whole gang (needs 16 gpu; best: leaf-a with 8 gpu)"."""
    best_text = f"best: {best} with {format_resources(best_free)}" if best else "no domain has room"
    return f"{TOPOLOGY}no domain of tier ≤ {tier} holds the whole gang (needs {format_resources(needs)}; {best_text})"


def numa_no_cell(task: str, *, nodes: int, needs: Mapping[str, int]) -> str:
    """"numa: task worker: 3 nodes have room but none on one NUMA cell (needs 4 gpu, 16 cpu)"."""
    return f"{NUMA}task {task}: {nodes} nodes have room but none on one NUMA cell (needs {format_resources(needs)})"


def preemption_not_enough(*, action: str, victims: int) -> str:
    """"preemption: evicting all 5 eligible victims (preempt) would still not make room"."""
    return f"{PREEMPTION}evicting all {victims} eligible victims ({action}) would still not make room"


def reclaim_past_share(queue: str, *, resource: str, deserved: int, in_use: int, needs: int) -> str:
    """"preemption: reclaim stops at queue team-b's deserved 2 cpu, 2 in use, job needs 1"."""
    unit = format_quantity(resource, deserved)
    return (
        f"{PREEMPTION}reclaim stops at queue {queue}'s deserved {unit}, {_bare(resource, in_use)} in use, "
        f"job needs {_bare(resource, needs)}"
    )


def evicted(*, pods: int, reason: str, for_groups: Sequence[str]) -> str:
    """"preemption: 1 pod evicted (preempt) for default/high"."""
    noun = "pod" if pods == 1 else "pods"
    return f"{PREEMPTION}{pods} {noun} evicted ({reason}) for {', '.join(for_groups)}"


def gang_below_minimum(*, placed: int, minimum: int) -> str:
    """"gang: 10 of min 11 pods running or placed"."""
    return f"{GANG}{placed} of min {minimum} pods running or placed"


def fits_after(*, pending: int, status: str) -> str:
    """A minimum that fits beside the placement, left out because the search stopped:
    "unplaced: 2 pending pods fit after this placement; the search ended first (FEASIBLE)"."""
    return f"{UNPLACED}{pending} pending pods fit after this placement; the search ended first ({status})"


def unplaced(*, pending: int) -> str:
    """The generic reason an engine's silence gets: "unplaced: 3 pending pods not placed this cycle"."""
    return f"{UNPLACED}{pending} pending pods not placed this cycle"


def left_out(task: str, *, pending: int, status: str) -> str:
    """A started PodGroup's pods that a node could still take, which the placement leaves
    out (a search that ended first, a topology domain, the objective's order):
    "unplaced: task worker: 2 pending pods fit beside this placement, which leaves them out (FEASIBLE)"."""
    return f"{UNPLACED}task {task}: {pending} pending pods fit beside this placement, which leaves them out ({status})"



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
        return f"{COLOCATION}offline pods go to the {nodes} only"
    verb = "offers" if total == 1 else "offer"
    return f"{COLOCATION}{total} of {nodes} {verb} offline pods no oversubscribed room (fail safe): {', '.join(parts)}"


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
        f"{COLOCATION}{total} of {colocation_nodes} colocation node{'s' if colocation_nodes != 1 else ''} {verb} offline "
        f"pods no GPU (fail safe: no GPU lent: per-device online usage stale, missing or not measured): {', '.join(parts)}"
    )


def _unjudged_nodes(stale: int, missing: int, unmeasured: tuple[int, str]) -> list[str]:
    """`["1 with stale usage", "2 without usage", …]`, the counts that are not zero."""
    counted = ((stale, "with stale usage"), (missing, "without usage"), unmeasured)
    return [f"{count} {words}" for count, words in counted if count]


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
    return f"{USAGE}{total} node{'s' if total != 1 else ''} not judged for load (never held back): {', '.join(parts)}"
