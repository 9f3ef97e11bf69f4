"""Conformance: cases ported from Volcano's scheduler tests and kube-scheduler's filter
plugins, gang scheduling and DRA allocator, each solved by greedy, CP-SAT and `auto`, each
answer judged by the checker (a DRA case's claims too: exactly the claims it names, on an
allowed device set; a nested-gang case's sub-groups: how many started per policy, how many
pods each holds).

The cases live in `cases/` as YAML (see `conformance_cases.py` for the format), one file
per original test case, named after its origin. A case where batchplace deliberately
differs from Volcano asserts batchplace's semantics and names its entry in
`docs/volcano-differences.md`. A case an engine fails today carries the finding in its
`xfail` (strict: when the fix lands, the marker must come off).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from models.placement import ClaimAllocation
from solver.checker import check_placement
from solver.place import EngineName, SolveConfig, place
from solver.rules.gang import started_sub_groups
from tests.conformance.conformance_cases import ENGINES, Case, case_paths, load_case

DIFFERENCES_DOC = Path(__file__).resolve().parents[2] / "docs" / "volcano-differences.md"
TIME_LIMIT_S = 10.0


CASES = [load_case(path) for path in case_paths()]


def _params() -> list[object]:
    """One run per (case, engine); a case's `xfail` marks that engine's run, strictly."""
    params = []
    for case in CASES:
        for engine in ENGINES:
            marks = [pytest.mark.xfail(strict=True, reason=case.xfail[engine])] if engine in case.xfail else []
            params.append(pytest.param(case, engine, id=f"{case.name}[{engine}]", marks=marks))
    return params


@pytest.mark.parametrize(("case", "engine"), _params())
def test_case_outcome_matches_origin(case: Case, engine: EngineName) -> None:
    decision = place(case.snapshot, SolveConfig(engine=engine, time_limit_s=TIME_LIMIT_S))
    assert check_placement(case.snapshot, decision.placement) == ()
    expected = case.expected
    bound = {bind.pod: bind.node for bind in decision.placement.binds}
    evicted = Counter(eviction.pod for eviction in decision.placement.evictions)

    for pod, nodes in expected.binds.items():
        assert bound.get(pod) in nodes, f"{pod}: expected on {' or '.join(nodes)}, got {bound.get(pod)}; binds {bound}"
    assert len(bound) == expected.bind_count, f"binds {bound}"
    if expected.within_one_of:
        nodes = set(bound.values())
        assert any(nodes <= domain for domain in expected.within_one_of), f"binds {bound} span domains"
    for pods in expected.same_node:
        assert len({bound.get(pod) for pod in pods}) == 1, f"{sorted(pods)} not on one node: {bound}"
    if case.snapshot.dra.resource_slices or case.snapshot.dra.resource_claims:
        _assert_claims(case, decision.placement.claims)

    assert all(count == 1 for count in evicted.values()), f"a pod evicted twice: {evicted}"
    assert set(evicted) == expected.evictions, f"evictions {sorted(evicted)}"

    outcomes = {outcome.name: outcome for outcome in decision.podgroups}
    for key, want in expected.podgroups.items():
        got = outcomes[key]
        if "state" in want:
            assert got.state == want["state"], f"{key}: {got}"
        if "placed" in want:
            assert got.placed == want["placed"], f"{key}: {got}"
        if "reason" in want:
            assert any(reason.rule == want["reason"] for reason in got.reasons), f"{key}: {got.reasons}"
        for word in want.get("says", ()):
            said = [reason for reason in got.reasons if reason.rule == want.get("reason", reason.rule)]
            assert any(word in reason for reason in said), f"{key}: {word!r} in none of {said}"

    for key, want in expected.sub_groups_placed.items():
        placed = _placed_per_sub_group(case, key, bound, set(evicted))
        assert {name: placed.get(name, 0) for name in want} == want, f"{key}: sub-groups hold {placed}; binds {bound}"
    for key, want in expected.sub_groups_started.items():
        group = case.snapshot.pod_group_by_key[key]
        started = started_sub_groups(group, _placed_per_sub_group(case, key, bound, set(evicted)))
        assert {policy: started.get(policy, 0) for policy in want} == want, f"{key}: started {started}; binds {bound}"

    shares = {share.name: share for share in decision.queues}
    for queue, want in expected.queues.items():
        for resource, amount in want.get("deserved", {}).items():
            assert shares[queue].deserved.get(resource, 0) == amount, f"{queue}: {shares[queue]}"
        for resource, amount in want.get("allocated", {}).items():
            assert shares[queue].allocated.get(resource, 0) == amount, f"{queue}: {shares[queue]}"


def _placed_per_sub_group(case: Case, key: str, bound: dict[str, str], evicted: set[str]) -> dict[str, int]:
    """Sub-group → its pods that end the cycle on a node: running and not evicted, or bound."""
    placed: Counter[str] = Counter()
    for pod in case.snapshot.pods_by_group.get(key, ()):  # type: ignore[call-overload]
        on_node = pod.key in bound if pod.phase == "pending" else pod.key not in evicted
        if pod.sub_group is not None and on_node:
            placed[pod.sub_group] += 1
    return dict(placed)


def _assert_claims(case: Case, allocations: tuple[ClaimAllocation, ...]) -> None:
    """Exactly the claims the case names are allocated this cycle, each on its node with one of
    the device sets the case allows, reserved for the pods it names."""
    got = {allocation.claim or f"{allocation.pod}#{allocation.pod_claim}": allocation for allocation in allocations}
    assert set(got) == set(case.expected.claims), f"allocated {sorted(got)}, expected {sorted(case.expected.claims)}"
    for key, want in case.expected.claims.items():
        allocation = got[key]
        if want.node is not None:
            assert allocation.node == want.node, f"{key}: on {allocation.node}, expected {want.node}"
        devices = frozenset(
            f"{d.request} {d.driver}/{d.pool}/{d.device}" + (" admin" if d.admin_access else "") for d in allocation.devices
        )
        assert not want.answers or devices in want.answers, f"{key}: {sorted(devices)} not one of {want.answers}"
        if want.reserved_for is not None:
            assert set(allocation.reserved_for) == want.reserved_for, f"{key}: reserved for {allocation.reserved_for}"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_is_named_after_its_origin(case: Case) -> None:
    """The file sits under the origin's repository and test file, so a reader finds it."""
    owner = "volcano" if case.origin.repository == "volcano-sh/volcano" else "kubernetes"
    origin_dir = Path(case.origin.file).stem
    assert case.name.split("/")[:2] == [owner, origin_dir], case.name
    slug = re.sub(r"[^a-z0-9]+", "-", case.origin.case.lower()).strip("-")
    stem = case.path.stem.split("--")[0]  # "--" starts a variant's own suffix
    assert stem == slug[: len(stem)] and len(stem) >= min(len(slug), 30), f"{case.path.stem} is not the case name {slug!r}"


def test_every_difference_is_documented_with_its_cases() -> None:
    text = DIFFERENCES_DOC.read_text(encoding="utf-8")
    entries = dict(re.findall(r"^## ([a-z0-9-]+)\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M))
    used = {case.difference for case in CASES if case.difference}
    assert used <= set(entries), f"undocumented differences: {sorted(used - set(entries))}"
    for case in CASES:
        if case.difference:
            assert f"`{case.name}`" in entries[case.difference], f"{case.difference} does not name {case.name}"


def test_suite_ports_enough_cases() -> None:
    assert len(CASES) >= 40
