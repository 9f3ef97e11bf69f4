"""`Snapshot.replaced`: the one way to rebuild a snapshot with some parts changed."""

from __future__ import annotations

from models.snapshot import Snapshot, UsagePolicy
from tests.builders import make_gang, make_node, make_snapshot


def test_replaced_changes_only_the_parts_given_and_validates() -> None:
    snapshot = make_snapshot(nodes=[make_node("n1")], groups=[make_gang("a", running_on=["n1"])])
    pods = [pod.model_copy(update={"phase": "pending", "node": None}) for pod in snapshot.pods]
    replaced = snapshot.replaced(pods=pods)
    assert replaced.pods[0].phase == "pending" and replaced.nodes == snapshot.nodes
    assert replaced.queues == snapshot.queues and replaced.usage_policy == snapshot.usage_policy
    assert set(Snapshot.model_fields) == {"nodes", "hypernodes", "queues", "pod_groups", "pods", "priority_classes", "usage_policy", "colocation_policy", "reservation_policy", "dra"}, (
        "a new field: `replaced` carries it over as it is, check that is what it should do"
    )
    judged = snapshot.with_usage_policy(UsagePolicy(cpu_threshold_percent=50))
    assert judged.usage_policy.cpu_threshold_percent == 50 and judged.pods == snapshot.pods
