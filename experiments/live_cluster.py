"""A real control plane and a `batchplace controller` as separate processes, and what the
benchmarks that measure the controller against it read: CPU per process from /proc, the API
server's own request counts, and one watch on the benchmark's pods.

Used by `experiments.controller_bench` (the first cycle over pods created while the controller
was down) and `experiments.controller_steady` (gangs arriving every second into a full
cluster). Both talk HTTP only: the control plane is `python -m
controller.testing.control_plane DIR` (etcd + kube-apiserver, the CRDs and deploy/rbac.yaml
applied), and the controller is `batchplace controller` as batchplace's ServiceAccount,
logging JSON lines, so `experiments` imports nothing of `controller`.

Not promised: quiet numbers — the API server, etcd, the controller and the benchmark share
the machine's cores; the samplers read what each process used, not what it would use alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

__all__ = [
    "CORES",
    "MACHINE",
    "GROUP_ANNOTATION",
    "CpuSampler",
    "LiveCluster",
    "PodWatch",
    "node_manifest",
    "read_answer",
    "request_counts",
    "settled_counts",
]

MACHINE = "machine (all processes)"
CORES = os.cpu_count() or 1
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
CONTROLLER_NAMESPACE = "batchplace-system"  # where deploy/rbac.yaml grants the Lease verbs
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"  # a pod's Volcano PodGroup


class LiveCluster:
    """etcd + kube-apiserver in a child process, an admin client, and at most one controller.

    Example:
        with LiveCluster(prefix="controller-steady-") as cluster:
            core = k8s.CoreV1Api(cluster.admin)
            cluster.start_controller(["--engine", "auto"])
            ...
            cycles = cluster.cycles()  # the controller's cycle log lines, parsed
    """

    def __init__(self, *, prefix: str) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix=prefix))
        self.log_path = self.workdir / "controller.log"
        self.pids: dict[str, int] = {}  # etcd and kube-apiserver, then the controller
        self.controller: subprocess.Popen[bytes] | None = None
        self._plane: subprocess.Popen[str] | None = None
        self.admin: k8s.ApiClient

    def __enter__(self) -> "LiveCluster":
        self._plane = subprocess.Popen(
            [sys.executable, "-m", "controller.testing.control_plane", str(self.workdir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        try:
            line = self._plane.stdout.readline() if self._plane.stdout else ""
            if not line.startswith("ready"):
                raise RuntimeError(f"control plane did not start: {line!r}")
            self.pids = {name: int(pid) for name, pid in (word.split("=") for word in line.split()[2:])}
            configuration = k8s.Configuration()
            k8s_config.load_kube_config(config_file=str(self.workdir / "admin.kubeconfig"), client_configuration=configuration)
            configuration.connection_pool_maxsize = 16
            self.admin = k8s.ApiClient(configuration)
        except BaseException:
            self._stop_plane()
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop_controller()
        self._stop_plane()
        shutil.rmtree(self.workdir, ignore_errors=True)  # kubeconfigs and the log: read before the exit

    def start_controller(self, args: Sequence[str]) -> subprocess.Popen[bytes]:
        """`batchplace controller ARGS` as batchplace's ServiceAccount, its log (stdout and
        stderr: JSON lines) in `log_path`."""
        with self.log_path.open("wb") as log:
            self.controller = subprocess.Popen(
                [sys.executable, "-c", "from batchplace.cli import main; main()", "controller",
                 "--kubeconfig", str(self.workdir / "controller.kubeconfig"), *args],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "POD_NAMESPACE": CONTROLLER_NAMESPACE},
            )
        self.pids["controller"] = self.controller.pid
        return self.controller

    def stop_controller(self) -> None:
        if self.controller is not None and self.controller.poll() is None:
            self.controller.terminate()
            self.controller.wait(30)

    def cycles(self) -> list[dict[str, Any]]:
        """The controller's cycle log lines (one per cycle that bound, evicted or failed a bind),
        parsed: `seconds`, `observe_seconds`, `solve_seconds`, `act_seconds`, `bound`, `engine`,
        `finished_unix`, …"""
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{") and '"cycle"' in line and '"seconds"' in line]

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else "(no log)"

    def _stop_plane(self) -> None:
        if self._plane is None:
            return
        if self._plane.stdin:
            self._plane.stdin.close()
        self._plane.wait(60)
        self._plane = None


def read_answer(response: Any) -> bytes:
    """The body of a request made with `_preload_content=False` (no model decoding), its
    connection given back to the pool: unread, the pool opens a new one — a TLS handshake —
    for every request, which costs more CPU than the request itself."""
    body = response.data
    response.release_conn()
    return body


def node_manifest(name: str, *, gpus: int) -> dict[str, Any]:
    """A Node of `gpus` H100s, 64 cpu, 512Gi and room for 110 pods; no kubelet behind it."""
    resources = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "H100"}},
        "status": {"allocatable": resources, "capacity": resources},
    }


class PodWatch:
    """One watch on a namespace's pods from the moment it is made, in a thread: `on_event(type,
    pod)` for every event, as any client sees them, until it returns True or `stop()`.

    The watch is opened again from the last resourceVersion seen when the API server ends it
    (every `WATCH_S`), so a run longer than the server's request timeout loses no event; an
    ERROR event (410: the version is gone) ends the thread with `error` set."""

    WATCH_S = 60

    def __init__(self, core: k8s.CoreV1Api, namespace: str, on_event: Callable[[str, dict[str, Any]], bool]) -> None:
        listed = core.list_namespaced_pod(namespace, limit=1, _preload_content=False)
        self._resource_version = json.loads(read_answer(listed))["metadata"]["resourceVersion"]
        self._core = core
        self._namespace = namespace
        self._on_event = on_event
        self._stop = threading.Event()
        self.error: str | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self._watch_once():
                    return
        except Exception as error:  # the thread's end is reported through `error`, not lost
            self.error = f"pod watch failed: {error}"
        finally:
            self.done.set()

    def _watch_once(self) -> bool:
        """One watch request; True once `on_event` asked to stop or the watch failed."""
        response = self._core.list_namespaced_pod(
            self._namespace, watch=True, resource_version=self._resource_version,
            timeout_seconds=self.WATCH_S, allow_watch_bookmarks=True, _preload_content=False,
        )
        buffer = b""
        try:
            for chunk in response.stream(amt=None, decode_content=False):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        self.error = f"pod watch ended: {event['object'].get('message')}"
                        return True
                    self._resource_version = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":  # only moves the version on
                        continue
                    if self._on_event(event["type"], event["object"]) or self._stop.is_set():
                        return True
        finally:
            response.close()
        return False


class CpuSampler:
    """CPU seconds used so far by each named process (and the whole machine), sampled every
    `period_s` from /proc, so the CPU of any window can be read afterwards."""

    def __init__(self, pids: dict[str, int], period_s: float = 0.1) -> None:
        self._pids = dict(pids)
        self._period_s = period_s
        self._samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def add(self, name: str, pid: int) -> None:
        self._pids[name] = pid

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            sample = {name: _process_cpu_seconds(pid) for name, pid in list(self._pids.items())}
            sample[MACHINE] = _machine_busy_seconds()
            self._samples.append((time.time(), sample))
            self._stop.wait(self._period_s)

    def between(self, start_unix: float, end_unix: float) -> dict[str, float]:
        """CPU seconds per process from `start_unix` to `end_unix` (each edge read at the
        nearest sample; a process not yet started counts from 0)."""
        first = min(self._samples, key=lambda s: abs(s[0] - start_unix))[1]
        last = min(self._samples, key=lambda s: abs(s[0] - end_unix))[1]
        return {name: round(last[name] - first.get(name, 0.0), 2) for name in last}


def _process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process and all its threads; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S


def _machine_busy_seconds() -> float:
    """CPU seconds all cores spent not idle (other work on the machine shows up here)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS_PER_S


def request_counts(admin: k8s.ApiClient) -> Counter[str]:
    """The API server's own count of requests served (`apiserver_request_total`), by
    `VERB resource[/subresource]`."""
    request = admin.param_serialize("GET", "/metrics", header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"])
    text = admin.call_api(*request).response.data.decode()
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, value = line[len("apiserver_request_total{"):].rsplit("} ", 1)
        labels = dict(re.findall(r'(\w+)="([^"]*)"', labels_text))
        if not labels.get("resource"):
            continue  # /metrics, /readyz, discovery
        what = labels["resource"] + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        counts[f"{labels['verb']} {what}"] += int(float(value))
    return counts


def settled_counts(admin: k8s.ApiClient, timeout_s: float = 120.0) -> tuple[Counter[str], float]:
    """Request counts once the writes stopped changing for a second (the controller's Events
    after its binds included), and when that was."""
    last = request_counts(admin)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = request_counts(admin)
        if _writes(now) == _writes(last):
            return now, time.time() - 1.0
        last = now
    return last, time.time()


def _writes(counts: Counter[str]) -> int:
    return sum(n for what, n in counts.items() if what.split()[0] in ("POST", "PATCH", "PUT", "DELETE"))
