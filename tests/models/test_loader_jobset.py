"""Loading a JobSet's pods, as JobSet and its Jobs create them: the JobSet is one PodGroup,
each Job replica (one replicated Job, one job index) a sub-group of the pods present, and
every Job present must start for the JobSet to start."""

from __future__ import annotations

from models.snapshot import SubGroup
from tests.models._kube_builders import load, load_error, node
from tests.models._owner_gang_pods import JOBSET, jobset_pod


def test_the_jobset_is_one_pod_group_and_each_job_replica_a_sub_group_of_its_pods() -> None:
    pods = [jobset_pod("train", rjob, job, index) for rjob in ("driver", "workers") for job in range(2) for index in range(2)]
    loaded = load(node("n1", gpus=8), *pods[2:], pods[0])  # input order is not gang order; driver-0 has 1 pod
    (group,) = loaded.snapshot.pod_groups
    assert group.sub_groups == (
        SubGroup(name="train-driver-1", policy="driver", min_member=2),
        SubGroup(name="train-workers-0", policy="workers", min_member=2),
        SubGroup(name="train-workers-1", policy="workers", min_member=2),
        SubGroup(name="train-driver-0", policy="driver", min_member=1),
    )
    assert (group.key, group.min_member, group.min_sub_groups) == ("default/train", 7, {"driver": 2, "workers": 2})
    assert [t.name for t in group.tasks] == ["driver", "workers"]
    assert {p.name: p.sub_group for p in loaded.snapshot.pods}["train-driver-0-0-x7k2p"] == "train-driver-0"
    assert not any("not enforced yet" in w for w in loaded.warnings)


def test_a_leader_admitted_alone_under_exclusive_placement_is_a_gang_of_one_with_its_affinity() -> None:
    # JobSet's webhook admits the followers only once the leader (completion index 0) is scheduled.
    loaded = load(node("n1", gpus=8, labels={"rack": "r1"}), jobset_pod("train", "workers", 0, 0, exclusive="rack"))
    (group,) = loaded.snapshot.pod_groups
    assert group.min_member == 1
    (task,) = group.tasks
    assert [term.topology_key for term in task.inter_pod.required_affinity] == ["rack"]
    assert not any("carries the pod affinity" in w for w in loaded.warnings)


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
