"""Helpers of the service tests: example inputs, snapshots as JSON, placements from answers,
and `LiveServer`, a real uvicorn server on 127.0.0.1 in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import uvicorn
import yaml

from models.loaders import load_snapshot_files
from models.placement import Bind, ClaimAllocation, Eviction, Placement
from models.snapshot import Snapshot
from solver.checker import check_placement

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


def example_text(name: str) -> str:
    return (EXAMPLES_DIR / name).read_text(encoding="utf-8")


def example_snapshot(name: str) -> Snapshot:
    return load_snapshot_files([EXAMPLES_DIR / name]).snapshot


def split_example(name: str) -> tuple[str, list[dict[str, Any]]]:
    """An example as (its cluster as YAML text, its workload objects): the base and the job to add."""
    documents = [d for d in yaml.safe_load_all(example_text(name)) if d]
    workload_kinds = {"Job", "PodGroup", "Pod"}
    cluster = [d for d in documents if d["kind"] not in workload_kinds or d.get("status", {}).get("phase") == "Running"]
    jobs = [d for d in documents if d not in cluster]
    return yaml.safe_dump_all(cluster), jobs


def snapshot_json(snapshot: Snapshot) -> dict[str, Any]:
    return snapshot.model_dump(mode="json")


def placement_of(answer: Mapping[str, Any]) -> Placement:
    """The `Placement` a placement answer (the output contract) describes."""
    return Placement(
        binds=tuple(Bind.model_validate(b) for b in answer["binds"]),
        evictions=tuple(Eviction.model_validate(e) for e in answer["evictions"]),
        claims=tuple(ClaimAllocation.model_validate(c) for c in answer.get("claims", ())),
    )


def assert_valid_answer(snapshot: Snapshot, answer: Mapping[str, Any]) -> None:
    """The answer says valid, and the checker, run here on the test's own snapshot, agrees."""
    assert answer["valid"] is True and answer["violations"] == []
    assert check_placement(snapshot, placement_of(answer)) == ()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """`with LiveServer(app) as server:` — uvicorn serving `app` on 127.0.0.1:`server.port`,
    ready (GET /readyz answered 200) on entry, stopped and joined on exit."""

    def __init__(self, app: Any, *, startup_timeout_s: float = 20.0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="uvicorn-test", daemon=True)
        self._startup_timeout_s = startup_timeout_s

    def __enter__(self) -> "LiveServer":
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.__exit__(None, None, None)
        raise RuntimeError(f"uvicorn did not become ready on {self.url}")

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
