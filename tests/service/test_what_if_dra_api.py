"""`POST /v1/what-if` for a pod with DRA claims: the pod comes with the claim template it
names, the base is a cluster of DRA GPUs (examples/dra-gpus.yaml without that pod), and the
verdict lists the devices the claim would get — the same answer `batchplace what-if` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from batchplace.cli import app
from models.loaders import load_snapshot_yaml_text
from service.app import create_app
from service.settings import ServiceSettings
from tests.service.service_helpers import assert_valid_answer, example_text

ADDED = ("one-mig-slice", "notebook-infer")


def _split() -> tuple[str, str]:
    """The DRA example as (base YAML, the notebook pod and its MIG claim template as YAML)."""
    documents = [document for document in yaml.safe_load_all(example_text("dra-gpus.yaml")) if document]
    added = [document for document in documents if document["metadata"]["name"] in ADDED]
    return yaml.safe_dump_all([d for d in documents if d not in added]), yaml.safe_dump_all(added)


def _api(base: str, jobs: str) -> dict[str, Any]:
    with TestClient(create_app(ServiceSettings())) as client:
        response = client.post("/v1/what-if", json={"snapshot_yaml": base, "changes": {"add_jobs_yaml": jobs}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_an_added_pod_with_a_claim_gets_one_mig_device_and_the_verdict_lists_it() -> None:
    base, jobs = _split()
    answer = _api(base, jobs)
    (verdict,) = answer["jobs"]
    assert verdict["starts"] is True and verdict["nodes"] == ["a100-mig-0"]
    (claim,) = verdict["claims"]
    assert (claim["claim"], claim["pod"], claim["pod_claim"], claim["template"]) == (
        None, "ml/notebook-infer", "mig", "one-mig-slice",
    )
    (device,) = claim["devices"]
    assert device["request"] == "mig" and device["pool"] == "a100-mig-0" and device["device"].startswith("gpu-0-mig-19-")
    assert claim in answer["placement"]["claims"]  # the verdict's claims are the placement's
    changed = load_snapshot_yaml_text(base + "\n---\n" + jobs, source="changed.yaml").snapshot
    assert_valid_answer(changed, answer["placement"])


def test_the_cli_prints_the_claims_devices_under_the_added_job(tmp_path: Path) -> None:
    base, jobs = _split()
    (tmp_path / "cluster.yaml").write_text(base)
    (tmp_path / "jobs.yaml").write_text(jobs)
    result = CliRunner().invoke(app, ["what-if", str(tmp_path / "cluster.yaml"), "--add-jobs", str(tmp_path / "jobs.yaml")])
    assert result.exit_code == 0, result.output
    words = " ".join(result.stdout.split())  # rich wraps at 80 columns off a terminal
    assert "ml/podgroup-notebook-infer starts: 1/1 pods placed on a100-mig-0; preempts nothing " \
        "claim ml/notebook-infer mig (template one-mig-slice) on a100-mig-0: mig: gpu-0-mig-19-" in words
