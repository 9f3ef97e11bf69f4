"""Conformance at the allocator level: the DRA cases ported from kube-scheduler's structured
allocator and `dynamicresources` plugin tests, put to `solver.dra_allocation.allocate` on one
node at a time, without the solve.

Why beside `test_conformance.py`: the allocator is where the semantics of a claim live (counts,
All, selectors, matchAttribute, counters, firstAvailable, admin access, taints, pool
generations); a case that goes wrong here names the allocator, not an engine. A case whose pod
is expected on a node must get, on that node, one of the device sets the case allows; a case
whose pod stays pending must find no node where its claims fit, and the shortfall must name the
claim and the request the case names. Cases this level cannot answer alone (a claim shared by
several pods, one made from a template, one already allocated) are left to `test_conformance.py`.
"""

from __future__ import annotations

import pytest

from models.dra import ResourceClaim, counted_devices
from models.snapshot import Node, Pod, Snapshot
from solver.dra_allocation import (
    Allocation,
    Candidate,
    Choice,
    ClaimAsk,
    DeviceState,
    RequestAsk,
    Shortfall,
    allocate,
    counter_budget,
)
from solver.dra_cel import compile_selector
from solver.rules.node_affinity import matches
from tests.conformance.conformance_cases import Case, case_paths, load_case

DRA_CASES = [
    case for case in (load_case(path) for path in case_paths()) if case.snapshot.dra.resource_slices or case.snapshot.dra.resource_claims
]


def _allocator_level(case: Case) -> bool:
    """One pending pod, its claims named directly, none allocated yet."""
    pending = [pod for pod in case.snapshot.pods if pod.phase == "pending"]
    if len(pending) != 1 or not pending[0].resource_claims:
        return False
    claims = case.snapshot.dra.claim_by_key
    for entry in pending[0].resource_claims:
        claim = claims.get(f"{pending[0].namespace}/{entry.resource_claim_name}")
        if claim is None or claim.allocation is not None:
            return False
    return True


ALLOCATOR_CASES = [case for case in DRA_CASES if _allocator_level(case)]


def test_allocator_level_covers_most_ported_cases() -> None:
    assert len(DRA_CASES) >= 20
    assert len(ALLOCATOR_CASES) >= 20


@pytest.mark.parametrize("case", ALLOCATOR_CASES, ids=[case.name for case in ALLOCATOR_CASES])
def test_allocator_answer_matches_origin(case: Case) -> None:
    snapshot = case.snapshot
    pod = next(pod for pod in snapshot.pods if pod.phase == "pending")
    asks = _asks(snapshot, pod)
    answers = {node.name: _allocate_on(snapshot, node, asks) for node in snapshot.nodes}
    expected_nodes = case.expected.binds.get(pod.key)
    if expected_nodes is None:
        for node, answer in answers.items():
            assert isinstance(answer, Shortfall), f"{node}: allocated {answer}"
        words = [word for want in case.expected.podgroups.values() for word in want.get("says", ())]
        said = " ".join(f"claim {a.claim} request {a.request}: {a.why}" for a in answers.values())
        for word in words:
            assert word in said, f"{word!r} not in {said!r}"
        return
    fitting = {node for node, answer in answers.items() if isinstance(answer, Allocation)}
    assert fitting and fitting <= set(expected_nodes), f"fits on {sorted(fitting)}, expected {expected_nodes}"
    for claim_index, entry in enumerate(pod.resource_claims):
        want = case.expected.claims.get(f"{pod.namespace}/{entry.resource_claim_name}")
        if want is None or not want.answers:
            continue
        for node in fitting:
            allocation = answers[node]
            assert isinstance(allocation, Allocation)
            got = frozenset(
                f"{result.request} {result.driver}/{result.pool}/{result.device}" + (" admin" if result.admin_access else "")
                for result in allocation.results(claim_index)
            )
            assert got in want.answers, f"{node}: {sorted(got)} not one of {[sorted(a) for a in want.answers]}"


def _asks(snapshot: Snapshot, pod: Pod) -> list[ClaimAsk]:
    claims = snapshot.dra.claim_by_key
    return [_ask(snapshot, claims[f"{pod.namespace}/{entry.resource_claim_name}"]) for entry in pod.resource_claims]


def _ask(snapshot: Snapshot, claim: ResourceClaim) -> ClaimAsk:
    classes = snapshot.dra.device_class_by_name

    def choice(request: str, spec, admin: bool) -> Choice:
        device_class = classes[spec.device_class_name]
        selectors = tuple(
            compile_selector(expression, where=f"{spec.device_class_name} selectors[{index}]")
            for index, expression in enumerate((*device_class.selectors, *spec.selectors))
        )
        return Choice(
            request=request,
            device_class=spec.device_class_name,
            selectors=selectors,
            all_devices=spec.allocation_mode == "All",
            count=spec.count,
            admin_access=admin,
        )

    requests = []
    for request in claim.requests:
        if request.exactly is not None:
            choices = (choice(request.name, request.exactly, request.exactly.admin_access),)
        else:
            choices = tuple(choice(f"{request.name}/{sub.name}", sub, False) for sub in request.first_available)
        requests.append(RequestAsk(request.name, choices))
    constraints = tuple(
        (frozenset(constraint.requests) or None, constraint.match_attribute) for constraint in claim.constraints
    )
    return ClaimAsk(label=claim.key, requests=tuple(requests), constraints=constraints)


def _allocate_on(snapshot: Snapshot, node: Node, asks: list[ClaimAsk]) -> Allocation | Shortfall:
    """The devices `node` reaches, the cycle's state as the running claims leave it, then `allocate`."""
    dra = snapshot.dra
    census = counted_devices(dra.resource_slices, dra.resource_claims)
    by_name = {resource_slice.name: resource_slice for resource_slice in dra.resource_slices}
    incomplete = set(census.incomplete_pools)
    candidates: list[Candidate] = []
    held: list[Candidate] = []
    for counted in census.devices:
        resource_slice = by_name[counted.slice_name]
        device = counted.device
        candidate = Candidate(
            key=(device.driver, counted.pool, device.name),
            device=device,
            draws=tuple(
                ((device.driver, counted.pool, use.counter_set, counter), amount)
                for use in device.consumes_counters
                for counter, amount in use.counters.items()
            ),
            tainted=any(taint.effect in ("NoSchedule", "NoExecute") for taint in device.taints),
        )
        if counted.taken_by is not None:
            held.append(candidate)
        reaches = (
            resource_slice.all_nodes
            or resource_slice.node_name == node.name
            or bool(resource_slice.node_selector) and matches(node, resource_slice.node_selector)
        )
        if reaches:
            candidates.append(candidate)
    shared = {
        (resource_slice.driver, resource_slice.pool.name, counter_set.name, counter): amount
        for resource_slice in dra.resource_slices
        if (resource_slice.driver, resource_slice.pool.name) not in incomplete
        for counter_set in resource_slice.shared_counters
        for counter, amount in counter_set.counters.items()
    }
    state = DeviceState(taken={candidate.key for candidate in held}, counters_left=counter_budget(shared, held))
    return allocate(
        candidates,
        state,
        asks,
        incomplete_drivers=frozenset(driver for driver, _ in census.incomplete_pools),
    )
