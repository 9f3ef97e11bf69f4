"""Question: how long does each dashboard page take to load in a real browser at 1,000 nodes?

Data: `experiments.synthetic` clusters — 1,000 nodes × 8 GPUs (8,000 GPU cells), 80 %
of the GPUs running, 400 pending pods, seed 3 (the snapshot the browser tests use); other
sizes with `--nodes`. The snapshot's JSON is uploaded once through `/ui/upload`.

Run: `batchplace serve` in its own process on 127.0.0.1 (the bench talks HTTP only, so
`experiments` imports nothing of `service`), one worker; headless Chromium from Debian's
package (`/usr/bin/chromium`, installed by `scripts/install-chromium.sh` when missing)
driven by Playwright. Per page, `repeats` loads; the first load of the first page also
pays the upload's one greedy solve (`first`), the others reuse it (`warm`).

Metrics, from the browser's Navigation Timing (`performance.getEntriesByType("navigation")`):
  - `server_ms`: request sent → first byte (the server's solve, view and template time);
  - `dom_ms`: navigation start → DOMContentLoaded (HTML parsed, script run);
  - `load_ms`: navigation start → load event end (styles, layout: the page is drawn);
  - `html_kb`: the HTML's size.
For the What-if page also `answer_ms`: the submit of a 64-GPU job (8 pods × 8 GPUs) →
its verdict drawn (browser → `POST /v1/what-if` with the 1.2 MB base → solve → overlay).
Medians over the repeats. Baseline: none — the numbers are what a person waits.

Output: `results/ui-bench/ui_bench.csv` (one row per size × page) and the table printed.
Run: `python -m experiments.ui_bench [--nodes 1000,2000] [--repeats 5]`.

Not promised: quiet numbers — browser, server and bench share the machine's two cores.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import httpx

from experiments.synthetic import synthetic_snapshot

__all__ = ["BenchConfig", "PageResult", "run", "main"]

REPO_ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PAGES = ("cluster", "queues", "podgroups", "what-if")
_TIMING = """() => { const n = performance.getEntriesByType("navigation")[0];
  return {server: n.responseStart - n.requestStart, dom: n.domContentLoadedEventEnd - n.startTime,
          load: n.loadEventEnd - n.startTime, bytes: n.transferSize || n.encodedBodySize}; }"""


@dataclass(frozen=True)
class BenchConfig:
    nodes: tuple[int, ...] = (1_000,)
    pending_pods: int = 400
    preload: float = 0.8
    seed: int = 3
    repeats: int = 5
    output_dir: Path = Path("results/ui-bench")


@dataclass(frozen=True)
class PageResult:
    nodes: int
    gpu_cells: int
    page: str
    first_server_ms: float
    first_load_ms: float
    server_ms: float
    dom_ms: float
    load_ms: float
    html_kb: float
    answer_ms: float | None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chromium() -> Path:
    if not CHROMIUM.exists():
        subprocess.run(["bash", str(REPO_ROOT / "scripts" / "install-chromium.sh")], check=True)
    return CHROMIUM


def _start_server(port: int) -> subprocess.Popen[bytes]:
    script = Path(sys.executable).with_name("batchplace")
    executable = str(script) if script.exists() else (shutil.which("batchplace") or "batchplace")
    command = [executable, "serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"batchplace serve exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"batchplace serve was not ready on {url}")


def _upload(url: str, path: Path) -> str:
    with path.open("rb") as handle:
        response = httpx.post(f"{url}/ui/upload", files={"file": (path.name, handle, "application/json")}, timeout=120)
    if response.status_code != 303:
        raise RuntimeError(f"upload failed: HTTP {response.status_code}: {response.text[:300]}")
    return response.headers["location"].rsplit("=", 1)[1]


def _measure_size(page: object, url: str, key: str, nodes: int, config: BenchConfig) -> list[PageResult]:
    results = []
    for position, name in enumerate(PAGES):
        timings = []
        answers = []
        first: dict[str, float] | None = None
        for repeat in range(config.repeats + (1 if position == 0 else 0)):
            page.goto(f"{url}/ui/{name}?s={key}", wait_until="load")  # type: ignore[attr-defined]
            timing = page.evaluate(_TIMING)  # type: ignore[attr-defined]
            if position == 0 and repeat == 0:
                first = timing
                continue
            timings.append(timing)
            if name == "what-if":
                page.fill("input[name=pods]", "8")  # type: ignore[attr-defined]
                page.fill("input[name=gpus]", "8")  # type: ignore[attr-defined]
                started = time.perf_counter()
                page.click("#whatif button[type=submit]")  # type: ignore[attr-defined]
                page.locator(".verdict.starts, .verdict.blocked").first.wait_for(timeout=120_000)  # type: ignore[attr-defined]
                answers.append((time.perf_counter() - started) * 1000)
        cells = page.locator("#picture .g").count() if name == "cluster" else nodes * 8  # type: ignore[attr-defined]
        first = first or timings[0]
        results.append(
            PageResult(
                nodes=nodes,
                gpu_cells=cells,
                page=name,
                first_server_ms=round(first["server"], 1),
                first_load_ms=round(first["load"], 1),
                server_ms=round(statistics.median(t["server"] for t in timings), 1),
                dom_ms=round(statistics.median(t["dom"] for t in timings), 1),
                load_ms=round(statistics.median(t["load"] for t in timings), 1),
                html_kb=round(statistics.median(t["bytes"] for t in timings) / 1024, 1),
                answer_ms=round(statistics.median(answers), 1) if answers else None,
            )
        )
    return results


def run(config: BenchConfig) -> list[PageResult]:
    from playwright.sync_api import sync_playwright

    executable = _chromium()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = _start_server(port)
    results: list[PageResult] = []
    try:
        with tempfile.TemporaryDirectory(prefix="ui-bench-") as workdir, sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(Path(workdir) / "profile"), executable_path=str(executable), headless=True,
                args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900},
            )
            page = context.new_page()
            for nodes in config.nodes:
                snapshot = synthetic_snapshot(nodes=nodes, pending_pods=config.pending_pods, preload=config.preload, seed=config.seed)
                path = Path(workdir) / f"synthetic-{nodes}.json"
                path.write_text(snapshot.model_dump_json(exclude_defaults=True))
                results.extend(_measure_size(page, url, _upload(url, path), nodes, config))
            context.close()
    finally:
        server.terminate()
        server.wait(20)
    return results


def table(results: list[PageResult]) -> str:
    lines = [
        "| nodes | GPU cells | page | first load: server / drawn | server (warm) | DOMContentLoaded | drawn (load) | HTML | what-if answer |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        first = f"{r.first_server_ms:.0f} / {r.first_load_ms:.0f} ms" if r.page == "cluster" else "—"
        answer = f"{r.answer_ms:.0f} ms" if r.answer_ms is not None else "—"
        lines.append(
            f"| {r.nodes:,} | {r.gpu_cells:,} | {r.page} | {first} | {r.server_ms:.0f} ms | {r.dom_ms:.0f} ms | "
            f"{r.load_ms:.0f} ms | {r.html_kb:.0f} kB | {answer} |"
        )
    return "\n".join(lines)


def write_csv(results: list[PageResult], output_dir: Path) -> Path:
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "ui_bench.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[f.name for f in fields(PageResult)])
        writer.writeheader()
        for result in results:
            writer.writerow(asdict(result))
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", default="1000", help="comma-separated cluster sizes (8 GPUs a node)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output-dir", type=Path, default=BenchConfig.output_dir)
    args = parser.parse_args(argv)
    config = BenchConfig(nodes=tuple(int(n) for n in args.nodes.split(",")), repeats=args.repeats, output_dir=args.output_dir)
    results = run(config)
    print(table(results))
    print(f"\nwrote {write_csv(results, config.output_dir)}")


if __name__ == "__main__":
    main()
