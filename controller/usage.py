"""Node usage in the controller: samples from a source, averaged over a window, onto the Snapshot.

Input: `UsageSample`s (one node's percents at one time) from a `UsageSource`
(`controller.usage_sources`: metrics.k8s.io, Prometheus), polled at most every `poll_s`;
the Snapshot `observe` built; the wall clock. Output: the same Snapshot whose nodes carry
`NodeUsage` and whose `UsagePolicy` is the controller's, judged at the clock's time — so
`solver.rules.usage` can tell a fresh reading from a stale one.

Averaging: a node's usage is, per resource (and per GPU device for the online per-device
percents), the mean of its samples taken in the last `window_s` seconds, observed at its
newest sample. Example: window 300 s, at t = 1000 cpu
samples 60 % (t = 760), 80 % (t = 880), 100 % (t = 990) → cpu 80 %, observed at 990.
When no sample is that recent, the newest one is kept as it is (observed at its own time),
so the rule sees it as stale, and says so, rather than as missing. A node's samples are
forgotten after `forget_s` (ten windows) without a new one, and when the node is gone.

A source that fails (Prometheus down, metrics-server not registered) is logged and tried
again at the next poll; the samples already held age meanwhile and become stale, which
never blocks a node (`solver.rules.usage`). A reading from the source replaces a node's
`batchplace.io/usage` annotation; a node the source says nothing about keeps its annotation.

Not promised: thread safety — one cycle loop calls it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from controller.errors import ApiError
from models.snapshot import Node, NodeName, NodeUsage, Snapshot, UsagePolicy

__all__ = [
    "UsageSample",
    "UsageSource",
    "UsageSourceError",
    "UsageWindow",
    "UsageTracker",
    "with_usage",
]

log = logging.getLogger(__name__)

RESOURCES = ("cpu", "memory", "gpu", "online_cpu", "online_memory")
"""What a sample may carry; `online_*`: the part not used by offline pods (`solver.rules.colocation`)."""


class UsageSourceError(Exception):
    """A usage source gave no answer this time (unreachable, an error status, an answer of
    the wrong shape): log it and poll again later; the samples held meanwhile go stale."""


@dataclass(frozen=True)
class UsageSample:
    """One node's load at one time, percent of its allocatable; None: not in this sample."""

    node: NodeName
    at_s: float
    cpu_percent: float | None = None
    memory_percent: float | None = None
    gpu_percent: float | None = None
    online_cpu_percent: float | None = None
    online_memory_percent: float | None = None
    online_gpu_device_percent: Mapping[int, float] | None = None
    """Per GPU device index: percent of it online work uses (`NodeUsage.online_gpu_device_percent`)."""

    def percent(self, resource: str) -> float | None:
        return getattr(self, f"{resource}_percent")  # type: ignore[no-any-return]


class UsageSource(Protocol):
    """Where samples come from. `read` returns every sample it has from `since_s` to
    `now_s` (a window's worth, or only the latest per node), or raises `UsageSourceError`
    (or an `ApiError` of `controller.errors`). `nodes` gives the allocatable a source of
    absolute amounts divides by."""

    name: str

    def read(self, *, since_s: float, now_s: float, nodes: Mapping[NodeName, Node]) -> Sequence[UsageSample]: ...


class UsageWindow:
    """The samples of the last `window_s` seconds, per node, and their means (module docstring)."""

    def __init__(self, window_s: float, *, forget_s: float | None = None) -> None:
        self.window_s = window_s
        self.forget_s = forget_s if forget_s is not None else 10 * window_s
        self._samples: dict[NodeName, dict[float, UsageSample]] = {}

    def add(self, samples: Sequence[UsageSample]) -> None:
        """Keep `samples`; one per (node, time), the last one given wins."""
        for sample in samples:
            self._samples.setdefault(sample.node, {})[sample.at_s] = sample

    def averaged(self, now_s: float, *, nodes: Sequence[NodeName] | None = None) -> dict[NodeName, NodeUsage]:
        """Each node's `NodeUsage` at `now_s`; drops what is past `forget_s` and, when
        `nodes` is given, the nodes not in it."""
        if nodes is not None:
            keep = set(nodes)
            for name in [name for name in self._samples if name not in keep]:
                del self._samples[name]
        usages: dict[NodeName, NodeUsage] = {}
        for name in list(self._samples):
            by_time = self._samples[name]
            for at in [at for at in by_time if at < now_s - self.forget_s]:
                del by_time[at]
            if not by_time:
                del self._samples[name]
                continue
            newest = max(by_time)
            recent = [sample for at, sample in by_time.items() if at >= now_s - self.window_s] or [by_time[newest]]
            devices = sorted({index for sample in recent for index in sample.online_gpu_device_percent or {}})
            by_device = {
                index: _mean((sample.online_gpu_device_percent or {}).get(index) for sample in recent) for index in devices
            }
            usages[name] = NodeUsage(
                **{f"{resource}_percent": _mean(sample.percent(resource) for sample in recent) for resource in RESOURCES},
                online_gpu_device_percent=by_device or None,
                observed_at_s=newest,
                window_s=self.window_s if len(recent) > 1 else 0.0,
            )
        return usages


def _mean(values: object) -> float | None:
    present = [value for value in values if value is not None]  # type: ignore[attr-defined]
    return sum(present) / len(present) if present else None


def with_usage(snapshot: Snapshot, usages: Mapping[NodeName, NodeUsage], policy: UsagePolicy) -> Snapshot:
    """`snapshot` with each named node's usage replaced and `policy` set (a new Snapshot;
    nodes without a reading are the same objects, so what is memoized on them stays)."""
    nodes = tuple(
        node.model_copy(update={"usage": usages[node.name]}) if node.name in usages and node.usage != usages[node.name] else node
        for node in snapshot.nodes
    )
    return snapshot.with_usage_policy(policy, nodes=nodes)


class UsageTracker:
    """A source, its window and the policy: `apply(snapshot, now_s)` each cycle.

    `policy.judged_at_s` is set to `now_s` on every snapshot, so annotations and source
    readings are aged by the controller's clock. Without a source (`source=None`) only
    annotations count."""

    def __init__(
        self, source: UsageSource | None, *, policy: UsagePolicy, window_s: float = 300.0, poll_s: float = 15.0
    ) -> None:
        self.source = source
        self.policy = policy
        self.window = UsageWindow(window_s)
        self.poll_s = poll_s
        self._polled_at: float | None = None
        self.failures = 0
        self.last_error: str | None = None

    def poll(self, now_s: float, nodes: Mapping[NodeName, Node]) -> bool:
        """Read the source when `poll_s` has passed since the last try; True when it answered."""
        if self.source is None or (self._polled_at is not None and now_s - self._polled_at < self.poll_s):
            return False
        since = now_s - self.window.window_s if self._polled_at is None else max(now_s - self.window.window_s, self._polled_at)
        self._polled_at = now_s
        try:
            samples = self.source.read(since_s=since, now_s=now_s, nodes=nodes)
        except (UsageSourceError, ApiError) as error:  # log, and poll again later
            self.failures += 1
            self.last_error = f"{type(error).__name__}: {error}"
            log.warning("usage source %s: %s", self.source.name, self.last_error, extra={"usage_source": self.source.name})
            return False
        self.last_error = None
        self.window.add(samples)
        return True

    def apply(self, snapshot: Snapshot, now_s: float) -> Snapshot:
        """`snapshot` with this cycle's usage and the policy judged at `now_s` (itself when
        no node has usage from either place: then the policy has nothing to judge)."""
        self.poll(now_s, snapshot.node_by_name)
        usages = self.window.averaged(now_s, nodes=[node.name for node in snapshot.nodes])
        if not usages and all(node.usage is None for node in snapshot.nodes):
            return snapshot
        policy = self.policy.model_copy(update={"judged_at_s": now_s})
        return with_usage(snapshot, usages, policy)
