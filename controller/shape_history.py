"""The pod shapes the controller has seen, decayed over time: the workload the packing keeps
room for (`models.typical_shapes`, FGD's "typical pods").

Input, each cycle: the snapshot and the time (monotonic seconds). Every pending pod is
counted once, when it is first seen pending, as its shape — CPU, `gpu` request and node
selector, as `solver.fragmentation` scores them. Output: `typical()`, the shapes by
weight, the heaviest first until they cover `POPULARITY_THRESHOLD` of all (FGD's 95 %),
which the controller passes to every solve (`SolveConfig.typical_shapes`).

Why decayed: the workload changes over a day; a pod seen `half_life_s` ago weighs half of
one seen now. Why counted once: a gang that waits an hour is one submission, not 3,600.
Worked example, half-life 1 h: 10 pods of (8 cores, 1 GPU) seen 2 h ago weigh 2.5; 5 pods
of (1 core, 0.25 GPU) seen now weigh 5 → shapes [(1 core, 250 milli) 5, (8 cores, 1000) 2.5].

Bounded: at most `MAX_TYPICAL_SHAPES` distinct shapes are kept (the lightest go first),
and only the keys of pods still pending are remembered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.snapshot import CPU, GPU, PodKey, Snapshot
from models.typical_shapes import MAX_TYPICAL_SHAPES, TypicalShape
from solver.fragmentation import POPULARITY_THRESHOLD

__all__ = ["ShapeHistory", "DEFAULT_HALF_LIFE_S"]

DEFAULT_HALF_LIFE_S = 3600.0

ShapeKey = tuple[int, int, tuple[tuple[str, str], ...]]  # (cpu milli, gpu milli, node selector)


@dataclass
class ShapeHistory:
    half_life_s: float = DEFAULT_HALF_LIFE_S
    _weights: dict[ShapeKey, float] = field(default_factory=dict)
    _at_s: float | None = None
    _seen: set[PodKey] = field(default_factory=set)

    def observe(self, snapshot: Snapshot, now_s: float) -> None:
        """Decay to `now_s`, then count each pending pod not seen pending before."""
        if self._at_s is not None and now_s > self._at_s:
            factor = 0.5 ** ((now_s - self._at_s) / self.half_life_s)
            self._weights = {key: weight * factor for key, weight in self._weights.items()}
        self._at_s = now_s if self._at_s is None else max(self._at_s, now_s)
        pending: set[PodKey] = set()
        for pod in snapshot.pods:
            if pod.phase != "pending" or pod.pod_group is None or pod.task is None:
                continue
            pending.add(pod.key)
            if pod.key in self._seen:
                continue
            task = snapshot.pod_group_by_key[pod.pod_group].task_by_name[pod.task]
            key = (pod.requests.get(CPU, 0), pod.requests.get(GPU, 0), tuple(sorted(task.node_selector.items())))
            self._weights[key] = self._weights.get(key, 0.0) + 1.0
        self._seen = pending
        if len(self._weights) > MAX_TYPICAL_SHAPES:
            kept = sorted(self._weights.items(), key=lambda item: -item[1])[:MAX_TYPICAL_SHAPES]
            self._weights = dict(kept)

    def typical(self) -> tuple[TypicalShape, ...]:
        """The heaviest shapes covering `POPULARITY_THRESHOLD` of the weight; () before any pod."""
        total = sum(self._weights.values())
        if total <= 0:
            return ()
        ranked = sorted(self._weights.items(), key=lambda item: (-item[1], -item[0][1], -item[0][0], item[0][2]))
        shapes: list[TypicalShape] = []
        covered = 0.0
        for (cpu_milli, gpu_milli, selector), weight in ranked:
            if weight <= 0:
                break
            shapes.append(TypicalShape(cpu_milli=cpu_milli, gpu_milli=gpu_milli, weight=weight, node_selector=selector))
            covered += weight
            if covered >= POPULARITY_THRESHOLD * total:
                break
        return tuple(shapes)
