"""`demo --live` seeds a LeaderWorkerSet and a JobSet as their controllers create them: the
pods, named, labelled and annotated as LWS and JobSet (and the batch Job controller) name
them, with the exclusive-topology annotation; read back by the loader
with no pod refused and each pod in its group. And a Volcano 1.14 vcjob's partitions as its
job controller writes them: the PodGroup's `subGroupPolicy`, each pod's partition label."""

from __future__ import annotations

from pathlib import Path

import yaml

from controller.kinds import PODS
from controller.observe import ClusterView, observe
from controller.testing.seed import seed_objects
from tests.controller._controller_builders import node

LWS = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": {"name": "decode", "annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": "rack"}},
    "spec": {
        "replicas": 2,
        "leaderWorkerTemplate": {
            "size": 3,
            "leaderTemplate": {"metadata": {"labels": {"role": "leader"}},
                               "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}},
            "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}},
        },
    },
}
JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "train"},
    "spec": {"replicatedJobs": [{
        "name": "workers", "replicas": 2,
        "template": {"metadata": {"annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}},
                     "spec": {"parallelism": 2, "completions": 2, "completionMode": "Indexed",
                              "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
    }]},
}


def _seed(tmp_path: Path, document: dict) -> list[dict]:  # type: ignore[type-arg]
    path = tmp_path / "example.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    objects = seed_objects(path, namespace="ns")
    assert {obj.kind for obj in objects} == {PODS}
    return [obj.body for obj in objects]


def test_a_leader_worker_set_is_seeded_as_its_leaders_and_workers(tmp_path: Path) -> None:
    pods = _seed(tmp_path, LWS)
    assert [p["metadata"]["name"] for p in pods] == ["decode-0", "decode-0-1", "decode-0-2", "decode-1", "decode-1-1", "decode-1-2"]
    labels = {p["metadata"]["name"]: p["metadata"]["labels"] for p in pods}
    assert labels["decode-1-2"]["leaderworkerset.sigs.k8s.io/group-index"] == "1"
    assert labels["decode-1-2"]["leaderworkerset.sigs.k8s.io/worker-index"] == "2"
    assert labels["decode-0"]["role"] == "leader" and "role" not in labels["decode-0-1"]
    assert len({labels[n]["leaderworkerset.sigs.k8s.io/group-key"] for n in ("decode-0", "decode-0-1", "decode-1")}) == 2
    assert all(p["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/size"] == "3" for p in pods)
    assert all(p["spec"]["schedulerName"] == "batchplace" for p in pods)
    assert all(p["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"] == "rack" for p in pods)
    snapshot = observe(ClusterView(pods=tuple(pods), nodes=(node("n1", cpu=16),)), scheduler_names=("batchplace",)).snapshot
    assert len(snapshot.pods) == 6 and all(pod.pod_group is not None for pod in snapshot.pods)


def test_a_jobset_is_seeded_as_its_jobs_pods(tmp_path: Path) -> None:
    pods = _seed(tmp_path, JOBSET)
    names = [p["metadata"]["name"] for p in pods]
    assert [name.rsplit("-", 1)[0] for name in names] == ["train-workers-0-0", "train-workers-0-1", "train-workers-1-0", "train-workers-1-1"]
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["jobset.sigs.k8s.io/jobset-name"] == "train"
        assert labels["batch.kubernetes.io/job-name"] == f"train-workers-{labels['jobset.sigs.k8s.io/job-index']}"
        assert len(labels["jobset.sigs.k8s.io/job-key"]) == 40  # a label value: at most 63 characters
        assert pod["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"] == "rack"
    snapshot = observe(ClusterView(pods=tuple(pods), nodes=(node("n1", cpu=16),)), scheduler_names=("batchplace",)).snapshot
    assert len(snapshot.pods) == 4 and all(pod.pod_group is not None for pod in snapshot.pods)


PARTITIONED = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "pretrain"},
    "spec": {
        "minAvailable": 6,
        "tasks": [
            {"name": "ps", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
            {"name": "trainer", "replicas": 6,
             "partitionPolicy": {"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2,
                                 "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
             "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
        ],
    },
}


def test_a_vcjob_s_partitions_are_seeded_as_its_job_controller_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(PARTITIONED), encoding="utf-8")
    objects = seed_objects(path, namespace="ns")
    (group,) = [obj.body for obj in objects if obj.kind.kind == "PodGroup"]
    assert group["spec"]["subGroupPolicy"] == [{
        "name": "trainer", "subGroupSize": 2, "minSubGroups": 2,
        "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "trainer"}},
        "matchLabelKeys": ["volcano.sh/partition-id"],
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }]
    partition = {obj.body["metadata"]["name"]: obj.body["metadata"]["labels"].get("volcano.sh/partition-id")
                 for obj in objects if obj.kind == PODS}
    assert partition == {"pretrain-ps-0": None, **{f"pretrain-trainer-{i}": str(i // 2) for i in range(6)}}
