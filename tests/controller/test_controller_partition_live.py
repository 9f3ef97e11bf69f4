"""`batchplace controller --partition-parts 2` against the real API server: each cycle is
solved in two parts (engine cpsat-partitioned) and binds every gang whole, as the whole
solve would."""

from __future__ import annotations

import logging

import pytest
from kubernetes import client as k8s

from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from tests.controller._cluster_queries import bound, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller.conftest import StartController

NODE_NAMES = [f"cpu-{i}" for i in range(4)]


def test_a_controller_told_to_partition_binds_each_gang_whole_from_the_partitioned_solve(
    namespace: str,
    admin: KubeClient,
    core: k8s.CoreV1Api,
    start_controller: StartController,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="controller.loop")
    for name in NODE_NAMES:
        admin.create(NODES, None, for_api(node(name, cpu=8, memory="16Gi")))
    for gang in ("a", "b", "c"):
        admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(gang, namespace=namespace, min_member=2)))
        for index in range(2):
            admin.create(PODS, namespace, for_api(pod(f"{gang}-{index}", namespace=namespace, cpu="4", group=gang)))
    start_controller(ControllerConfig(period_s=0.3, time_limit_s=2.0, engine="auto", partition_parts=2))
    nodes = wait_until(lambda: len(bound(core, namespace)) == 6 and bound(core, namespace), what="six pods bound")
    assert sorted(nodes) == ["a-0", "a-1", "b-0", "b-1", "c-0", "c-1"]  # every gang whole
    # The cycle's log line (its fields) comes after its binds have landed: wait for it too.
    bound_by = wait_until(lambda: [record.engine for record in caplog.records if getattr(record, "bound", 0)],
                          what="the cycle's log line")
    assert set(bound_by) == {"cpsat-partitioned"}
