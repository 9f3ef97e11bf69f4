"""Load-aware placement, the hard part: a node whose measured usage is above a threshold
takes no new pod (Volcano's `usage` plugin's predicate).

A node is *hot* when its `NodeUsage` is fresh and some resource's percent is strictly
above the snapshot's threshold for it (`UsagePolicy`). Fresh means observed at most
`max_age_s` before the time the snapshot judges at: `UsagePolicy.judged_at_s` (the
controller's clock), else the newest reading in the snapshot — a file or a posted snapshot
has no clock, so its nodes are judged against each other. A reading from the future (a
clock ahead of ours) counts as fresh.

Stale or missing usage never blocks a node: a metrics pipeline that stops must not stop
scheduling with it. Such a node is a candidate as if nobody measured it, and when hot
nodes keep a PodGroup pending its reason counts the nodes not judged (`not_judged`), so
nobody reads "3 nodes too busy" as the whole story when two more were not measured.

Worked example: thresholds cpu 80 %, memory 80 %, max age 300 s, judged at t = 1000:

    n1  cpu 91.5, observed 900   → hot: "cpu usage above threshold" (91.5 % > 80 %)
    n2  cpu 95,   observed 600   → stale (400 s old): not judged, takes pods
    n3  cpu 80,   observed 990   → cool: 80 is not above 80
    n4  no usage                 → missing: not judged, takes pods

Only binds are judged: pods already running on a hot node stay (the rule stops new load,
it does not shed any). `check` reports each pod bound this cycle to a hot node. Engines
take the rule through `solver.problem`'s eligibility classes, where a hot node is no
candidate for any pod, so greedy, CP-SAT and the bound honour it alike; `usage_reason`
is what the pending reasons count such nodes under.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from models.snapshot import CPU, GPU, MEMORY, Node, NodeName, NodeUsage, PodGroup, Snapshot, Task, UsagePolicy
from solver.after import After
from solver.columns import NodeFilter
from solver.memo import memoized
from solver.violation import Violation

__all__ = [
    "NAME",
    "REASON_CPU",
    "REASON_MEMORY",
    "REASON_GPU",
    "Judgement",
    "judged_at",
    "judge",
    "judgements",
    "usage_reason",
    "fresh_usage",
    "not_judged",
    "node_filter",
    "check",
]

NAME = "usage"

REASON_CPU = "cpu usage above threshold"
REASON_MEMORY = "memory usage above threshold"
REASON_GPU = "gpu usage above threshold"
_REASONS = {CPU: REASON_CPU, MEMORY: REASON_MEMORY, GPU: REASON_GPU}

State = Literal["hot", "cool", "stale", "missing"]


@dataclass(frozen=True)
class Judgement:
    """What the rule makes of one node. For a hot node, the first resource over its
    threshold (cpu, then memory, then gpu) with both numbers; `age_s` is the reading's age
    when there is one."""

    state: State
    resource: str | None = None
    percent: float | None = None
    threshold_percent: float | None = None
    age_s: float | None = None

    @property
    def reason(self) -> str | None:
        """The reason constant of a hot node, else None."""
        return _REASONS[self.resource] if self.state == "hot" and self.resource is not None else None


def judged_at(snapshot: Snapshot) -> float | None:
    """The time readings' age is counted at: the policy's, else the newest reading, else None."""
    if snapshot.usage_policy.judged_at_s is not None:
        return snapshot.usage_policy.judged_at_s
    return max((node.usage.observed_at_s for node in snapshot.nodes if node.usage is not None), default=None)


def _levels(usage: NodeUsage, policy: UsagePolicy) -> tuple[tuple[str, float | None, float | None], ...]:
    return (
        (CPU, usage.cpu_percent, policy.cpu_threshold_percent),
        (MEMORY, usage.memory_percent, policy.memory_threshold_percent),
        (GPU, usage.gpu_percent, policy.gpu_threshold_percent),
    )


def judge(node: Node, policy: UsagePolicy, now: float | None) -> Judgement:
    """The node's `Judgement` at `now` (see the module docstring)."""
    usage = node.usage
    if usage is None or now is None:
        return Judgement(state="missing")
    age_s = now - usage.observed_at_s
    if age_s > policy.max_age_s:
        return Judgement(state="stale", age_s=age_s)
    for resource, percent, threshold in _levels(usage, policy):
        if percent is not None and threshold is not None and percent > threshold:
            return Judgement(state="hot", resource=resource, percent=percent, threshold_percent=threshold, age_s=age_s)
    return Judgement(state="cool", age_s=age_s)


def judgements(snapshot: Snapshot) -> Mapping[NodeName, Judgement]:
    """Every node's `Judgement`, computed once per snapshot (`solver.memo`); do not mutate."""
    return memoized(snapshot, ("usage_judgements",), lambda: _judge_all(snapshot))


def _judge_all(snapshot: Snapshot) -> dict[NodeName, Judgement]:
    now, policy = judged_at(snapshot), snapshot.usage_policy
    missing = Judgement(state="missing")
    return {node.name: judge(node, policy, now) if node.usage is not None else missing for node in snapshot.nodes}


def usage_reason(snapshot: Snapshot, node: NodeName) -> str | None:
    """The reason constant when `node` takes no new pod under this rule, else None."""
    judgement = judgements(snapshot).get(node)
    return judgement.reason if judgement is not None else None


def fresh_usage(snapshot: Snapshot) -> Mapping[NodeName, NodeUsage]:
    """The nodes whose usage is judged (hot or cool), with it: what the usage tier ranks."""
    return memoized(
        snapshot,
        ("fresh_usage",),
        lambda: {
            node.name: node.usage
            for node in snapshot.nodes
            if node.usage is not None and judgements(snapshot)[node.name].state in ("hot", "cool")
        },
    )


def not_judged(snapshot: Snapshot) -> tuple[int, int]:
    """(stale, missing): how many nodes this rule did not judge, and why."""
    states = [judgement.state for judgement in judgements(snapshot).values()]
    return states.count("stale"), states.count("missing")


def describe(judgement: Judgement) -> str:
    """`"cpu usage 91.5% > threshold 80%"` for a hot node."""
    return f"{judgement.resource} usage {judgement.percent:g}% > threshold {judgement.threshold_percent:g}%"


_HOT = "hot"


def node_filter(snapshot: Snapshot) -> NodeFilter | None:
    """Hot nodes take no new pod, whatever the task (`solver.columns.NodeFilter`); None when no
    node is hot or none reports usage."""
    if not any(node.usage is not None for node in snapshot.nodes):
        return None
    hot = {name: _HOT for name, judgement in judgements(snapshot).items() if judgement.state == "hot"}
    if not hot:
        return None
    return NodeFilter(rule=NAME, node_part=hot, task_part=_nothing, allows=_refuses)


def _nothing(group: PodGroup, task: Task) -> None:
    """What rule `usage` reads of a task: nothing, a hot node refuses every pod."""


def _refuses(task: Task, task_part: object, node_part: object) -> bool:
    return False


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Each pod bound this cycle goes to a node that is not hot."""
    if not after.bound:
        return []
    verdicts = judgements(snapshot)
    violations: list[Violation] = []
    for bound in after.bound:
        judgement = verdicts[bound.node.name]
        if judgement.state == "hot":
            violations.append(
                Violation(
                    rule=NAME,
                    subject=bound.pod.key,
                    message=(
                        f"pod {bound.pod.key} is bound to node {bound.node.name}, whose {describe(judgement)} "
                        f"({judgement.reason})"
                    ),
                )
            )
    return violations
