"""The soft objective of DESIGN.md, evaluated once for every engine: `score(snapshot, placement)`.

Input: a validated `Snapshot` and a `Placement` (from any engine). Output: an
`ObjectiveVector` of six integer tiers in DESIGN.md's order (usage, measured load, added
before packing). Vectors compare
lexicographically and *greater is better*: `score(a) > score(b)` means placement `a` wins
on the first tier where the two differ. The CP-SAT engine builds exactly these tiers as
model expressions (`solver.cpsat.objective`), `place()` uses `score` to return the better of
CP-SAT's and greedy's placements, and the tests check one against the other.

The tiers (each an exact integer; "after" means kept running pods plus this cycle's binds):

1. **fairness** — smaller is better. A queue is judged by its dominant share (DRF, as
   Volcano's proportion plugin orders queues): max over resources of allocated_after /
   target, where target(q, r) = min(deserved(q, r), request(q, r)) > 0 (deserved by
   water-filling, `solver.shares`; request = allocated + pending, subtree included). Its
   term is how far that share is below 1, in per-mille, rounded up:
   ⌈1000 · (1 − dominant share)⌉⁺ = min over targeted resources of
   ⌈1000 · max(0, target − allocated_after) / target⌉. The tier sums every queue of the tree.
   Amounts so large that 1000 · target would pass 2^40 are first counted in coarser units
   (×1024 until it fits, floor): at 10,000 nodes memory counts in MiB, so every engine
   computes the tier in exact integers.
   Example: queue-a deserves 1 CPU and 600Mi, queue-b 2 CPU and 600Mi, 3 CPU in all, jobs
   of 0.5 CPU / 100Mi: a=2, b=4 jobs → a holds 1 CPU (share 1) and b 2 CPU (share 1) → 0;
   a=6, b=0 → b's share is 0 → 1000. Memory, plentiful and never met, does not decide.
   In-queue preemption (rule 8's *preempt*: for a higher-priority PodGroup of the victim's
   own queue) is a trade between the queue's own jobs, so it need not lower the queue's
   term: what queue c's preempted pods free beyond what c's own PodGroups bind still
   counts as allocated to c and its ancestors, up to as much as c binds — per resource,
   min(max(0, preempted(c) − bound(c)), bound(c)) is added to allocated_after
   (`fairness_allocated`). Which of c's jobs hold its room is then the throughput tier's
   to decide, by priority weight, as Volcano's preempt action lets a higher-priority job
   take a lower-priority one's place in its queue whatever that does to the queue's share.
   The cap is there because rule 8 does not ask whether a preemption was needed (Volcano
   evicts node by node only until the preemptor fits): uncapped, evicting a below-share
   queue's big low-priority pod for a small high-priority one that fits elsewhere would
   hand the room to another queue at no cost here — a reclaim the reclaim rules forbid.
   Capped, a queue pays in this tier at least half of any room its preemption frees for
   others. Example: q1 (target 6 CPU) holds 5; a low-priority 4-CPU pod is preempted for
   a high-priority 3-CPU one → allocated_after 4, counted 4 + min(4 − 3, 3) = 5: 167, as
   without the eviction; throughput, 2 · (1 + 3 + 1) = 10 against 1 · (1 + 4 + 1) = 6
   (each job's pods and the job itself), takes the swap. Evicting the 4-CPU pod for a
   1-CPU one that another queue's 3-CPU pod joins counts 2 + min(3, 1) = 3.
2. **throughput** — greater is better. Σ over pods of PodGroups held after the placement
   of weight(priority) · value, with value = 1 + ⌊cpu_milli / 1000⌋ + gpu_milli: one
   milli-GPU counts as one core, so a whole GPU outweighs any node's CPUs (GPUs dominate)
   and memory does not count. weight = 1 + the dense rank of the PodGroup's priority among
   all PodGroups of the snapshot (priorities 0, 5, 100 → weights 1, 2, 3), so huge
   PriorityClass values stay small numbers. A partly bound gang (`solver.rules.gang.
   is_partly_bound`: started, short of its minimum) ranks one step above the gangs of its
   own priority and below the next priority (priorities 0, 0 partly bound, 5 → weights 1,
   2, 3), so completing it outweighs starting a new gang of its priority on the same room
   whenever the new one needs fewer than twice the pods — as Volcano's gang plugin orders
   not-ready jobs first. With no partly bound gang the weights are the plain ranks. Example: a priority-5 PodGroup binds one
   pod of 8 GPUs and 96 cores → 2 · (1 + 96 + 8000) = 16194.
   Plus weight · `JOB_VALUE` (1) per PodGroup with a pod running after the placement (kept
   or bound): a job counts as one more pod, so of two placements doing the same work the one
   that runs more jobs wins — two 8-pod jobs started over one 16-pod job of the same shape —
   while evicting a job to start another of the same work gains nothing (each side counts
   one job; disruption then keeps the running one). Why: jobs started, not only pods, is
   what a waiting user sees; on the sub-group streams one cycle could start one large
   younger job or two older ones of the same size, and `auto` had started fewer jobs than
   greedy (docs/results.md, "Sub-groups: nested gangs on Lingjun and NVL72"). One pod's
   worth leaves every real difference in work to decide first. The example above → 16194 + 2
   = 16196.
3. **disruption** — smaller is better. Σ over evicted pods of
   weight(priority) · (1000 + gpu_milli · age_class), where age_class = 1 + ⌊log2(1 +
   hours run)⌋ is the GPU-time lost on a log scale (1 under an hour, 2 for 1–2 h, 3 for 3–6 h,
   …), hours run since the pod's start or, when later, its last checkpoint
   (`batchplace.io/last-checkpoint`: what came before is saved, not lost), counted to the
   snapshot's clock (`reservation_policy.judged_at_s`, the controller's) or, without one, to
   the latest pod start in the snapshot. The 1000 makes every victim count, GPU or not. Example: a weight-1 victim
   with 1 GPU that ran 5 h → 1 · (1000 + 1000 · 3) = 4000.
4. **locality** — smaller is better. For each soft-topology PodGroup (network topology set
   without a hard tier limit) that gets a bind: the number of lowest-tier HyperNodes its
   pods (kept and bound) sit in — nodes in no HyperNode of that tier are not counted; plus
   the lowest-tier HyperNodes (racks) whole at the snapshot — no pod running on any of
   their nodes — that get a pod of a hard sub-group bound (`racks_opened`): a shard must
   sit inside one domain of its tier, and one that fills a rack already in use keeps a
   whole rack for the next job that needs one (two shards of 2 nodes on one free 4-node
   rack: 1; on two: 2; in the free half of a rack in use: 0); plus
   one per bound pod whose GPU devices span more than one NUMA cell; plus, per bound pod,
   the preferred node affinity weight its node misses
   (`solver.rules.node_affinity.preference_missed`, 0–100 per term). Example: a soft gang
   bound over leaf-a and leaf-b (2) and one 4-GPU pod on devices 2–5 of a 2×4 node (1) → 3;
   a pod preferring `gpu In [h100]` with weight 50 bound to an a100 node adds 50.
   Likewise the inter-pod preferences: per bound pod, the weight of its preferred pod
   affinity terms selecting no other pod in its domain and of its preferred anti-affinity
   terms selecting some (`solver.rules.pod_affinity.preference_missed`), and how far its
   domain ends above minimum + maxSkew under a `ScheduleAnyway` spread constraint
   (`solver.rules.topology_spread.skew_excess`).
   Why preferences sit here: like kube-scheduler's score, a preference only chooses among
   nodes a pod may use, so it must never cost a placement (throughput) or an eviction
   (disruption) or a queue's share; it says where a pod works best, as the network domain
   and the NUMA split do, and it outranks packing because the user stated it. Its unit, one
   weight point, equals one HyperNode or one NUMA split: a pod preferring a node with
   weight 1 gives way to keeping a gang in one leaf; weight 100 does not.
5. **usage** — smaller is better: Σ over pods bound this cycle of their node's usage band,
   0 (idle) to 10 (loaded), from the nodes' measured usage (`solver.usage_tier`, which
   says why bands and why here); a node whose load is unknown is in the band of the least
   loaded node that may take pods; 0 when no node reports fresh usage. Example: two pods bound to a node at 47.5 % weighted load → 2 · 4 = 8.
6. **packing** — smaller is better: FGD's expected fragmentation (Weng et al., ATC '23),
   the milli-GPU the cycle's typical pod shapes could not use, summed over nodes after the
   placement (`solver.fragmentation`): per node and typical shape t (weight w_t), all its
   free GPU when t asks none, may not go there or does not fit (CPU, devices), else only
   the devices with less free milli than t needs per device; floored to whole milli. The
   typical shapes are the operator's (`--typical-shapes`, the API's, the controller's
   learned ones) or the pending pods'. Greedy ranks nodes by its growth and CP-SAT carries
   it exactly, one constant per (node profile, pattern). Example: shapes 1 GPU (weight
   0.5) and 500 milli (0.5); a node left with devices free (1000, 300) and CPU for both →
   0.5 · 300 + 0.5 · 300 = 300.
   Plus `GPU_NODE_KEEP_MILLI` (1) per pod bound this cycle that asks no GPU onto a GPU
   node (one with `gpu` allocatable): GPU nodes are the last choice for such pods.
   How this relates to FGD: CPU and memory taken on a GPU node strand its GPUs once a GPU
   pod no longer fits beside them, and FGD sees that — for a typical shape whose CPU no
   longer fits, all the node's free GPU becomes fragment. But it sees it only for the
   cycle's typical shapes and only once the CPU has run short; until then a CPU-only pod
   grows no fragment on a GPU node, as on a CPU node (which FGD never counts), and the
   tier could not tell them apart: CP-SAT kept whichever its hint chose. The extra milli
   breaks that tie: a CPU node is always better for a pod that asks no GPU, and a GPU
   node keeps its CPU and memory for GPU pods the typical shapes do not foresee, and for
   those that come when its running jobs end (so a GPU node counts whether or not its
   GPUs are free now). One milli per pod stays below the stranding FGD measures when a
   pod's CPU does block a typical GPU shape (that shape's weight times the node's free
   GPU), and it sits in the packing tier: it never costs a placement (throughput), and a
   GPU node in a lower usage band still wins (load now outranks room later,
   `solver.usage_tier`). Example: 3 CPU-only pods, 2 on a CPU node and 1 on an H100 node
   with CPU to spare → FGD unchanged, + 1.
   Plus, for DRA devices (rule `dra`), a whole GPU's milli per free device stranded in a
   partly taken domain after the placement — an NVLink domain, or whatever attribute
   claims constrain, else the node (`solver.rules.dra.stranded_devices`): whole domains
   kept free are what the next claim asking one needs. Example: two 2-GPU claims on two
   domains of 4 strand 4 devices (4000); on one domain, none.

Not promised: that the placement is valid (the checker says that); a placement that
breaks hard rules still gets a score.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from models.placement import Placement
from models.snapshot import (
    CPU,
    GPU,
    GPU_MILLI_PER_DEVICE,
    Node,
    NodeName,
    Pod,
    PodGroup,
    PodGroupKey,
    QueueName,
    Snapshot,
)
from models.typical_shapes import TypicalShape
from solver.after import After, build_after
from solver.fragmentation import PackingMeasure, packing_measure
from solver.memo import memoized
from solver.rules import dra, node_affinity, pod_affinity, topology_spread
from solver.rules.gang import is_partly_bound
from solver.rules.topology import hard_tier_limit
from solver.shares import deserved_shares, queue_requests
from solver.usage_tier import usage_tier

__all__ = [
    "FAIRNESS_SCALE",
    "VICTIM_BASE_COST",
    "JOB_VALUE",
    "TIERS",
    "ObjectiveVector",
    "ObjectiveContext",
    "score",
    "objective_order",
    "pod_value",
    "age_class",
    "queue_fairness",
    "fairness_allocated",
    "fairness_unit",
    "soft_topology",
    "in_hard_sub_group",
    "whole_racks",
    "racks_opened",
    "GPU_NODE_KEEP_MILLI",
    "on_gpu_node",
]

FAIRNESS_SCALE = 1000
"""Fairness is counted in per-mille of a queue's target."""
VICTIM_BASE_COST = 1000
"""What any eviction costs before its GPU-time: one victim ≈ one GPU for an hour."""
GPU_NODE_KEEP_MILLI = 1
"""What the packing tier charges per pod asking no GPU bound to a GPU node (tier 6)."""
JOB_VALUE = 1
"""What the throughput tier adds per PodGroup running after the placement, times its weight (tier 2)."""
TIERS = ("fairness", "throughput", "disruption", "locality", "usage", "packing")
"""The tiers in DESIGN.md's order (most important first)."""

_SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class ObjectiveVector:
    """The six tiers; compare with `<`, `>=`, …: greater is better, first tier first."""

    fairness: int
    throughput: int
    disruption: int
    locality: int
    usage: int
    packing: int

    def key(self) -> tuple[int, int, int, int, int, int]:
        """A tuple where larger is better in every position (the minimised tiers negated)."""
        return (-self.fairness, self.throughput, -self.disruption, -self.locality, -self.usage, -self.packing)

    def __lt__(self, other: ObjectiveVector) -> bool:
        return self.key() < other.key()

    def __le__(self, other: ObjectiveVector) -> bool:
        return self.key() <= other.key()

    def __gt__(self, other: ObjectiveVector) -> bool:
        return self.key() > other.key()

    def __ge__(self, other: ObjectiveVector) -> bool:
        return self.key() >= other.key()

    def ranked(self, order: Sequence[str] = TIERS) -> tuple[int, ...]:
        """`key()` with its positions in `order` (a permutation of `TIERS`): compare two of
        these to compare placements under a caller's objective order."""
        key = self.key()
        return tuple(key[TIERS.index(name)] for name in order)


def objective_order(listed: Sequence[str]) -> tuple[str, ...]:
    """The full tier order from the tiers a caller lists first: the rest follow in `TIERS`'s
    order. `["throughput"]` → throughput, fairness, disruption, locality, usage, packing."""
    unknown = [name for name in listed if name not in TIERS]
    if unknown or len(set(listed)) != len(listed):
        raise ValueError(f"objective order {list(listed)}: each tier at most once, from {', '.join(TIERS)}")
    return (*listed, *(name for name in TIERS if name not in listed))


def pod_value(requests: Mapping[str, int], devices: Collection[str] = ()) -> int:
    """Throughput value of one pod: `{cpu: 96000, gpu: 8000}` → 1 + 96 + 8000 = 8097. A DRA
    device (`devices`: the device classes the pod's requests count, rule `dra`) counts as a
    whole GPU: `{cpu: 4000, gpu.nvidia.com: 2}` → 1 + 4 + 2000 = 2005."""
    value = 1 + requests.get(CPU, 0) // 1000 + requests.get(GPU, 0)
    for name in devices:
        value += requests.get(name, 0) * GPU_MILLI_PER_DEVICE
    return value


def age_class(start_time: float | None, now: float | None) -> int:
    """1 + ⌊log2(1 + hours run)⌋: 30 min → 1, 1 h → 2, 5 h → 3, 7 h → 4; unknown start → 1."""
    if start_time is None or now is None:
        return 1
    hours = int(max(0.0, now - start_time) // _SECONDS_PER_HOUR)
    return (1 + hours).bit_length()


def disruption_clock(snapshot: Snapshot) -> float | None:
    """The time GPU-time lost is counted to: the snapshot's clock, else its latest pod start."""
    if snapshot.reservation_policy.judged_at_s is not None:
        return snapshot.reservation_policy.judged_at_s
    starts = [pod.start_time for pod in snapshot.pods if pod.phase == "running" and pod.start_time is not None]
    return max(starts) if starts else None


def gpu_time_lost(pod: Pod, now: float | None) -> int:
    """gpu_milli · age_class of the time run since the pod's start or, when later, its last
    checkpoint (what came before is saved). Example: 8 GPUs, started 5 h ago, checkpointed
    30 min ago → 8000 · 1 = 8000; without the checkpoint 8000 · 3 = 24000."""
    marks = [time for time in (pod.start_time, pod.checkpoint_time) if time is not None]
    return pod.requests.get(GPU, 0) * age_class(max(marks) if marks else None, now)


FAIRNESS_MAGNITUDE = 1 << 40
"""1000 · target stays below this; larger resources are counted in coarser units."""


def fairness_unit(largest_target: int) -> int:
    """The unit a resource's fairness is counted in: 1, or ×1024 until 1000 · target fits."""
    unit = 1
    while FAIRNESS_SCALE * (largest_target // unit) > FAIRNESS_MAGNITUDE:
        unit *= 1024
    return unit


def queue_fairness(
    target: Mapping[str, int], allocated: Mapping[str, int], units: Mapping[str, int] | None = None
) -> int:
    """One queue's term: min over targeted resources of ⌈1000 · shortfall / target⌉, with
    `target` already in `units` and `allocated` raw (floored into the units here).

    Example: target {cpu: 2000, memory: 600Mi}, allocated {cpu: 2000, memory: 400Mi} →
    cpu 0, memory 334 → 0 (its dominant share, cpu, is met).
    """
    best: int | None = None
    for name, amount in target.items():
        unit = (units or {}).get(name, 1)
        short = max(0, amount - allocated.get(name, 0) // unit)
        term = -((-FAIRNESS_SCALE * short) // amount)
        best = term if best is None else min(best, term)
    return best or 0


def on_gpu_node(node: Node, requests: Mapping[str, int]) -> bool:
    """A pod asking no GPU on a node with GPUs: what packing charges `GPU_NODE_KEEP_MILLI` for."""
    return requests.get(GPU, 0) == 0 and node.allocatable.get(GPU, 0) > 0


def soft_topology(group: PodGroup) -> bool:
    """A PodGroup whose topology is a preference: set, but without a hard tier limit."""
    return group.network_topology is not None and hard_tier_limit(group) is None


@dataclass(frozen=True)
class ObjectiveContext:
    """What `score` derives from the snapshot alone; build once per cycle with `of`."""

    weights: Mapping[PodGroupKey, int]
    now: float | None
    targets: Mapping[QueueName, Mapping[str, int]]  # in `units`
    units: Mapping[str, int]  # per resource, the unit fairness counts it in (`fairness_unit`)
    packing: PackingMeasure
    span_tier: int | None  # the lowest HyperNode tier, where soft spans are counted
    span_domain: Mapping[NodeName, str] = field(repr=False)  # node → its HyperNode of that tier
    devices: frozenset[str] = frozenset()  # DRA device classes, counted in requests (`pod_value`)

    @staticmethod
    def of(snapshot: Snapshot, typical: Sequence[TypicalShape] = ()) -> ObjectiveContext:
        """The context of `snapshot`, built once per snapshot and typical shapes
        (`solver.memo`); `typical`: the packing tier's workload (pending pods' shapes when
        empty, `solver.fragmentation.packing_measure`)."""
        return memoized(snapshot, ("objective_context", tuple(typical)), lambda: ObjectiveContext._build(snapshot, typical))

    @staticmethod
    def _build(snapshot: Snapshot, typical: Sequence[TypicalShape]) -> ObjectiveContext:
        steps = {group.key: (group.priority, is_partly_bound(snapshot, group)) for group in snapshot.pod_groups}
        rank = {step: i for i, step in enumerate(sorted(set(steps.values())))}
        deserved, requests = deserved_shares(snapshot), queue_requests(snapshot)
        targets: dict[QueueName, dict[str, int]] = {}
        for queue in snapshot.queues:
            share, asked = deserved.get(queue.name, {}), requests.get(queue.name, {})
            target = {name: min(amount, asked.get(name, 0)) for name, amount in share.items()}
            target = {name: amount for name, amount in target.items() if amount > 0}
            if target:
                targets[queue.name] = target
        largest: dict[str, int] = {}
        for target in targets.values():
            for name, amount in target.items():
                largest[name] = max(largest.get(name, 0), amount)
        units = {name: fairness_unit(amount) for name, amount in largest.items()}
        scaled: dict[QueueName, dict[str, int]] = {}
        for queue_name, target in targets.items():
            coarse = {name: amount // units[name] for name, amount in target.items()}
            coarse = {name: amount for name, amount in coarse.items() if amount > 0}
            if coarse:
                scaled[queue_name] = coarse
        targets = scaled
        tiers = sorted({h.tier for h in snapshot.hypernodes})
        span_tier = tiers[0] if tiers else None
        span_domain: dict[NodeName, str] = {}
        if span_tier is not None:
            for node, chain in snapshot.hypernode_chain.items():
                for name in chain:
                    if snapshot.hypernode_by_name[name].tier == span_tier:
                        span_domain[node] = name
                        break
        return ObjectiveContext(
            weights={key: 1 + rank[step] for key, step in steps.items()},
            now=disruption_clock(snapshot),
            targets=targets,
            units=units,
            packing=packing_measure(snapshot, typical),
            span_tier=span_tier,
            span_domain=span_domain,
            devices=frozenset(column.name for column in dra.columns(snapshot)),
        )

    def eviction_cost(self, pod: Pod) -> int:
        """Tier-3 cost of evicting `pod` (a running pod of a PodGroup)."""
        weight = self.weights.get(pod.pod_group, 1) if pod.pod_group is not None else 1
        return weight * (VICTIM_BASE_COST + gpu_time_lost(pod, self.now))


def score(snapshot: Snapshot, placement: Placement, *, context: ObjectiveContext | None = None) -> ObjectiveVector:
    """The `ObjectiveVector` of `placement`; pass `context` to reuse one across placements."""
    ctx = context if context is not None else ObjectiveContext.of(snapshot)
    after = build_after(snapshot, placement)
    return ObjectiveVector(
        fairness=_fairness(snapshot, ctx, after),
        throughput=_throughput(ctx, after),
        disruption=sum(ctx.eviction_cost(e.pod) for e in after.evicted),
        locality=_locality(snapshot, ctx, after),
        usage=usage_tier(snapshot, after),
        packing=_packing(snapshot, ctx, after),
    )


def fairness_allocated(snapshot: Snapshot, after: After) -> Mapping[QueueName, Mapping[str, int]]:
    """Each queue's allocation as tier 1 counts it: `after.queue_allocated_after` plus, for
    each queue c of its subtree that preempts, per resource min(max(0, preempted(c) −
    bound(c)), bound(c)) — what c's preempted pods free beyond c's own binds, up to as much
    as c binds (see the module docstring).

    Example: c preempts pods of 4 CPU / 4Gi and binds 3 CPU / 8Gi → c and each ancestor
    count 1 CPU more than they hold after the placement, and no memory more.
    """
    preempted: dict[QueueName, dict[str, int]] = {}
    for evicted in after.evicted:
        if evicted.eviction.reason == "preempt" and evicted.pod.pod_group is not None:
            queue = snapshot.pod_group_by_key[evicted.pod.pod_group].queue
            _add_to(preempted.setdefault(queue, {}), evicted.pod.requests)
    if not preempted:
        return after.queue_allocated_after
    bound: dict[QueueName, dict[str, int]] = {}
    for b in after.bound:
        if b.group.queue in preempted:
            _add_to(bound.setdefault(b.group.queue, {}), b.pod.requests)
    counted = {queue: dict(amounts) for queue, amounts in after.queue_allocated_after.items()}
    for queue, amounts in preempted.items():
        binds = bound.get(queue, {})
        credit = {}
        for name, amount in amounts.items():
            freed_beyond = max(0, amount - binds.get(name, 0))
            if min(freed_beyond, binds.get(name, 0)) > 0:
                credit[name] = min(freed_beyond, binds.get(name, 0))
        for ancestor in snapshot.queue_ancestors(queue):
            _add_to(counted.setdefault(ancestor, {}), credit)
    return counted


def _add_to(total: dict[str, int], extra: Mapping[str, int]) -> None:
    for name, amount in extra.items():
        total[name] = total.get(name, 0) + amount


def _fairness(snapshot: Snapshot, ctx: ObjectiveContext, after: After) -> int:
    allocated = fairness_allocated(snapshot, after)
    return sum(queue_fairness(target, allocated.get(q, {}), ctx.units) for q, target in ctx.targets.items())


def _throughput(ctx: ObjectiveContext, after: After) -> int:
    total = 0
    groups: set[PodGroupKey] = set()
    for pod in after.kept:
        if pod.pod_group is not None:
            total += ctx.weights[pod.pod_group] * pod_value(pod.requests, ctx.devices)
            groups.add(pod.pod_group)
    for bound in after.bound:
        total += ctx.weights[bound.group.key] * pod_value(bound.pod.requests, ctx.devices)
        groups.add(bound.group.key)
    return total + sum(ctx.weights[key] for key in groups) * JOB_VALUE


def in_hard_sub_group(group: PodGroup, sub_group: str | None) -> bool:
    """Is a pod of `group` in `sub_group` (None: in none) in a sub-group of hard topology?"""
    return sub_group is not None and hard_tier_limit(group.sub_group_by_name[sub_group]) is not None


def whole_racks(snapshot: Snapshot, ctx: ObjectiveContext) -> frozenset[str]:
    """The lowest-tier HyperNodes no pod runs on at the snapshot (`racks_opened`)."""

    def build() -> frozenset[str]:
        in_use = {ctx.span_domain.get(pod.node) for pod in snapshot.pods if pod.node is not None}
        return frozenset(set(ctx.span_domain.values()) - in_use)

    return memoized(snapshot, ("whole_racks", ctx.span_tier), build)


def racks_opened(snapshot: Snapshot, ctx: ObjectiveContext, after: After) -> int:
    """The whole racks (`whole_racks`) that get a pod of a hard sub-group bound (module
    docstring, tier 4). Example: racks r1 (whole) and r2 (a pod running), two shards bound
    on r1 and one on r2 → 1."""
    opened = {
        ctx.span_domain.get(b.node.name)
        for b in after.bound
        if b.group.sub_groups and in_hard_sub_group(b.group, b.pod.sub_group)
    }
    return len(opened & whole_racks(snapshot, ctx)) if opened else 0


def _locality(snapshot: Snapshot, ctx: ObjectiveContext, after: After) -> int:
    total = racks_opened(snapshot, ctx, after)
    for group in snapshot.pod_groups:
        if not soft_topology(group) or after.bound_count(group.key) == 0:
            continue
        nodes = {p.node for p in after.kept_of(group.key)} | {b.node.name for b in after.bound_of(group.key)}
        total += len({ctx.span_domain[n] for n in nodes if n in ctx.span_domain})
    for bound in after.bound:
        if len(bound.gpus) > 1 and bound.gpus_well_formed:
            cells = {bound.node.gpu_by_index[i].numa_cell for i in bound.gpus}
            total += len(cells) > 1
        if bound.task.preferred_node_affinity:
            total += node_affinity.preference_missed(bound.node, bound.task.preferred_node_affinity)
    return total + pod_affinity.preference_missed(snapshot, after) + topology_spread.skew_excess(snapshot, after)


def _packing(snapshot: Snapshot, ctx: ObjectiveContext, after: After) -> int:
    """Σ over nodes with GPUs of FGD's fragmentation of the node after the placement, plus
    `GPU_NODE_KEEP_MILLI` per pod asking no GPU bound to a GPU node, plus the DRA devices
    stranded in partly taken domains."""
    on_gpu_nodes = GPU_NODE_KEEP_MILLI * sum(on_gpu_node(bound.node, bound.pod.requests) for bound in after.bound)
    if ctx.devices:  # DRA devices stranded in partly taken domains (module docstring)
        on_gpu_nodes += dra.stranded_after(snapshot, after) * GPU_MILLI_PER_DEVICE
    rows = [n for n, node in enumerate(snapshot.nodes) if node.gpus]
    if not rows:
        return on_gpu_nodes
    width = max(len(snapshot.nodes[n].gpus) for n in rows)
    cpu_free = np.zeros(len(rows), dtype=np.int64)
    gpu_free = np.full((len(rows), width), -1, dtype=np.int64)
    for i, n in enumerate(rows):
        node = snapshot.nodes[n]
        cpu_free[i] = node.allocatable.get(CPU, 0) - after.node_used[node.name].get(CPU, 0)
        used = after.gpu_used_milli[node.name]
        gpu_free[i, : len(node.gpus)] = [max(0, GPU_MILLI_PER_DEVICE - used[gpu.index]) for gpu in node.gpus]
    return int(ctx.packing.nodes(cpu_free, gpu_free, np.array(rows)).sum()) + on_gpu_nodes
