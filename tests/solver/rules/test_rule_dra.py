"""Rule `dra`: every engine allocates each bound pod's DRA claims, and the checker judges
the allocation from the API objects (counts, selectors, counters, matchAttribute, shared
claims, firstAvailable, quota by device class, reasons)."""

from __future__ import annotations

import pytest

from models.dra import DeviceResult
from models.placement import ClaimAllocation, Placement
from solver.checker import check_placement
from solver.place import SolveConfig, place
from tests.builders import make_bind
from tests.models._dra_yaml import MIG_SLICE
from tests.solver._dra_cluster import (
    DOMAIN,
    allocated_claim,
    cluster,
    first_available_template,
    group,
    node,
    pod,
    queue,
    shared_claim,
    template,
)

ENGINES = ("greedy", "cpsat", "auto")


def solve(snapshot, engine: str):
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=2))
    assert check_placement(snapshot, decision.placement) == ()
    return decision


def devices_of(decision, pod_key: str) -> list[str]:
    (claim,) = [c for c in decision.placement.claims if pod_key in c.reserved_for]
    return [result.device for result in claim.devices]


def domains(names: list[str]) -> set[int]:
    return {int(name.split("-")[1]) // 4 for name in names}


@pytest.mark.parametrize("engine", ENGINES)
def test_each_pod_gets_its_count_of_devices_and_no_device_twice(engine: str) -> None:
    snapshot = cluster(template("t3", 3), group("a", 4), *(pod(f"a-{i}", "a", template_name="t3") for i in range(4)), nodes=2)
    decision = solve(snapshot, engine)
    assert len(decision.placement.binds) == 4  # 12 of the 16 GPUs
    taken = [(c.node, d.device) for c in decision.placement.claims for d in c.devices]
    assert len(taken) == 12 and len(set(taken)) == 12
    for claim in decision.placement.claims:
        (bind,) = [b for b in decision.placement.binds if b.pod == claim.pod]
        assert claim.node == bind.node and claim.reserved_for == (claim.pod,) and claim.template == "t3"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_whose_devices_do_not_all_fit_does_not_start(engine: str) -> None:
    snapshot = cluster(template("t8", 8), group("big", 3), *(pod(f"b-{i}", "big", template_name="t8") for i in range(3)), nodes=2)
    decision = solve(snapshot, engine)
    assert decision.placement.binds == () and decision.placement.claims == ()
    (outcome,) = decision.podgroups
    assert outcome.state == "pending" and any("gpu.nvidia.com" in str(reason) for reason in outcome.reasons)


@pytest.mark.parametrize("engine", ENGINES)
def test_match_attribute_keeps_a_claim_on_one_nvlink_domain_and_domains_whole(engine: str) -> None:
    # n1's gpu-0 is held: domain 0 has 3 free. Two 2-GPU pods take domain 0's three? No: one
    # pod of 2 goes to domain 0 (fullest first), the 4-GPU pod to domain 1.
    snapshot = cluster(
        template("t4", 4, domain=True),
        template("t2", 2, domain=True),
        allocated_claim("r-gpus", "n1", [0], owner="r"),
        group("run", 1),
        pod("r", "run", template_name="t4", node_name="n1"),
        group("a", 1),
        group("b", 1),
        pod("a-0", "a", template_name="t4"),
        pod("a-1", "b", template_name="t2"),
        nodes=1,
    )
    decision = solve(snapshot, engine)
    assert len(decision.placement.binds) == 2
    assert domains(devices_of(decision, "default/a-0")) == {1}
    assert domains(devices_of(decision, "default/a-1")) == {0}


@pytest.mark.parametrize("engine", ENGINES)
def test_no_node_with_a_whole_domain_free_says_which_claim_request_and_why(engine: str) -> None:
    snapshot = cluster(template("t5", 5, domain=True), group("big", 1), pod("b-0", "big", template_name="t5"), nodes=2)
    decision = solve(snapshot, engine)
    assert decision.placement.binds == ()
    reasons = [str(reason) for reason in decision.podgroups[0].reasons]
    assert f"dra: claim b-0-gpus request gpus: 0/2 nodes: 2 no 5 free devices share {DOMAIN}" in reasons


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pod_whose_template_is_missing_waits_and_says_so(engine: str) -> None:
    snapshot = cluster(group("a", 1), pod("a-0", "a", template_name="nowhere"), nodes=1)
    decision = solve(snapshot, engine)
    assert decision.placement.binds == ()
    assert any("ResourceClaimTemplate not found" in str(reason) for reason in decision.podgroups[0].reasons)


@pytest.mark.parametrize("engine", ENGINES)
def test_partitionable_devices_never_overdraw_their_counters(engine: str) -> None:
    # n2's GPU 0 is partitioned: 1g.10gb (10Gi, 16 SMs) and 7g.80gb (tainted) draw on 80Gi/132 SMs.
    mig = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: mig, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: slice
        exactly: {deviceClassName: mig.nvidia.com}
"""
    snapshot = cluster(mig, node("n2"), MIG_SLICE, group("inf", 1), *(pod(f"i-{i}", "inf", template_name="mig") for i in range(2)), nodes=0)
    snapshot = snapshot.model_copy()
    decision = solve(snapshot, engine)
    # One 1g.10gb slice exists (the 7g is tainted): one pod runs on it, the other waits.
    assert [b.pod for b in decision.placement.binds] == ["default/i-0"] or len(decision.placement.binds) == 1
    assert devices_of(decision, decision.placement.binds[0].pod) == ["gpu-0-mig-1g.10gb-0"]


@pytest.mark.parametrize("engine", ENGINES)
def test_first_available_takes_the_first_alternative_that_fits(engine: str) -> None:
    prefer_8 = first_available_template("flex", [("eight", "gpu.nvidia.com", 8), ("two", "gpu.nvidia.com", 2)])
    snapshot = cluster(
        prefer_8,
        allocated_claim("r-gpus", "n1", [0], owner="r"),
        group("run", 1),
        pod("r", "run", template_name="flex", node_name="n1"),
        group("f", 1),
        pod("f-0", "f", template_name="flex"),
        nodes=1,
    )
    decision = solve(snapshot, engine)
    (claim,) = decision.placement.claims
    assert {d.request for d in claim.devices} == {"gpus/two"} and len(claim.devices) == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_a_shared_claim_is_allocated_once_and_its_pods_go_where_its_devices_are(engine: str) -> None:
    snapshot = cluster(
        shared_claim("team-gpus", 2),
        group("s", 2),
        pod("s-0", "s", claim="team-gpus"),
        pod("s-1", "s", claim="team-gpus"),
        nodes=2,
    )
    decision = solve(snapshot, engine)
    (claim,) = decision.placement.claims
    assert claim.claim == "default/team-gpus" and claim.reserved_for == ("default/s-0", "default/s-1")
    assert {b.node for b in decision.placement.binds} == {claim.node} and len(decision.placement.binds) == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pod_with_an_allocated_claim_goes_to_its_devices_node(engine: str) -> None:
    snapshot = cluster(allocated_claim("pinned", "n2", [3, 4]), group("p", 1), pod("p-0", "p", claim="pinned"), nodes=2)
    decision = solve(snapshot, engine)
    (bind,) = decision.placement.binds
    assert bind.node == "n2" and decision.placement.claims == ()  # nothing new to allocate


@pytest.mark.parametrize("engine", ENGINES)
def test_queue_capability_on_a_device_class_caps_its_devices(engine: str) -> None:
    snapshot = cluster(
        queue("q", "gpu.nvidia.com: 6"),
        template("t4", 4),
        group("a", 1, queue_name="q"),
        group("b", 1, queue_name="q"),
        pod("a-0", "a", template_name="t4"),
        pod("b-0", "b", template_name="t4"),
        nodes=2,
    )
    decision = solve(snapshot, engine)
    assert len(decision.placement.binds) == 1  # 8 GPUs would cross the queue's 6
    waiting = [o for o in decision.podgroups if o.state == "pending"]
    assert any("quota: queue q capability 6 gpu.nvidia.com" in str(r) for o in waiting for r in o.reasons)


# ---- the checker, on its own ----


def _one_pod(count: int = 2, *, domain: bool = False):
    return cluster(template("t", count, domain=domain), group("a", 1), pod("a-0", "a", template_name="t"), nodes=2)


def _allocation(devices: list[str], *, node_name: str = "n1", pool: str = "n1", request: str = "gpus", reserved=("default/a-0",)):
    return ClaimAllocation(
        claim=None,
        pod="default/a-0",
        pod_claim="gpus",
        template="t",
        node=node_name,
        devices=tuple(DeviceResult(request=request, driver="gpu.nvidia.com", pool=pool, device=d) for d in devices),
        reserved_for=reserved,
    )


def _judge(snapshot, claims, node_name: str = "n1") -> list[str]:
    pending = snapshot.pod_by_key["default/a-0"]
    placement = Placement(binds=(make_bind(pending, node_name),), claims=tuple(claims))
    return [v.message for v in check_placement(snapshot, placement) if v.rule == "dra"]


def test_the_checker_accepts_a_valid_allocation() -> None:
    assert _judge(_one_pod(), [_allocation(["gpu-0", "gpu-1"])]) == []


@pytest.mark.parametrize(
    ("claims", "words"),
    [
        ([], "is not allocated"),
        ([_allocation(["gpu-0"])], "1 devices, asked 2"),
        ([_allocation(["gpu-0", "gpu-9"])], "does not count"),
        ([_allocation(["gpu-0", "gpu-1"], pool="n2")], "not reachable"),
        ([_allocation(["gpu-0", "gpu-1"], reserved=())], "not reserved for it"),
        ([_allocation(["gpu-0", "gpu-1"], request="cpus")], "no request cpus"),
    ],
)
def test_the_checker_rejects_each_broken_part(claims, words: str) -> None:
    messages = _judge(_one_pod(), claims)
    assert any(words in message for message in messages), messages


def test_the_checker_rejects_devices_on_two_nvlink_domains() -> None:
    messages = _judge(_one_pod(domain=True), [_allocation(["gpu-3", "gpu-4"])])
    assert any(f"differ in {DOMAIN}" in message for message in messages), messages
    assert _judge(_one_pod(domain=True), [_allocation(["gpu-4", "gpu-5"])]) == []


def test_the_checker_rejects_a_device_another_claim_holds() -> None:
    snapshot = cluster(
        template("t", 2),
        allocated_claim("r-gpus", "n1", [0], owner="r"),
        group("run", 1),
        pod("r", "run", template_name="t", node_name="n1"),
        group("a", 1),
        pod("a-0", "a", template_name="t"),
        nodes=1,
    )
    messages = _judge(snapshot, [_allocation(["gpu-0", "gpu-1"])])
    assert any("held by claim default/r-gpus" in message for message in messages), messages


def _three_pairs_on_two_domains_of_three():
    """n1 holds gpu-0 and gpu-4: 3 + 3 free, 6 by count; three 2-GPU pods on one domain each
    need a domain with 2 free — only two fit."""
    return cluster(
        template("t2", 2, domain=True),
        template("t1", 1),
        allocated_claim("r-gpus", "n1", [0, 4], owner="r"),
        group("run", 1),
        pod("r", "run", template_name="t1", node_name="n1"),
        *(group(f"g{i}", 1) for i in range(3)),
        *(pod(f"g{i}-0", f"g{i}", template_name="t2") for i in range(3)),
        nodes=1,
    )


def test_cpsat_packs_by_what_the_allocator_allows_not_by_the_count() -> None:
    snapshot = _three_pairs_on_two_domains_of_three()
    decision = solve(snapshot, "cpsat")
    assert decision.status == "OPTIMAL" and len(decision.placement.binds) == 2
    assert sorted(domains(devices_of(decision, b.pod)).pop() for b in decision.placement.binds) == [0, 1]


def test_allocating_a_placement_leaves_out_the_binds_whose_claims_find_no_devices() -> None:
    from solver.rules.dra import allocate_placement

    snapshot = _three_pairs_on_two_domains_of_three()
    binds = tuple(make_bind(snapshot.pod_by_key[f"default/g{i}-0"], "n1") for i in range(3))
    placement, dropped = allocate_placement(snapshot, Placement(binds=binds))
    assert len(placement.binds) == 2 and list(dropped) == ["default/g2-0"]
    assert dropped["default/g2-0"].why == f"no 2 free devices share {DOMAIN}"  # 1 + 1 left
    assert check_placement(snapshot, placement) == ()


def test_each_queue_share_lists_the_devices_of_each_class_its_pods_hold() -> None:
    snapshot = cluster(
        queue("q", "gpu.nvidia.com: 6"),
        template("t4", 4),
        allocated_claim("r-gpus", "n1", [0, 1], owner="r"),
        group("run", 1, queue_name="q"),
        pod("r", "run", template_name="t4", node_name="n1"),
        group("a", 1, queue_name="q"),
        pod("a-0", "a", template_name="t4"),
        nodes=2,
    )
    decision = solve(snapshot, "greedy")
    share = {queue.name: queue for queue in decision.queues}["q"]
    assert share.allocated["gpu.nvidia.com"] == 6  # the running claim's 2 and the bound pod's 4
    assert set(share.deserved) >= {"cpu", "memory", "gpu", "gpu.nvidia.com"}
