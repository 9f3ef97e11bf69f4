"""The pure side of the DRA claim writes: which claim object each pod's claim means, one write
per claim, the DRA objects read into the cycle's snapshot, and claims written kept until the
watch shows them (`controller.dra_claims`, `controller.observe`)."""

from __future__ import annotations

import copy
import logging
import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.caches import ClusterCaches
from controller.dra_claims import AssumedClaims, ClaimIndex, claim_index, claim_writes
from controller.kinds import DRA_KINDS
from controller.kube import ListResult
from controller.loop import wait_for
from controller.observe import ClusterView, observe
from models.dra import DeviceResult
from models.placement import Bind, ClaimAllocation
from models.snapshot import NodeName, PodKey
from tests.controller._controller_builders import node, pod, pod_group, vcjob
from tests.controller._dra_objects import DRIVER, claim_template, device_class, generated_claim, node_slice

NS = "ns"
GPU0 = DeviceResult(request="gpus", driver=DRIVER, pool="n1", device="gpu-0")


def _pod(name: str, *claims: dict, status: list[dict] | None = None, **kwargs) -> dict:
    obj = pod(name, namespace=NS, **kwargs)
    obj["spec"]["resourceClaims"] = list(claims)
    if status is not None:
        obj["status"]["resourceClaimStatuses"] = status
    return obj


def _claim(name: str, *, allocated: bool = False, owner: dict | None = None, entry: str = "gpu") -> dict:
    claim = generated_claim(owner, entry) if owner is not None else generated_claim(pod("x", namespace=NS), entry)
    claim["metadata"]["name"] = name
    if owner is None:
        del claim["metadata"]["ownerReferences"], claim["metadata"]["annotations"]
    claim["metadata"]["resourceVersion"] = "10"
    if allocated:
        claim["status"] = {"allocation": {"devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}}}
    return claim


def _observe(pods: list[dict], claims: list[dict], **extra):
    view = ClusterView(
        pods=tuple(pods),
        nodes=(node("n1", cpu=8),),
        device_classes=(device_class(),),
        resource_slices=(node_slice("n1", gpus=4),),
        resource_claims=tuple(claims),
        resource_claim_templates=(claim_template("one-gpu", NS),),
        **extra,
    )
    return observe(view, scheduler_names=("batchplace",))


def _writes(observation, binds: list[str], allocations: list[ClaimAllocation]):
    return claim_writes(
        [Bind(pod=PodKey(f"{NS}/{name}"), node=NodeName("n1")) for name in binds],
        allocations,
        observation.snapshot,
        pods=observation.pods,
        index=observation.claims,
    )


def _allocation(pod_name: str, *, claim: str | None = None, reserved: tuple[str, ...] | None = None) -> ClaimAllocation:
    key = PodKey(f"{NS}/{pod_name}")
    return ClaimAllocation(
        claim=claim, pod=key, pod_claim="gpu", template=f"{NS}/one-gpu", node=NodeName("n1"), devices=(GPU0,),
        reserved_for=tuple(PodKey(f"{NS}/{name}") for name in reserved) if reserved else (key,),
    )


TEMPLATE_ENTRY = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}


def test_the_dra_objects_and_the_pods_claim_statuses_reach_the_cycle() -> None:
    train = _pod("train-0", TEMPLATE_ENTRY, status=[{"name": "gpu", "resourceClaimName": "train-0-gpu-abc"}])
    observation = _observe([train], [_claim("train-0-gpu-abc")])
    dra = observation.snapshot.dra
    assert [c.name for c in dra.device_classes] == [DRIVER]
    assert len(dra.resource_slices[0].devices) == 4
    assert [c.key for c in dra.resource_claims] == [f"{NS}/train-0-gpu-abc"]
    assert [t.key for t in dra.resource_claim_templates] == [f"{NS}/one-gpu"]
    assert observation.snapshot.pod_by_key[PodKey(f"{NS}/train-0")].resource_claims[0].resource_claim_template_name == "one-gpu"
    assert observation.pods[PodKey(f"{NS}/train-0")].claim_statuses == {"gpu": "train-0-gpu-abc"}


def test_the_dra_objects_survive_a_vcjob_dependency() -> None:
    """A vcjob's dependsOn rebuilds the snapshot's PodGroups: every other part is kept."""
    first = pod("j-a-0", namespace=NS, group="j", task="a", job="j")
    second = pod("j-b-0", namespace=NS, group="j", task="b", job="j")
    for member in (first, second):
        member["metadata"]["annotations"]["volcano.sh/job-name"] = "j"
    observation = _observe(
        [first, second], [], vcjobs=(vcjob("j", namespace=NS, depends={"a": [], "b": ["a"]}),),
        volcano_pod_groups=(pod_group("j", namespace=NS, min_member=2),),
    )
    assert observation.snapshot.pod_groups[0].task_by_name["b"].depends_on == ("a",)
    assert [c.name for c in observation.snapshot.dra.device_classes] == [DRIVER]


def test_a_template_claim_is_found_by_the_pods_status_else_by_its_owner() -> None:
    by_status = _pod("a", TEMPLATE_ENTRY, status=[{"name": "gpu", "resourceClaimName": "a-gpu-made"}])
    by_owner = _pod("b", TEMPLATE_ENTRY)
    lost = _pod("c", TEMPLATE_ENTRY)
    claims = [_claim("a-gpu-made"), _claim("b-gpu-owned", owner=by_owner), _claim("c-other-entry", owner=lost, entry="other")]
    observation = _observe([by_status, by_owner, lost], claims)
    writes = _writes(observation, ["a", "b", "c"], [_allocation("a"), _allocation("b"), _allocation("c")])
    assert [w.claim for w in writes] == [f"{NS}/a-gpu-made", f"{NS}/b-gpu-owned", None]
    assert all(w.devices == (GPU0,) and w.node == "n1" for w in writes)
    assert writes[0].obj is not None and writes[0].obj["metadata"]["name"] == "a-gpu-made"
    assert writes[1].consumers[0].uid == "uid-b" and writes[1].consumers[0].name == "b"


def test_a_claim_the_placement_names_is_written_once_for_every_pod_sharing_it() -> None:
    shared = {"name": "gpu", "resourceClaimName": "shared"}
    other_entry = {"name": "accel", "resourceClaimName": "shared"}
    observation = _observe([_pod("a", shared), _pod("b", other_entry), _pod("c", shared)], [_claim("shared")])
    [write] = _writes(observation, ["a", "b"], [_allocation("a", claim=f"{NS}/shared", reserved=("a", "b", "c"))])
    assert write.claim == f"{NS}/shared" and write.devices == (GPU0,)
    assert [c.pod for c in write.consumers] == [f"{NS}/a", f"{NS}/b"]  # c is not bound this cycle


def test_a_claim_allocated_before_is_only_reserved_for_the_pod_bound_now() -> None:
    observation = _observe([_pod("a", {"name": "gpu", "resourceClaimName": "ready"})], [_claim("ready", allocated=True)])
    [write] = _writes(observation, ["a"], [])
    assert write.claim == f"{NS}/ready" and write.devices is None and [c.pod for c in write.consumers] == [f"{NS}/a"]


def test_pods_without_claims_write_nothing() -> None:
    observation = _observe([pod("plain", namespace=NS)], [])
    assert _writes(observation, ["plain"], []) == ()


def test_the_claims_index_names_generated_claims_by_owner_and_entry_only() -> None:
    owner = pod("p", namespace=NS)
    owned = _claim("p-gpu-1", owner=owner)
    not_controller = copy.deepcopy(owned)
    not_controller["metadata"]["name"] = "p-gpu-2"
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    index = claim_index([owned, not_controller, _claim("plain")])
    assert index == ClaimIndex(
        objects={f"{NS}/p-gpu-1": owned, f"{NS}/p-gpu-2": not_controller, f"{NS}/plain": index.objects[f"{NS}/plain"]},
        generated={(f"{NS}/p", "gpu"): f"{NS}/p-gpu-1"},
    )


def test_a_written_claim_stands_in_for_the_cached_one_until_the_watch_shows_it() -> None:
    assumed = AssumedClaims()
    cached = _claim("c")  # resourceVersion 10
    written = {**cached, "metadata": {**cached["metadata"], "resourceVersion": "12"}, "status": {"reservedFor": []}}
    assumed.wrote(f"{NS}/c", written)
    assert assumed.overlay([cached]) == (written,)
    newer = {**cached, "metadata": {**cached["metadata"], "resourceVersion": "13"}}
    assert assumed.overlay([newer]) == (newer,)
    assert assumed.overlay([cached]) == (cached,)  # forgotten once the watch caught up


class _NoDraServer:
    """A discovery source serving no CRD group (as a server without resource.k8s.io/v1): its
    built-in kinds list empty and their watches end after a moment with nothing."""

    def __init__(self) -> None:
        self.discoveries = 0

    def served(self, kinds):
        self.discoveries += 1
        return set()

    def list(self, kind):
        return ListResult(items=[], resource_version="1")

    def watch(self, kind, *, resource_version, timeout_s=300):
        time.sleep(0.05)
        return iter(())


def test_a_server_without_dra_reads_none_and_says_so_once(caplog) -> None:
    caplog.set_level(logging.INFO, logger="controller.caches")
    server = _NoDraServer()
    caches = ClusterCaches(server, scheduler_names=("batchplace",), rediscover_s=0.01)
    stop = threading.Event()
    caches.start(stop)
    try:
        assert caches.wait_synced(5)
        assert wait_for(lambda: server.discoveries >= 3, 5)  # discovery looked again: still not served
    finally:
        stop.set()
        caches.join()
    said = [r.getMessage() for r in caplog.records if "resource.k8s.io/v1 is not served" in r.getMessage()]
    assert len(said) == 1
    assert not any(caches.informer(kind) for kind in DRA_KINDS)
    view = caches.view()
    assert (view.device_classes, view.resource_slices, view.resource_claims, view.resource_claim_templates) == ((), (), (), ())


_ENTRY = st.one_of(st.sampled_from(["c0", "c1", "c2"]).map(lambda name: ("claim", name)), st.just(("template", "one-gpu")))


@settings(max_examples=60, deadline=None)
@given(
    asks=st.lists(st.lists(_ENTRY, max_size=2), min_size=1, max_size=5),
    bound=st.lists(st.booleans(), min_size=5, max_size=5),
    allocated=st.lists(st.booleans(), min_size=10, max_size=10),
)
def test_every_claim_of_every_bound_pod_is_written_once_with_its_allocation(asks, bound, allocated) -> None:
    """Whatever pods, entries (shared claims, templates) and allocations: each claim a bound
    pod uses is in exactly one write, which lists the pod once; no write names a pod not bound;
    a claim the placement allocates is written with its devices."""
    pods, claims = [], {name: _claim(name) for name in ("c0", "c1", "c2")}
    allocations: list[ClaimAllocation] = []
    users: dict[str, list[str]] = {}
    for index, entries in enumerate(asks):
        name = f"p{index}"
        specs = []
        for number, (how, target) in enumerate(entries):
            entry = f"e{number}"
            if how == "claim":
                specs.append({"name": entry, "resourceClaimName": target})
                users.setdefault(target, []).append(name)
            else:
                specs.append({"name": entry, "resourceClaimTemplateName": target})
            if allocated[index * 2 + number]:
                claim = f"{NS}/{target}" if how == "claim" else None
                allocations.append(ClaimAllocation(
                    claim=claim, pod=PodKey(f"{NS}/{name}"), pod_claim=entry, template=None if claim else f"{NS}/one-gpu",
                    node=NodeName("n1"), devices=(GPU0,), reserved_for=(PodKey(f"{NS}/{name}"),),
                ))
        pod_obj = _pod(name, *specs)
        pods.append(pod_obj)
        for spec in specs:
            if "resourceClaimTemplateName" in spec:
                made = _claim(f"{name}-{spec['name']}", owner=pod_obj, entry=spec["name"])
                claims[made["metadata"]["name"]] = made
    # a claim allocated for one pod is allocated once: later allocations of it are dropped
    seen_claims: set[str] = set()
    allocations = [a for a in allocations if a.claim is None or not (a.claim in seen_claims or seen_claims.add(a.claim))]
    observation = _observe(pods, list(claims.values()))
    binds = [f"p{index}" for index in range(len(asks)) if bound[index]]
    writes = _writes(observation, binds, allocations)

    bound_keys = {f"{NS}/{name}" for name in binds}
    named = [w.claim for w in writes]
    assert None not in named and len(named) == len(set(named))
    for write in writes:
        consumers = [c.pod for c in write.consumers]
        assert len(consumers) == len(set(consumers)) and set(consumers) <= bound_keys
    by_claim = {w.claim: w for w in writes}
    for index, entries in enumerate(asks):
        if not bound[index]:
            continue
        for number, (how, target) in enumerate(entries):
            claim = f"{NS}/{target}" if how == "claim" else f"{NS}/p{index}-e{number}"
            assert f"{NS}/p{index}" in [c.pod for c in by_claim[claim].consumers]
    for allocation in allocations:
        if allocation.pod in bound_keys:
            claim = allocation.claim or f"{NS}/{allocation.pod.partition('/')[2]}-{allocation.pod_claim}"
            assert by_claim[claim].devices == allocation.devices
