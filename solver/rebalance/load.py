"""How much of a node's measured usage a running pod carries, and what moving it does.

Input: a validated `Snapshot` whose nodes may carry `NodeUsage` and its `UsagePolicy`.
Output: `UsageTable` — each judged node's usage in integer milli-percent, the policy's
thresholds in the same unit, and, per running pod, its estimated share (`PodLoad`) that
leaves its node and what it adds to any other node. Pure arithmetic, no rule and no engine.

A node's measured usage is not labelled by pod (metrics-server and Prometheus report the
node), so a pod's share is estimated: **the node's usage of a resource is divided among
its running pods in proportion to what each requests of that resource**; when none of
them requests it, equally among them. Every running pod counts, other schedulers' too
(they use the node as much), but only some may move (`solver.rebalance.movable`). What
the node's system daemons use is spread over the pods as well — the estimate cannot tell
it apart — so moving a node's every pod would "empty" it: an overestimate of relief on the
source that the thresholds' margin absorbs, and one the advice says it makes.

The share is usage in the resource's own base units (millicores, bytes, milli-GPU), so it
means the same on any node: on the destination it adds `share / allocatable` of *that*
node. A GPU share is of the node's mean device utilisation times its milli-GPU, so a pod
busy on 1 of 8 devices adds 4× the percent on a node of 2 devices.

Arithmetic is in integers, so that every engine, the tests' brute force and the checker's
verdict agree to the last digit: percents are read in milli-percent (1/1000 %, a
reading rounded up — a node over its threshold stays over), thresholds rounded down; a
pod's share leaving its node is rounded down (relief is never overstated) and its share
arriving is rounded up (load is never understated).

Worked example (threshold cpu 80 %):

    n1  16 cpu, cpu 95 %: pods a 8 cpu, b 4 cpu, c 4 cpu (requests sum 16 cpu)
        a's share 95 × 8/16 = 47.5 %  (7.6 cpu),  b's and c's 23.75 % (3.8 cpu) each
    n2  32 cpu, cpu 50 %
    move b to n2: n1 95 − 23.75 = 71.25 % ≤ 80;  n2 50 + 3.8/32 = 50 + 11.875 = 61.875 % ≤ 80

In milli-percent: n1 95000 → b's share ⌊95000 × 4000/16000⌋ = 23750 leaves, n2 gets
⌈95000 × 4000 × 16000 / (16000 × 32000)⌉ = 11875: 71250 and 61875, both ≤ 80000.

Not promised: that a pod will use on its new node what it used on the old (a pod starved
on a hot node may use more once moved); the advice is an estimate and says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from models.snapshot import (
    CPU,
    GPU,
    MEMORY,
    USAGE_PERCENT_CEILING,
    Node,
    NodeName,
    NodeUsage,
    Pod,
    PodKey,
    Snapshot,
    UsagePolicy,
)
from solver.rules import usage

__all__ = [
    "RESOURCES",
    "MILLI",
    "USAGE_PERCENT_CEILING_MILLI",
    "PodLoad",
    "UsageTable",
    "usage_table",
    "milli_percent_reading",
    "milli_percent_threshold",
    "percent_of",
]

RESOURCES: tuple[str, ...] = (CPU, MEMORY, GPU)
"""The resources usage is measured for, in `NodeUsage` and `UsagePolicy` order."""
MILLI = 1000
"""Milli-percent per percent: the unit every usage number is compared in."""
USAGE_PERCENT_CEILING_MILLI = int(USAGE_PERCENT_CEILING * MILLI)
"""The largest usage a `NodeUsage` may state, in milli-percent (a projection is clamped to it)."""
_PERCENT_MILLI = 100 * MILLI
_EPSILON = 1e-6  # a float's last bits, not a thousandth of a percent


def milli_percent_reading(percent: float) -> int:
    """A measured percent in milli-percent, rounded up: 91.5 → 91500, 80.0004 → 80001."""
    return math.ceil(percent * MILLI - _EPSILON)


def milli_percent_threshold(percent: float) -> int:
    """A threshold in milli-percent, rounded down: 80 → 80000, 80.0004 → 80000."""
    return math.floor(percent * MILLI + _EPSILON)


def percent_of(milli_percent: int) -> float:
    return milli_percent / MILLI


def _reading(node_usage: NodeUsage, resource: str) -> float | None:
    return getattr(node_usage, f"{resource}_percent")


def _threshold(policy: UsagePolicy, resource: str) -> float | None:
    return getattr(policy, f"{resource}_threshold_percent")


@dataclass(frozen=True)
class PodLoad:
    """One running pod's estimated usage on its node, per measured resource.

    `numerator[r] / denominator[r]` is its share of the node's usage in milli-percent ×
    the node's allocatable (exact, integers); `leaving[r]` that share in milli-percent of
    its own node, rounded down. Resources the node does not measure are absent."""

    pod: PodKey
    node: NodeName
    numerator: Mapping[str, int]
    denominator: Mapping[str, int]
    leaving: Mapping[str, int]

    def arriving(self, node: Node, resource: str) -> int:
        """Milli-percent of `node`'s allocatable the share adds there, rounded up (0 when the
        node has none of the resource: no device to be busy on)."""
        numerator = self.numerator.get(resource, 0)
        allocatable = node.allocatable.get(resource, 0)
        if numerator == 0 or allocatable == 0:
            return 0
        denominator = self.denominator[resource] * allocatable
        return -(-numerator // denominator)

    def amount(self, resource: str) -> float:
        """The share in the resource's base units (millicores, bytes, milli-GPU)."""
        numerator = self.numerator.get(resource, 0)
        return numerator / (self.denominator[resource] * _PERCENT_MILLI) if numerator else 0.0


@dataclass(frozen=True)
class UsageTable:
    """Usage in milli-percent for the nodes the usage rule judges (fresh readings).

    `levels[node][r]` for each resource the node measures; `thresholds[r]` for each resource
    the policy judges; `hot` the nodes `solver.rules.usage` finds hot, hottest first;
    `cool` those it finds at or under every threshold; `loads` every running pod on a
    judged node."""

    levels: Mapping[NodeName, Mapping[str, int]]
    thresholds: Mapping[str, int]
    hot: tuple[NodeName, ...]
    cool: frozenset[NodeName]
    loads: Mapping[PodKey, PodLoad]
    stale: int
    missing: int

    def over(self, levels: Mapping[str, int]) -> dict[str, int]:
        """Each judged resource of `levels` above its threshold → by how much (milli-percent)."""
        return {
            r: level - self.thresholds[r]
            for r, level in levels.items()
            if r in self.thresholds and level > self.thresholds[r]
        }

    def judged(self, node: NodeName) -> tuple[str, ...]:
        """The resources both measured on `node` and judged by the policy."""
        return tuple(r for r in self.levels.get(node, {}) if r in self.thresholds)


def usage_table(snapshot: Snapshot) -> UsageTable:
    """The `UsageTable` of `snapshot` (see the module docstring)."""
    policy = snapshot.usage_policy
    verdicts = usage.judgements(snapshot)
    thresholds = {
        r: milli_percent_threshold(t) for r in RESOURCES if (t := _threshold(policy, r)) is not None
    }
    levels: dict[NodeName, dict[str, int]] = {}
    for node in snapshot.nodes:
        if node.usage is not None and verdicts[node.name].state in ("hot", "cool"):
            levels[node.name] = {
                r: milli_percent_reading(p) for r in RESOURCES if (p := _reading(node.usage, r)) is not None
            }
    running: dict[NodeName, list[Pod]] = {name: [] for name in levels}
    for pod in snapshot.pods:
        if pod.phase == "running" and pod.node in running:
            running[NodeName(pod.node)].append(pod)
    loads: dict[PodKey, PodLoad] = {}
    for name, pods in running.items():
        node = snapshot.node_by_name[name]
        for pod in pods:
            loads[pod.key] = _load(pod, node, pods, levels[name])
    hot = [name for name in levels if verdicts[name].state == "hot"]
    hot.sort(key=lambda name: (-max((_ratio(levels[name], thresholds)), default=0.0), name))
    stale, missing = usage.not_judged(snapshot)
    return UsageTable(
        levels=levels,
        thresholds=thresholds,
        hot=tuple(hot),
        cool=frozenset(name for name in levels if verdicts[name].state == "cool"),
        loads=loads,
        stale=stale,
        missing=missing,
    )


def _ratio(levels: Mapping[str, int], thresholds: Mapping[str, int]) -> list[float]:
    return [levels[r] / max(1, t) for r, t in thresholds.items() if r in levels]


def _load(pod: Pod, node: Node, residents: list[Pod], levels: Mapping[str, int]) -> PodLoad:
    numerator: dict[str, int] = {}
    denominator: dict[str, int] = {}
    leaving: dict[str, int] = {}
    for r, level in levels.items():
        total = sum(resident.requests.get(r, 0) for resident in residents)
        weight, whole = (pod.requests.get(r, 0), total) if total > 0 else (1, len(residents))
        denominator[r] = whole
        numerator[r] = level * weight * node.allocatable.get(r, 0)
        leaving[r] = level * weight // whole
    return PodLoad(pod=pod.key, node=node.name, numerator=numerator, denominator=denominator, leaving=leaving)
