"""Loading a JobSet's pods, as JobSet and its Jobs create them: the JobSet is one PodGroup,
each Job replica (one replicated Job, one job index) a sub-group of the pods present, and
every Job present must start for the JobSet to start."""

from __future__ import annotations

from models.snapshot import NetworkTopology, SubGroup
from tests.models._kube_builders import hypernode, load, load_error, member, node
from tests.models._owner_gang_pods import JOBSET, jobset_object, jobset_pod, replicated_job


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


RACKED = (
    node("n1", gpus=8, labels={"rack": "r1"}),
    node("n2", gpus=8, labels={"rack": "r2"}),
    hypernode("rack-1", 1, member(exact="n1")),
    hypernode("rack-2", 1, member(exact="n2")),
    hypernode("spine", 2, member("HyperNode", exact="rack-1"), member("HyperNode", exact="rack-2")),
)


def test_the_jobset_object_is_one_pod_group_with_a_sub_group_per_job_replica() -> None:
    # workers: parallelism 4 but 2 completions → 2 pods per Job; the JobSet's rack key
    # applies to both replicated Jobs.
    jobset = jobset_object(
        "train",
        replicated_job("driver", gpus=0),
        replicated_job("workers", replicas=2, parallelism=4, completions=2, gpus=4),
        exclusive="rack",
    )
    loaded = load(*RACKED, jobset)
    (group,) = loaded.snapshot.pod_groups
    rack = NetworkTopology(mode="hard", highest_tier_allowed=1)
    assert group.sub_groups == (
        SubGroup(name="train-driver-0", policy="driver", min_member=1, network_topology=rack),
        SubGroup(name="train-workers-0", policy="workers", min_member=2, network_topology=rack),
        SubGroup(name="train-workers-1", policy="workers", min_member=2, network_topology=rack),
    )
    assert (group.key, group.min_member, group.min_sub_groups) == ("default/train", 5, {"driver": 1, "workers": 2})
    assert [(t.name, t.labels[f"{JOBSET}/replicatedjob-name"]) for t in group.tasks] == [
        ("driver", "driver"),
        ("workers", "workers"),
    ]
    assert [(p.name, p.sub_group) for p in loaded.snapshot.pods] == [
        ("train-driver-0-0", "train-driver-0"),
        ("train-workers-0-0", "train-workers-0"),
        ("train-workers-0-1", "train-workers-0"),
        ("train-workers-1-0", "train-workers-1"),
        ("train-workers-1-1", "train-workers-1"),
    ]
    assert not loaded.warnings


def test_a_replicated_jobs_own_exclusive_topology_wins_over_the_jobsets() -> None:
    jobset = jobset_object("train", replicated_job("workers", exclusive="spine-key"), exclusive="rack")
    loaded = load(*RACKED, jobset)
    assert loaded.snapshot.pod_groups[0].sub_groups[0].network_topology is None  # no node has `spine-key`
    assert any("exclusive topology 'spine-key' matches no HyperNode tier" in w for w in loaded.warnings)


def test_the_jobset_object_gives_the_job_size_its_pods_do_not_state() -> None:
    # One follower of Job workers-0 exists (completion 1, not the leader): the Job's 2 pods
    # come from the JobSet; without it the gang would be the 1 pod present.
    follower = jobset_pod("train", "workers", 0, 1)
    alone = load(node("n1", gpus=8), follower).snapshot.pod_groups[0]
    assert alone.sub_groups[0].min_member == 1
    jobset = jobset_object("train", replicated_job("workers", replicas=2, parallelism=2))
    loaded = load(node("n1", gpus=8), jobset, follower)
    (group,) = loaded.snapshot.pod_groups
    assert [(s.name, s.min_member) for s in group.sub_groups] == [("train-workers-0", 2)]
    assert any("the input holds pods this job created" in w for w in loaded.warnings)


def test_fields_for_the_jobset_controller_alone_are_named_in_one_warning() -> None:
    workers = {**replicated_job("workers", backoffLimit=3), "dependsOn": [{"name": "x", "status": "Ready"}]}
    jobset = jobset_object("train", workers, failurePolicy={"maxRestarts": 3})
    (warning,) = load(node("n1", gpus=8), jobset).warnings
    assert "spec.failurePolicy, spec.replicatedJobs[0].dependsOn, spec.replicatedJobs[0].template.spec.backoffLimit" in warning
    assert "are for the JobSet and Job controllers; placement does not read them" in warning


def test_a_suspended_or_empty_jobset_makes_no_pods() -> None:
    suspended = load(node("n1"), jobset_object("train", replicated_job("workers"), suspend=True))
    assert suspended.snapshot.pod_groups == () and any("spec.suspend is true" in w for w in suspended.warnings)
    empty = load(node("n1"), jobset_object("train", replicated_job("workers", replicas=0)))
    assert empty.snapshot.pod_groups == () and any("make no pods" in w for w in empty.warnings)


def test_a_jobset_without_replicated_jobs_or_with_one_twice_names_the_field() -> None:
    assert "(JobSet default/train): spec.replicatedJobs: a JobSet needs at least one replicated Job" in load_error(
        node("n1"), jobset_object("train")
    )
    twice = load_error(node("n1"), jobset_object("train", replicated_job("w"), replicated_job("w")))
    assert "spec.replicatedJobs[1].name: repeats replicated Job 'w'" in twice
