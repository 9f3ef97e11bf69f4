"""Against a real uvicorn server on 127.0.0.1: a bounded mixed load (no 5xx, no lost
answer, every placement passes the checker), the seed examples over the wire, and
`batchplace serve` itself as a user starts it (token file, JSON-lines logs)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from models.snapshot import Snapshot
from tests.builders import make_gang, make_node, make_queue, make_snapshot, resources
from tests.service.service_helpers import (
    LiveServer,
    assert_valid_answer,
    example_snapshot,
    example_text,
    free_port,
    snapshot_json,
    split_example,
)

LOAD_REQUESTS = 2_000
LOAD_CONCURRENCY = 16
LOAD_SEED = 5


@dataclass(frozen=True)
class Shot:
    """One request of the load: what to send, which statuses are right, and for a 200 the
    snapshot its placement must pass the checker on (None: what-if, judged by `valid`)."""

    kind: str
    path: str
    content: bytes
    headers: dict[str, str]
    expected: frozenset[int]
    snapshot: Snapshot | None = None
    params: tuple[tuple[str, str], ...] = (("engine", "greedy"),)


def _gpu_snapshot(seed: int) -> Snapshot:
    rng = random.Random(seed)
    nodes = [make_node(f"n{i}", cpu=64, gpus=8, leaf=f"leaf-{i // 4}") for i in range(rng.randint(2, 12))]
    running = make_gang("running", replicas=2, gpus=4, queue="research", running_on=[nodes[0].name, nodes[1].name])
    gangs = [
        make_gang(f"job-{k}", replicas=rng.choice([1, 2, 4]), gpus=rng.choice([1, 2, 8]), queue=rng.choice(["research", "prod"]),
                  priority=rng.choice([0, 5]), topology_tier=rng.choice([None, 1]))
        for k in range(rng.randint(1, 6))
    ]
    queues = [make_queue("research", capability=resources(gpus=24)), make_queue("prod", weight=3)]
    return make_snapshot(nodes=nodes, groups=[running, *gangs], queues=queues)


def _shots() -> list[Shot]:
    json_headers = {"content-type": "application/json"}
    yaml_headers = {"content-type": "application/yaml"}
    valid: list[Shot] = []
    for name in ("hello-volcano-job.yaml", "queue-weights.yaml", "gang-min-available-20.yaml", "workflow-job.yaml", "gpu-topology.yaml"):
        snapshot = example_snapshot(name)
        valid.append(Shot("valid-json", "/v1/placements", json.dumps(snapshot_json(snapshot)).encode(), json_headers, frozenset({200}), snapshot))
        valid.append(Shot("valid-yaml", "/v1/placements", example_text(name).encode(), yaml_headers, frozenset({200}), snapshot))
    for seed in range(6):
        snapshot = _gpu_snapshot(seed)
        valid.append(Shot("valid-json", "/v1/placements", json.dumps(snapshot_json(snapshot)).encode(), json_headers, frozenset({200}), snapshot))
    cluster, jobs = split_example("gang-min-available-4.yaml")
    what_if = {"snapshot_yaml": cluster, "changes": {"add_jobs": jobs}, "options": {"engine": "greedy"}}
    valid.append(Shot("what-if", "/v1/what-if", json.dumps(what_if).encode(), json_headers, frozenset({200}), params=()))
    bad_field = snapshot_json(example_snapshot("hello-volcano-job.yaml"))
    bad_field["nodes"][0]["allocatable"]["cpu"] = -1
    invalid = [
        Shot("invalid", "/v1/placements", json.dumps(bad_field).encode(), json_headers, frozenset({422})),
        Shot("invalid", "/v1/placements", b'{"nodes": [', json_headers, frozenset({422})),
        Shot("invalid", "/v1/placements", b"kind: [", yaml_headers, frozenset({422})),
        Shot("invalid", "/v1/placements", b"{}", {"content-type": "text/plain"}, frozenset({415})),
        Shot("invalid", "/v1/placements", b"{}", json_headers, frozenset({422}), params=(("engine", "fast"),)),
        Shot("invalid", "/v1/what-if", b'{"changes": {"drain_nodes": 3}}', json_headers, frozenset({422}), params=()),
    ]
    oversized = [Shot("oversized", "/v1/placements", b"{" + b" " * (70 * 1024) + b"}", json_headers, frozenset({413}))]
    rng = random.Random(LOAD_SEED)
    shots = []
    for _ in range(LOAD_REQUESTS):
        roll = rng.random()
        pool = valid if roll < 0.7 else invalid if roll < 0.9 else oversized
        shots.append(rng.choice(pool))
    return shots


async def _fire(url: str, shots: list[Shot]) -> list[tuple[Shot, int | None, Any]]:
    limits = httpx.Limits(max_connections=LOAD_CONCURRENCY, max_keepalive_connections=LOAD_CONCURRENCY)
    gate = asyncio.Semaphore(LOAD_CONCURRENCY)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30.0) as client:

        async def one(shot: Shot) -> tuple[Shot, int | None, Any]:
            async with gate:
                try:
                    response = await client.post(shot.path, content=shot.content, headers=shot.headers, params=shot.params)
                except httpx.HTTPError as error:
                    return shot, None, repr(error)
                return shot, response.status_code, response.json() if response.status_code == 200 else response.text

        return await asyncio.gather(*(one(shot) for shot in shots))


def test_bounded_mixed_load_gets_every_answer_and_no_5xx(live_server: LiveServer) -> None:
    shots = _shots()
    started = time.monotonic()
    results = asyncio.run(_fire(live_server.url, shots))
    elapsed_s = time.monotonic() - started
    lost = [(shot.kind, error) for shot, status, error in results if status is None]
    assert lost == [], lost[:5]
    assert len(results) == LOAD_REQUESTS
    server_errors = [(shot.kind, status, body) for shot, status, body in results if status is not None and status >= 500]
    assert server_errors == [], server_errors[:3]
    wrong = [(shot.kind, status, str(body)[:200]) for shot, status, body in results if status not in shot.expected]
    assert wrong == [], wrong[:5]
    for shot, status, body in results:
        if status == 200 and shot.snapshot is not None:
            assert_valid_answer(shot.snapshot, body)
        elif status == 200:
            assert body["placement"]["valid"] is True and body["jobs"][0]["starts"] is True
    counts = Counter((shot.kind, status) for shot, status, _ in results)
    assert counts[("oversized", 413)] > 0 and counts[("valid-json", 200)] > 0 and counts[("what-if", 200)] > 0
    assert elapsed_s < 120, f"{LOAD_REQUESTS} requests took {elapsed_s:.1f} s"
    metrics = httpx.get(f"{live_server.url}/metrics").text
    assert 'code="500"' not in metrics


def test_seed_examples_over_the_wire(live_server: LiveServer) -> None:
    for name, starts in (("gang-min-available-20.yaml", False), ("gang-min-available-4.yaml", True)):
        cluster, jobs = split_example(name)
        response = httpx.post(f"{live_server.url}/v1/what-if", json={"snapshot_yaml": cluster, "changes": {"add_jobs": jobs}}, timeout=30)
        assert response.status_code == 200, response.text
        (job,) = response.json()["jobs"]
        assert job["starts"] is starts
        if not starts:
            assert job["blocking_rules"][0] == "gang" and job["blocking"][0].startswith("gang: ")


def test_the_oversized_body_gets_its_413_on_a_kept_alive_connection(live_server: LiveServer) -> None:
    with httpx.Client(base_url=live_server.url, timeout=30) as client:
        big = client.post("/v1/placements", content=b"[" + b" " * (2 * 1024 * 1024) + b"]", headers={"content-type": "application/json"})
        assert big.status_code == 413
        small = snapshot_json(example_snapshot("hello-volcano-job.yaml"))
        assert client.post("/v1/placements", json=small).status_code == 200


def test_batchplace_serve_runs_the_service_with_a_token_and_json_logs(tmp_path: Path) -> None:
    token = "serve-test-token-7c1d"
    (tmp_path / "token").write_text(token + "\n")
    port = free_port()
    command = [str(Path(sys.executable).with_name("batchplace")), "serve", "--port", str(port), "--token-file", str(tmp_path / "token"), "--solver-slots", "1"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPLACE_SERVICE_")}
    stderr_path = tmp_path / "stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env, cwd=Path(__file__).resolve().parents[2])
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            else:
                pytest.fail(f"serve never became ready: {stderr_path.read_text()[-2000:]}")
            body = snapshot_json(example_snapshot("hello-volcano-job.yaml"))
            assert httpx.post(f"{url}/v1/placements", json=body).status_code == 401
            ok = httpx.post(f"{url}/v1/placements", json=body, headers={"authorization": f"Bearer {token}"})
            assert ok.status_code == 200 and ok.json()["valid"] is True
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=20)
    lines = [json.loads(line) for line in stderr_path.read_text().splitlines() if line.strip()]
    access = [line for line in lines if line["logger"] == "batchplace.service.access"]
    assert {(line["route"], line["status"]) for line in access} >= {("/v1/placements", 401), ("/v1/placements", 200)}
    assert token not in stderr_path.read_text()
