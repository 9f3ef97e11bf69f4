"""Rule `dra`: a pod starts only with every DRA claim it names allocated on devices its node reaches.

Rule (Kubernetes' DynamicResources plugin and structured allocator, `resource.k8s.io/v1`):
each entry of a bound pod's `spec.resourceClaims` names a ResourceClaim (or a
ResourceClaimTemplate that makes one per pod). After a placement, every such claim has an
allocation — already written (`status.allocation`), or one this placement makes
(`Placement.claims`) — and

  - each request gets what it asks: `count` devices (`ExactCount`) or every matching device
    the node reaches (`All`), of its class, matching the class's and its own CEL selectors;
    for `firstAvailable`, all from one sub-request;
  - `matchAttribute` holds: the devices of the requests a constraint names (all when it
    names none) share one value of the attribute, and each has it;
  - every device is reachable from the pod's node (its slice's `nodeName`, `nodeSelector`
    or `allNodes`), counts (newest complete pool generation), and has no NoSchedule or
    NoExecute taint;
  - no device is in two allocations (admin access takes none), and no counter of a
    partitionable device's shared set is drawn past its amount;
  - a claim shared by several pods is allocated once, and all of them run where its
    devices are.

Worked example: node n1 reaches GPUs g0–g7 of class gpu.nvidia.com, `nvlinkDomain` 0 for
g0–g3 and 1 for g4–g7; g0 is held by a running pod's claim. A pod whose claim asks 4 GPUs
sharing `nvlinkDomain` fits n1 (g4–g7); a second such pod does not (3 free in domain 0):
"dra: claim train/w-1#gpus request gpus: 0/1 nodes: 1 no 4 free devices share
gpu.nvidia.com/nvlinkDomain".

How every engine enforces it:
  - a column per device class some claim asks (`columns`): each node offers the devices of
    the class it reaches, each pod asks the devices its claims take of it (`ExactCount`
    requests of claims it alone uses). The column moves onto the pods' requests
    (`Column.moves`), so capacity, queue quota and fair shares count DRA devices by class
    name — a queue's `capability: {gpu.nvidia.com: 8}` caps its devices;
  - a node filter (`node_filter`): a task goes only to nodes where its pods' claims can be
    allocated at all, judged by the allocator (`solver.dra_allocation`) on the devices free
    at the snapshot;
  - the exact allocation (`Allocator`): greedy allocates each pod's claims when it binds
    the pod (a node where they do not fit is passed over); CP-SAT makes a node pattern of
    a multiset of pods only when the allocator fits all their claims on a node of its
    class (`solver.cpsat.dra`), and its placement is allocated after the search — a pod
    whose claims then find no devices (devices an eviction freed, which the patterns do
    not count on) is left pending with its gang (`allocate_placement`);
  - the objective: a device counts as a whole GPU of throughput, and the packing tier
    charges the devices a placement strands in partly taken domains (`stranded_devices`),
    so among feasible allocations whole NVLink domains stay free.
The checker (`check`) judges allocations on its own, from the API objects.

A pod with no claims is not this rule's business; a pending pod whose claim or template is
missing waits, as Kubernetes' pods do (the node filter keeps it off every node).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from models.dra import (
    ClaimSpec,
    Device,
    DeviceResult,
    ResourceClaim,
    ResourceSlice,
    counted_devices,
    current_slices,
    holders,
    qualified_name,
)
from models.placement import ClaimAllocation, Placement
from models.snapshot import NodeName, Pod, PodGroup, PodKey, Snapshot, Task
from solver.after import After
from solver.columns import Column, NodeFilter, TaskKey
from solver.dra_allocation import (
    Candidate,
    Choice,
    ClaimAsk,
    CounterKey,
    DeviceKey,
    DeviceState,
    RequestAsk,
    Shortfall,
    allocate,
)
from solver.dra_cel import compile_selector
from solver.memo import memoized
from solver.rules import node_affinity
from solver.violation import Violation

__all__ = [
    "NAME",
    "PodClaim",
    "Inventory",
    "Allocator",
    "pod_claims",
    "inventory",
    "claim_ask",
    "has_claims",
    "columns",
    "node_filter",
    "shortfall_on",
    "why_not",
    "counted_alone",
    "node_signature",
    "snapshot_state",
    "example_pod",
    "domains",
    "stranded_devices",
    "stranded_after",
    "allocate_placement",
    "check",
]

NAME = "dra"


# ---- what a pod asks ----


@dataclass(frozen=True)
class PodClaim:
    """One entry of a pod's `spec.resourceClaims`, resolved against the snapshot."""

    pod: PodKey
    entry: str
    claim: ResourceClaim | None  # the claim object, when the snapshot holds it
    template: str | None  # the template's name, for a template entry
    spec: ClaimSpec | None  # what is asked; None: the claim or template is missing

    @property
    def ident(self) -> str:
        """The claim's identity in one cycle: its key, or `pod#entry` for a claim a template
        is yet to make."""
        return self.claim.key if self.claim is not None else f"{self.pod}#{self.entry}"

    @property
    def allocated(self) -> tuple[DeviceResult, ...] | None:
        return None if self.claim is None else self.claim.allocation

    @property
    def shared(self) -> bool:
        """Named directly (`resourceClaimName`): other pods may name it too."""
        return self.template is None


def pod_claims(snapshot: Snapshot, pod: Pod) -> tuple[PodClaim, ...]:
    """Each of `pod`'s claim entries, resolved (module docstring). A template entry's claim
    is the one the template made for this pod (controller owner, `pod-claim-name`)."""
    if not pod.resource_claims:
        return ()
    return memoized(snapshot, ("dra_pod_claims", pod.key), lambda: _pod_claims(snapshot, pod))


def _pod_claims(snapshot: Snapshot, pod: Pod) -> tuple[PodClaim, ...]:
    dra = snapshot.dra
    templates, made = dra.template_by_key, dra.claim_made_for
    result = []
    for entry in pod.resource_claims:
        if entry.resource_claim_name is not None:
            claim = dra.claim_by_key.get(f"{pod.namespace}/{entry.resource_claim_name}")
            result.append(PodClaim(pod.key, entry.name, claim, None, claim))
            continue
        template = templates.get(f"{pod.namespace}/{entry.resource_claim_template_name}")
        claim = made.get((pod.namespace, pod.name, entry.name))
        spec = claim if claim is not None else template
        result.append(PodClaim(pod.key, entry.name, claim, entry.resource_claim_template_name, spec))
    return tuple(result)


def has_claims(snapshot: Snapshot) -> bool:
    return memoized(snapshot, ("dra_has_claims",), lambda: any(pod.resource_claims for pod in snapshot.pods))


def claim_ask(snapshot: Snapshot, claim: PodClaim) -> ClaimAsk:
    """The claim's requests with their selectors compiled (the class's first), for the allocator."""
    assert claim.spec is not None
    return memoized(snapshot, ("dra_claim_ask", claim.ident), lambda: _claim_ask(snapshot, claim))


def _claim_ask(snapshot: Snapshot, claim: PodClaim) -> ClaimAsk:
    spec = claim.spec
    assert spec is not None
    kind = "ResourceClaim" if claim.claim is not None else "ResourceClaimTemplate"
    # The claims a template makes share its requests, and so which devices match them.
    requests, constraints = memoized(snapshot, ("dra_requests", kind, spec.key), lambda: _requests(snapshot, spec, kind))
    return ClaimAsk(label=claim.ident, requests=requests, constraints=constraints)


def _requests(
    snapshot: Snapshot, spec: ClaimSpec, kind: str
) -> tuple[tuple[RequestAsk, ...], tuple[tuple[frozenset[str] | None, str], ...]]:
    classes = snapshot.dra.device_class_by_name
    # Choices with the same selectors share their answers per device (`Choice.matches`).
    answers: dict[tuple, dict] = memoized(snapshot, ("dra_match_answers",), dict)

    def choice(request: str, part, where: str) -> Choice:
        device_class = classes[part.device_class_name]
        selectors = tuple(
            compile_selector(text, where=f"DeviceClass {device_class.name} selectors[{i}]")
            for i, text in enumerate(device_class.selectors)
        ) + tuple(compile_selector(text, where=f"{where} selectors[{i}]") for i, text in enumerate(part.selectors))
        return Choice(
            request=request,
            device_class=device_class.name,
            selectors=selectors,
            all_devices=part.allocation_mode == "All",
            count=part.count,
            admin_access=getattr(part, "admin_access", False),
            _answers=answers.setdefault(tuple(selector.expression for selector in selectors), {}),
        )

    requests = []
    for request in spec.requests:
        where = f"{kind} {spec.key} request {request.name}"
        if request.exactly is not None:
            choices = (choice(request.name, request.exactly, where),)
        else:
            choices = tuple(
                choice(f"{request.name}/{sub.name}", sub, f"{where}/{sub.name}") for sub in request.first_available
            )
        requests.append(RequestAsk(request.name, choices))
    constraints = tuple(
        (frozenset(constraint.requests) if constraint.requests else None, constraint.match_attribute)
        for constraint in spec.constraints
    )
    return tuple(requests), constraints


# ---- what the nodes reach ----


@dataclass(frozen=True)
class Inventory:
    """The devices that count, per node that reaches them, and what the snapshot holds."""

    candidates: Mapping[NodeName, tuple[Candidate, ...]]
    reaches: Mapping[NodeName, frozenset[DeviceKey]]
    device: Mapping[DeviceKey, Candidate]
    counters: Mapping[CounterKey, int]  # amounts of the shared counter sets
    holder: Mapping[DeviceKey, str]  # the claim whose allocation holds the device
    fragment_attributes: tuple[str, ...]
    incomplete_drivers: frozenset[str]

    def initial_state(self) -> DeviceState:
        state = DeviceState(counters_left=dict(self.counters))
        for key in self.holder:
            if key in self.device:
                state.take(self.device[key])
        return state


def inventory(snapshot: Snapshot) -> Inventory:
    """The snapshot's devices per node (module docstring), computed once per snapshot."""
    return memoized(snapshot, ("dra_inventory",), lambda: _inventory(snapshot))


def snapshot_state(snapshot: Snapshot) -> DeviceState:
    """The devices and counters the snapshot's claims hold, computed once per snapshot: for
    questions that change nothing (`shortfall_on`, node signatures, CP-SAT's pattern checks).
    An engine that allocates takes its own copy (`Allocator`)."""
    return memoized(snapshot, ("dra_snapshot_state",), inventory(snapshot).initial_state)


def keep_derived(snapshot: Snapshot, counted_snapshot: Snapshot) -> None:
    """Hand what rule `dra` derived from `snapshot` to its counted copy (`solver.rules.counted`):
    the count changes requests and allocatable, not the devices nodes reach, the claims, nor
    so the columns (which the objective and the queue shares read of the counted copy)."""
    if snapshot.dra.resource_slices:
        found = inventory(snapshot)
        memoized(counted_snapshot, ("dra_inventory",), lambda: found)
    declared = columns(snapshot)
    memoized(counted_snapshot, ("dra_columns",), lambda: declared)


def _inventory(snapshot: Snapshot) -> Inventory:
    dra = snapshot.dra
    current, incomplete = current_slices(dra.resource_slices)
    held_by = holders(dra.resource_claims)
    counters: dict[CounterKey, int] = {}
    for s in dra.resource_slices:
        for counter_set in s.shared_counters:
            for name, amount in counter_set.counters.items():
                counters[s.driver, s.pool.name, counter_set.name, name] = amount
    per_node: dict[NodeName, list[Candidate]] = defaultdict(list)
    device: dict[DeviceKey, Candidate] = {}
    holder: dict[DeviceKey, str] = {}
    for source in current:
        found = [_candidate(source, each) for each in source.devices]
        for candidate in found:
            device[candidate.key] = candidate
            if candidate.key in held_by:
                holder[candidate.key] = held_by[candidate.key]
        if source.node_name is not None:
            if source.node_name in snapshot.node_by_name:
                per_node[source.node_name] += found
        else:
            for node in snapshot.nodes:
                if source.all_nodes or node_affinity.matches(node, source.node_selector):
                    per_node[node.name] += found
    fragment = sorted(
        {
            constraint.match_attribute
            for spec in (*dra.resource_claims, *dra.resource_claim_templates)
            for constraint in spec.constraints
        }
    )
    return Inventory(
        candidates={name: tuple(found) for name, found in per_node.items()},
        reaches={name: frozenset(c.key for c in found) for name, found in per_node.items()},
        device=device,
        counters=counters,
        holder=holder,
        fragment_attributes=tuple(fragment),
        incomplete_drivers=frozenset(driver for driver, _ in incomplete),
    )


def _candidate(source: ResourceSlice, device: Device) -> Candidate:
    pool = source.pool.name
    draws = tuple(
        ((device.driver, pool, use.counter_set, name), amount)
        for use in device.consumes_counters
        for name, amount in sorted(use.counters.items())
    )
    tainted = any(taint.effect in ("NoSchedule", "NoExecute") for taint in device.taints)
    return Candidate(key=(device.driver, pool, device.name), device=device, draws=draws, tainted=tainted)


# ---- what a placement leaves of the domains ----


def domains(snapshot: Snapshot) -> Mapping[NodeName, tuple[tuple[DeviceKey, ...], ...]]:
    """Per node, its untainted devices by domain: by the values of the attributes claims
    constrain (`Inventory.fragment_attributes`: an NVLink domain, a PCIe root), else the
    node's devices as one domain. Computed once per snapshot."""

    def compute() -> dict[NodeName, tuple[tuple[DeviceKey, ...], ...]]:
        inv = inventory(snapshot)
        attributes = inv.fragment_attributes
        result = {}
        for node, found in inv.candidates.items():
            grouped: dict[tuple, list[DeviceKey]] = defaultdict(list)
            for candidate in found:
                if not candidate.tainted:
                    values = candidate.device.attributes
                    grouped[tuple((type(values.get(a)).__name__, str(values.get(a))) for a in attributes)].append(candidate.key)
            result[node] = tuple(tuple(keys) for _, keys in sorted(grouped.items()))
        return result

    return memoized(snapshot, ("dra_domains",), compute)


def stranded_devices(snapshot: Snapshot, node: NodeName, taken: Iterable[DeviceKey] | set[DeviceKey]) -> int:
    """Free devices of `node` in domains partly taken: what a claim asking a whole domain
    can no longer use. Example: domains of 4, one with 1 taken → 3 stranded; the packing
    tier charges each as a whole GPU's milli (`solver.objective`)."""
    held = taken if isinstance(taken, set) else set(taken)
    stranded = 0
    for keys in domains(snapshot).get(node, ()):
        used = sum(1 for key in keys if key in held)
        if 0 < used < len(keys):
            stranded += len(keys) - used
    return stranded


def stranded_after(snapshot: Snapshot, after: After) -> int:
    """`stranded_devices` summed over the nodes after a placement: the devices kept claims
    hold (a claim of an evicted pod's template is freed) and those the placement allocates."""
    if not has_claims(snapshot):
        return 0
    freed = _freed_claims(snapshot, {e.pod.key for e in after.evicted})
    taken = {
        (r.driver, r.pool, r.device)
        for claim in snapshot.dra.resource_claims
        if claim.allocation is not None and claim.key not in freed
        for r in claim.allocation
        if not r.admin_access
    }
    taken.update((r.driver, r.pool, r.device) for c in after.placement.claims for r in c.devices if not r.admin_access)
    return sum(stranded_devices(snapshot, node, taken) for node in domains(snapshot))


# ---- the exact allocation, one pod at a time ----


@dataclass
class PodAllocation:
    """What binding one pod allocated (`made`) and joined (`joined`: claims allocated before
    this pod, now also reserved for it)."""

    pod: PodKey
    node: NodeName
    made: list[tuple[PodClaim, tuple[tuple[Candidate, str, bool], ...]]] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)


class Allocator:
    """The cycle's device state: what the snapshot holds, what evictions free, what binds take.

    `try_bind` says whether a pod's claims can be satisfied on a node now (and how) without
    changing anything; `apply(..., sign)` takes (+1) or gives back (−1) what it said, so an
    engine that rolls a gang back gives its devices back."""

    def __init__(self, snapshot: Snapshot, *, state: DeviceState | None = None):
        self.snapshot = snapshot
        self.inventory = inventory(snapshot)
        self.state = self.inventory.initial_state() if state is None else state
        self.made: dict[str, tuple[NodeName, PodClaim, tuple[tuple[Candidate, str, bool], ...]]] = {}
        self.users: dict[str, list[PodKey]] = defaultdict(list)  # claims made this cycle → pods

    def try_bind(self, pod: Pod, node: NodeName, *, ordered: bool = True) -> PodAllocation | Shortfall:
        """`ordered=False`: whether the claims fit, on devices in any order (`allocate`)."""
        claims = pod_claims(self.snapshot, pod)
        result = PodAllocation(pod.key, node)
        if not claims:
            return result
        reached = self.inventory.reaches.get(node, frozenset())
        asks: list[tuple[PodClaim, ClaimAsk]] = []
        for claim in claims:
            if claim.spec is None:
                what = "ResourceClaim" if claim.template is None else "ResourceClaimTemplate"
                return Shortfall(claim.ident, "", f"{what} not found")
            devices = self._allocated(claim)
            if devices is not None:
                if not _reachable(self.snapshot, claim, devices, node, reached):
                    return Shortfall(claim.ident, "", "allocated devices not reachable from the node")
                result.joined.append(claim.ident)
                continue
            asks.append((claim, claim_ask(self.snapshot, claim)))
        if asks:
            answer = allocate(
                self.inventory.candidates.get(node, ()),
                self.state,
                [ask for _, ask in asks],
                fragment_attributes=self.inventory.fragment_attributes,
                incomplete_drivers=self.inventory.incomplete_drivers,
                ordered=ordered,
            )
            if isinstance(answer, Shortfall):
                return answer
            result.made = [(claim, answer.claims[i]) for i, (claim, _) in enumerate(asks)]
        return result

    def _allocated(self, claim: PodClaim) -> tuple[DeviceKey, ...] | None:
        if claim.allocated is not None:
            return tuple((r.driver, r.pool, r.device) for r in claim.allocated)
        made = self.made.get(claim.ident)
        return None if made is None else tuple(candidate.key for candidate, _, _ in made[2])

    def apply(self, allocation: PodAllocation, *, sign: int) -> None:
        for claim, devices in allocation.made:
            for candidate, _, admin in devices:
                if not admin:
                    self.state.take(candidate, sign=sign)
            if sign > 0:
                self.made[claim.ident] = (allocation.node, claim, devices)
            else:
                self.made.pop(claim.ident, None)
        for ident in (*(claim.ident for claim, _ in allocation.made), *allocation.joined):
            if sign > 0:
                self.users[ident].append(allocation.pod)
            else:
                self.users[ident].remove(allocation.pod)

    def evict(self, pod: Pod, *, sign: int = 1) -> None:
        """An evicted pod gives back the devices of the claims it alone used (its template's)."""
        for claim in pod_claims(self.snapshot, pod):
            if claim.template is None or claim.allocated is None:
                continue
            for result in claim.allocated:
                key = (result.driver, result.pool, result.device)
                if key in self.inventory.device and not result.admin_access:
                    self.state.take(self.inventory.device[key], sign=-sign)

    def claims(self) -> tuple[ClaimAllocation, ...]:
        """This cycle's allocations, for `Placement.claims`, in claim order."""
        result = []
        for ident in sorted(self.made):
            node, claim, devices = self.made[ident]
            result.append(
                ClaimAllocation(
                    claim=claim.claim.key if claim.claim is not None else None,
                    pod=claim.pod,
                    pod_claim=claim.entry,
                    template=claim.template,
                    node=node,
                    devices=tuple(candidate.result(request, admin) for candidate, request, admin in devices),
                    reserved_for=tuple(sorted(self.users[ident])),
                )
            )
        return tuple(result)


def _reachable(snapshot: Snapshot, claim: PodClaim, devices: Iterable[DeviceKey], node: NodeName, reached) -> bool:
    if not all(key in reached for key in devices):
        return False
    terms = claim.claim.allocation_node_selector if claim.claim is not None else ()
    return not terms or node_affinity.matches(snapshot.node_by_name[node], terms)


def allocate_placement(snapshot: Snapshot, placement: Placement) -> tuple[Placement, dict[PodKey, Shortfall]]:
    """`placement` with its claims allocated, binds in order after its evictions; a pod whose
    claims cannot be, and the pods of its PodGroup when that leaves the group below its
    gang minimum, are taken out (with the evictions made for that group) and the rest
    allocated again, until every bind left has its devices. Returns the placement and the
    pods taken out, with why. For an engine that chose nodes by the columns alone (CP-SAT):
    pods that ask the most devices are allocated first on each node."""
    if not has_claims(snapshot):
        return placement, {}
    dropped: dict[PodKey, Shortfall] = {}
    while True:
        allocator = Allocator(snapshot)
        for eviction in placement.evictions:
            allocator.evict(snapshot.pod_by_key[eviction.pod])
        failed: dict[PodKey, Shortfall] = {}
        for bind in sorted(placement.binds, key=lambda b: -_devices_asked(snapshot, snapshot.pod_by_key[b.pod])):
            answer = allocator.try_bind(snapshot.pod_by_key[bind.pod], bind.node)
            if isinstance(answer, Shortfall):
                failed[bind.pod] = answer
            else:
                allocator.apply(answer, sign=1)
        if not failed:
            return placement.model_copy(update={"claims": allocator.claims()}), dropped
        dropped.update(failed)
        placement = _without(snapshot, placement, set(failed))


def _devices_asked(snapshot: Snapshot, pod: Pod) -> int:
    total = 0
    for claim in pod_claims(snapshot, pod):
        if claim.spec is not None and claim.allocated is None:
            for request in claim.spec.requests:
                if request.exactly is not None:
                    total += request.exactly.count
    return total


def _without(snapshot: Snapshot, placement: Placement, pods: set[PodKey]) -> Placement:
    """`placement` without the binds of `pods`, nor those of PodGroups that fall below their
    minimum without them, nor evictions made for such PodGroups."""
    binds = [bind for bind in placement.binds if bind.pod not in pods]
    bound: dict[str, int] = defaultdict(int)
    for bind in binds:
        bound[snapshot.pod_by_key[bind.pod].pod_group] += 1  # type: ignore[index]
    evicted = {eviction.pod for eviction in placement.evictions}
    running: dict[str, int] = defaultdict(int)
    for pod in snapshot.pods:
        if pod.phase == "running" and pod.pod_group is not None and pod.key not in evicted:
            running[pod.pod_group] += 1
    touched = {snapshot.pod_by_key[pod].pod_group for pod in pods}
    short = {
        group
        for group in touched
        if group is not None and bound[group] + running[group] < snapshot.pod_group_by_key[group].min_member
    }
    return placement.model_copy(
        update={
            "binds": tuple(b for b in binds if snapshot.pod_by_key[b.pod].pod_group not in short),
            "evictions": tuple(e for e in placement.evictions if e.for_ not in short),
        }
    )


# ---- what every engine reads: columns and a node filter ----


def _class_of(spec: ClaimSpec, request_name: str) -> str | None:
    """The device class of a result's request (`gpus`, or `gpus/large`)."""
    name, _, sub = request_name.partition("/")
    for request in spec.requests:
        if request.name == name:
            if request.exactly is not None:
                return request.exactly.device_class_name
            for alternative in request.first_available:
                if alternative.name == sub:
                    return alternative.device_class_name
    return None


def _asks(snapshot: Snapshot, pod: Pod) -> dict[str, int]:
    """Devices per class `pod` takes: what a running pod's template claims hold; what a
    pending pod's unallocated claims ask by `ExactCount` — a claim it shares with k pending
    pods its 1/k share, rounded down, so that the pods together never ask more than the
    claim's devices where they all go (a count is a bound the allocator refines, never one
    that turns a fitting claim away; module docstring). A shared claim already allocated
    asks nothing: its devices are held by it, outside every pod's count."""
    asked: dict[str, int] = defaultdict(int)
    sharers = _pending_sharers(snapshot)
    for claim in pod_claims(snapshot, pod):
        if claim.spec is None:
            continue
        if claim.allocated is not None:
            if claim.template is None:
                continue
            for result in claim.allocated:
                device_class = _class_of(claim.spec, result.request)
                if device_class is not None and not result.admin_access:
                    asked[device_class] += 1
        elif pod.phase == "pending":
            share = 1 if claim.template is not None else max(1, sharers.get(claim.ident, 1))
            for request in claim.spec.requests:
                exactly = request.exactly
                if exactly is not None and exactly.allocation_mode == "ExactCount" and not exactly.admin_access:
                    asked[exactly.device_class_name] += exactly.count // share
    return {name: amount for name, amount in asked.items() if amount}


def _pending_sharers(snapshot: Snapshot) -> Mapping[str, int]:
    """Per claim named directly by pending pods, how many name it."""

    def compute() -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for pod in snapshot.pods:
            if pod.phase == "pending":
                for claim in pod_claims(snapshot, pod):
                    if claim.template is None:
                        counts[claim.ident] += 1
        return dict(counts)

    return memoized(snapshot, ("dra_pending_sharers",), compute)


def columns(snapshot: Snapshot) -> tuple[Column, ...]:
    """One column per device class a pod's claim asks, named after the class (module
    docstring); none when no pod names a claim."""
    return memoized(snapshot, ("dra_columns",), lambda: _columns(snapshot))


def _columns(snapshot: Snapshot) -> tuple[Column, ...]:
    if not has_claims(snapshot):
        return ()
    pod_asks: dict[str, dict[PodKey, int]] = defaultdict(dict)
    task_asks: dict[str, dict[TaskKey, int]] = defaultdict(dict)
    counted_holders: set[str] = set()
    for pod in snapshot.pods:
        if pod.phase == "running":
            for device_class, amount in _asks(snapshot, pod).items():
                pod_asks[device_class][pod.key] = amount
            counted_holders.update(c.ident for c in pod_claims(snapshot, pod) if c.template is not None)
    for key, pods in _pending_by_task(snapshot).items():
        # A task's pending pods ask alike (the snapshot requires it of their requests): what
        # its first pod with claims asks; the allocation is exact per pod.
        first = _first_with_claims(pods)
        if first is not None:
            for device_class, amount in _asks(snapshot, first).items():
                task_asks[device_class][key] = amount
                for each in pods:
                    pod_asks[device_class][each.key] = amount
    names = sorted({*pod_asks, *task_asks})
    if not names:
        return ()
    classes = snapshot.dra.device_class_by_name
    inv = inventory(snapshot)
    offers: dict[str, dict[NodeName, int]] = {name: {} for name in names}
    for name in names:
        selectors = [
            compile_selector(text, where=f"DeviceClass {name} selectors[{i}]") for i, text in enumerate(classes[name].selectors)
        ]
        of_class = {
            key
            for key, candidate in inv.device.items()
            if not candidate.tainted
            and inv.holder.get(key) in (None, *counted_holders)
            and all(selector.matches(candidate.device) for selector in selectors)
        }
        for node, found in inv.candidates.items():
            amount = sum(1 for candidate in found if candidate.key in of_class)
            if amount:
                offers[name][node] = amount
    return tuple(
        Column(
            name=name,
            rule=NAME,
            offer=offers[name],
            ask=pod_asks.get(name, {}),
            task_ask=task_asks.get(name, {}),
            shortage=f"fewer free devices of class {name}",
            dealt_to_queues=True,
            packs=True,
            moves=name,
        )
        for name in names
    )


def node_filter(snapshot: Snapshot) -> NodeFilter | None:
    """Tasks whose pods name claims go only where the claims can be allocated on the devices
    free at the snapshot (module docstring); None when no pending pod names a claim the
    columns do not decide alone (`counted_alone`)."""
    if not has_claims(snapshot):
        return None
    pending = _pending_by_task(snapshot)
    if all(counted_alone(snapshot, pod) for pods in pending.values() for pod in pods):
        return None
    return _node_filter(snapshot)  # (never memoized: its closures hold the snapshot)


def counted_alone(snapshot: Snapshot, pod: Pod) -> bool:
    """Whether the columns alone decide where `pod`'s claims fit: it names no claim, or one
    claim of its own asking `count` devices of one class with no selector of its own, no
    constraint and no admin access, in a snapshot with no counters, no pool being updated:
    then any `count` free devices of the class do, and a node with that many free is one
    the allocator accepts. Such pods need no node filter."""
    claims = pod_claims(snapshot, pod)
    if not claims:
        return True
    if len(claims) > 1:
        return False
    (claim,) = claims
    spec = claim.spec
    if spec is None or claim.template is None or claim.allocated is not None or spec.constraints or len(spec.requests) != 1:
        return False
    exactly = spec.requests[0].exactly
    if exactly is None or exactly.allocation_mode != "ExactCount" or exactly.selectors or exactly.admin_access:
        return False
    inv = inventory(snapshot)
    return not inv.counters and not inv.incomplete_drivers


def _pending_by_task(snapshot: Snapshot) -> Mapping[TaskKey, tuple[Pod, ...]]:
    def compute() -> dict[TaskKey, tuple[Pod, ...]]:
        grouped: dict[TaskKey, list[Pod]] = defaultdict(list)
        for pod in snapshot.pods:
            if pod.phase == "pending" and pod.pod_group is not None and pod.task is not None:
                grouped[pod.pod_group, pod.task].append(pod)
        return {key: tuple(pods) for key, pods in grouped.items()}

    return memoized(snapshot, ("dra_pending_by_task",), compute)


_NO_DEVICES = ("no devices",)


def _node_filter(snapshot: Snapshot) -> NodeFilter:
    judged: dict[tuple[object, object], bool] = {}
    representative: dict[object, NodeName] = {}
    node_part: dict[NodeName, object] = {}
    for node in snapshot.nodes:
        part = node_signature(snapshot, node.name)
        representative.setdefault(part, node.name)
        node_part[node.name] = part
    pending = _pending_by_task(snapshot)

    example: dict[object, Pod] = {}  # per claims signature, a pod asking so

    def task_part(group: PodGroup, task: Task) -> object:
        first = _first_with_claims(pending.get((group.key, task.name), ()))
        if first is None or counted_alone(snapshot, first):
            return None
        signature = _claims_signature(snapshot, first)
        example.setdefault(signature, first)
        return signature

    def allows(task: Task, part: object, node: object) -> bool:
        if part is None:
            return True
        key = (part, node)
        if key not in judged:
            judged[key] = not isinstance(shortfall_on(snapshot, example[part], representative[node]), Shortfall)
        return judged[key]

    return NodeFilter(rule=NAME, node_part=node_part, task_part=task_part, allows=allows)


def shortfall_on(snapshot: Snapshot, pod: Pod, node: NodeName) -> PodAllocation | Shortfall:
    """Whether `pod`'s claims can be allocated on `node` alone, on what the snapshot leaves
    free (`try_bind` changes no state, so one snapshot state serves every question)."""
    return Allocator(snapshot, state=snapshot_state(snapshot)).try_bind(pod, node, ordered=False)


def example_pod(snapshot: Snapshot, task: TaskKey) -> Pod | None:
    """A pending pod of `task` that names claims (its pods ask alike), or None."""
    return _first_with_claims(_pending_by_task(snapshot).get(task, ()))


def why_not(snapshot: Snapshot, task: TaskKey, node: NodeName) -> Shortfall | None:
    """Why the claims of `task`'s pods cannot be allocated on `node` at the snapshot, with
    the claim named as people see it (`w-0-gpus`: the pod's name and entry, as the claim a
    template makes is named); None when they can, or the task names none."""
    if not has_claims(snapshot):
        return None
    first = example_pod(snapshot, task)
    if first is None:
        return None
    return memoized(snapshot, ("dra_why_not", task, node), lambda: _why_not(snapshot, first, node))


def _why_not(snapshot: Snapshot, first: Pod, node: NodeName) -> Shortfall | None:
    answer = shortfall_on(snapshot, first, node)
    if not isinstance(answer, Shortfall):
        return None
    claim = next((c for c in pod_claims(snapshot, first) if c.ident == answer.claim), None)
    if claim is None or claim.template is None:
        label = answer.claim.rpartition("/")[2]
    else:
        label = claim.claim.name if claim.claim is not None else f"{first.name}-{claim.entry}"
    return Shortfall(label, answer.request, answer.why)


def _first_with_claims(pods: Sequence[Pod]) -> Pod | None:
    return next((pod for pod in pods if pod.resource_claims), None)


def _claims_signature(snapshot: Snapshot, pod: Pod) -> object:
    """What decides where `pod`'s claims fit: each claim's spec, and the claim itself when it
    is shared or allocated already (a template's fresh claim is the same for every pod)."""
    return tuple(
        (claim.ident if claim.shared or claim.allocated is not None else None, claim.template, claim.spec)
        for claim in pod_claims(snapshot, pod)
    )


def node_signature(snapshot: Snapshot, node: NodeName) -> object:
    """What decides whether claims fit `node` at the snapshot, with what tells equivalent
    nodes apart left out (device and pool names, a device's UUID or index: `_content`): per
    device its content, the counters left of the sets it draws on, whether it is free. Nodes
    with equal signatures answer every allocation question alike (one allocator call per
    task, one CP-SAT pattern check)."""
    found = inventory(snapshot).candidates.get(node)
    if not found:
        return _NO_DEVICES
    state, content = snapshot_state(snapshot), _contents(snapshot)
    return tuple(
        sorted(
            (
                content[candidate.key],
                tuple(state.counters_left.get(counter, 0) for counter, _ in candidate.draws),
                candidate.key in state.taken,
            )
            for candidate in found
        )
    )


def _contents(snapshot: Snapshot) -> Mapping[DeviceKey, tuple]:
    """`_content` of every device, computed once per snapshot, when signatures are first asked."""

    def compute() -> dict[DeviceKey, tuple]:
        whole = _reads_unique(snapshot)
        return {key: _content(candidate, whole) for key, candidate in inventory(snapshot).device.items()}

    return memoized(snapshot, ("dra_contents",), compute)


def _content(candidate: Candidate, whole: bool) -> tuple:
    """A device as `node_signature` compares it: driver, attributes (all of them when some
    selector or constraint names a device-unique one, `whole`), capacity, counter draws by
    set and counter, taint."""
    device = candidate.device
    return (
        device.driver,
        tuple(sorted((name, type(value).__name__, str(value)) for name, value in device.attributes.items() if whole or not _unique(name))),
        tuple(sorted(device.capacity.items())),
        tuple((counter[2:], amount) for counter, amount in candidate.draws),
        candidate.tainted,
    )


_UNIQUE_ATTRIBUTES = ("uuid", "index", "minor", "serial", "pciBusID")


@functools.lru_cache(maxsize=4096)
def _unique(qualified: str) -> bool:
    """Attributes that name one device (its UUID, index): left out of a node's signature, so
    that nodes alike but for them share one judgement. When a selector or constraint names
    one of them, every attribute counts (`_reads_unique`)."""
    return qualified.rpartition("/")[2] in _UNIQUE_ATTRIBUTES


def _reads_unique(snapshot: Snapshot) -> bool:
    dra = snapshot.dra
    texts = [*(text for device_class in dra.device_classes for text in device_class.selectors)]
    for spec in (*dra.resource_claims, *dra.resource_claim_templates):
        texts += [constraint.match_attribute for constraint in spec.constraints]
        for request in spec.requests:
            parts = (request.exactly,) if request.exactly is not None else request.first_available
            texts += [text for part in parts for text in part.selectors]
    return any(re.search(rf"\b{name}\b", text) for text in texts for name in _UNIQUE_ATTRIBUTES)


# ---- the checker ----


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Every bound pod whose claims lack a valid allocation, and every allocation that breaks
    a part of the rule (module docstring), judged from the API objects."""
    if not has_claims(snapshot) and not after.placement.claims:
        return []
    violations: list[Violation] = []
    census = counted_devices(snapshot.dra.resource_slices, snapshot.dra.resource_claims)
    devices = {(c.device.driver, c.pool, c.device.name): c for c in census.devices}
    slices = {(s.driver, s.pool.name, s.name): s for s in snapshot.dra.resource_slices}
    bound_node = {b.pod.key: b.node for b in after.bound}
    evicted = {e.pod.key for e in after.evicted}

    def reach(key: tuple[str, str, str], node_name: NodeName) -> bool:
        counted = devices.get(key)
        if counted is None:
            return False
        source = slices[key[0], counted.pool, counted.slice_name]
        if source.node_name is not None:
            return source.node_name == node_name
        node = snapshot.node_by_name.get(node_name)
        return node is not None and (source.all_nodes or node_affinity.matches(node, source.node_selector))

    by_ident: dict[str, ClaimAllocation] = {}
    for allocation in after.placement.claims:
        ident = allocation.claim or f"{allocation.pod}#{allocation.pod_claim}"
        if ident in by_ident:
            violations.append(Violation(NAME, ident, f"claim {ident} is allocated twice"))
        by_ident[ident] = allocation

    # Devices held after the placement: kept allocations (claims not freed by evictions) + new.
    held: dict[tuple[str, str, str], str] = {}
    freed = _freed_claims(snapshot, evicted)
    for claim in snapshot.dra.resource_claims:
        if claim.allocation is None or claim.key in freed:
            continue
        for result in claim.allocation:
            if not result.admin_access:
                held[result.driver, result.pool, result.device] = claim.key

    for ident, allocation in by_ident.items():
        claim = _claim_of(snapshot, allocation)
        if claim is None or claim.spec is None:
            violations.append(Violation(NAME, ident, f"claim {ident}: no such claim, or its template is missing"))
            continue
        if claim.allocated is not None:
            violations.append(Violation(NAME, ident, f"claim {ident} is allocated already and allocated again"))
        for message in _judge_allocation(snapshot, claim, allocation, devices, reach):
            violations.append(Violation(NAME, ident, f"claim {ident} on node {allocation.node}: {message}"))
        for result in allocation.devices:
            key = (result.driver, result.pool, result.device)
            if result.admin_access:
                continue
            if key in held:
                violations.append(Violation(NAME, ident, f"claim {ident}: device {'/'.join(key)} is held by claim {held[key]}"))
            held[key] = ident
        for pod in allocation.reserved_for:
            if pod not in bound_node:
                violations.append(Violation(NAME, ident, f"claim {ident} is reserved for {pod}, which this placement does not bind"))

    drawn: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for key in held:
        counted = devices.get(key)
        if counted is not None:
            for use in counted.device.consumes_counters:
                for name, amount in use.counters.items():
                    drawn[key[0], key[1], use.counter_set, name] += amount
    amounts = {
        (s.driver, s.pool.name, counter_set.name, name): amount
        for s in snapshot.dra.resource_slices
        for counter_set in s.shared_counters
        for name, amount in counter_set.counters.items()
    }
    for counter, total in sorted(drawn.items()):
        if total > amounts.get(counter, 0):
            violations.append(
                Violation(NAME, "/".join(counter[:3]), f"counter {counter[3]} of set {counter[2]} drawn {total} > {amounts.get(counter, 0)}")
            )

    for bound in after.bound:
        for claim in pod_claims(snapshot, bound.pod):
            allocation = by_ident.get(claim.ident)
            if claim.allocated is not None:
                keys = [(r.driver, r.pool, r.device) for r in claim.allocated]
                terms = claim.claim.allocation_node_selector if claim.claim is not None else ()
                if not all(reach(key, bound.node.name) for key in keys) or (
                    terms and not node_affinity.matches(bound.node, terms)
                ):
                    violations.append(
                        Violation(NAME, bound.pod.key, f"pod {bound.pod.key} on node {bound.node.name}: claim {claim.ident}'s devices are not reachable there")
                    )
            elif allocation is None:
                violations.append(Violation(NAME, bound.pod.key, f"pod {bound.pod.key}: claim {claim.ident} ({claim.entry}) is not allocated"))
            elif bound.pod.key not in allocation.reserved_for:
                violations.append(Violation(NAME, bound.pod.key, f"pod {bound.pod.key}: claim {claim.ident} is not reserved for it"))
            elif not all(reach((r.driver, r.pool, r.device), bound.node.name) for r in allocation.devices):
                violations.append(
                    Violation(NAME, bound.pod.key, f"pod {bound.pod.key} on node {bound.node.name}: claim {claim.ident}'s devices are not reachable there")
                )
    return violations


def _freed_claims(snapshot: Snapshot, evicted: set[PodKey]) -> set[str]:
    """Claims a template made for a pod the placement evicts: their devices come free."""
    freed = set()
    for pod in snapshot.pods:
        if pod.key in evicted:
            freed.update(c.claim.key for c in pod_claims(snapshot, pod) if c.template is not None and c.claim is not None)
    return freed


def _claim_of(snapshot: Snapshot, allocation: ClaimAllocation) -> PodClaim | None:
    pod = snapshot.pod_by_key.get(allocation.pod)
    if pod is None:
        return None
    return next((claim for claim in pod_claims(snapshot, pod) if claim.entry == allocation.pod_claim), None)


def _judge_allocation(snapshot: Snapshot, claim: PodClaim, allocation: ClaimAllocation, devices, reach) -> list[str]:
    """What is wrong with one allocation, request by request (module docstring)."""
    spec = claim.spec
    assert spec is not None
    problems: list[str] = []
    classes = snapshot.dra.device_class_by_name
    by_request: dict[str, list[DeviceResult]] = defaultdict(list)
    for result in allocation.devices:
        by_request[result.request.partition("/")[0]].append(result)
    for result in allocation.devices:
        key = (result.driver, result.pool, result.device)
        if key not in devices:
            problems.append(f"device {'/'.join(key)} does not count (no such device, or its pool is not complete)")
        elif not reach(key, allocation.node):
            problems.append(f"device {'/'.join(key)} is not reachable from the node")
        elif any(t.effect in ("NoSchedule", "NoExecute") for t in devices[key].device.taints):
            problems.append(f"device {'/'.join(key)} is tainted")
    names = {request.name for request in spec.requests}
    for extra in sorted(set(by_request) - names):
        problems.append(f"no request {extra}")
    for request in spec.requests:
        results = by_request.get(request.name, [])
        subs = {result.request.partition("/")[2] for result in results}
        if request.exactly is not None:
            part, label = request.exactly, request.name
            if subs != {""} and results:
                problems.append(f"request {request.name} names a sub-request")
                continue
        else:
            if len(subs) != 1:
                problems.append(f"request {request.name}: devices from {len(subs)} sub-requests, not one")
                continue
            sub = subs.pop()
            found = [alternative for alternative in request.first_available if alternative.name == sub]
            if not found:
                problems.append(f"request {request.name}: no sub-request {sub}")
                continue
            part, label = found[0], f"{request.name}/{sub}"
        device_class = classes.get(part.device_class_name)
        selectors = [*(device_class.selectors if device_class else ()), *part.selectors]
        compiled = [compile_selector(text, where=f"{label} selector") for text in selectors]
        known = [devices[(r.driver, r.pool, r.device)].device for r in results if (r.driver, r.pool, r.device) in devices]
        for device in known:
            if not all(selector.matches(device) for selector in compiled):
                problems.append(f"request {label}: device {device.name} does not match its selectors")
        if part.allocation_mode == "ExactCount" and len(results) != part.count:
            problems.append(f"request {label}: {len(results)} devices, asked {part.count}")
        if part.allocation_mode == "All":
            everything = [
                key
                for key, counted in devices.items()
                if reach(key, allocation.node) and all(selector.matches(counted.device) for selector in compiled)
            ]
            if sorted(everything) != sorted((r.driver, r.pool, r.device) for r in results) or not everything:
                problems.append(f"request {label}: allocationMode All, but not every matching device")
        admin = getattr(part, "admin_access", False)
        if any(r.admin_access != admin for r in results):
            problems.append(f"request {label}: admin access differs from the request's")
    for constraint in spec.constraints:
        named = set(constraint.requests) if constraint.requests else names
        values = set()
        for result in allocation.devices:
            if result.request.partition("/")[0] in named and (result.driver, result.pool, result.device) in devices:
                device = devices[(result.driver, result.pool, result.device)].device
                attributes = {qualified_name(n, device.driver): v for n, v in device.attributes.items()}
                values.add((type(attributes.get(constraint.match_attribute)).__name__, str(attributes.get(constraint.match_attribute))))
                if constraint.match_attribute not in attributes:
                    problems.append(f"device {device.name} lacks attribute {constraint.match_attribute}")
        if len(values) > 1:
            problems.append(f"devices differ in {constraint.match_attribute} ({len(values)} values)")
    return problems
