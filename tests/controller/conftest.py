"""Fixtures for the controller tests against a real kube-apiserver.

One control plane (etcd + kube-apiserver v1.20.2, `controller.testing.ControlPlane`) per
test session, with the CRDs of `deploy/crds/`, the DRA kinds of `deploy/dra-crds/` (resource.k8s.io/v1,
which v1.20 does not serve) and the RBAC of `deploy/rbac.yaml` applied:
every controller a test starts runs as batchplace's ServiceAccount user with exactly the
ClusterRole's verbs. Each test gets a fresh namespace, and whatever it left cluster-wide
(nodes, queues, HyperNodes, priority classes) is deleted after it.

The first run on a machine builds kube-apiserver (`scripts/build-kube-apiserver.sh`,
minutes); later runs find it cached.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from controller.kinds import (
    DEVICE_CLASSES,
    HYPERNODES,
    NODES,
    NUMATOPOLOGIES,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from controller.kube import KubeClient
from controller.loop import Controller, ControllerConfig
from controller.testing.control_plane import REPO_ROOT, ControlPlane

if TYPE_CHECKING:
    from tests.controller.fault_proxy import FaultProxy


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    with ControlPlane() as plane:
        plane.apply_yaml(REPO_ROOT / "deploy" / "rbac.yaml")
        yield plane


@pytest.fixture(scope="session")
def admin(control_plane: ControlPlane) -> KubeClient:
    """The edge client with the admin token (for the seed and kubelet helpers)."""
    return KubeClient.from_kubeconfig(control_plane.admin_kubeconfig)


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> k8s.ApiClient:
    """The official client, admin token: what the tests assert with."""
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(control_plane.admin_kubeconfig), client_configuration=configuration)
    return k8s.ApiClient(configuration)


@pytest.fixture(scope="session")
def core(api_client: k8s.ApiClient) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def custom(api_client: k8s.ApiClient) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client)


@pytest.fixture
def namespace(control_plane: ControlPlane, admin: KubeClient, core: k8s.CoreV1Api) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    yield name
    for pod in admin.list(PODS, namespace=name).items:
        _quietly(lambda: admin.delete(PODS, name, pod["metadata"]["name"], grace_period_s=0))
    for kind in (RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES):
        for obj in admin.list(kind, namespace=name).items:
            _quietly(lambda: admin.delete(kind, name, obj["metadata"]["name"]))
    for kind in (NODES, QUEUES, HYPERNODES, NUMATOPOLOGIES, DEVICE_CLASSES, RESOURCE_SLICES):
        for obj in admin.list(kind).items:
            _quietly(lambda: admin.delete(kind, None, obj["metadata"]["name"]))
    for obj in admin.list(PRIORITY_CLASSES).items:
        if not obj["metadata"]["name"].startswith("system-"):
            _quietly(lambda: admin.delete(PRIORITY_CLASSES, None, obj["metadata"]["name"]))


def _quietly(call: Callable[[], object]) -> None:
    try:
        call()
    except Exception:
        pass


@pytest.fixture
def controller_kubeconfig(control_plane: ControlPlane, tmp_path: Path) -> Path:
    """Batchplace's ServiceAccount user: only what deploy/rbac.yaml grants."""
    return control_plane.write_kubeconfig(tmp_path / "controller.kubeconfig", token=control_plane.controller_token)


@pytest.fixture
def controller_client(controller_kubeconfig: Path) -> Iterator[KubeClient]:
    """The edge client as batchplace's ServiceAccount, for tests that run a cycle's stages by hand."""
    client = KubeClient.from_kubeconfig(controller_kubeconfig)
    yield client
    client.close()


StartController = Callable[..., Controller]


@pytest.fixture
def start_controller(controller_kubeconfig: Path) -> Iterator[StartController]:
    """Start controllers in this process (threads); each is stopped when the test ends."""
    started: list[tuple[Controller, threading.Event]] = []

    def start(config: ControllerConfig | None = None, *, kubeconfig: Path | None = None) -> Controller:
        config = config or ControllerConfig(period_s=0.3, engine="greedy")
        client = KubeClient.from_kubeconfig(kubeconfig or controller_kubeconfig, pool_size=config.api_connections())
        controller = Controller(client, config)
        stop = threading.Event()
        controller.start(stop)
        started.append((controller, stop))
        assert controller.caches.wait_synced(30), "the controller's caches did not sync"
        return controller

    yield start
    for controller, stop in started:
        stop.set()
    for controller, _ in started:
        controller.join(5)


@pytest.fixture
def fault_proxy(control_plane: ControlPlane) -> Iterator["FaultProxy"]:
    """A fault-injecting proxy in front of the API server; request it before `start_controller`,
    so the controller stops before the proxy does."""
    from tests.controller.fault_proxy import FaultProxy

    proxy = FaultProxy(control_plane.url, ca_file=str(control_plane.ca_file)).start()
    yield proxy
    proxy.stop()
