"""Over HTTP, what the API server would refuse is a 422 naming document, object, field and
problem — posted YAML with a key written twice, a job named `Hello_Job`, half a GPU device —
while a GPU share (milli-GPUs in the snapshot form, `batchplace.io/gpu-milli` in YAML)
still places."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.builders import make_node, make_snapshot
from tests.service.service_helpers import example_text, split_example
from tests.service.test_what_if_api import vcjob

YAML = {"content-type": "application/yaml"}


def _problem(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    (item,) = response.json()["detail"]
    return item  # type: ignore[no-any-return]


def test_posted_yaml_with_a_key_twice_is_422_naming_line_and_key(client: TestClient) -> None:
    text = example_text("hello-volcano-job.yaml").replace("kind: Queue\n", "kind: Queue\nkind: Queue\n", 1)
    item = _problem(client.post("/v1/placements", content=text, headers=YAML))
    assert 'key "kind" already set in map' in item["msg"] and "line" in item["msg"]


def test_a_what_if_job_yaml_with_a_key_twice_is_422_pointing_at_it(client: TestClient) -> None:
    base, _ = split_example("hello-volcano-job.yaml")
    job = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nkind: Job\nmetadata: {name: j}\n"
    item = _problem(client.post("/v1/what-if", json={"snapshot_yaml": base, "changes": {"add_jobs_yaml": job}}))
    assert item["pointer"] == "/changes/add_jobs_yaml" and 'key "kind" already set in map (first at line 2)' in item["msg"]


def test_a_what_if_job_named_hello_job_is_422(client: TestClient) -> None:
    base, _ = split_example("hello-volcano-job.yaml")
    body = {"snapshot_yaml": base, "changes": {"add_jobs": [vcjob("Hello_Job", replicas=1, gpus=0)]}}
    item = _problem(client.post("/v1/what-if", json=body))
    assert item["pointer"] == "/changes/add_jobs/0/metadata/name" and item["object"] == "Job default/Hello_Job"
    assert item["msg"].startswith('Invalid value: "Hello_Job": a lowercase RFC 1123 subdomain must consist of')


def test_a_what_if_job_asking_half_a_gpu_device_is_422(client: TestClient) -> None:
    snapshot = make_snapshot(nodes=[make_node("n0", gpus=8)]).model_dump(mode="json")
    job = vcjob("half", replicas=2, gpus=0)
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/gpu": "0.5"}, "limits": {"nvidia.com/gpu": "0.5"}}
    item = _problem(client.post("/v1/what-if", json={"snapshot": snapshot, "changes": {"add_jobs": [job]}}))
    assert item["pointer"] == "/changes/add_jobs/0/spec/tasks/0/template/spec/containers/0/resources/requests/nvidia.com~1gpu"
    assert item["msg"] == 'Invalid value: "0.5": must be an integer'


def test_a_snapshot_with_a_fractional_extended_resource_count_is_422(client: TestClient) -> None:
    snapshot = make_snapshot(nodes=[make_node("n0", gpus=8)]).model_dump(mode="json")
    snapshot["nodes"][0]["allocatable"]["example.com/foo"] = 0.5
    item = _problem(client.post("/v1/placements", json=snapshot))
    assert item["pointer"] == "/nodes/0/allocatable/example.com~1foo"


def test_a_gpu_share_still_places_from_the_snapshot_form_and_from_yaml(client: TestClient) -> None:
    snapshot = make_snapshot(nodes=[make_node("n0", gpus=1)]).model_dump(mode="json")
    job = vcjob("share", replicas=2, gpus=0)
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"batchplace.io/gpu-milli": "500"}, "limits": {"batchplace.io/gpu-milli": "500"}}
    response = client.post("/v1/what-if", json={"snapshot": snapshot, "changes": {"add_jobs": [job]}})
    assert response.status_code == 200, response.text
    placement = response.json()["placement"]
    assert placement["valid"] and len(placement["binds"]) == 2  # two halves on the one device
