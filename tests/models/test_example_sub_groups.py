"""The two sub-group examples read as their first lines say: the LeaderWorkerSets of
`lws-disaggregated-serving.yaml` as one PodGroup each, a sub-group per replica group inside
one rack, with the free GPUs per rack the header counts; `subgroup-training.yaml` as the
Volcano 1.14 Job it is written as (its partitions are read by the Volcano sub-group loader),
with the free 4-GPU slots per leaf the header counts."""

from __future__ import annotations

from collections import Counter

import yaml

from models.loaders import load_snapshot_files
from models.snapshot import NetworkTopology, Snapshot, SubGroup
from tests.regression_inputs import EXAMPLES_DIR

RACK_TIER = NetworkTopology(mode="hard", highest_tier_allowed=1)


def _free_gpus_per_domain(snapshot: Snapshot, slot_gpus: int = 1) -> dict[str, tuple[int, int]]:
    """tier-1 HyperNode → (free GPUs, free slots of `slot_gpus` GPUs) after the running pods."""
    held = Counter[str]()
    for pod in snapshot.pods:
        if pod.node is not None:
            held[pod.node] += pod.requests.get("gpu", 0) // 1000
    free: dict[str, tuple[int, int]] = {}
    for node in snapshot.nodes:
        domain = snapshot.hypernode_chain[node.name][0]
        gpus = len(node.gpus) - held[node.name]
        total, slots = free.get(domain, (0, 0))
        free[domain] = (total + gpus, slots + gpus // slot_gpus)
    return free


def test_the_serving_example_is_two_sets_of_two_rack_bound_groups_of_two() -> None:
    loaded = load_snapshot_files([EXAMPLES_DIR / "lws-disaggregated-serving.yaml"])
    assert loaded.warnings == ()
    snapshot = loaded.snapshot
    prefill, decode = snapshot.pod_groups
    assert [(g.key, g.min_member, g.min_sub_groups) for g in (prefill, decode)] == [
        ("serving/prefill", 2, {}),
        ("serving/decode", 2, {}),
    ]
    assert prefill.sub_groups == (
        SubGroup(name="prefill-0", policy="prefill", min_member=2, network_topology=RACK_TIER),
        SubGroup(name="prefill-1", policy="prefill", min_member=2, network_topology=RACK_TIER),
    )
    assert [s.name for s in decode.sub_groups] == ["decode-0", "decode-1"]
    assert [(t.name, t.requests["gpu"]) for t in prefill.tasks] == [("leader", 8000), ("worker", 8000)]
    assert [(t.name, t.requests["gpu"]) for t in decode.tasks] == [("leader", 4000), ("worker", 4000)]
    pending = [(p.name, p.sub_group) for p in snapshot.pods if p.phase == "pending"]
    assert pending == [
        ("prefill-0", "prefill-0"),
        ("prefill-0-1", "prefill-0"),
        ("prefill-1", "prefill-1"),
        ("prefill-1-1", "prefill-1"),
        ("decode-0", "decode-0"),
        ("decode-0-1", "decode-0"),
        ("decode-1", "decode-1"),
        ("decode-1-1", "decode-1"),
    ]
    # As the header says: only rack-b and rack-c have two whole free nodes (a prefill group).
    assert _free_gpus_per_domain(snapshot, slot_gpus=8) == {
        "rack-a": (12, 1),
        "rack-b": (16, 2),
        "rack-c": (16, 2),
        "rack-d": (8, 1),
    }


def test_the_training_example_is_a_volcano_job_of_four_partitions_of_two_on_one_spine() -> None:
    path = EXAMPLES_DIR / "subgroup-training.yaml"
    documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    assert Counter(d["kind"] for d in documents) == {"Node": 10, "HyperNode": 7, "Pod": 3, "Job": 1}
    (job,) = [d for d in documents if d["kind"] == "Job"]
    assert job["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert job["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    (trainer,) = job["spec"]["tasks"]
    assert trainer["replicas"] == 8
    assert trainer["partitionPolicy"] == {
        "totalPartitions": 4,
        "partitionSize": 2,
        "minPartitions": 4,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    assert trainer["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "4"
    # As the header says: three 4-GPU slots per spine-a leaf (one whole shard each), four per spine-b leaf.
    snapshot = load_snapshot_files([path]).snapshot
    slots = {leaf: slot for leaf, (_, slot) in _free_gpus_per_domain(snapshot, slot_gpus=4).items()}
    assert slots == {"leaf-a1": 3, "leaf-a2": 3, "leaf-a3": 3, "leaf-b1": 4, "leaf-b2": 4}
    spines = {snapshot.hypernode_chain[n.name][0]: snapshot.hypernode_chain[n.name][1] for n in snapshot.nodes}
    assert spines == {
        "leaf-a1": "spine-a",
        "leaf-a2": "spine-a",
        "leaf-a3": "spine-a",
        "leaf-b1": "spine-b",
        "leaf-b2": "spine-b",
    }
