"""Thousands of randomly mutated seed manifests against a real `batchplace serve` process,
16 requests in flight: every one gets its 200, 422 or 429 within the time it is allowed,
the answers that place pass the checker, and the server ends as it started — alive, and
far from the memory it would need to hurt the machine.

A mutation is what a hurried user or a broken generator does to a manifest: a key dropped
or misspelled (`contianers`), a value replaced by a hostile one (negative, 10E, 1e16,
2^63, a list where a mapping goes), a list item copied, replicas in the thousands, the
text cut short. Seeded, so a failure replays.
"""

from __future__ import annotations

import asyncio
import copy
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import yaml

from batchplace.demo import EXAMPLES_DIR
from models.errors import SnapshotError
from models.loaders import load_snapshot_yaml_text
from solver.checker import check_placement
from solver.isolation import KILL_GRACE_S
from solver.place import SAFETY_NET_FACTOR
from tests.service.service_helpers import free_port, placement_of

FUZZ_REQUESTS = 2_000
FUZZ_CONCURRENCY = 16
FUZZ_SEED = 11
TIME_LIMIT_S = 0.5
SOLVER_SLOTS, SOLVER_QUEUE = 2, 8
ANSWER_WITHIN_S = TIME_LIMIT_S * (1 + SOLVER_QUEUE / SOLVER_SLOTS) + 10.0
"""A request may wait behind a full queue (8 solves on 2 slots), then solve; the margin is
for the shared 2-core machine. Past it the client gives up and the test fails."""
SOLVE_WITHIN_S = SAFETY_NET_FACTOR * TIME_LIMIT_S + KILL_GRACE_S + 2.0
"""What the service's default (deterministic) solve promises: its budget ends near the time
limit on an idle core, and the wall clock stops it at the safety net (`SAFETY_NET_FACTOR`
time limits) when 16 requests in flight leave it little CPU; CP-SAT is killed `KILL_GRACE_S`
past that; greedy is not stopped by the limit (a mutated job of 5,000 replicas takes it a
second or two on a busy machine)."""
SERVER_PEAK_LIMIT_BYTES = 2 << 30
CHECKED_ANSWERS = 60
"""200 answers re-checked here with the test's own loader and checker (the server's own
verdict, `valid`, is asserted on every one)."""

HOSTILE_VALUES: tuple[Any, ...] = (
    -1, 0, 1, "-4", "10E", "8Ei", "1e16", "1e400", 2**63, 2**64, 10**30, "", None, "abc", [], {}, [1, 2], {"a": 1},
    True, 1.5, "0.0001m", "NaN", "4Gi", "500m", 99_999,
)


def _seed_documents() -> list[list[Any]]:
    paths = sorted(EXAMPLES_DIR.glob("*.yaml"))
    return [[d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d] for path in paths]


def _containers(node: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in `node`: mapping keys and list indices, depth first."""
    found: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((node, key))
            found.extend(_containers(value))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.append((node, index))
            found.extend(_containers(value))
    return found


def _misspelled(key: str, rng: random.Random) -> str:
    if len(key) < 2:
        return key + "x"
    i = rng.randrange(len(key) - 1)
    return key[:i] + key[i + 1] + key[i] + key[i + 2 :]


def _mutate(documents: list[Any], rng: random.Random) -> str:
    documents = copy.deepcopy(documents)
    for _ in range(rng.randint(1, 3)):
        places = _containers(documents)
        parent, key = rng.choice(places)
        move = rng.randrange(6)
        if move == 0 and isinstance(parent, dict):
            del parent[key]
        elif move == 1 and isinstance(parent, dict) and isinstance(key, str):
            parent[_misspelled(key, rng)] = parent.pop(key)
        elif move == 2 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif move == 3:
            replicas = [(p, k) for p, k in places if k == "replicas" and isinstance(p, dict)]
            if replicas:
                where, name = rng.choice(replicas)
                where[name] = rng.choice([0, 1, 50, 500, 5_000])
        else:
            parent[key] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    text = yaml.safe_dump_all(documents, sort_keys=False)
    if rng.random() < 0.1:
        text = text[: rng.randrange(len(text))]
    return text


def _requests() -> list[tuple[str, str]]:
    rng = random.Random(FUZZ_SEED)
    seeds = _seed_documents()
    return [(_mutate(rng.choice(seeds), rng), rng.choice(["greedy", "auto", "cpsat"])) for _ in range(FUZZ_REQUESTS)]


async def _fire(url: str, shots: list[tuple[str, str]]) -> list[tuple[int | None, float, Any]]:
    limits = httpx.Limits(max_connections=FUZZ_CONCURRENCY, max_keepalive_connections=FUZZ_CONCURRENCY)
    gate = asyncio.Semaphore(FUZZ_CONCURRENCY)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=ANSWER_WITHIN_S) as client:

        async def one(text: str, engine: str) -> tuple[int | None, float, Any]:
            async with gate:
                started = time.monotonic()
                try:
                    response = await client.post(
                        "/v1/placements", content=text.encode(), headers={"content-type": "application/yaml"},
                        params={"engine": engine, "time_limit_s": TIME_LIMIT_S},
                    )
                except httpx.HTTPError as error:
                    return None, time.monotonic() - started, repr(error)
                body = response.json() if response.headers.get("content-type", "").startswith("application/json") else response.text
                return response.status_code, time.monotonic() - started, body

        return await asyncio.gather(*(one(text, engine) for text, engine in shots))


def _peak_resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def test_mutated_seed_manifests_get_their_answer_and_the_server_lives_on(tmp_path: Path) -> None:
    shots = _requests()
    port = free_port()
    command = [
        sys.executable, "-c", "from batchplace.cli import main; main()", "serve", "--port", str(port),
        "--solver-slots", str(SOLVER_SLOTS), "--solver-queue", str(SOLVER_QUEUE), "--max-time-limit", str(TIME_LIMIT_S),
        "--log-level", "warning",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPLACE_SERVICE_")}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=out, env=env, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        results = asyncio.run(_fire(url, shots))
        assert server.poll() is None, f"the server died: {log.read_text()[-2000:]}"
        lost = [(status, round(seconds, 1), str(body)[:200]) for status, seconds, body in results if status is None]
        assert lost == [], lost[:5]
        unexpected = [(status, str(body)[:300]) for status, _, body in results if status not in (200, 422, 429)]
        assert unexpected == [], unexpected[:5]
        checked = 0
        for index, ((text, engine), (status, _, body)) in enumerate(zip(shots, results)):
            if status != 200:
                continue
            assert body["valid"] is True and body["violations"] == [], body["violations"][:3]
            assert body["solve_seconds"] <= SOLVE_WITHIN_S, (
                f"request {index} ({engine}): {body['solve_seconds']} s, {body['status']}, fallback {body['fallback']}"
            )
            if checked < CHECKED_ANSWERS:
                try:
                    snapshot = load_snapshot_yaml_text(text).snapshot
                except SnapshotError as error:  # the server read it, so must we
                    raise AssertionError(f"the server answered 200 to input we refuse: {error}") from None
                assert check_placement(snapshot, placement_of(body)) == ()
                checked += 1
        counts = Counter(status for status, _, _ in results)
        assert counts[200] > 0 and counts[422] > 0, counts
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        peak = _peak_resident_bytes(server.pid)
        assert peak < SERVER_PEAK_LIMIT_BYTES, f"the server peaked at {peak / 2**30:.2f} GiB"
    finally:
        server.terminate()
        server.wait(20)
