"""A server started with `--partition-parts` (`ServiceSettings.partition_parts`) solves each
request in that many parts; the settings round-trip through the environment its uvicorn
workers read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from service.settings import ServiceSettings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu-topology.yaml"
YAML = {"Content-Type": "application/yaml"}


def test_a_server_told_to_partition_answers_with_the_partitioned_engine(client_for: Callable[..., TestClient]) -> None:
    whole = client_for().post("/v1/placements", content=EXAMPLE.read_text(), headers=YAML)
    parts = client_for(partition_parts=2).post("/v1/placements", content=EXAMPLE.read_text(), headers=YAML)
    assert whole.status_code == parts.status_code == 200, parts.text
    assert (whole.json()["engine"], parts.json()["engine"]) == ("cpsat", "cpsat-partitioned")
    assert sorted(b["pod"] for b in parts.json()["binds"]) == sorted(b["pod"] for b in whole.json()["binds"])
    assert parts.json()["binds"]


def test_partition_settings_survive_the_environment_round_trip() -> None:
    settings = ServiceSettings(partition_parts=3, ray_address="ray://head:10001")
    again = ServiceSettings.from_env(settings.to_env(token_file=None))
    assert (again.partition_parts, again.ray_address) == (3, "ray://head:10001")
    assert ServiceSettings.from_env(ServiceSettings().to_env(token_file=None)).ray_address is None
