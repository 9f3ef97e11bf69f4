"""`POST /v1/what-if`: per added job — starts or not, where, whom it preempts, and if not the
blocking rules with their numbers and the GPUs it is short; on the seed examples, on GPU
clusters built here, and on a live snapshot lent by a `LiveSnapshotSource`."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.dependencies import get_live_source
from service.live import FixedSnapshot
from service.settings import ServiceSettings
from solver.rules import capacity, gang
from tests.builders import make_gang, make_node, make_queue, make_snapshot, resources
from tests.service.service_helpers import example_text, snapshot_json, split_example

import yaml


def vcjob(
    name: str,
    *,
    replicas: int,
    gpus: int,
    queue: str = "default",
    min_available: int | None = None,
    priority_class: str | None = None,
    scheduler: str = "volcano",
    affinity: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Volcano Job of one task, `replicas` pods × `gpus` GPUs, as a user writes it."""
    template: dict[str, Any] = {
        "spec": {
            "containers": [{"name": "w", "image": "trainer", "resources": {
                "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}}],
        }
    }
    if priority_class:
        template["spec"]["priorityClassName"] = priority_class
    if affinity:
        template["spec"]["affinity"] = affinity
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "queue": queue,
        "minAvailable": replicas if min_available is None else min_available,
        "tasks": [{"name": "worker", "replicas": replicas, "template": template}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def node_object(name: str, *, gpus: int) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable, "capacity": allocatable}}


def gpu_cluster(*, nodes: int, running_gpus_per_node: list[int], queue_cap_gpus: int | None = None, priority: int = 0) -> dict[str, Any]:
    """`nodes` 8-GPU nodes; node i runs a pod of `running_gpus_per_node[i]` GPUs of gang `busy-i` in queue ml-team."""
    gangs = [
        make_gang(f"busy-{i}", replicas=1, gpus=g, queue="ml-team", priority=priority, running_on=[f"n{i}"])
        for i, g in enumerate(running_gpus_per_node) if g
    ]
    capability = resources(gpus=queue_cap_gpus) if queue_cap_gpus is not None else None
    snapshot = make_snapshot(
        nodes=[make_node(f"n{i}", cpu=64, gpus=8) for i in range(nodes)],
        groups=gangs,
        queues=[make_queue("ml-team", capability=capability)],
    )
    return snapshot_json(snapshot)


def ask(client: TestClient, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post("/v1/what-if", json=body)
    assert response.status_code == status, response.text
    answer = response.json()
    if status == 200:
        assert answer["placement"]["valid"] is True and answer["placement"]["violations"] == []
    return answer


# ---- the seed examples ----


def test_the_20_pod_gang_does_not_start_and_says_gang(client: TestClient) -> None:
    cluster, jobs = split_example("gang-min-available-20.yaml")
    answer = ask(client, {"snapshot_yaml": cluster, "changes": {"add_jobs": jobs}})
    (job,) = answer["jobs"]
    assert job["name"] == "default/gang-job" and job["starts"] is False
    assert job["placed"] == 0 and job["binds"] == [] and job["nodes"] == []
    assert job["blocking"][0] == "gang: 3 of min 20 pods fit (needs 80 cpu, 12 cpu free)"
    assert job["blocking_rules"][0] == gang.NAME
    assert answer["base"] == "posted_yaml"


def test_the_seed_job_with_min_available_4_starts_and_takes_every_pod_that_fits(client: TestClient) -> None:
    """20 × 4 CPU, minAvailable 4 below the task's 20, on four 8-CPU nodes: 8 pods, two a node."""
    cluster, jobs = split_example("gang-min-available-4.yaml")
    answer = ask(client, {"snapshot_yaml": cluster, "changes": {"add_jobs_yaml": yaml.safe_dump_all(jobs)}})
    (job,) = answer["jobs"]
    assert job["starts"] is True and job["placed"] == 8 and job["min_member"] == 4 and len(job["nodes"]) == 4
    assert job["blocking"] == [] and job["preempts"] == [] and job["gpus_short"] == 0
    assert {bind["pod"] for bind in job["binds"]} == {f"default/gang-job-worker-{i}" for i in range(8)}
    # The 12 that do not fit each say why, in the verdict and in the placement's PodGroup.
    why = "capacity: task worker: 0/4 nodes fit another pod: 4 insufficient cpu"
    expected = [{"pod": f"default/gang-job-worker-{i}", "reason": why} for i in range(8, 20)]
    assert job["unplaced_pods"] == expected
    (outcome,) = answer["placement"]["podgroups"]
    assert outcome["unplaced_pods"] == expected


def test_examples_posted_whole_as_the_base_are_answered_on_the_live_snapshot_too() -> None:
    from tests.service.service_helpers import example_snapshot

    cluster, jobs = split_example("gang-min-available-4.yaml")
    base = example_snapshot("gang-min-available-20.yaml")  # three 4-CPU nodes and a 20-pod gang already waiting
    client = TestClient(create_app(ServiceSettings(), live_snapshot=FixedSnapshot(base)))
    jobs[0]["metadata"]["name"] = "small-job"
    answer = ask(client, {"changes": {"add_jobs": jobs}})
    assert answer["base"] == "live"
    (job,) = answer["jobs"]
    assert job["name"] == "default/small-job" and job["starts"] is False
    assert job["blocking"][0] == "gang: 3 of min 4 pods fit (needs 16 cpu, 12 cpu free)"
    waiting = [g for g in answer["placement"]["podgroups"] if g["name"] == "default/gang-job"]
    assert waiting[0]["state"] == "pending"


# ---- GPU clusters ----


def test_quota_blocks_with_its_numbers_and_no_gpu_is_short(client: TestClient) -> None:
    base = gpu_cluster(nodes=9, running_gpus_per_node=[8] * 7 + [4], queue_cap_gpus=64)  # 60 of 64 in use
    answer = ask(client, {"snapshot": base, "changes": {"add_jobs": [vcjob("llm", replicas=1, gpus=8, queue="ml-team")]}})
    (job,) = answer["jobs"]
    assert job["starts"] is False
    assert "quota: queue ml-team capability 64 gpu, 60 in use, job needs 8" in job["blocking"]
    assert "quota" in job["blocking_rules"]
    assert (job["gpus_to_start"], job["gpus_free_eligible"], job["gpus_short"]) == (8.0, 12.0, 0.0)


H100_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]}]}}}


def _a100_and_busy_h100() -> dict[str, Any]:
    """a100-0 with 8 GPUs free, h100-0 with 4 of 8 taken."""
    busy = make_gang("busy", replicas=1, gpus=4, running_on=["h100-0"])
    nodes = [make_node("a100-0", cpu=64, gpus=8, labels={"gpu": "a100"}), make_node("h100-0", cpu=64, gpus=8, labels={"gpu": "h100"})]
    return snapshot_json(make_snapshot(nodes=nodes, groups=[busy]))


def test_a_job_requiring_h100_starts_only_on_the_h100_node(client: TestClient) -> None:
    job_object = vcjob("llm", replicas=1, gpus=4, affinity=H100_AFFINITY)
    (job,) = ask(client, {"snapshot": _a100_and_busy_h100(), "changes": {"add_jobs": [job_object]}})["jobs"]
    assert job["starts"] is True and job["nodes"] == ["h100-0"]


def test_a_job_requiring_h100_counts_only_h100_gpus_as_free_and_says_the_affinity_excludes_the_rest(
    client: TestClient,
) -> None:
    job_object = vcjob("llm", replicas=1, gpus=8, affinity=H100_AFFINITY)
    (job,) = ask(client, {"snapshot": _a100_and_busy_h100(), "changes": {"add_jobs": [job_object]}})["jobs"]
    assert job["starts"] is False
    assert (job["gpus_to_start"], job["gpus_free_eligible"], job["gpus_short"]) == (8.0, 4.0, 4.0)
    assert "1 node affinity mismatch (requires gpu In [h100])" in job["blocking"][-1]
    assert "capacity" in job["blocking_rules"]


def test_a_job_too_big_for_the_free_gpus_is_short_by_the_difference(client: TestClient) -> None:
    base = gpu_cluster(nodes=8, running_gpus_per_node=[8] * 7)  # 8 of 64 GPUs free
    answer = ask(client, {"snapshot": base, "changes": {"add_jobs": [vcjob("llm", replicas=2, gpus=8, queue="ml-team")]}})
    (job,) = answer["jobs"]
    assert job["starts"] is False and job["blocking"]
    assert (job["gpus_requested"], job["gpus_to_start"], job["gpus_free_eligible"], job["gpus_short"]) == (16.0, 16.0, 8.0, 8.0)


def test_a_high_priority_job_starts_by_preempting_and_names_its_victims(client: TestClient) -> None:
    base = gpu_cluster(nodes=2, running_gpus_per_node=[8, 8], priority=0)
    base["priority_classes"] = [{"name": "urgent", "value": 1000}]
    job_object = vcjob("urgent-llm", replicas=1, gpus=8, queue="ml-team", priority_class="urgent")
    answer = ask(client, {"snapshot": base, "changes": {"add_jobs": [job_object]}, "options": {"engine": "greedy"}})
    (job,) = answer["jobs"]
    assert job["starts"] is True and job["placed"] == 1
    assert len(job["preempts"]) == 1
    (victim,) = job["preempts"]
    assert victim["for"] == "default/urgent-llm" and victim["reason"] == "preempt"
    assert victim["node"] == job["nodes"][0]


def test_added_nodes_make_room(client: TestClient) -> None:
    base = gpu_cluster(nodes=2, running_gpus_per_node=[8, 8])
    changes = {"add_jobs": [vcjob("llm", replicas=2, gpus=8, queue="ml-team")], "add_nodes": [node_object("new-0", gpus=8), node_object("new-1", gpus=8)]}
    answer = ask(client, {"snapshot": base, "changes": changes})
    (job,) = answer["jobs"]
    assert job["starts"] is True and job["nodes"] == ["new-0", "new-1"]
    assert answer["added_nodes"] == ["new-0", "new-1"]


def test_draining_a_node_requeues_its_pods_and_takes_its_room(client: TestClient) -> None:
    base = gpu_cluster(nodes=2, running_gpus_per_node=[8, 0])
    answer = ask(client, {"snapshot": base, "changes": {"drain_nodes": ["n1"], "add_jobs": [vcjob("llm", replicas=1, gpus=8, queue="ml-team")]}})
    assert answer["drained"] == [{"node": "n1", "requeued_pods": [], "removed_pods": []}]
    (job,) = answer["jobs"]
    assert job["starts"] is False and job["gpus_free_eligible"] == 0 and job["gpus_short"] == 8
    answer = ask(client, {"snapshot": base, "changes": {"drain_nodes": ["n0"]}})
    assert answer["drained"] == [{"node": "n0", "requeued_pods": ["default/busy-0-worker-0"], "removed_pods": []}]
    moved = [b for b in answer["placement"]["binds"] if b["pod"] == "default/busy-0-worker-0"]
    assert moved and moved[0]["node"] == "n1"


def test_two_added_jobs_are_answered_in_the_order_added(client: TestClient) -> None:
    base = gpu_cluster(nodes=2, running_gpus_per_node=[0, 0])
    jobs = [vcjob("b-first", replicas=1, gpus=8, queue="ml-team"), vcjob("a-second", replicas=4, gpus=8, queue="ml-team")]
    answer = ask(client, {"snapshot": base, "changes": {"add_jobs": jobs}})
    assert [(j["name"], j["starts"]) for j in answer["jobs"]] == [("default/b-first", True), ("default/a-second", False)]


# ---- bad requests ----


@pytest.mark.parametrize(
    ("changes", "pointer", "words"),
    [
        ({"add_jobs": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}, "/changes/add_jobs/0/kind", "cannot be added as a job"),
        ({"add_jobs": [vcjob("x", replicas=1, gpus=8), {"kind": "Job"}]}, "/changes/add_jobs/1", "apiVersion"),
        ({"add_jobs": [vcjob("busy-0", replicas=1, gpus=8)]}, "/changes/add_jobs/0/metadata/name", "already exists"),
        ({"add_jobs": [vcjob("x", replicas=1, gpus=8, scheduler="default-scheduler")]}, "/changes/add_jobs/0", "schedulerName"),
        ({"add_nodes": [node_object("n0", gpus=8)]}, "/changes/add_nodes/0/metadata/name", "already exists"),
        ({"add_nodes": [vcjob("x", replicas=1, gpus=8)]}, "/changes/add_nodes/0/kind", "cannot be added as a node"),
        ({"drain_nodes": ["n0", "n9"]}, "/changes/drain_nodes/1", "no node 'n9'"),
        ({"add_jobs_yaml": "a: [b"}, "/changes/add_jobs_yaml", "not valid YAML"),
        ({"add_job": []}, "/changes/add_job", "Extra inputs"),
        ({"drain_nodes": "n0"}, "/changes/drain_nodes", "valid list"),
    ],
    ids=[
        "a ConfigMap as a job", "an object without apiVersion", "a job that exists", "another scheduler's job",
        "a node that exists", "a job as a node", "an unknown node to drain", "bad YAML", "a misspelt field", "a string for a list",
    ],
)
def test_a_bad_change_is_422_pointing_into_the_request(client: TestClient, changes: dict, pointer: str, words: str) -> None:
    base = gpu_cluster(nodes=2, running_gpus_per_node=[8, 0])
    detail = ask(client, {"snapshot": base, "changes": changes}, status=422)["detail"]
    assert any(item["pointer"] == pointer and words in item["msg"] for item in detail), detail


def test_an_added_pod_with_a_node_is_refused(client: TestClient) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n0", "schedulerName": "batchplace", "containers": []}}
    detail = ask(client, {"snapshot": gpu_cluster(nodes=1, running_gpus_per_node=[0]), "changes": {"add_jobs": [pod]}}, status=422)["detail"]
    assert detail[0]["pointer"] == "/changes/add_jobs/0/spec/nodeName"


def test_a_bare_pending_pod_is_a_job_of_one(client: TestClient) -> None:
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "notebook"},
        "spec": {"schedulerName": "batchplace", "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]},
    }
    answer = ask(client, {"snapshot": gpu_cluster(nodes=1, running_gpus_per_node=[0]), "changes": {"add_jobs": [pod]}})
    (job,) = answer["jobs"]
    assert job["starts"] is True and job["pods"] == 1 and job["gpus_placed"] == 1.0


def test_a_bad_base_snapshot_points_under_snapshot(client: TestClient) -> None:
    base = gpu_cluster(nodes=1, running_gpus_per_node=[0])
    base["nodes"][0]["allocatable"]["cpu"] = -5
    detail = ask(client, {"snapshot": base}, status=422)["detail"]
    assert detail[0]["pointer"] == "/snapshot/nodes/0/allocatable/cpu"


def test_a_bad_base_yaml_names_its_document(client: TestClient) -> None:
    text = example_text("gang-min-available-4.yaml").replace('cpu: "8"', 'cpu: "lots"')
    detail = ask(client, {"snapshot_yaml": text}, status=422)["detail"]
    assert detail[0]["pointer"] == "/snapshot_yaml" and detail[0]["document"] == 1


def test_both_bases_at_once_is_422(client: TestClient) -> None:
    body = {"snapshot": gpu_cluster(nodes=1, running_gpus_per_node=[0]), "snapshot_yaml": "x: 1"}
    detail = ask(client, body, status=422)["detail"]
    assert "not both" in detail[0]["msg"]


def test_without_a_base_a_server_with_no_live_snapshot_says_post_one(client: TestClient) -> None:
    detail = ask(client, {"changes": {}}, status=422)["detail"]
    assert detail[0]["pointer"] == "/snapshot" and "no live cluster snapshot" in detail[0]["msg"]


def test_a_live_source_without_a_snapshot_yet_is_503_retry_after(client: TestClient) -> None:
    client.app.dependency_overrides[get_live_source] = lambda: FixedSnapshot(None)  # type: ignore[attr-defined]
    response = client.post("/v1/what-if", json={})
    assert (response.status_code, response.headers["retry-after"]) == (503, "1")


def test_what_if_options_are_checked_like_query_options(client: TestClient) -> None:
    base = gpu_cluster(nodes=1, running_gpus_per_node=[0])
    detail = ask(client, {"snapshot": base, "options": {"engine": "magic"}}, status=422)["detail"]
    assert detail[0]["pointer"] == "/options/engine"
    detail = ask(client, {"snapshot": base, "options": {"objective_order": ["speed"]}}, status=422)["detail"]
    assert detail[0]["pointer"] == "/options/objective_order/0"


def test_gpus_on_a_node_that_runs_all_the_pods_it_may_are_not_free_for_a_job(client: TestClient) -> None:
    """n0 has 4 GPUs idle but runs its 2 pods; n1 has 8 idle: the job sees 8 free, starts on n1."""
    busy = [make_gang(f"busy-{i}", gpus=2, running_on=["n0"]) for i in range(2)]
    nodes = [make_node("n0", cpu=64, gpus=8, pods=2), make_node("n1", cpu=64, gpus=8)]
    base = snapshot_json(make_snapshot(nodes=nodes, groups=busy))
    answer = ask(client, {"snapshot": base, "changes": {"add_jobs": [vcjob("llm", replicas=2, gpus=4)]}})
    (job,) = answer["jobs"]
    assert job["starts"] is True and job["nodes"] == ["n1"]
    assert job["gpus_free_eligible"] == 0.0  # after the solve: n1 full of the job, n0 full of pods
    answer = ask(client, {"snapshot": base, "changes": {"add_jobs": [vcjob("big", replicas=3, gpus=4)]}})
    (job,) = answer["jobs"]
    assert job["starts"] is False and capacity.NAME in job["blocking_rules"]
    assert (job["gpus_to_start"], job["gpus_free_eligible"], job["gpus_short"]) == (12.0, 8.0, 4.0)
