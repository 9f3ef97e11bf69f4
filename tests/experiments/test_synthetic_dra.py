"""The DRA bench family's snapshots hold what `experiments.synthetic_dra` promises: 8 DRA GPUs
per node on two NVLink domains, running claims holding the preload's share of them (each
device held once, a 4-GPU claim on one domain), pending pods naming claim templates that
exist, the nvlink templates constraining the domain, the same snapshot for the same seed; and
`whole_domains_free` counts what a placement leaves whole."""

from __future__ import annotations

from collections import Counter

import pytest

from experiments.synthetic_dra import (
    DOMAIN_DEVICES,
    NVLINK_ATTRIBUTE,
    devices_taken_fraction,
    dra_snapshot,
    whole_domains_free,
)
from models.dra import DeviceResult
from models.placement import ClaimAllocation, Placement


@pytest.fixture(scope="module")
def snapshot():
    return dra_snapshot(nodes=40, pending_pods=60, preload=0.5, seed=3)


def test_every_node_has_one_slice_of_eight_gpus_on_two_nvlink_domains(snapshot) -> None:
    slices = {s.node_name: s for s in snapshot.dra.resource_slices}
    assert set(slices) == {node.name for node in snapshot.nodes}
    for resource_slice in slices.values():
        domains = Counter(device.attributes[NVLINK_ATTRIBUTE] for device in resource_slice.devices)
        assert domains == {0: DOMAIN_DEVICES, 1: DOMAIN_DEVICES}
        assert resource_slice.pool.name == resource_slice.node_name


def test_running_claims_hold_the_preload_each_device_once(snapshot) -> None:
    held = [(r.pool, r.device) for claim in snapshot.dra.resource_claims for r in claim.allocation or ()]
    assert len(held) == len(set(held))
    assert devices_taken_fraction(snapshot) == pytest.approx(0.5, abs=0.01)
    running = {pod.name: pod for pod in snapshot.pods if pod.phase == "running"}
    for claim in snapshot.dra.resource_claims:
        pod = running[claim.reserved_for[0]]
        assert {r.pool for r in claim.allocation or ()} == {pod.node}
        if len(claim.allocation or ()) == DOMAIN_DEVICES:
            assert len({int(r.device.removeprefix("gpu-")) // DOMAIN_DEVICES for r in claim.allocation or ()}) == 1


def test_pending_pods_name_templates_that_exist(snapshot) -> None:
    templates = {t.key: t for t in snapshot.dra.resource_claim_templates}
    pending = [pod for pod in snapshot.pods if pod.phase == "pending"]
    assert len(pending) == 60
    for pod in pending:
        (entry,) = pod.resource_claims
        template = templates[f"{pod.namespace}/{entry.resource_claim_template_name}"]
        constrained = [c.match_attribute for c in template.constraints]
        assert constrained == ([NVLINK_ATTRIBUTE] if template.name.endswith("-nvlink") else [])


def test_dra_nvlink_pods_all_ask_one_domain() -> None:
    snapshot = dra_snapshot(nodes=10, pending_pods=30, preload=0.3, seed=1, nvlink_only=True)
    names = {pod.resource_claims[0].resource_claim_template_name for pod in snapshot.pods if pod.phase == "pending"}
    assert names and all(name.endswith("-nvlink") for name in names)


def test_same_seed_same_snapshot_other_seed_other() -> None:
    one = dra_snapshot(nodes=12, pending_pods=20, preload=0.4, seed=5)
    assert one == dra_snapshot(nodes=12, pending_pods=20, preload=0.4, seed=5)
    assert one != dra_snapshot(nodes=12, pending_pods=20, preload=0.4, seed=6)


def test_whole_domains_free_counts_domains_no_claim_touches() -> None:
    empty = dra_snapshot(nodes=3, pending_pods=0, preload=0.0, seed=0)
    assert whole_domains_free(empty) == 6

    def taking(*devices: str) -> Placement:
        results = tuple(DeviceResult(request="gpus", driver="gpu.nvidia.com", pool="dra-00000", device=d) for d in devices)
        allocation = ClaimAllocation(claim=None, pod="q/p", pod_claim="gpus", node="dra-00000", devices=results, reserved_for=("q/p",))
        return Placement(claims=(allocation,))

    assert whole_domains_free(empty, taking("gpu-0")) == 5
    assert whole_domains_free(empty, taking("gpu-0", "gpu-3")) == 5
    assert whole_domains_free(empty, taking("gpu-3", "gpu-4")) == 4
