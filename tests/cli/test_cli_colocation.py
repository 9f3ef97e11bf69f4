"""The CLI and the HTTP API take colocation as users write it: Volcano's qos-level annotation on
a pod or a PriorityClass, Volcano's node label, online usage in batchplace.io/usage, and the
--colocation-margin / --no-colocation flags; the JSON snapshot carries the same as fields."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from batchplace.cli import app
from models.loaders import load_snapshot_files
from service.app import create_app
from service.settings import ServiceSettings

FILE = Path(__file__).parent.parent / "data" / "colocation.yaml"
runner = CliRunner()


def test_the_annotations_and_labels_are_read() -> None:
    snapshot = load_snapshot_files([str(FILE)], scheduler_names=("batchplace",)).snapshot
    assert {pod.name: pod.offline for pod in snapshot.pods} == {"web": False, "etl": True, "etl2": True}  # annotation; PriorityClass
    assert snapshot.node_by_name["n1"].colocation
    assert [c.offline for c in snapshot.priority_classes] == [True]


def _binds(*flags: str) -> list[str]:
    result = runner.invoke(app, ["solve", str(FILE), "--scheduler-name", "batchplace", "--engine", "greedy", "--output", "json", *flags])
    assert result.exit_code == 0, result.output
    return sorted(bind["pod"] for bind in json.loads(result.stdout)["binds"])


def test_solve_uses_the_oversubscribed_room_and_the_flags_change_it() -> None:
    # n1: 16 cpu, web requests 12 and the node uses 25 %: room 16 − 4 − 1.6 = 10.4 for etl (8) or etl2 (4)
    assert len(_binds()) == 1
    assert _binds("--colocation-margin", "cpu=0") == ["default/etl", "default/etl2"]  # room 12: both
    assert _binds("--no-colocation") == ["default/etl2"]  # 4 unrequested cpu: etl2 only, as any pod
    assert _binds("--colocation-margin", "gpu=5") == _binds()  # no lent device here: a GPU margin changes nothing
    bad = runner.invoke(app, ["solve", str(FILE), "--colocation-margin", "gpu=150"])
    assert bad.exit_code != 0 and "gpu:" in bad.output and "100" in bad.output


def test_the_http_api_takes_the_json_fields() -> None:
    snapshot = load_snapshot_files([str(FILE)], scheduler_names=("batchplace",)).snapshot
    body = snapshot.model_dump(mode="json")
    assert body["pods"][1]["offline"] is True and body["nodes"][0]["usage"]["cpu_percent"] == 25
    body["colocation_policy"] = {"cpu_margin_percent": 0}
    response = TestClient(create_app(ServiceSettings())).post("/v1/placements", json=body, params={"engine": "greedy"})
    assert response.status_code == 200, response.text
    assert len(response.json()["binds"]) == 2  # margin 0: room 12 takes both
