"""A fleet of real clusters on the loopback, for the manager controller's tests and
`batchplace demo --live --clusters N`: each cluster its own etcd + kube-apiserver
(`ControlPlane`); each worker with a batchplace controller, a Volcano job controller stand-in
(`job_controller`) and a kubelet stand-in (`kubelet`), all in this process's threads."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from controller.errors import ApiError
from controller.fleet_manager import FleetManager, ManagerConfig, WorkerCluster
from controller.kinds import NAMESPACES, NODES, PODS, VCJOBS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import Controller, ControllerConfig
from controller.testing.control_plane import ControlPlane
from controller.testing.job_controller import JobControllerStandIn
from controller.testing.kubelet import KubeletStandIn
from models.clusters import ClusterName

JsonObject = dict[str, Any]


@dataclass
class Member:
    """One cluster of the fleet: its control plane, our edge client and the official one."""

    name: str
    plane: ControlPlane
    admin: KubeClient
    core: k8s.CoreV1Api
    custom: k8s.CustomObjectsApi
    stops: list[threading.Event] = field(default_factory=list)
    controllers: list[Controller] = field(default_factory=list)

    @classmethod
    def start(cls, name: str) -> "Member":
        plane = ControlPlane()
        plane.start()
        configuration = k8s.Configuration()
        k8s_config.load_kube_config(config_file=str(plane.admin_kubeconfig), client_configuration=configuration)
        api = k8s.ApiClient(configuration)
        return cls(name, plane, KubeClient.from_kubeconfig(plane.admin_kubeconfig), k8s.CoreV1Api(api), k8s.CustomObjectsApi(api))

    def run_worker(self, *, job_controller: bool = True, engine: str = "greedy", kubeconfig_token: str | None = None) -> None:
        """A batchplace controller (as the user of `kubeconfig_token`, else admin), a kubelet
        stand-in and (unless told not to) a job controller stand-in."""
        stop = threading.Event()
        config = ControllerConfig(period_s=0.3, engine=engine)  # type: ignore[arg-type]
        kubeconfig = self.plane.admin_kubeconfig
        if kubeconfig_token is not None:
            kubeconfig = self.plane.write_kubeconfig(self.plane.workdir / "controller.kubeconfig", token=kubeconfig_token)
        controller = Controller(KubeClient.from_kubeconfig(kubeconfig, pool_size=config.api_connections()), config)
        controller.start(stop)
        assert controller.caches.wait_synced(30), f"{self.name}: the controller's caches did not sync"
        threading.Thread(target=KubeletStandIn(self.admin).run, args=(stop,), kwargs={"interval_s": 0.2}, daemon=True).start()
        if job_controller:
            threading.Thread(target=JobControllerStandIn(self.admin).run, args=(stop,), daemon=True).start()
        self.stops.append(stop)
        self.controllers.append(controller)

    def stop_workers(self) -> None:
        for stop in self.stops:
            stop.set()
        for controller in self.controllers:
            controller.join(5)
        self.stops.clear()
        self.controllers.clear()

    def stop(self) -> None:
        self.stop_workers()
        self.plane.stop()

    def namespace(self, name: str) -> None:
        try:
            self.admin.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except ApiError:
            pass

    def gpu_node(self, name: str, *, gpus: int = 8) -> None:
        allocatable = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
        node = self.admin.create(NODES, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        self.admin.patch(NODES, None, node["metadata"]["name"], {"status": {"allocatable": allocatable, "capacity": allocatable}},
                         subresource="status")

    def clean(self) -> None:
        """Every node, and every vcjob, PodGroup and pod of every namespace but the system ones."""
        for kind in (VCJOBS, VOLCANO_PODGROUPS, PODS):
            for obj in self.admin.list(kind).items:
                metadata = obj["metadata"]
                if metadata.get("namespace", "").startswith("kube-"):
                    continue
                try:
                    self.admin.delete(kind, metadata.get("namespace"), metadata["name"], grace_period_s=0)
                except ApiError:
                    pass
        for obj in self.admin.list(NODES).items:
            try:
                self.admin.delete(NODES, None, obj["metadata"]["name"])
            except ApiError:
                pass

    def pods_of(self, namespace: str, job: str) -> list[k8s.V1Pod]:
        return list(self.core.list_namespaced_pod(namespace, label_selector=f"volcano.sh/job-name={job}").items)

    def vcjob(self, namespace: str, name: str) -> JsonObject:
        return self.custom.get_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs", name)

    def vcjobs(self, namespace: str) -> list[JsonObject]:
        return list(self.custom.list_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs")["items"])

    def kubeconfig(self, path: Path, *, server: str | None = None, token: str | None = None) -> Path:
        """A kubeconfig for `token` (admin's by default), at `server` (the API server by default)."""
        return self.plane.write_kubeconfig(path, token=token or self.plane.admin_token, server=server)


def gpu_vcjob(name: str, *, namespace: str, replicas: int, gpus: int, queue: str = "default") -> JsonObject:
    """A Volcano Job of `replicas` workers × `gpus` GPUs, gang of all of them, for batchplace."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": "batchplace",
            "queue": queue,
            "minAvailable": replicas,
            "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {"containers": [{
                "name": "train", "image": "trainer",
                "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}},
            }]}}}],
        },
    }


def start_manager(
    manager: Member, workers: dict[str, KubeClient], *, stop: threading.Event, client: KubeClient | None = None, **config: Any
) -> FleetManager:
    """A manager controller over `workers` (name → client), running until `stop`; it reaches
    the manager cluster with `client` (admin's by default)."""
    fleet = FleetManager(
        client or manager.admin,
        [WorkerCluster(name=ClusterName(name), client=client) for name, client in workers.items()],
        ManagerConfig(**{"period_s": 0.3, "engine": "greedy", **config}),
    )
    fleet.start(stop)
    return fleet


def finish_pods(member: Member, namespace: str, job: str) -> None:
    """The kubelet's word that every pod of `job` ran to completion."""
    for pod in member.pods_of(namespace, job):
        member.admin.patch(PODS, namespace, pod.metadata.name, {"status": {"phase": "Succeeded"}}, subresource="status")
