"""DRA claims written as kube-scheduler writes them, against a real API server.

The API server here (v1.20) does not serve resource.k8s.io/v1: the DRA kinds are served as
CRDs (deploy/dra-crds/), and the controller talks to them with the client code it uses on a
1.34+ server. v1.20 also drops a pod's `spec.resourceClaims`, so these tests give the cycle
its placement's claims themselves (`Placement.claims`, what the solver fills) and check what
observe → plan → act writes: the claim's allocation and reservation before the bind, and no
bind when the claim cannot be written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controller.act import Actuator
from controller.assumed import AssumedPods
from controller.kinds import DEVICE_CLASSES, NODES, PODS, RESOURCE_CLAIM_TEMPLATES, RESOURCE_CLAIMS, RESOURCE_SLICES
from controller.kube import KubeClient
from controller.loop import decide
from controller.metrics import ControllerMetrics
from controller.observe import observe
from controller.plan import plan
from controller.testing.claim_controller import make_claims
from controller.testing.control_plane import ControlPlane
from controller.testing.seed import create_all, seed_objects
from models.dra import DeviceResult, counted_devices
from models.placement import ClaimAllocation, Decision
from models.snapshot import NodeName, PodKey
from solver.place import SolveConfig
from tests.controller.conftest import StartController
from tests.controller.fault_proxy import FaultProxy, Faults
from tests.controller._cluster_queries import wait_until
from tests.controller._controller_builders import for_api, node
from tests.controller._dra_cycle import act_once, as_served_by_1_34, cached_view
from tests.controller._dra_objects import DRIVER, claim_pod, claim_template, device_class, generated_claim, node_slice

NODE = "dra-n1"


@pytest.fixture
def dra_cluster(control_plane: ControlPlane, admin: KubeClient, namespace: str) -> str:
    """One node with 4 GPUs of one driver, its class, and a one-GPU claim template."""
    admin.create(NODES, None, for_api(node(NODE, cpu=8)))
    admin.create(DEVICE_CLASSES, None, device_class())
    admin.create(RESOURCE_SLICES, None, node_slice(NODE, gpus=4))
    admin.create(RESOURCE_CLAIM_TEMPLATES, namespace, claim_template("one-gpu", namespace))
    return namespace


def _pod_with_claim(admin: KubeClient, namespace: str, name: str, *, group: str | None = None) -> tuple[dict, dict]:
    """A pod asking a claim from the template, and the claim made for it as Kubernetes makes it."""
    body = claim_pod(name, namespace, template="one-gpu", group=group)
    pod = admin.create(PODS, namespace, body)
    made = make_claims(admin, [{**body, "metadata": pod["metadata"]}])
    return pod, admin.get(RESOURCE_CLAIMS, namespace, made[(f"{namespace}/{name}", "gpu")])


def _gpu(index: int) -> DeviceResult:
    return DeviceResult(request="gpus", driver=DRIVER, pool=NODE, device=f"gpu-{index}")


def _cycle(
    client: KubeClient, namespace: str, devices: dict[str, int], metrics: ControllerMetrics | None = None,
    *, acting: KubeClient | None = None,
):
    """observe the live caches, solve (greedy), add the claims a DRA solve gives each pod
    (`devices`: pod name → GPU index), plan; (observation, plan, the actuator, which writes
    through `acting` when given)."""
    metrics = metrics or ControllerMetrics()
    observation = observe(cached_view(client), scheduler_names=("batchplace",))
    decision = decide(observation.snapshot, SolveConfig(engine="greedy"))
    claims = tuple(
        ClaimAllocation(
            claim=None, pod=PodKey(f"{namespace}/{name}"), pod_claim="gpu", template=f"{namespace}/one-gpu",
            node=NodeName(NODE), devices=(_gpu(index),), reserved_for=(PodKey(f"{namespace}/{name}"),),
        )
        for name, index in devices.items()
    )
    assert {bind.pod for bind in decision.placement.binds} == {claim.pod for claim in claims}
    placed = Decision.model_validate(
        {**decision.model_dump(by_alias=True), "placement": decision.placement.model_copy(update={"claims": claims})}
    )
    actuator = Actuator(acting or client, assumed=AssumedPods(), metrics=metrics)
    return observation, plan(observation, placed), actuator


def test_a_template_claim_is_allocated_and_reserved_before_its_pod_is_bound(
    dra_cluster: str, admin: KubeClient, controller_client: KubeClient
) -> None:
    namespace = dra_cluster
    pod, claim = _pod_with_claim(admin, namespace, "train-0")
    _, the_plan, actuator = _cycle(controller_client, namespace, {"train-0": 2})
    report = act_once(actuator, the_plan)

    assert report.bound == [f"{namespace}/train-0"], report.bind_failures
    written = admin.get(RESOURCE_CLAIMS, namespace, claim["metadata"]["name"])
    allocation = written["status"]["allocation"]
    assert allocation["devices"]["results"] == [{"request": "gpus", "driver": DRIVER, "pool": NODE, "device": "gpu-2"}]
    term = allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
    assert term == {"key": "metadata.name", "operator": "In", "values": [NODE]}
    assert written["status"]["reservedFor"] == [{"resource": "pods", "name": "train-0", "uid": pod["metadata"]["uid"]}]
    bound = admin.get(PODS, namespace, "train-0")
    assert bound["spec"]["nodeName"] == term["values"][0]
    # Written before the bind: etcd's revisions order the two writes (resourceVersions are
    # opaque to clients by contract; this API server's are etcd revisions).
    assert int(written["metadata"]["resourceVersion"]) < int(bound["metadata"]["resourceVersion"])


def test_a_claim_changed_since_the_cycle_read_it_leaves_the_pod_unbound(
    dra_cluster: str, admin: KubeClient, controller_client: KubeClient
) -> None:
    namespace = dra_cluster
    _, claim = _pod_with_claim(admin, namespace, "train-0")
    metrics = ControllerMetrics()
    _, the_plan, actuator = _cycle(controller_client, namespace, {"train-0": 0}, metrics)
    name = claim["metadata"]["name"]
    admin.patch(RESOURCE_CLAIMS, namespace, name, {"metadata": {"labels": {"touched": "yes"}}})  # someone else's write
    report = act_once(actuator, the_plan)

    assert report.bound == []
    assert [pod for pod, _ in report.bind_failures] == [f"{namespace}/train-0"]
    assert "conflict" in report.bind_failures[0][1] and name in report.bind_failures[0][1]
    assert not admin.get(PODS, namespace, "train-0")["spec"].get("nodeName")
    assert "allocation" not in (admin.get(RESOURCE_CLAIMS, namespace, name).get("status") or {})
    assert metrics.registry.get_sample_value("batchplace_claim_writes_total", {"result": "refused"}) == 1
    assert metrics.registry.get_sample_value("batchplace_bind_failures_total", {"reason": "claim"}) == 1


def test_a_deleted_claim_leaves_the_pod_unbound(dra_cluster: str, admin: KubeClient, controller_client: KubeClient) -> None:
    namespace = dra_cluster
    _, claim = _pod_with_claim(admin, namespace, "train-0")
    _, the_plan, actuator = _cycle(controller_client, namespace, {"train-0": 0})
    admin.delete(RESOURCE_CLAIMS, namespace, claim["metadata"]["name"])
    report = act_once(actuator, the_plan)

    # The API server answers an update with a resourceVersion of an object gone with a
    # conflict (a precondition failed), as it does on 1.34: either way, no bind.
    assert report.bound == [] and claim["metadata"]["name"] in report.bind_failures[0][1]
    assert not admin.get(PODS, namespace, "train-0")["spec"].get("nodeName")


def test_a_pod_whose_bind_fails_after_its_claim_was_written_leaves_the_claim_as_it_was(
    dra_cluster: str, admin: KubeClient, controller_client: KubeClient
) -> None:
    """kube-scheduler's Unreserve: no claim stays allocated and reserved for a pod not bound."""
    namespace = dra_cluster
    _, claim = _pod_with_claim(admin, namespace, "train-0")
    _, the_plan, actuator = _cycle(controller_client, namespace, {"train-0": 1})
    admin.delete(PODS, namespace, "train-0", grace_period_s=0)  # the claim stays: no garbage collector here
    report = act_once(actuator, the_plan)

    assert report.bound == [] and report.bind_failures == [(f"{namespace}/train-0", "the pod is gone")]
    status = admin.get(RESOURCE_CLAIMS, namespace, claim["metadata"]["name"]).get("status") or {}
    assert not status.get("allocation") and not status.get("reservedFor"), status


def test_a_pod_whose_bind_may_have_landed_keeps_its_claim(
    dra_cluster: str, admin: KubeClient, controller_client: KubeClient, control_plane: ControlPlane,
    fault_proxy: FaultProxy, tmp_path: Path,
) -> None:
    """The bind's answer is lost and so is the re-read: the pod is held as possibly bound,
    and its claim stays allocated and reserved — a bound pod without them would never start."""
    namespace = dra_cluster
    pod, claim = _pod_with_claim(admin, namespace, "train-0")
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "proxied", token=control_plane.controller_token, server=fault_proxy.url)
    proxied = KubeClient.from_kubeconfig(kubeconfig)
    fault_proxy.faults = Faults(
        lose_rate=1.0, match=lambda method, path: path.endswith("/pods/train-0/binding") or path.endswith("/pods/train-0")
    )
    try:
        _, the_plan, actuator = _cycle(controller_client, namespace, {"train-0": 1}, acting=proxied)
        report = act_once(actuator, the_plan)
    finally:
        proxied.close()

    assert report.bound == [] and "re-reading the pod failed" in report.bind_failures[0][1]
    assert admin.get(PODS, namespace, "train-0")["spec"]["nodeName"] == NODE  # it had landed
    status = admin.get(RESOURCE_CLAIMS, namespace, claim["metadata"]["name"])["status"]
    assert status["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
    assert status["reservedFor"] == [{"resource": "pods", "name": "train-0", "uid": pod["metadata"]["uid"]}]


def test_a_gang_with_one_claim_not_written_binds_nothing_and_puts_back_the_claims_written(
    dra_cluster: str, admin: KubeClient, controller_client: KubeClient, custom
) -> None:
    namespace = dra_cluster
    custom.create_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups",
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "train"},
         "spec": {"minMember": 2, "queue": "default"}},
    )
    _, first = _pod_with_claim(admin, namespace, "train-0", group="train")
    _, second = _pod_with_claim(admin, namespace, "train-1", group="train")
    _, the_plan, actuator = _cycle(controller_client, namespace, {"train-0": 0, "train-1": 1})
    [gang] = [gang for gang in the_plan.gangs if gang.binds]
    assert [write.claim for write in gang.claims] == [
        f"{namespace}/{first['metadata']['name']}", f"{namespace}/{second['metadata']['name']}"
    ]
    admin.patch(RESOURCE_CLAIMS, namespace, second["metadata"]["name"], {"metadata": {"labels": {"touched": "yes"}}})
    report = act_once(actuator, the_plan)

    assert report.bound == [] and len(report.bind_failures) == 2
    assert bound_nodes(admin, namespace) == {}
    for claim in (first, second):  # the first was written, then put back: nothing half done
        status = admin.get(RESOURCE_CLAIMS, namespace, claim["metadata"]["name"]).get("status") or {}
        assert not status.get("allocation") and not status.get("reservedFor"), status


def bound_nodes(admin: KubeClient, namespace: str) -> dict[str, str]:
    return {
        pod["metadata"]["name"]: pod["spec"]["nodeName"]
        for pod in admin.list(PODS, namespace=namespace).items
        if pod["spec"].get("nodeName")
    }


def test_a_claim_deallocated_frees_its_devices_in_the_next_snapshot(
    dra_cluster: str, admin: KubeClient, start_controller: StartController
) -> None:
    """Released claims are noticed: the claims are read again every cycle, so a claim whose
    allocation was cleared (by Kubernetes' resourceclaim controller, here by the test) holds
    no device in the controller's next snapshot."""
    namespace = dra_cluster
    owner = {"metadata": {"name": "gone", "namespace": namespace, "uid": "uid-gone"}}  # a pod that has finished
    claim = admin.create(RESOURCE_CLAIMS, namespace, generated_claim(owner, "gpu"))
    name = claim["metadata"]["name"]
    claim["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpus", "driver": DRIVER, "pool": NODE, "device": "gpu-3"}]}}}
    admin.replace(RESOURCE_CLAIMS, namespace, name, claim, subresource="status")
    controller = start_controller()

    def holder_of_gpu_3() -> str | None:
        snapshot = controller.current()
        if snapshot is None:
            return "no snapshot yet"
        census = counted_devices(snapshot.dra.resource_slices, snapshot.dra.resource_claims)
        return next(d.taken_by for d in census.devices if d.device.name == "gpu-3")

    wait_until(lambda: holder_of_gpu_3() == f"{namespace}/{name}", what="gpu-3 taken by the claim")
    cleared = admin.get(RESOURCE_CLAIMS, namespace, name)
    cleared["status"] = {}
    admin.replace(RESOURCE_CLAIMS, namespace, name, cleared, subresource="status")
    wait_until(lambda: holder_of_gpu_3() is None, what="gpu-3 free once the claim is deallocated")


def test_end_to_end_the_solver_allocates_a_gang_on_one_nvlink_domain_per_pod_and_the_claims_are_written(
    control_plane: ControlPlane, admin: KubeClient, namespace: str, controller_client: KubeClient, custom
) -> None:
    """Two nodes of 4 GPUs, each node one NVLink domain of 4 and one of its GPUs held on the
    second node's: a gang of two pods, each claiming (from a template) 4 GPUs sharing a
    domain, cannot start (only n1 has 4 free in one domain) until that GPU is freed; then the
    real solver allocates, and the cycle writes each claim before binding its pod."""
    for name in ("e2e-n1", "e2e-n2"):
        admin.create(NODES, None, for_api(node(name, cpu=8)))
        admin.create(RESOURCE_SLICES, None, node_slice(name, gpus=4, nvlink_domain=0))
    admin.create(DEVICE_CLASSES, None, device_class())
    admin.create(RESOURCE_CLAIM_TEMPLATES, namespace, claim_template("four-gpus-one-nvlink", namespace, gpus=4, match_attribute="nvlinkDomain"))
    custom.create_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups",
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "train"},
         "spec": {"minMember": 2, "queue": "default"}},
    )
    held = admin.create(RESOURCE_CLAIMS, namespace, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "held", "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": DRIVER}}]}},
    })
    held["status"] = {"allocation": {"devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": "e2e-n2", "device": "gpu-3"}]}}}
    held = admin.replace(RESOURCE_CLAIMS, namespace, "held", held, subresource="status")
    bodies = {}
    for name in ("train-0", "train-1"):
        body = claim_pod(name, namespace, template="four-gpus-one-nvlink", group="train")
        pod = admin.create(PODS, namespace, body)
        bodies[f"{namespace}/{name}"] = {**body, "metadata": pod["metadata"]}
    made = make_claims(admin, list(bodies.values()))

    observation, decision = _solve_as_served_by_1_34(controller_client, bodies, made)
    assert decision.placement.binds == () and decision.placement.claims == ()
    [outcome] = [o for o in decision.podgroups if o.name == f"{namespace}/train"]
    assert outcome.state == "pending" and any(reason.rule == "dra" for reason in outcome.reasons), outcome.reasons

    held["status"] = {}  # deallocated, as Kubernetes' resourceclaim controller does once nobody uses it
    admin.replace(RESOURCE_CLAIMS, namespace, "held", held, subresource="status")
    observation, decision = _solve_as_served_by_1_34(controller_client, bodies, made)
    assert len(decision.placement.claims) == 2
    actuator = Actuator(controller_client, assumed=AssumedPods(), metrics=ControllerMetrics())
    report = act_once(actuator, plan(observation, decision))

    assert sorted(report.bound) == sorted(bodies), report.bind_failures
    nodes = set()
    for key, body in bodies.items():
        pod = admin.get(PODS, namespace, body["metadata"]["name"])
        claim = admin.get(RESOURCE_CLAIMS, namespace, made[(key, "gpu")])
        allocation = claim["status"]["allocation"]
        [where] = allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"]
        assert pod["spec"]["nodeName"] == where
        assert sorted(r["device"] for r in allocation["devices"]["results"]) == [f"gpu-{i}" for i in range(4)]
        assert {r["pool"] for r in allocation["devices"]["results"]} == {where}
        assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": body["metadata"]["name"], "uid": pod["metadata"]["uid"]}]
        nodes.add(where)
    assert nodes == {"e2e-n1", "e2e-n2"}


def _solve_as_served_by_1_34(client: KubeClient, bodies: dict[str, dict], made: dict[tuple[str, str], str]):
    """observe the live caches, the pods as a 1.34 API server returns them, and solve with the
    product's solver; (observation, decision)."""
    observation = observe(as_served_by_1_34(cached_view(client), bodies, made), scheduler_names=("batchplace",))
    return observation, decide(observation.snapshot, SolveConfig(engine="greedy"))


def test_the_seed_creates_dra_objects_before_the_pods_and_keeps_an_allocated_claims_status(
    admin: KubeClient, namespace: str, tmp_path: Path
) -> None:
    allocated = generated_claim({"metadata": {"name": "serve", "namespace": namespace, "uid": "uid-serve"}}, "gpu")
    allocated["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpus", "driver": DRIVER, "pool": NODE, "device": "gpu-0"}]}}}
    manifest = [
        claim_pod("train-0", namespace, template="one-gpu"),
        claim_template("one-gpu", namespace),
        allocated,
        node_slice(NODE, gpus=2),
        device_class(),
        for_api(node(NODE, cpu=8)),
    ]
    path = tmp_path / "dra.yaml"
    path.write_text(yaml.safe_dump_all(manifest))
    objects = seed_objects(path, namespace=namespace)
    assert [obj.kind.kind for obj in objects] == [
        "Node", "DeviceClass", "ResourceSlice", "ResourceClaimTemplate", "ResourceClaim", "Pod"
    ]
    create_all(admin, objects)
    status = admin.get(RESOURCE_CLAIMS, namespace, allocated["metadata"]["name"])["status"]
    assert status["allocation"]["devices"]["results"][0]["device"] == "gpu-0"

