"""Gangs inside gangs through the controller, against the real API server: a Volcano PodGroup
with `subGroupPolicy`, a LeaderWorkerSet's pods and a JobSet's pods, each written as its
controller (and pod webhook) writes them — not expanded by our own loader — get every
sub-group bound whole inside one rack, and the status per sub-group written.

The cluster, with a hand-computed answer: four racks (tier-1 HyperNodes that group nodes by
the label `topology.kubernetes.io/rack`, as LWS and JobSet name the domain) of two 4-GPU
nodes, rack-0 and rack-1 under spine-0, rack-2 and rack-3 under spine-1. One node of rack-0
and one of rack-1 are taken by another scheduler's pod, so the only racks with two free
nodes are rack-2 and rack-3: a sub-group of two 4-GPU pods fits in no other rack (the free
nodes of rack-0 and rack-1 together would hold one, across two racks — what the rule
forbids).

The Kubernetes Workload API (`scheduling.k8s.io` Workload and PodGroup) is not served by this
API server (v1.20, see docs/controller.md): here the controller finds it not served, with the
RBAC to read it; test_workload_api_live serves it as CRDs on a control plane of its own."""

from __future__ import annotations

import hashlib
import json

import pytest
from kubernetes import client as k8s

from controller.errors import NotFound
from controller.kinds import HYPERNODES, KUBE_PODGROUPS, KUBE_WORKLOADS, NODES, PODS, VOLCANO_PODGROUPS, WORKLOAD_API_KINDS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.sub_group_status import SUB_GROUPS_ANNOTATION
from tests.controller._cluster_queries import bound, condition, pg_status, volcano_pod_group, wait_until
from tests.controller._controller_builders import for_api, hypernode, node
from tests.controller.conftest import StartController
from tests.models._kube_builders import pod
from tests.models._owner_gang_pods import jobset_pod, lws_pod

RACK_LABEL = "topology.kubernetes.io/rack"
RACKS = {f"rack-{r}": (f"r{r}-n0", f"r{r}-n1") for r in range(4)}
RACK_OF = {name: rack for rack, names in RACKS.items() for name in names}
TAKEN = ("r0-n0", "r1-n0")  # another scheduler's pods fill these
FREE_RACKS = {"rack-2", "rack-3"}
PER_POD_GPUS = 4  # a pod fills a node


def _cluster(admin: KubeClient, namespace: str) -> None:
    for name, rack in RACK_OF.items():
        admin.create(NODES, None, for_api(node(name, cpu=32, memory="128Gi", gpus=4, labels={RACK_LABEL: rack})))
    for rack in RACKS:
        member = {"type": "Node", "selector": {"labelMatch": {"matchLabels": {RACK_LABEL: rack}}}}
        admin.create(HYPERNODES, None, {**hypernode(rack, 1), "spec": {"tier": 1, "members": [member]}})
    admin.create(HYPERNODES, None, hypernode("spine-0", 2, "rack-0", "rack-1", member_type="HyperNode"))
    admin.create(HYPERNODES, None, hypernode("spine-1", 2, "rack-2", "rack-3", member_type="HyperNode"))
    for index, name in enumerate(TAKEN):
        other = pod(f"other-{index}", gpus=str(PER_POD_GPUS), scheduler="default-scheduler", node=name, namespace=namespace)
        admin.create(PODS, namespace, other)


def _create(admin: KubeClient, namespace: str, pods: list[dict]) -> None:  # type: ignore[type-arg]
    for member in pods:
        member["metadata"]["namespace"] = namespace
        admin.create(PODS, namespace, for_api(member))


def _racks_of(nodes: dict[str, str], members: dict[str, list[str]]) -> dict[str, set[str]]:
    """Sub-group → the racks its bound pods are in."""
    return {sub: {RACK_OF[nodes[name]] for name in names if name in nodes} for sub, names in members.items()}


def _assert_each_whole_in_one_free_rack(nodes: dict[str, str], members: dict[str, list[str]]) -> dict[str, str]:
    """Every pod of every sub-group bound, each sub-group in one rack, the sub-groups in
    distinct racks, all of them rack-2 and rack-3; sub-group → its rack."""
    assert set(nodes) >= {name for names in members.values() for name in names}
    racks = _racks_of(nodes, members)
    assert all(len(found) == 1 for found in racks.values()), racks
    landed = {sub: next(iter(found)) for sub, found in racks.items()}
    assert set(landed.values()) == FREE_RACKS, landed
    return landed


def test_a_volcano_pod_group_s_shards_are_bound_each_inside_one_rack_and_the_status_says_where_live(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    """PodGroup `train`: 4 pods in 2 shards (label `shard`), each shard a sub-group of 2 inside
    one rack, the job inside one spine."""
    _cluster(admin, namespace)
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": namespace},
        "spec": {
            "minMember": 4,
            "queue": "default",
            "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
            "subGroupPolicy": [{
                "name": "shard", "subGroupSize": 2, "matchLabelKeys": ["shard"],
                "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
            }],
        },
    }
    admin.create(VOLCANO_PODGROUPS, namespace, group)
    assert volcano_pod_group(custom, namespace, "train")["spec"]["subGroupPolicy"][0]["matchLabelKeys"] == ["shard"]
    members = {f"shard-{s}": [f"train-{s}-{i}" for i in range(2)] for s in range(2)}
    _create(admin, namespace, [
        pod(name, gpus=str(PER_POD_GPUS), scheduler="batchplace", group="train", labels={"shard": sub.split("-")[1]})
        for sub, names in members.items() for name in names
    ])
    start_controller(ControllerConfig(period_s=0.3, time_limit_s=1.0))
    nodes = wait_until(lambda: len(bound(core, namespace)) == 6 and bound(core, namespace), what="both shards bound")
    landed = _assert_each_whole_in_one_free_rack(nodes, members)

    def written() -> list[dict] | None:  # type: ignore[type-arg]
        annotation = (volcano_pod_group(custom, namespace, "train")["metadata"].get("annotations") or {}).get(SUB_GROUPS_ANNOTATION)
        return json.loads(annotation) if annotation else None

    statuses = wait_until(written, what="the sub-group status on the PodGroup")
    assert statuses == [
        {"name": sub, "policy": "shard", "started": True, "placed": 2, "minimum": 2, "domain": landed[sub], "reason": ""}
        for sub in sorted(members)
    ]
    status = wait_until(lambda: pg_status(custom, namespace, "train").get("phase") == "Running" and pg_status(custom, namespace, "train"),
                        what="PodGroup Running")
    assert condition(status)["message"].endswith("sub-groups: 2 of 2 started")


def test_a_volcano_job_starts_on_its_min_sub_groups_and_the_shard_left_out_says_why_live(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    """PodGroup `train`: 3 shards of 2, `minSubGroups: 2`, `minMember: 4`: two shards take
    rack-2 and rack-3, the third fits in no rack and waits — its status says so, and why."""
    _cluster(admin, namespace)
    admin.create(VOLCANO_PODGROUPS, namespace, {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "train", "namespace": namespace},
        "spec": {"minMember": 4, "queue": "default", "subGroupPolicy": [{
            "name": "shard", "subGroupSize": 2, "minSubGroups": 2, "matchLabelKeys": ["shard"],
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        }]},
    })
    members = {f"shard-{s}": [f"train-{s}-{i}" for i in range(2)] for s in range(3)}
    _create(admin, namespace, [
        pod(name, gpus=str(PER_POD_GPUS), scheduler="batchplace", group="train", labels={"shard": sub.split("-")[1]})
        for sub, names in members.items() for name in names
    ])
    start_controller(ControllerConfig(period_s=0.3, time_limit_s=1.0))
    nodes = wait_until(lambda: len(bound(core, namespace)) == 6 and bound(core, namespace), what="two shards bound")
    started = {sub: names for sub, names in members.items() if set(names) <= set(nodes)}
    landed = _assert_each_whole_in_one_free_rack(nodes, started)
    (waiting,) = set(members) - set(started)

    def written() -> dict[str, dict] | None:  # type: ignore[type-arg]
        annotation = (volcano_pod_group(custom, namespace, "train")["metadata"].get("annotations") or {}).get(SUB_GROUPS_ANNOTATION)
        found = {status["name"]: status for status in json.loads(annotation)} if annotation else {}
        return found if found and all(found[sub]["started"] for sub in started) else None

    statuses = wait_until(written, what="the sub-group status on the PodGroup")
    assert {sub: statuses[sub]["domain"] for sub in started} == landed
    assert (statuses[waiting]["started"], statuses[waiting]["placed"], statuses[waiting]["domain"]) == (False, 0, None)
    assert statuses[waiting]["reason"], "a shard left out says why"
    status = pg_status(custom, namespace, "train")
    assert condition(status)["message"].endswith("sub-groups: 2 of 3 started")


def test_a_leader_worker_set_s_groups_bind_each_inside_one_rack_and_the_one_left_says_its_sub_group_live(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController
) -> None:
    """LeaderWorkerSet `llm`, size 2 (leader + 1 worker), 3 replicas, exclusive on the rack
    label: two groups take rack-2 and rack-3, the third fits in no rack and waits, each of its
    pods naming its sub-group in its PodScheduled message."""
    _cluster(admin, namespace)
    members = {f"llm-{g}": [f"llm-{g}", f"llm-{g}-1"] for g in range(3)}
    _create(admin, namespace, [
        lws_pod("llm", g, w, size=2, gpus=PER_POD_GPUS, exclusive=RACK_LABEL, namespace=namespace)
        for g in range(3) for w in range(2)
    ])
    start_controller(ControllerConfig(period_s=0.3, time_limit_s=1.0))
    nodes = wait_until(lambda: len(bound(core, namespace)) == 6 and bound(core, namespace), what="two groups bound")
    started = {sub: names for sub, names in members.items() if set(names) <= set(nodes)}
    _assert_each_whole_in_one_free_rack(nodes, started)
    (waiting,) = set(members) - set(started)
    assert not set(members[waiting]) & set(nodes), "a group bound in part"

    def messages() -> dict[str, str] | None:
        found = {}
        for name in members[waiting]:
            conditions = core.read_namespaced_pod(name, namespace).status.conditions or []
            found.update({name: c.message for c in conditions if c.type == "PodScheduled" and c.status == "False"})
        return found if len(found) == len(members[waiting]) else None

    for name, message in wait_until(messages, what="the waiting group's pods' PodScheduled").items():
        assert f"subgroup {waiting}" in message, (name, message)


def test_a_jobset_s_job_replicas_bind_each_inside_one_rack_live(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController
) -> None:
    """JobSet `ds`: replicated Job `workers`, 2 Jobs of 2 pods, exclusive on the rack label."""
    _cluster(admin, namespace)
    pods = [_sha1_job_key(jobset_pod("ds", "workers", j, c, gpus=PER_POD_GPUS, exclusive=RACK_LABEL)) for j in range(2) for c in range(2)]
    members: dict[str, list[str]] = {}
    for member in pods:
        job = member["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        members.setdefault(job, []).append(member["metadata"]["name"])
    _create(admin, namespace, pods)
    start_controller(ControllerConfig(period_s=0.3, time_limit_s=1.0))
    nodes = wait_until(lambda: len(bound(core, namespace)) == 6 and bound(core, namespace), what="both Jobs bound")
    _assert_each_whole_in_one_free_rack(nodes, members)


def _sha1_job_key(member: dict) -> dict:  # type: ignore[type-arg]
    """The pod with JobSet's own job-key: the SHA-1 of `<namespace>/<job>` (40 hex digits; a
    label value holds at most 63 characters, which the API server enforces)."""
    key = member["metadata"]["labels"]["jobset.sigs.k8s.io/job-key"]
    job = member["metadata"]["labels"]["batch.kubernetes.io/job-name"]
    return json.loads(json.dumps(member).replace(key, hashlib.sha1(f"default/{job}".encode()).hexdigest()))


def test_a_server_without_the_workload_api_is_read_as_serving_none_with_the_rbac_to_read_it_live(
    controller_client: KubeClient, start_controller: StartController
) -> None:
    """v1.20 serves no `scheduling.k8s.io` Workload or PodGroup: the controller's identity gets
    404 — not 403, so the ClusterRole grants the reads a 1.35+ server would answer — and the
    controller watches none of them."""
    for kind in (KUBE_WORKLOADS, KUBE_PODGROUPS):
        with pytest.raises(NotFound):
            controller_client.list(kind)
    controller = start_controller(ControllerConfig(period_s=0.3, time_limit_s=1.0))
    assert not any(controller.caches.informer(kind) for kind in WORKLOAD_API_KINDS)
