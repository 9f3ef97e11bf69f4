"""Question: against a real kube-apiserver, how long does one controller cycle take, and how
many pods per second does the controller bind, with 1,000 nodes and 5,000 pending pods?

Data: synthetic, seeded: 1,000 Nodes of 8 GPUs, 64 cpu, 512Gi; 500 Volcano PodGroups of
10 pods each (minMember 10), every pod asking 1 GPU and 4 cpu — 5,000 GPUs of 8,000, so
everything fits and every pod must be bound. With more pods than GPUs (`--nodes 100 --pods
1200`) the gangs that fit are bound and the rest wait, each pending pod with its
PodScheduled condition (`Unschedulable`: capacity); the run then also counts the requests
of `STEADY_S` seconds of cycles once the writes settled, when nothing changes.

Run: the local control plane (etcd + kube-apiserver v1.20.2, `python -m
controller.testing.control_plane`) and `batchplace controller` as separate processes (the
benchmark talks HTTP only, so `experiments` imports nothing of `controller`); objects are
created with the official client (8 threads) before the controller starts, as if it had
been down while they were submitted. The controller runs as batchplace's ServiceAccount,
`--engine ENGINE --period 1 --no-leader-elect` (`--leader-elect`: through a Lease, so every
write asks it first, as a Deployment runs), and logs JSON lines, one per cycle that acted.

Metrics: first-cycle latency (observe 5,000 pods → decide → plan → bind them all) and its
observe / solve / act parts (from the controller's cycle log), binds/s = pods bound /
seconds from the controller's first cycle start to the last pod bound (seen through one
watch, as any client sees it), and the time until the controller's writes settle (Events
included). Where the time goes:
- CPU seconds of kube-apiserver, etcd, the controller, this client and the whole machine
  during the first cycle (utime + stime from /proc, sampled every 0.1 s), against the
  cycle's wall time × cores;
- requests the API server served, by verb and resource (its `apiserver_request_total`,
  read before the controller starts and once its writes settle), and per pod; with pods
  left pending, the `PATCH pods/status` (their PodScheduled condition) per pending pod, up
  to the settle and in the steady cycles after it;
- with `--profile`, the controller's Python CPU by part (py-spy `--gil` samples: informers,
  observe, solve, plan, act). The profiler takes CPU itself: time other runs.
Baseline: none — `batchplace bench` times `place()` alone on comparable sizes.

Output: the tables printed, and `results/controller-bench/controller_bench.json`.
Run: `python -m experiments.controller_bench [--nodes N] [--pods N] [--engine greedy|auto] [--profile] [--leader-elect]`.

Not promised: quiet numbers — the API server, etcd, the controller and this client share
the machine's two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config as k8s_config

RESULTS = Path("results") / "controller-bench"
NAMESPACE = "bench"
PODS_PER_GROUP = 10
GPUS_PER_NODE = 8  # each pod asks one
STEADY_S = 5.0  # seconds of cycles (period 1 s) counted once the writes settled


@dataclass(frozen=True)
class BenchConfig:
    nodes: int = 1000
    pods: int = 5000
    engine: str = "greedy"
    time_limit_s: float = 10.0
    timeout_s: float = 600.0
    profile: bool = False  # sample the controller with py-spy
    leader_elect: bool = False  # through a Lease, as a Deployment runs it: every write asks the Lease first


@dataclass(frozen=True)
class BenchResult:
    nodes: int
    pods: int
    engine: str
    create_seconds: float
    first_cycle_seconds: float
    first_cycle_observe_seconds: float
    first_cycle_solve_seconds: float
    first_cycle_act_seconds: float
    first_cycle_bound: int
    cycles_that_bound: int
    all_bound_seconds: float
    binds_per_second: float
    writes_settled_seconds: float  # first cycle start → the controller's last write (Events included)
    first_cycle_cpu_seconds: dict[str, float]  # per process, and the machine's total
    controller_cpu_seconds: float  # controller start → all bound
    requests: dict[str, int]  # `VERB resource` → count, controller start → writes settled
    pending_pods: int  # pods left pending: their gangs do not fit the GPUs
    steady_requests: dict[str, int]  # `VERB resource` → count in STEADY_S seconds after the writes settled
    controller_profile_samples: dict[str, int]  # py-spy samples per part of the controller (--profile)


def _node(index: int) -> dict:
    resources = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(GPUS_PER_NODE), "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{index:04d}", "labels": {"nvidia.com/gpu.product": "H100"}},
        "status": {"allocatable": resources, "capacity": resources},
    }


def _pod_group(index: int) -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": f"job-{index:04d}", "namespace": NAMESPACE},
        "spec": {"minMember": PODS_PER_GROUP, "queue": "default"},
    }


def _pod(group: int, index: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"job-{group:04d}-{index}",
            "namespace": NAMESPACE,
            "annotations": {"scheduling.k8s.io/group-name": f"job-{group:04d}"},
        },
        "spec": {
            "schedulerName": "batchplace",
            "containers": [{"name": "main", "image": "busybox", "resources": {
                "requests": {"cpu": "4", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}],
        },
    }


def _fitting_pods(config: BenchConfig) -> int:
    """Pods of the gangs that fit: whole gangs of PODS_PER_GROUP, one GPU each.
    Example: 100 nodes × 8 GPUs, 1,200 pods → 80 gangs, 800 pods (400 left pending)."""
    gangs = min(config.pods // PODS_PER_GROUP, config.nodes * GPUS_PER_NODE // PODS_PER_GROUP)
    return gangs * PODS_PER_GROUP


def _create(admin: k8s.ApiClient, config: BenchConfig) -> float:
    core, custom = k8s.CoreV1Api(admin), k8s.CustomObjectsApi(admin)
    started = time.monotonic()
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    groups = config.pods // PODS_PER_GROUP
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: core.create_node(_node(i)), range(config.nodes)))
        list(pool.map(lambda g: custom.create_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", NAMESPACE, "podgroups", _pod_group(g)), range(groups)))
        list(pool.map(lambda gi: core.create_namespaced_pod(NAMESPACE, _pod(*gi)),
                      [(g, i) for g in range(groups) for i in range(PODS_PER_GROUP)]))
    return time.monotonic() - started


class _CpuSampler:
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


MACHINE = "machine (all processes)"
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


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


class _BindWatch:
    """Counts the bench's pods bound to a node, from one watch (as any client would see them),
    and notes when the last one was bound."""

    def __init__(self, core: k8s.CoreV1Api, pods: int) -> None:
        listed = core.list_namespaced_pod(NAMESPACE, limit=1, _preload_content=False)
        self._resource_version = json.loads(listed.data)["metadata"]["resourceVersion"]
        self._core = core
        self._pods = pods
        self._bound: set[str] = set()
        self.all_bound_unix: float | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bind-watch", daemon=True)
        self._thread.start()

    def count(self) -> int:
        return len(self._bound)

    def _run(self) -> None:
        response = self._core.list_namespaced_pod(
            NAMESPACE, watch=True, resource_version=self._resource_version, timeout_seconds=3600, _preload_content=False
        )
        buffer = b""
        for chunk in response.stream(amt=None, decode_content=False):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                pod = json.loads(line)["object"]
                if pod.get("spec", {}).get("nodeName"):
                    self._bound.add(pod["metadata"]["name"])
            if len(self._bound) >= self._pods:
                self.all_bound_unix = time.time()
                self.done.set()
                response.close()
                return


def _request_counts(admin: k8s.ApiClient) -> Counter[str]:
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


def _settled_counts(admin: k8s.ApiClient, timeout_s: float = 120.0) -> tuple[Counter[str], float]:
    """Request counts once the controller's requests stopped changing (Events it sends after
    the binds included), and when that was."""
    last = _request_counts(admin)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = _request_counts(admin)
        if _writes(now) == _writes(last):
            return now, time.time() - 1.0
        last = now
    return last, time.time()


def _writes(counts: Counter[str]) -> int:
    return sum(n for what, n in counts.items() if what.split()[0] in ("POST", "PATCH", "PUT", "DELETE"))


PROFILE_CATEGORIES = (
    # (label, frame text that puts a sample in it), leaf-most match first
    ("solve (solver.place)", "solver/"),
    ("observe (caches → Snapshot)", "controller/observe.py"),
    ("plan", "controller/plan.py"),
    ("act: binds, statuses, Events", "controller/act.py"),
    ("informers: list + decode watch events", "controller/informer.py"),
    ("start-up: imports", "<module>"),
)


def _profile_split(raw: str) -> dict[str, int]:
    """py-spy's collapsed stacks → samples per PROFILE_CATEGORIES label (else "other").

    Sampled with `--gil`: only the thread holding the interpreter lock counts, so a thread
    waiting on the API server's answer (in `ssl.read`, the lock released) is not counted as
    busy; the shares are of the controller's Python CPU."""
    samples: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        label = next(
            (label for frame in reversed(frames) for label, text in PROFILE_CATEGORIES if text in frame),
            "other",
        )
        samples[label] += int(count)
    return dict(samples.most_common())


def run(config: BenchConfig) -> BenchResult:
    workdir = Path(tempfile.mkdtemp(prefix="controller-bench-"))
    plane = subprocess.Popen(
        [sys.executable, "-m", "controller.testing.control_plane", str(workdir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    controller = profiler = None
    sampler: _CpuSampler | None = None
    try:
        line = plane.stdout.readline() if plane.stdout else ""
        if not line.startswith("ready"):
            raise RuntimeError(f"control plane did not start: {line!r}")
        pids = {name: int(pid) for name, pid in (word.split("=") for word in line.split()[2:])}
        configuration = k8s.Configuration()
        k8s_config.load_kube_config(config_file=str(workdir / "admin.kubeconfig"), client_configuration=configuration)
        configuration.connection_pool_maxsize = 16
        admin = k8s.ApiClient(configuration)
        create_seconds = _create(admin, config)
        core = k8s.CoreV1Api(admin)
        fitting = _fitting_pods(config)
        watch = _BindWatch(core, fitting)
        sampler = _CpuSampler({**pids, "bench client": os.getpid()})
        sampler.start()
        before = _request_counts(admin)
        log_path = workdir / "controller.log"
        started_unix = time.time()
        with log_path.open("wb") as log:
            controller = subprocess.Popen(
                [sys.executable, "-c", "from batchplace.cli import main; main()", "controller",
                 "--kubeconfig", str(workdir / "controller.kubeconfig"),
                 "--leader-elect" if config.leader_elect else "--no-leader-elect",
                 "--engine", config.engine, "--time-limit", str(config.time_limit_s), "--period", "1"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "POD_NAMESPACE": "batchplace-system"},  # where deploy/rbac.yaml grants the Lease verbs
            )
        sampler.add("controller", controller.pid)
        profile_path = workdir / "controller.pyspy"
        if config.profile:
            profiler = subprocess.Popen(
                [_py_spy(), "record", "--pid", str(controller.pid), "--format", "raw", "--rate", "50",
                 "--gil", "--nonblocking", "--output", str(profile_path)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + config.timeout_s
        while not watch.done.wait(0.5):
            if time.monotonic() > deadline or controller.poll() is not None:
                raise RuntimeError(f"{watch.count()} of {fitting} pods bound; controller log:\n{log_path.read_text()[-3000:]}")
        all_bound_at = watch.all_bound_unix or time.time()
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(60)
        after, settled_at = _settled_counts(admin)
        time.sleep(STEADY_S)
        steady = _request_counts(admin) - after
        sampler.stop()
        cycles = [json.loads(l) for l in log_path.read_text().splitlines() if l.startswith("{") and '"cycle"' in l]
        acting = [c for c in cycles if c.get("bound")]
        first = acting[0]
        first_start = first["finished_unix"] - first["seconds"]
        elapsed = max(all_bound_at - first_start, 1e-9)
        requests = {what: n for what, n in (after - before).most_common() if n}
        profile = _profile_split(profile_path.read_text()) if config.profile and profile_path.exists() else {}
        return BenchResult(
            nodes=config.nodes,
            pods=config.pods,
            engine=config.engine,
            create_seconds=round(create_seconds, 2),
            first_cycle_seconds=first["seconds"],
            first_cycle_observe_seconds=first.get("observe_seconds", 0.0),
            first_cycle_solve_seconds=first.get("solve_seconds", 0.0),
            first_cycle_act_seconds=first.get("act_seconds", 0.0),
            first_cycle_bound=first["bound"],
            cycles_that_bound=len(acting),
            all_bound_seconds=round(elapsed, 2),
            binds_per_second=round(fitting / elapsed, 1),
            writes_settled_seconds=round(settled_at - first_start, 2),
            first_cycle_cpu_seconds=sampler.between(first_start, first["finished_unix"]),
            controller_cpu_seconds=sampler.between(started_unix, all_bound_at).get("controller", 0.0),
            requests=requests,
            pending_pods=config.pods - fitting,
            steady_requests={what: n for what, n in steady.most_common() if n},
            controller_profile_samples=profile,
        )
    finally:
        if sampler is not None:
            sampler.stop()
        for process in (profiler, controller):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(30)
        if plane.stdin:
            plane.stdin.close()
        plane.wait(60)


def _py_spy() -> str:
    beside = Path(sys.executable).with_name("py-spy")
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("--profile needs py-spy (pip install py-spy)")
    return found


def report(result: BenchResult) -> str:
    """The result as the Markdown tables docs/controller.md quotes."""
    headline = {k: v for k, v in asdict(result).items() if not isinstance(v, dict)}
    lines = [
        "| " + " | ".join(headline) + " |",
        "|" + "---|" * len(headline),
        "| " + " | ".join(str(v) for v in headline.values()) + " |",
        "",
        f"First cycle: {result.first_cycle_seconds:.1f} s wall × {CORES} cores = "
        f"{result.first_cycle_seconds * CORES:.1f} CPU-seconds available.",
        "",
        "| process | CPU s in the first cycle | share of the cores |",
        "|---|---|---|",
    ]
    capacity = max(result.first_cycle_seconds * CORES, 1e-9)
    named = {name: seconds for name, seconds in result.first_cycle_cpu_seconds.items() if name != MACHINE}
    machine = result.first_cycle_cpu_seconds.get(MACHINE, 0.0)
    rows = {**named, "other (profiler, other work)": max(0.0, machine - sum(named.values())), MACHINE: machine}
    for name, seconds in rows.items():
        lines.append(f"| {name} | {seconds:.1f} | {100 * seconds / capacity:.0f}% |")
    lines += ["", "| request (controller start → writes settled) | count | per pod |", "|---|---|---|"]
    for what, count in result.requests.items():
        lines.append(f"| {what} | {count} | {count / result.pods:.2f} |")
    if result.pending_pods:
        condition_writes = "PATCH pods/status"
        lines += [
            "",
            f"| {condition_writes} per pending pod ({result.pending_pods} pending) | count | per pending pod |",
            "|---|---|---|",
            f"| controller start → writes settled | {result.requests.get(condition_writes, 0)} | "
            f"{result.requests.get(condition_writes, 0) / result.pending_pods:.2f} |",
            f"| the {STEADY_S:.0f} s of cycles after | {result.steady_requests.get(condition_writes, 0)} | "
            f"{result.steady_requests.get(condition_writes, 0) / result.pending_pods:.2f} |",
        ]
    if result.controller_profile_samples:
        total = sum(result.controller_profile_samples.values())
        lines += [
            "",
            f"| controller Python CPU (py-spy --gil, start → all bound; process total {result.controller_cpu_seconds:.1f} CPU s)"
            " | share of samples | ≈ CPU s |",
            "|---|---|---|",
        ]
        for label, samples in result.controller_profile_samples.items():
            share = samples / total
            lines.append(f"| {label} | {100 * share:.0f}% | {share * result.controller_cpu_seconds:.1f} |")
    return "\n".join(lines)


CORES = os.cpu_count() or 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Controller cycle latency and binds/s against a real kube-apiserver.")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--engine", default="greedy")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--profile", action="store_true", help="Sample the controller with py-spy (costs CPU: time other runs).")
    parser.add_argument("--leader-elect", action="store_true", help="Lead through a Lease, as the Deployment does.")
    args = parser.parse_args(argv)
    result = run(BenchConfig(
        nodes=args.nodes, pods=args.pods, engine=args.engine, time_limit_s=args.time_limit, profile=args.profile,
        leader_elect=args.leader_elect,
    ))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "controller_bench.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
    print(report(result))


if __name__ == "__main__":
    main()
