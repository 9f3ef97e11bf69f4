"""Loading a JobSet's pods, as JobSet and its Jobs create them: each Job replica (one
replicated Job, one job index) is one PodGroup of the pods present."""

from __future__ import annotations

from tests.models._kube_builders import load, load_error, node
from tests.models._owner_gang_pods import JOBSET, jobset_pod


def test_each_job_replica_is_a_pod_group_of_its_pods_named_as_the_job() -> None:
    pods = [jobset_pod("train", rjob, job, index) for rjob in ("driver", "workers") for job in range(2) for index in range(2)]
    loaded = load(node("n1", gpus=8), *pods[2:], pods[0])  # input order is not gang order
    groups = loaded.snapshot.pod_groups
    assert [(g.key, g.min_member) for g in groups] == [
        ("default/train-driver-1", 2),
        ("default/train-workers-0", 2),
        ("default/train-workers-1", 2),
        ("default/train-driver-0", 1),
    ]
    assert [t.name for t in groups[1].tasks] == ["workers"]
    (set_warning,) = [w for w in loaded.warnings if "JobSet default/train: each Job replica is a gang of its own" in w]
    assert "not enforced yet" in set_warning


def test_a_leader_admitted_alone_under_exclusive_placement_is_a_gang_of_one_with_its_affinity() -> None:
    # JobSet's webhook admits the followers only once the leader (completion index 0) is scheduled.
    loaded = load(node("n1", gpus=8, labels={"rack": "r1"}), jobset_pod("train", "workers", 0, 0, exclusive="rack"))
    (group,) = loaded.snapshot.pod_groups
    assert group.min_member == 1
    (task,) = group.tasks
    assert [term.topology_key for term in task.inter_pod.required_affinity] == ["rack"]
    assert not any("exclusive topology" in w for w in loaded.warnings)


def test_an_exclusive_topology_no_pod_enforces_is_a_warning() -> None:
    pods = [jobset_pod("train", "workers", 0, index, exclusive="rack", inject_affinity=False) for index in range(2)]
    loaded = load(node("n1", gpus=8), *pods)
    assert any("JobSet gang train-workers-0: exclusive topology 'rack'" in w for w in loaded.warnings)


def test_a_missing_replicated_job_name_or_bad_job_index_names_the_label() -> None:
    missing = jobset_pod("train", "workers", 0, 0)
    for tags in ("labels", "annotations"):
        del missing["metadata"][tags][f"{JOBSET}/replicatedjob-name"]  # type: ignore[index]
    message = load_error(node("n1"), missing)
    assert f"metadata.labels.{JOBSET}/replicatedjob-name:" in message and "it is missing" in message
    bad = jobset_pod("train", "workers", 0, 0)
    for tags in ("labels", "annotations"):
        bad["metadata"][tags][f"{JOBSET}/job-index"] = "first"  # type: ignore[index]
    assert "job index is an integer, got 'first'" in load_error(node("n1"), bad)


def test_the_jobset_object_is_skipped_with_a_note() -> None:
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "train"}, "spec": {}}
    (note,) = load(node("n1"), jobset).warnings
    assert "a JobSet is read through the pods of its Jobs" in note and "not one gang (not enforced yet)" in note
