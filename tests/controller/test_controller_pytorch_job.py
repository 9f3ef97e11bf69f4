"""A Kubeflow PyTorchJob through the controller: the scheduler-plugins PodGroup and pods
Kubeflow's training operator creates for it (written here as the operator writes them, not
expanded by our own loader, so a misreading of its labels shows here) are bound as one gang,
inside one tier-1 HyperNode when the job's topology annotations, which the operator copies
onto its PodGroup, ask for it.

The cluster: three nodes of 2 GPUs, gpu-0 under leaf-a, gpu-1 and gpu-2 under leaf-b; the
job: 1 master and 3 workers of 1 GPU, hard topology within tier 1 — only leaf-b holds it.
"""

from __future__ import annotations

from kubernetes import client as k8s

from controller.kinds import HYPERNODES, NODES, PODS, XK8S_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.observe import ClusterView, observe
from controller.plan import plan
from solver.place import ENGINES
from tests.builders import solve_checked
from tests.controller._cluster_queries import bound, wait_until, xk8s_status
from tests.controller._controller_builders import for_api, hypernode, node, pytorch_job_objects
from tests.controller.conftest import StartController

TOPOLOGY = {"volcano.sh/network-topology-mode": "hard", "volcano.sh/network-topology-highest-tier": "1"}
NODES_BY_LEAF = {"leaf-a": ("gpu-0",), "leaf-b": ("gpu-1", "gpu-2")}


def _nodes() -> list[dict]:  # type: ignore[type-arg]
    return [node(name, cpu=32, memory="128Gi", gpus=2) for names in NODES_BY_LEAF.values() for name in names]


def _hypernodes() -> list[dict]:  # type: ignore[type-arg]
    leaves = [hypernode(leaf, 1, *names) for leaf, names in NODES_BY_LEAF.items()]
    return [*leaves, hypernode("spine", 2, *NODES_BY_LEAF, member_type="HyperNode")]


def test_observe_reads_the_operators_pod_group_and_pods_as_a_gang_of_master_and_workers_within_one_leaf() -> None:
    group, *pods = pytorch_job_objects("bert", workers=3, annotations=TOPOLOGY)
    view = ClusterView(nodes=tuple(_nodes()), hypernodes=tuple(_hypernodes()), xk8s_pod_groups=(group,), pods=tuple(pods))
    observation = observe(view, scheduler_names=("batchplace",))
    (pod_group,) = observation.snapshot.pod_groups
    assert (pod_group.key, pod_group.min_member) == ("ns/bert", 4)
    assert [(t.name, t.min_available) for t in pod_group.tasks] == [("master", 0), ("worker", 0)]
    assert (pod_group.network_topology.mode, pod_group.network_topology.highest_tier_allowed) == ("hard", 1)  # type: ignore[union-attr]
    for engine in ENGINES:
        decision = solve_checked(observation.snapshot, engine)
        (gang,) = plan(observation, decision).gangs
        assert sorted(bind.node for bind in gang.binds) == ["gpu-1", "gpu-1", "gpu-2", "gpu-2"], engine


def test_a_pytorch_jobs_four_pods_are_bound_as_one_gang_inside_one_leaf_live(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    for obj in _nodes():
        admin.create(NODES, None, for_api(obj))
    for obj in _hypernodes():
        admin.create(HYPERNODES, None, obj)
    group, *pods = pytorch_job_objects("bert", namespace=namespace, workers=3, annotations=TOPOLOGY)
    admin.create(XK8S_PODGROUPS, namespace, for_api(group))
    for member in pods:
        admin.create(PODS, namespace, for_api(member))
    start_controller(ControllerConfig(period_s=0.3, time_limit_s=1.0))
    # The gang's binds go out in parallel: wait for all four, not the first one seen.
    nodes = wait_until(lambda: len(bound(core, namespace)) == 4 and bound(core, namespace), what="the gang's four pods bound")
    assert sorted(nodes) == ["bert-master-0", "bert-worker-0", "bert-worker-1", "bert-worker-2"]
    assert sorted(nodes.values()) == ["gpu-1", "gpu-1", "gpu-2", "gpu-2"]
    for name in nodes:
        assert len(core.read_namespaced_pod(name, namespace).metadata.annotations["batchplace.io/gpus"].split(",")) == 1
    status = wait_until(lambda: xk8s_status(custom, namespace, "bert").get("phase") and xk8s_status(custom, namespace, "bert"),
                        what="the PodGroup's status")
    assert (status["phase"], status["scheduled"]) == ("Scheduled", 4)
