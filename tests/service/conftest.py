"""Fixtures of the service tests: a TestClient per settings, and a real uvicorn server."""

from __future__ import annotations

import warnings

# Starlette ≥ 1.x prefers the `httpx2` package for its TestClient and warns about `httpx`;
# both work, and the project depends on httpx (also its real-server client).
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")

from collections.abc import Callable, Iterator  # noqa: E402

import pytest  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from service.app import create_app  # noqa: E402
from service.settings import ServiceSettings  # noqa: E402
from tests.service.service_helpers import LiveServer  # noqa: E402


@pytest.fixture
def client_for() -> Iterator[Callable[..., TestClient]]:
    """`client_for(solver_slots=1, token="t")` → a TestClient of a fresh app with those settings.
    `raise_server_exceptions=False` so a 500 shows as a status the tests assert is absent."""
    clients: list[TestClient] = []

    def build(**settings: object) -> TestClient:
        client = TestClient(create_app(ServiceSettings(**settings)), raise_server_exceptions=False)  # type: ignore[arg-type]
        client.__enter__()
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(client_for: Callable[..., TestClient]) -> TestClient:
    return client_for()


@pytest.fixture(scope="module")
def live_server() -> Iterator[LiveServer]:
    """A uvicorn server on 127.0.0.1 (free port) in a thread; small caps so 413 is cheap."""
    settings = ServiceSettings(max_body_bytes=64 * 1024, solver_slots=2, solver_queue=16, max_time_limit_s=2.0)
    with LiveServer(create_app(settings)) as server:
        yield server
