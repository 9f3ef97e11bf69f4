"""What the actuator remembers having written (`reported`) is forgotten for the Pods and
PodGroups the cluster no longer has, once it holds more than the cluster's objects could
need — else a long-lived controller keeps an entry for every pod it ever saw."""

from __future__ import annotations

from controller.plan import REPORTED_SLACK, forget_gone, pod_condition_key, podgroup_status_key
from models.snapshot import PodGroupKey, PodKey
from tests.controller._controller_builders import pod


def _live() -> dict[str, str]:
    return {
        pod_condition_key(PodKey("ns/alive")): "a",
        "Pod/ns/alive/FailedScheduling": "b",
        podgroup_status_key(PodGroupKey("ns/team")): "c",
        "PodGroup/ns/team/Unschedulable": "d",
        "Node//gpu-0/Invalid": "e",
        "provisioning/ns/req/Requested": "f",
    }


def test_gone_pods_and_podgroups_are_forgotten_the_live_and_other_kinds_kept() -> None:
    gone = {pod_condition_key(PodKey(f"ns/done-{i}")): "x" for i in range(REPORTED_SLACK)}
    gone |= {podgroup_status_key(PodGroupKey(f"ns/old-{i}")): "y" for i in range(10)} | {"Pod/ns/done-0/Invalid": "z"}
    reported = _live() | gone
    assert forget_gone(reported, pods=[pod("alive")], pod_groups=["ns/team"]) == len(gone)
    assert reported == _live()


def test_nothing_is_forgotten_while_it_holds_no_more_than_the_cluster_could_need() -> None:
    reported = _live() | {pod_condition_key(PodKey(f"ns/done-{i}")): "x" for i in range(REPORTED_SLACK - 10)}
    kept = dict(reported)
    assert forget_gone(reported, pods=[pod("alive")], pod_groups=["ns/team"]) == 0
    assert reported == kept
