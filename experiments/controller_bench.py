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
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from experiments.live_cluster import (
    CORES,
    GROUP_ANNOTATION,
    MACHINE,
    CpuSampler,
    LiveCluster,
    PodWatch,
    node_manifest,
    request_counts,
    settled_counts,
)

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
            "annotations": {GROUP_ANNOTATION: f"job-{group:04d}"},
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
        list(pool.map(lambda i: core.create_node(node_manifest(f"node-{i:04d}", gpus=GPUS_PER_NODE)), range(config.nodes)))
        list(pool.map(lambda g: custom.create_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", NAMESPACE, "podgroups", _pod_group(g)), range(groups)))
        list(pool.map(lambda gi: core.create_namespaced_pod(NAMESPACE, _pod(*gi)),
                      [(g, i) for g in range(groups) for i in range(PODS_PER_GROUP)]))
    return time.monotonic() - started


class _BindWatch:
    """Counts the bench's pods bound to a node, from one watch (as any client would see them),
    and notes when the last one was bound."""

    def __init__(self, core: k8s.CoreV1Api, pods: int) -> None:
        self._pods = pods
        self._bound: set[str] = set()
        self.all_bound_unix: float | None = None
        self.done = threading.Event()
        self._watch = PodWatch(core, NAMESPACE, self._seen)

    def count(self) -> int:
        return len(self._bound)

    def _seen(self, kind: str, pod: dict[str, Any]) -> bool:
        if pod.get("spec", {}).get("nodeName"):
            self._bound.add(pod["metadata"]["name"])
        if len(self._bound) < self._pods:
            return False
        self.all_bound_unix = time.time()
        self.done.set()
        return True


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
    profiler = None
    sampler: CpuSampler | None = None
    with LiveCluster(prefix="controller-bench-") as cluster:
        try:
            admin = cluster.admin
            create_seconds = _create(admin, config)
            core = k8s.CoreV1Api(admin)
            fitting = _fitting_pods(config)
            watch = _BindWatch(core, fitting)
            sampler = CpuSampler({**cluster.pids, "bench client": os.getpid()})
            sampler.start()
            before = request_counts(admin)
            started_unix = time.time()
            controller = cluster.start_controller([
                "--leader-elect" if config.leader_elect else "--no-leader-elect",
                "--engine", config.engine, "--time-limit", str(config.time_limit_s), "--period", "1",
            ])
            sampler.add("controller", controller.pid)
            profile_path = cluster.workdir / "controller.pyspy"
            if config.profile:
                profiler = subprocess.Popen(
                    [_py_spy(), "record", "--pid", str(controller.pid), "--format", "raw", "--rate", "50",
                     "--gil", "--nonblocking", "--output", str(profile_path)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
            deadline = time.monotonic() + config.timeout_s
            while not watch.done.wait(0.5):
                if time.monotonic() > deadline or controller.poll() is not None:
                    raise RuntimeError(f"{watch.count()} of {fitting} pods bound; controller log:\n{cluster.log_tail()}")
            all_bound_at = watch.all_bound_unix or time.time()
            if profiler is not None:
                profiler.send_signal(signal.SIGINT)
                profiler.wait(60)
            after, settled_at = settled_counts(admin)
            time.sleep(STEADY_S)
            steady = request_counts(admin) - after
            sampler.stop()
            acting = [c for c in cluster.cycles() if c.get("bound")]
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
            if profiler is not None and profiler.poll() is None:
                profiler.terminate()
                profiler.wait(30)


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
