"""Limits: body cap (413), bounded solver pool (429 + Retry-After, never an unbounded
queue), bearer auth (401, constant-time comparison, the token never logged)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from service import dependencies
from service.app import create_app
from service.dependencies import SolverPool, get_pool
from service.errors import NoSolverSlot
from service.settings import ServiceSettings
from tests.service.service_helpers import example_snapshot, snapshot_json

SMALL = snapshot_json(example_snapshot("hello-volcano-job.yaml"))


# ---- body cap ----


def test_a_body_past_the_cap_is_413_and_counted(client_for) -> None:  # type: ignore[no-untyped-def]
    client = client_for(max_body_bytes=4096)
    response = client.post("/v1/placements", content=b"{" + b" " * 5000 + b"}", headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "4096" in response.json()["detail"]
    assert response.headers["connection"] == "close"
    metrics = client.get("/metrics").text
    assert 'batchplace_rejected_requests_total{reason="too_large"} 1.0' in metrics
    assert 'batchplace_http_requests_total{code="413",method="POST",route="/v1/placements"} 1.0' in metrics


def test_a_chunked_body_that_grows_past_the_cap_is_413(client_for) -> None:  # type: ignore[no-untyped-def]
    client = client_for(max_body_bytes=4096)

    def chunks() -> Iterator[bytes]:
        yield b'{"nodes": ['
        for _ in range(100):
            yield b" " * 100

    response = client.post("/v1/placements", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_the_cap_applies_to_what_if_too(client_for) -> None:  # type: ignore[no-untyped-def]
    client = client_for(max_body_bytes=4096)
    response = client.post("/v1/what-if", json={"snapshot": SMALL, "changes": {"drain_nodes": ["x"] * 1000}})
    assert response.status_code == 413


def test_a_body_at_the_cap_is_read(client_for) -> None:  # type: ignore[no-untyped-def]
    import json

    body = json.dumps(SMALL).encode()
    client = client_for(max_body_bytes=max(1024, len(body)))
    assert client.post("/v1/placements", content=body, headers={"content-type": "application/json"}).status_code == 200


# ---- the bounded pool ----


async def _blocked_pool_answers(slots: int, queue: int, extra: int) -> tuple[list[int], list[str]]:
    """`slots + queue` solves held on an event, then `extra` more requests: their statuses."""
    release = threading.Event()
    app = create_app(ServiceSettings(solver_slots=slots, solver_queue=queue, retry_after_s=7))
    original = dependencies.SolverPool.run

    async def held_run(self: SolverPool, work):  # type: ignore[no-untyped-def]
        def held():  # type: ignore[no-untyped-def]
            release.wait(10)
            return work()

        return await original(self, held)

    pool: SolverPool = app.state.pool
    pool.run = held_run.__get__(pool)  # type: ignore[method-assign]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        held = [asyncio.create_task(client.post("/v1/placements", json=SMALL)) for _ in range(slots + queue)]
        while pool.running < slots or pool.queued < queue:
            await asyncio.sleep(0.01)
        refused = [await client.post("/v1/placements", json=SMALL) for _ in range(extra)]
        release.set()
        done = await asyncio.gather(*held)
    pool.shutdown()
    return [r.status_code for r in done], [f"{r.status_code} {r.headers.get('retry-after')}" for r in refused]


def test_when_every_slot_and_queue_place_is_taken_the_next_request_gets_429_at_once() -> None:
    held, refused = asyncio.run(_blocked_pool_answers(slots=1, queue=2, extra=3))
    assert held == [200, 200, 200]
    assert refused == ["429 7", "429 7", "429 7"]


def test_a_pool_without_a_queue_refuses_the_second_concurrent_solve() -> None:
    held, refused = asyncio.run(_blocked_pool_answers(slots=1, queue=0, extra=1))
    assert (held, refused) == ([200], ["429 7"])


def test_a_pool_gives_slots_back_when_solves_end_or_fail() -> None:
    async def scenario() -> tuple[int, int]:
        pool = SolverPool(slots=1, queue=0, retry_after_s=1)

        def boom() -> None:
            raise ValueError("solver failed")

        with pytest.raises(ValueError):
            await pool.run(boom)
        assert await pool.run(lambda: 41) == 41
        await asyncio.sleep(0)
        return pool.running, pool.queued

    assert asyncio.run(scenario()) == (0, 0)


def test_a_cancelled_request_keeps_its_slot_until_its_solve_ends() -> None:
    async def scenario() -> list[str]:
        pool = SolverPool(slots=1, queue=0, retry_after_s=1)
        release = threading.Event()
        task = asyncio.create_task(pool.run(lambda: release.wait(5)))
        while pool.running == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        seen = []
        try:
            await pool.run(lambda: None)
        except NoSolverSlot:
            seen.append("refused while the cancelled solve still runs")
        release.set()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if pool.running == 0 and pool.queued == 0:
                break
        await pool.run(lambda: None)
        seen.append("admitted once it ended")
        pool.shutdown()
        return seen

    assert asyncio.run(scenario()) == ["refused while the cancelled solve still runs", "admitted once it ended"]


def test_dependency_override_swaps_the_pool(client_for) -> None:  # type: ignore[no-untyped-def]
    client: TestClient = client_for()
    closed = SolverPool(slots=1, queue=0, retry_after_s=4)
    closed.shutdown()
    client.app.dependency_overrides[get_pool] = lambda: closed  # type: ignore[attr-defined]
    response = client.post("/v1/placements", json=SMALL)
    assert (response.status_code, response.headers["retry-after"]) == (429, "4")


# ---- auth ----

TOKEN = "tok-3f9a8b7c6d5e4f3a2b1c"


@pytest.fixture
def authed(client_for) -> TestClient:  # type: ignore[no-untyped-def]
    return client_for(token=TOKEN)


@pytest.mark.parametrize(
    "headers",
    [{}, {"authorization": "Bearer wrong"}, {"authorization": f"Basic {TOKEN}"}, {"authorization": f"Bearer {TOKEN}x"}],
    ids=["no header", "wrong token", "not bearer", "token with a suffix"],
)
def test_without_the_token_v1_is_401(authed: TestClient, headers: dict[str, str]) -> None:
    for path, body in (("/v1/placements", SMALL), ("/v1/what-if", {"snapshot": SMALL})):
        response = authed.post(path, json=body, headers=headers)
        assert response.status_code == 401, (path, response.text)
        assert response.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in response.text


def test_with_the_token_v1_answers(authed: TestClient) -> None:
    response = authed.post("/v1/placements", json=SMALL, headers={"authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200


def test_probes_metrics_and_docs_need_no_token(authed: TestClient) -> None:
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"):
        assert authed.get(path).status_code == 200, path


def test_the_token_is_compared_in_constant_time(authed: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = dependencies.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(dependencies.hmac, "compare_digest", spy)
    authed.post("/v1/placements", json=SMALL, headers={"authorization": "Bearer nope"})
    assert calls == [(b"nope", TOKEN.encode())]


def test_the_token_is_never_logged(authed: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    authed.post("/v1/placements", json=SMALL, headers={"authorization": f"Bearer {TOKEN}"})
    authed.post("/v1/placements", json=SMALL, headers={"authorization": f"Bearer {TOKEN}-wrong"})
    authed.post("/v1/placements", content=b"{", headers={"authorization": f"Bearer {TOKEN}"})
    assert any(r.name == "batchplace.service.access" for r in caplog.records)
    assert TOKEN not in caplog.text
    settings = authed.app.state.settings  # type: ignore[attr-defined]
    assert TOKEN not in repr(settings) and TOKEN not in str(settings)
