"""Conformance at the allocator level: the DRA cases ported from kube-scheduler's structured
allocator and `dynamicresources` plugin tests, asked of one node at a time through
`solver.rules.dra.shortfall_on` (the claims resolved against the snapshot, then
`solver.dra_allocation.allocate` on the devices the node reaches), without the solve.

Why beside `test_conformance.py`: the allocator is where the semantics of a claim live (counts,
All, selectors, matchAttribute, counters, firstAvailable, admin access, taints, pool
generations, where an allocated claim's devices are); a case that goes wrong here names the
allocator, not an engine. A case whose pod is expected on a node must fit there and only on
the nodes the case allows, getting one of the device sets the case allows; a case whose pod
stays pending must fit no node, and the shortfalls must name the claim and the request the
case names. A case of several pending pods (a claim they share) is `test_conformance.py`'s
alone.
"""

from __future__ import annotations

import pytest

from solver.dra_allocation import Shortfall
from solver.rules.dra import PodAllocation, shortfall_on
from tests.conformance.conformance_cases import Case, case_paths, load_case

DRA_CASES = [
    case for case in (load_case(path) for path in case_paths()) if case.snapshot.dra.resource_slices or case.snapshot.dra.resource_claims
]


def _allocator_level(case: Case) -> bool:
    """One pending pod, and it names claims."""
    pending = [pod for pod in case.snapshot.pods if pod.phase == "pending"]
    return len(pending) == 1 and bool(pending[0].resource_claims)


ALLOCATOR_CASES = [case for case in DRA_CASES if _allocator_level(case)]


def test_allocator_level_covers_most_ported_cases() -> None:
    assert len(DRA_CASES) >= 20
    assert len(ALLOCATOR_CASES) == len(DRA_CASES) - 1  # all but the claim two pods share


@pytest.mark.parametrize("case", ALLOCATOR_CASES, ids=[case.name for case in ALLOCATOR_CASES])
def test_allocator_answer_matches_origin(case: Case) -> None:
    snapshot = case.snapshot
    pod = next(pod for pod in snapshot.pods if pod.phase == "pending")
    answers = {node.name: shortfall_on(snapshot, pod, node.name) for node in snapshot.nodes}
    expected_nodes = case.expected.binds.get(pod.key)
    if expected_nodes is None:
        for node, answer in answers.items():
            assert isinstance(answer, Shortfall), f"{node}: allocated {answer}"
        words = [word for want in case.expected.podgroups.values() for word in want.get("says", ())]
        said = " ".join(f"claim {a.claim} request {a.request}: {a.why}" for a in answers.values())
        for word in words:
            assert word in said, f"{word!r} not in {said!r}"
        return
    fitting = {node for node, answer in answers.items() if isinstance(answer, PodAllocation)}
    assert fitting and fitting <= set(expected_nodes), f"fits on {sorted(fitting)}, expected {expected_nodes}"
    for node in fitting:
        for claim, devices in answers[node].made:  # type: ignore[union-attr]  # fitting: PodAllocation
            want = case.expected.claims.get(claim.ident)
            if want is None or not want.answers:
                continue
            got = frozenset(
                f"{request} {'/'.join(candidate.key)}" + (" admin" if admin else "") for candidate, request, admin in devices
            )
            assert got in want.answers, f"{node}: {sorted(got)} not one of {[sorted(a) for a in want.answers]}"
