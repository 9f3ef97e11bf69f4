"""DRA allocation on one node: which devices satisfy a pod's claims, or why none do.

Why a search: a claim asks `count` devices of a class (or all of them), each request may
offer alternatives (`firstAvailable`), `matchAttribute` constraints tie the devices of
several requests to one attribute value (one NVLink domain, one PCIe root), and
partitionable devices (MIG) draw from counters their parent shares. Whether a set of
claims fits a node is a small constraint problem, solved here exactly by depth-first
search over devices, as kube-scheduler's structured allocator does — bounded by
`STEP_BUDGET` device tries per call, past which the claims count as not fitting (a node
that holds an answer the budget does not reach is passed over, never over-allocated).

Input: the devices a node reaches (`Candidate`s: its own slices' devices, and those of
pools whose `nodeSelector` or `allNodes` reach it), the cycle's `DeviceState` (devices
taken, counters left: global, since a network-attached device is one device whichever
node uses it), and the `ClaimAsk`s. Output: an `Allocation` (per claim, per request, the
devices) or a `Shortfall` naming the claim, the request and why.

Which devices are tried first (the fragmentation preference, "whole devices and whole
domains kept free"): devices whose `matchAttribute` domains (the attributes any claim of
the snapshot constrains, `fragment_attributes`) have the fewest free devices left, then
partitions whose counter set is already drawn from, then by name. So a 2-device request
on a node with domains of 4 and 2 free devices takes the domain of 2 and keeps the other
whole. Example: devices g0–g7, `nvlinkDomain` 0 for g0–g3 and 1 for g4–g7, g0 taken: a
claim of 4 devices matching `nvlinkDomain` gets g4–g7; one of 2 devices, g1–g2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from models.dra import AttributeValue, Device, DeviceResult
from solver.dra_cel import Selector

__all__ = [
    "STEP_BUDGET",
    "DeviceKey",
    "CounterKey",
    "Candidate",
    "Choice",
    "RequestAsk",
    "ClaimAsk",
    "DeviceState",
    "Allocation",
    "Shortfall",
    "allocate",
]

STEP_BUDGET = 20_000
"""Device tries per `allocate` call (kube-scheduler bounds its allocator likewise)."""

DeviceKey = tuple[str, str, str]
"""(driver, pool, device name): a device is unique by it across the cluster."""
CounterKey = tuple[str, str, str, str]
"""(driver, pool, counter set, counter)."""


@dataclass(frozen=True)
class Candidate:
    """A device a node reaches, with what it draws from shared counters."""

    key: DeviceKey
    device: Device
    draws: tuple[tuple[CounterKey, int], ...] = ()
    tainted: bool = False  # a NoSchedule/NoExecute taint: claims carry no tolerations here

    def result(self, request: str, admin_access: bool) -> DeviceResult:
        driver, pool, name = self.key
        return DeviceResult(request=request, driver=driver, pool=pool, device=name, admin_access=admin_access)


@dataclass(frozen=True)
class Choice:
    """One way to satisfy a request: `exactly`, or one `firstAvailable` sub-request."""

    request: str  # as the result names it: "gpus", or "gpus/large" for a sub-request
    device_class: str
    selectors: tuple[Selector, ...]  # the class's, then the request's: all must match
    all_devices: bool = False
    count: int = 1
    admin_access: bool = False
    _answers: dict[DeviceKey, bool] = field(default_factory=dict, compare=False, repr=False)

    def matches(self, candidate: Candidate) -> bool:
        """Whether `candidate` matches every selector; remembered per device key (a choice
        lives for one snapshot, where a key names one device)."""
        answer = self._answers.get(candidate.key)
        if answer is None:
            answer = self._answers[candidate.key] = all(selector.matches(candidate.device) for selector in self.selectors)
        return answer


@dataclass(frozen=True)
class RequestAsk:
    name: str
    choices: tuple[Choice, ...]  # in order of preference


@dataclass(frozen=True)
class ClaimAsk:
    """One claim to allocate. `label` names it in reasons (the claim, or pod/entry for a
    template claim not made yet); `constraints` are (request names or None for all,
    attribute) pairs."""

    label: str
    requests: tuple[RequestAsk, ...]
    constraints: tuple[tuple[frozenset[str] | None, str], ...] = ()


@dataclass
class DeviceState:
    """What this cycle has taken so far: devices, and counters left per counter."""

    taken: set[DeviceKey] = field(default_factory=set)
    counters_left: dict[CounterKey, int] = field(default_factory=dict)

    def take(self, candidate: Candidate, *, sign: int = 1) -> None:
        if sign > 0:
            self.taken.add(candidate.key)
        else:
            self.taken.discard(candidate.key)
        for counter, amount in candidate.draws:
            self.counters_left[counter] = self.counters_left.get(counter, 0) - sign * amount


@dataclass(frozen=True)
class Allocation:
    """Per claim (in the order asked): its devices, in request order."""

    claims: tuple[tuple[tuple[Candidate, str, bool], ...], ...]  # (device, request name, admin access)

    def taking(self) -> list[Candidate]:
        """The devices this allocation takes from others (admin access takes none)."""
        return [candidate for claim in self.claims for candidate, _, admin in claim if not admin]


@dataclass(frozen=True)
class Shortfall:
    """Why the claims do not fit: claim, request and a phrase counted per node in reasons
    ("fewer than 8 devices of class gpu.nvidia.com")."""

    claim: str
    request: str
    why: str


def allocate(
    candidates: Sequence[Candidate],
    state: DeviceState,
    claims: Sequence[ClaimAsk],
    *,
    fragment_attributes: Sequence[str] = (),
    incomplete_drivers: frozenset[str] = frozenset(),
    ordered: bool = True,
) -> Allocation | Shortfall:
    """Devices for every claim in `claims` on a node reaching `candidates`, in the state
    `state` leaves (not changed), or the first shortfall (module docstring).
    `incomplete_drivers`: drivers with a pool being rewritten — an `All` request of one of
    them waits, as kube-scheduler's does, since "all" is not known yet. `ordered=False`
    asks only whether the claims fit: devices are tried in the node's order, not fullest
    domain first (the answer is the same; which devices, not)."""
    search = _Search(candidates, state, claims, fragment_attributes if ordered else None, incomplete_drivers)
    if search.run(0):
        return Allocation(tuple(tuple(chosen) for chosen in search.chosen))
    return search.shortfall()


class _Search:
    def __init__(
        self,
        candidates: Sequence[Candidate],
        state: DeviceState,
        claims: Sequence[ClaimAsk],
        fragment_attributes: Sequence[str] | None,
        incomplete_drivers: frozenset[str],
    ):
        self.state = state
        self.claims = claims
        self.incomplete = incomplete_drivers
        free = [c for c in candidates if not c.tainted]
        self.order = free if fragment_attributes is None else sorted(free, key=_fragment_key(free, state, fragment_attributes))
        self.candidates = candidates
        self.flat = [(c, r) for c, claim in enumerate(claims) for r in range(len(claim.requests))]
        self.chosen: list[list[tuple[Candidate, str, bool]]] = [[] for _ in claims]
        self.used: set[DeviceKey] = set()  # taken by this search (not admin access)
        self.counters: dict[CounterKey, int] = {}  # drawn by this search
        self.values: list[dict[int, AttributeValue]] = [{} for _ in claims]  # per claim: constraint → value
        self.steps = 0
        self.out_of_steps = False

    # ---- search ----

    def run(self, i: int) -> bool:
        if i == len(self.flat):
            return True
        c, r = self.flat[i]
        request = self.claims[c].requests[r]
        for choice in request.choices:
            matching = [d for d in self.order if choice.matches(d)]
            if choice.all_devices:
                if not matching or any(d.device.driver in self.incomplete for d in matching):
                    continue
                if self._take_all(i, c, r, choice, matching):
                    return True
            elif self._pick(i, c, r, choice, matching, 0, choice.count):
                return True
            if self.out_of_steps:
                return False
        return False

    def _take_all(self, i: int, c: int, r: int, choice: Choice, matching: list[Candidate]) -> bool:
        # Every matching device the node reaches, tainted ones included, must be free.
        if any(d.tainted for d in self.candidates if choice.matches(d)):
            return False
        taken: list[Candidate] = []
        for device in matching:
            if not self._fits(c, r, choice, device):
                break
            self._push(c, r, choice, device)
            taken.append(device)
        else:
            if self.run(i + 1):
                return True
        for device in reversed(taken):
            self._pop(c, choice, device)
        return False

    def _pick(self, i: int, c: int, r: int, choice: Choice, matching: list[Candidate], start: int, left: int) -> bool:
        if left == 0:
            return self.run(i + 1)
        for k in range(start, len(matching) - left + 1):
            self.steps += 1
            if self.steps > STEP_BUDGET:
                self.out_of_steps = True
                return False
            device = matching[k]
            if not self._fits(c, r, choice, device):
                continue
            self._push(c, r, choice, device)
            if self._pick(i, c, r, choice, matching, k + 1, left - 1):
                return True
            self._pop(c, choice, device)
            if self.out_of_steps:
                return False
        return False

    def _fits(self, c: int, r: int, choice: Choice, device: Candidate) -> bool:
        if not choice.admin_access:
            if device.key in self.used or device.key in self.state.taken:
                return False
            for counter, amount in device.draws:
                if self.state.counters_left.get(counter, 0) - self.counters.get(counter, 0) < amount:
                    return False
        values = self.values[c]
        for k, (names, attribute) in enumerate(self.claims[c].constraints):
            if names is not None and self.claims[c].requests[r].name not in names:
                continue
            value = device.device.attributes.get(attribute)
            if value is None or (k in values and values[k] != value):
                return False
        return True

    def _push(self, c: int, r: int, choice: Choice, device: Candidate) -> None:
        self.chosen[c].append((device, choice.request, choice.admin_access))
        if not choice.admin_access:
            self.used.add(device.key)
            for counter, amount in device.draws:
                self.counters[counter] = self.counters.get(counter, 0) + amount
        values = self.values[c]
        for k, (names, attribute) in enumerate(self.claims[c].constraints):
            if (names is None or self.claims[c].requests[r].name in names) and k not in values:
                values[k] = device.device.attributes[attribute]
                values.setdefault(-1 - k, len(self.chosen[c]))  # the pick that fixed it

    def _pop(self, c: int, choice: Choice, device: Candidate) -> None:
        depth = len(self.chosen[c])
        self.chosen[c].pop()
        if not choice.admin_access:
            self.used.discard(device.key)
            for counter, amount in device.draws:
                self.counters[counter] -= amount
        values = self.values[c]
        for k in [k for k in values if k < 0 and values[k] == depth]:
            del values[k], values[-1 - k]

    # ---- why not ----

    def shortfall(self) -> Shortfall:
        """The first request that cannot be met alone, and why; else the claims together."""
        for claim in self.claims:
            for request in claim.requests:
                why = self._alone(claim, request)
                if why is not None:
                    return Shortfall(claim.label, request.name, why)
        if self.out_of_steps:
            why = f"no allocation found within {STEP_BUDGET} device tries"
        else:
            why = "not enough devices for all requests together"
        first = self.claims[0]
        return Shortfall(first.label, first.requests[0].name if first.requests else "", why)

    def _alone(self, claim: ClaimAsk, request: RequestAsk) -> str | None:
        whys: list[str] = []
        for choice in request.choices:
            matching = [d for d in self.candidates if choice.matches(d)]
            free = [d for d in matching if not d.tainted and (choice.admin_access or d.key not in self.state.taken)]
            if choice.all_devices:
                if not matching and self.incomplete:
                    whys.append(f"no devices of class {choice.device_class} while a pool of {', '.join(sorted(self.incomplete))} is being updated")
                elif not matching:
                    whys.append(f"no devices of class {choice.device_class}")
                elif any(d.device.driver in self.incomplete for d in matching):
                    whys.append(f"a pool of class {choice.device_class} is being updated")
                elif len(free) < len(matching):
                    whys.append(f"not all devices of class {choice.device_class} are free")
                continue
            if len(free) < choice.count:
                whys.append(f"fewer than {choice.count} free devices of class {choice.device_class}")
                continue
            counted = [d for d in free if all(self.state.counters_left.get(k, 0) >= a for k, a in d.draws)]
            if len(counted) < choice.count:
                whys.append(f"counters left for fewer than {choice.count} devices of class {choice.device_class}")
                continue
            constrained = [a for names, a in claim.constraints if names is None or request.name in names]
            for attribute in constrained:
                groups: dict[AttributeValue, int] = {}
                for d in counted:
                    value = d.device.attributes.get(attribute)
                    if value is not None:
                        groups[value] = groups.get(value, 0) + 1
                if max(groups.values(), default=0) < choice.count:
                    whys.append(f"no {choice.count} free devices share {attribute}")
                    break
            else:
                return None  # this choice fits alone
        return whys[0] if whys else None


def _fragment_key(free: Sequence[Candidate], state: DeviceState, attributes: Sequence[str]):
    """Sort key: fullest domains first, then drawn counter sets, then name (module docstring)."""
    per_value: dict[tuple[str, AttributeValue], int] = {}
    for device in free:
        if device.key in state.taken:
            continue
        for attribute in attributes:
            value = device.device.attributes.get(attribute)
            if value is not None:
                per_value[attribute, value] = per_value.get((attribute, value), 0) + 1
    big = len(free) + 1

    def key(device: Candidate) -> tuple:
        domains = tuple(
            per_value.get((a, device.device.attributes[a]), big) if a in device.device.attributes else big
            for a in attributes
        )
        drawn = min((state.counters_left.get(k, 0) for k, _ in device.draws), default=big)
        return (*domains, drawn, device.key)

    return key

