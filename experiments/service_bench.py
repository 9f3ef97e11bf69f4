"""Question: how many requests per second does one `batchplace serve` process answer, and
how long does a caller wait (p50 / p99), for a small snapshot and for a 1,000-node one?

Data: `experiments.synthetic` clusters (seed 0, half their GPUs running): "small" = 16
nodes (128 GPUs) with 16 pending pods (~29 KB of JSON); "1k-nodes" = 1,000 nodes (8,000
GPUs) with 200 pending pods (~1.2 MB of JSON). Each is posted as the snapshot's JSON to
`POST /v1/placements?engine=…`; "what-if-1k" posts the 1,000-node snapshot to
`POST /v1/what-if` with one 64-GPU vcjob to add (8 pods × 8 GPUs).

Run: `batchplace serve` in its own process on 127.0.0.1 (a free port; the bench talks
HTTP only, so `experiments` imports nothing of `service`), one uvicorn worker, 2 solver
slots; an `httpx.AsyncClient` keeps `concurrency` requests in flight. Every scenario is
bounded twice — at most `requests` requests and at most `max_seconds` — and starts with
`warmup` untimed requests. Latency is per request, send to last byte, in the client.

Metrics: requests/s = answered requests / wall seconds of the timed phase; p50 / p99 by
numpy's linear interpolation; `non_200` counts 429s and anything else (a 5xx fails the
run). Baseline: none outside — the numbers are the service's overhead over `place()`
(`batchplace bench` times `place()` alone on the same synthetic sizes).

Output: `results/service-bench/service_bench.csv` (one row per scenario × concurrency),
`service_bench.md` (the same as a table) and `service_bench.png` (p50 / p99 bars), and
the table printed. Run: `python -m experiments.service_bench [--quick]`.

Not promised: quiet numbers — the client and the server share the machine's two cores,
so the client's own CPU use is in every figure; rerun before believing a 20 % difference.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from experiments.synthetic import synthetic_snapshot

__all__ = ["BenchConfig", "Scenario", "ScenarioResult", "build_scenarios", "run_bench", "write_report"]


@dataclass(frozen=True)
class BenchConfig:
    seed: int = 0
    engine: str = "greedy"
    concurrencies: tuple[int, ...] = (1, 8)
    small_requests: int = 400
    large_requests: int = 40
    max_seconds: float = 45.0
    warmup: int = 3
    solver_slots: int = 2
    solver_queue: int = 16
    workers: int = 1
    output_dir: Path = Path("results/service-bench")


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str
    body: bytes
    params: dict[str, str]
    nodes: int
    pending_pods: int
    requests: int


@dataclass(frozen=True)
class ScenarioResult:
    scenario: str
    nodes: int
    pending_pods: int
    body_bytes: int
    concurrency: int
    requests: int
    ok: int
    non_200: int
    seconds: float
    requests_per_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    statuses: dict[str, int] = field(default_factory=dict)


# ---- data ----


def _vcjob_64_gpus() -> dict[str, Any]:
    requests = {"cpu": "16", "nvidia.com/gpu": "8"}
    container = {"name": "trainer", "image": "trainer", "resources": {"requests": requests, "limits": {"nvidia.com/gpu": "8"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "bench-64-gpu", "namespace": "default"},
        "spec": {
            "schedulerName": "batchplace",
            "queue": "production",
            "minAvailable": 8,
            "tasks": [{"name": "worker", "replicas": 8, "template": {"spec": {"containers": [container]}}}],
        },
    }


def build_scenarios(config: BenchConfig) -> list[Scenario]:
    small = synthetic_snapshot(nodes=16, pending_pods=16, preload=0.5, seed=config.seed).model_dump(mode="json")
    large = synthetic_snapshot(nodes=1_000, pending_pods=200, preload=0.5, seed=config.seed).model_dump(mode="json")
    params = {"engine": config.engine}
    what_if = {"snapshot": large, "changes": {"add_jobs": [_vcjob_64_gpus()]}, "options": {"engine": config.engine}}
    return [
        Scenario("small", "/v1/placements", json.dumps(small).encode(), params, 16, 16, config.small_requests),
        Scenario("1k-nodes", "/v1/placements", json.dumps(large).encode(), params, 1_000, 200, config.large_requests),
        Scenario("what-if-1k", "/v1/what-if", json.dumps(what_if).encode(), {}, 1_000, 208, config.large_requests),
    ]


# ---- run ----


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve_command(config: BenchConfig, port: int) -> list[str]:
    script = Path(sys.executable).with_name("batchplace")
    executable = str(script) if script.exists() else (shutil.which("batchplace") or "batchplace")
    return [
        executable, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(config.workers),
        "--solver-slots", str(config.solver_slots), "--solver-queue", str(config.solver_queue),
        "--log-level", "warning",
    ]


def _wait_ready(url: str, process: subprocess.Popen[bytes], timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"batchplace serve exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"batchplace serve was not ready on {url} within {timeout_s} s")


async def _load(url: str, scenario: Scenario, *, concurrency: int, warmup: int, max_seconds: float) -> ScenarioResult:
    headers = {"content-type": "application/json"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120.0) as client:
        for _ in range(warmup):
            await client.post(scenario.path, content=scenario.body, headers=headers, params=scenario.params)
        latencies_s: list[float] = []
        statuses: dict[str, int] = {}
        issued = 0
        started = time.perf_counter()
        deadline = started + max_seconds

        async def worker() -> None:
            nonlocal issued
            while issued < scenario.requests and time.perf_counter() < deadline:
                issued += 1
                sent = time.perf_counter()
                response = await client.post(scenario.path, content=scenario.body, headers=headers, params=scenario.params)
                latencies_s.append(time.perf_counter() - sent)
                statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1
                if response.status_code >= 500:
                    raise RuntimeError(f"{scenario.name}: HTTP {response.status_code}: {response.text[:300]}")

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
    ms = np.array(latencies_s) * 1000
    return ScenarioResult(
        scenario=scenario.name,
        nodes=scenario.nodes,
        pending_pods=scenario.pending_pods,
        body_bytes=len(scenario.body),
        concurrency=concurrency,
        requests=len(latencies_s),
        ok=statuses.get("200", 0),
        non_200=len(latencies_s) - statuses.get("200", 0),
        seconds=round(seconds, 3),
        requests_per_s=round(len(latencies_s) / seconds, 2),
        p50_ms=round(float(np.percentile(ms, 50)), 2),
        p90_ms=round(float(np.percentile(ms, 90)), 2),
        p99_ms=round(float(np.percentile(ms, 99)), 2),
        max_ms=round(float(ms.max()), 2),
        statuses=statuses,
    )


def run_bench(config: BenchConfig) -> list[ScenarioResult]:
    """Start `batchplace serve`, run every scenario at every concurrency, stop the server."""
    scenarios = build_scenarios(config)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPLACE_SERVICE_")}
    process = subprocess.Popen(_serve_command(config, port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_ready(url, process)
        results = []
        for scenario in scenarios:
            for concurrency in config.concurrencies:
                results.append(
                    asyncio.run(_load(url, scenario, concurrency=concurrency, warmup=config.warmup, max_seconds=config.max_seconds))
                )
        return results
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


# ---- report ----

_COLUMNS = ("scenario", "nodes", "pending_pods", "body_bytes", "concurrency", "requests", "ok", "non_200",
            "seconds", "requests_per_s", "p50_ms", "p90_ms", "p99_ms", "max_ms")


def markdown_table(results: list[ScenarioResult]) -> str:
    head = "| scenario | nodes | body | concurrency | requests | non-200 | req/s | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    rows = [
        f"| {r.scenario} | {r.nodes:,} | {r.body_bytes / 1024:,.0f} KiB | {r.concurrency} | {r.requests} | {r.non_200} | "
        f"{r.requests_per_s:,.1f} | {r.p50_ms:,.1f} | {r.p99_ms:,.1f} |"
        for r in results
    ]
    return "\n".join([head, *rows])


def write_report(results: list[ScenarioResult], config: BenchConfig) -> Path:
    out = config.output_dir
    out.mkdir(parents=True, exist_ok=True)
    with (out / "service_bench.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=_COLUMNS)
        writer.writeheader()
        for result in results:
            writer.writerow({name: getattr(result, name) for name in _COLUMNS})
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()}
    (out / "service_bench.md").write_text(
        f"# batchplace serve: throughput and latency\n\n{machine}; settings {json.dumps(settings)}\n\n{markdown_table(results)}\n"
    )
    _plot(results, out / "service_bench.png")
    return out


def _plot(results: list[ScenarioResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r.scenario}\nc={r.concurrency}" for r in results]
    x = np.arange(len(results))
    figure, axis = plt.subplots(figsize=(max(6, 1.2 * len(results)), 4))
    axis.bar(x - 0.2, [r.p50_ms for r in results], 0.4, label="p50")
    axis.bar(x + 0.2, [r.p99_ms for r in results], 0.4, label="p99")
    axis.set_xticks(x, labels, fontsize=8)
    axis.set_ylabel("latency (ms, log)")
    axis.set_yscale("log")
    axis.set_title("batchplace serve: POST latency per request")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.service_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few requests per scenario (a smoke run)")
    parser.add_argument("--engine", default="greedy", choices=("greedy", "auto", "cpsat"))
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--output-dir", type=Path, default=BenchConfig.output_dir)
    args = parser.parse_args(argv)
    config = BenchConfig(engine=args.engine, workers=args.workers, output_dir=args.output_dir)
    if args.quick:
        config = BenchConfig(engine=args.engine, workers=args.workers, output_dir=args.output_dir,
                             small_requests=20, large_requests=3, warmup=1, max_seconds=10.0)
    results = run_bench(config)
    out = write_report(results, config)
    print(markdown_table(results))
    print(f"\nwritten to {out}/service_bench.{{csv,md,png}}")


if __name__ == "__main__":
    main()
