"""Inputs that once killed the process (`tests/regression_inputs.py`), through a live
controller against the real kube-apiserver: the cycle binds every pending pod, and a CP-SAT
search that dies at its memory ceiling costs that one answer — greedy's binds go out, the
fallback is counted by cause, and the controller goes on cycling."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kubernetes import client as k8s

from controller.errors import Conflict
from controller.kinds import PODS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.testing.seed import SeedObject, create_all, seed_objects
from tests.controller._cluster_queries import bound, wait_until
from tests.controller.conftest import StartController
from tests.regression_inputs import BEST_EFFORT_REPLICAS, OPENB_PENDING, best_effort_job_text, openb_last_batch_text

MIB = 1 << 20


def _create_in_parallel(admin: KubeClient, objects: list[SeedObject]) -> None:
    """Nodes before pods (a bound pod names its node), each group on 8 connections."""

    def create(obj: SeedObject) -> None:
        try:
            admin.create(obj.kind, obj.namespace, obj.body)
        except Conflict:
            pass

    with ThreadPoolExecutor(8) as pool:
        for namespaced in (False, True):
            list(pool.map(create, [obj for obj in objects if obj.kind.namespaced == namespaced]))


def _pending_bound(core: k8s.CoreV1Api, namespace: str, pending: set[str]) -> dict[str, str]:
    return {name: node for name, node in bound(core, namespace).items() if name in pending}


def test_the_openb_last_batch_is_bound_live_when_its_search_dies_at_the_memory_ceiling(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController, tmp_path: Path
) -> None:
    source = tmp_path / "openb.yaml"
    source.write_text(openb_last_batch_text(), encoding="utf-8")
    objects = seed_objects(source, namespace=namespace)
    pending = {o.name for o in objects if o.kind == PODS and not o.body["spec"].get("nodeName")}
    assert len(pending) == OPENB_PENDING
    _create_in_parallel(admin, objects)
    controller = start_controller(
        ControllerConfig(period_s=0.5, time_limit_s=5, engine="cpsat", solver_memory_bytes=64 * MIB)
    )
    placed = wait_until(
        lambda: len(_pending_bound(core, namespace, pending)) == OPENB_PENDING and _pending_bound(core, namespace, pending),
        timeout_s=120, what="all 50 pending pods bound",
    )
    assert len(placed) == OPENB_PENDING
    registry = controller.metrics.registry
    assert (registry.get_sample_value("batchplace_engine_fallbacks_total", {"cause": "memory"}) or 0) >= 1
    cycles = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number > cycles, what="the controller cycles on")


def test_a_best_effort_job_is_bound_live_by_cp_sat(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController, tmp_path: Path
) -> None:
    source = tmp_path / "best-effort.yaml"
    source.write_text(best_effort_job_text(), encoding="utf-8")
    create_all(admin, seed_objects(source, namespace=namespace))
    controller = start_controller(ControllerConfig(period_s=0.3, time_limit_s=5, engine="cpsat"))
    wait_until(lambda: len(bound(core, namespace)) == BEST_EFFORT_REPLICAS, timeout_s=60, what="20 BestEffort pods bound")
    registry = controller.metrics.registry
    for cause in ("crashed", "memory", "timeout"):
        assert registry.get_sample_value("batchplace_engine_fallbacks_total", {"cause": cause}) is None
