"""A real Prometheus on this machine, holding series written with its own tools.

For the usage source's tests (`controller.usage_sources.PrometheusSource`): write samples
as OpenMetrics text, turn them into TSDB blocks with `promtool tsdb create-blocks-from
openmetrics` in a temporary storage directory, then start `prometheus` on a free
127.0.0.1 port with that storage and no scrape targets, and wait for `/-/ready`. What the
source then reads over HTTP is what Prometheus' own query engine answers.

Binaries: Debian's `prometheus` package (`prometheus` and `promtool`), installed by
`scripts/install-prometheus.sh` when missing (it returns at once when they are there).
`BATCHPLACE_PROMETHEUS` names another binary (its `promtool` beside it).

Not promised: scraping, remote write, or anything but the samples given to `start`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from controller.testing.control_plane import REPO_ROOT, ControlPlaneError, free_port

__all__ = ["PrometheusServer", "Sample", "find_prometheus", "INSTALL_SCRIPT"]

INSTALL_SCRIPT = REPO_ROOT / "scripts" / "install-prometheus.sh"

Sample = tuple[str, Mapping[str, str], float, float]
"""(metric name, labels, value, unix seconds)."""


def find_prometheus() -> Path:
    """`BATCHPLACE_PROMETHEUS`, else Debian's, installed now when missing."""
    result = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-15:])
        raise ControlPlaneError(f"{INSTALL_SCRIPT.name} failed (exit {result.returncode}):\n{tail}")
    return Path(result.stdout.strip().splitlines()[-1])


def openmetrics(samples: Sequence[Sample]) -> str:
    """Samples as OpenMetrics text, one gauge family per metric, each series in time order."""
    families: dict[str, list[Sample]] = {}
    for sample in samples:
        families.setdefault(sample[0], []).append(sample)
    lines = []
    for name, members in families.items():
        lines.append(f"# TYPE {name} gauge")
        for _, labels, value, at_s in sorted(members, key=lambda s: (sorted(s[1].items()), s[3])):
            label_text = ",".join(f'{key}="{val}"' for key, val in sorted(labels.items()))
            lines.append(f"{name}{{{label_text}}} {value} {at_s:.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


class PrometheusServer:
    """Prometheus on 127.0.0.1 over a storage of the given samples; a context manager."""

    def __init__(self, samples: Sequence[Sample], *, binary: Path | None = None) -> None:
        self.samples = tuple(samples)
        self._binary = binary
        self.workdir = Path(tempfile.mkdtemp(prefix="batchplace-prom-"))
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "PrometheusServer":
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self, *, timeout_s: float = 60.0) -> None:
        binary = self._binary or find_prometheus()
        promtool = binary.parent / "promtool"
        data = self.workdir / "data"
        data.mkdir()
        source = self.workdir / "samples.om"
        source.write_text(openmetrics(self.samples), encoding="utf-8")
        result = subprocess.run(
            [str(promtool), "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
            capture_output=True, text=True, check=False,
        )
        if result.returncode != 0:
            raise ControlPlaneError(f"promtool create-blocks-from failed: {result.stderr.strip()[-2000:]}")
        config = self.workdir / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n", encoding="utf-8")
        self.port = free_port()
        log = (self.workdir / "prometheus.log").open("wb")
        try:
            self._process = subprocess.Popen(
                [
                    str(binary),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={data}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--storage.tsdb.retention.time=3650d",
                    "--log.level=warn",
                ],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir,
            )
        finally:
            log.close()
        self._wait_ready(timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise ControlPlaneError(f"prometheus exited during start-up:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise ControlPlaneError(f"prometheus not ready after {timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        path = self.workdir / "prometheus.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(no log)"

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._process = None
        if os.environ.get("BATCHPLACE_KEEP_PROMETHEUS") is None:
            shutil.rmtree(self.workdir, ignore_errors=True)
