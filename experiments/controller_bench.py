"""Question: against a real kube-apiserver, how long does one controller cycle take, and how
many pods per second does the controller bind, with 1,000 nodes and 5,000 pending pods?

Data: synthetic, seeded: 1,000 Nodes of 8 GPUs, 64 cpu, 512Gi; 500 Volcano PodGroups of
10 pods each (minMember 10), every pod asking 1 GPU and 4 cpu — 5,000 GPUs of 8,000, so
everything fits and every pod must be bound.

Run: the local control plane (etcd + kube-apiserver v1.20.2, `python -m
controller.testing.control_plane`) and `batchplace controller` as separate processes (the
benchmark talks HTTP only, so `experiments` imports nothing of `controller`); objects are
created with the official client (8 threads) before the controller starts, as if it had
been down while they were submitted. The controller runs as batchplace's ServiceAccount,
`--engine ENGINE --period 1 --no-leader-elect`, and logs JSON lines, one per cycle that
acted.

Metrics: first-cycle latency (observe 5,000 pods → decide → plan → bind them all), the
solve's share of it, binds/s = pods bound / seconds from the controller's first cycle start
to the last pod bound (seen through the API), and the time until every pod is bound.
Baseline: none — `batchplace bench` times `place()` alone on comparable sizes.

Output: the table printed, and `results/controller-bench/controller_bench.json`.
Run: `python -m experiments.controller_bench [--nodes N] [--pods N] [--engine greedy|auto]`.

Not promised: quiet numbers — the API server, etcd, the controller and this client share
the machine's two cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config as k8s_config

RESULTS = Path("results") / "controller-bench"
NAMESPACE = "bench"
PODS_PER_GROUP = 10


@dataclass(frozen=True)
class BenchConfig:
    nodes: int = 1000
    pods: int = 5000
    engine: str = "greedy"
    time_limit_s: float = 10.0
    timeout_s: float = 600.0


@dataclass(frozen=True)
class BenchResult:
    nodes: int
    pods: int
    engine: str
    create_seconds: float
    first_cycle_seconds: float
    first_cycle_solve_seconds: float
    first_cycle_bound: int
    cycles_that_bound: int
    all_bound_seconds: float
    binds_per_second: float


def _node(index: int) -> dict:
    resources = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}
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


def _bound(core: k8s.CoreV1Api) -> int:
    pods = core.list_namespaced_pod(NAMESPACE, _preload_content=False)
    items = json.loads(pods.data)["items"]
    return sum(1 for pod in items if pod["spec"].get("nodeName"))


def run(config: BenchConfig) -> BenchResult:
    workdir = Path(tempfile.mkdtemp(prefix="controller-bench-"))
    plane = subprocess.Popen(
        [sys.executable, "-m", "controller.testing.control_plane", str(workdir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    controller = None
    try:
        line = plane.stdout.readline() if plane.stdout else ""
        if not line.startswith("ready"):
            raise RuntimeError(f"control plane did not start: {line!r}")
        configuration = k8s.Configuration()
        k8s_config.load_kube_config(config_file=str(workdir / "admin.kubeconfig"), client_configuration=configuration)
        configuration.connection_pool_maxsize = 16
        admin = k8s.ApiClient(configuration)
        create_seconds = _create(admin, config)
        log_path = workdir / "controller.log"
        with log_path.open("wb") as log:
            controller = subprocess.Popen(
                [sys.executable, "-c", "from batchplace.cli import main; main()", "controller",
                 "--kubeconfig", str(workdir / "controller.kubeconfig"), "--no-leader-elect",
                 "--engine", config.engine, "--time-limit", str(config.time_limit_s), "--period", "1"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        core = k8s.CoreV1Api(admin)
        deadline = time.monotonic() + config.timeout_s
        while _bound(core) < config.pods:
            if time.monotonic() > deadline or controller.poll() is not None:
                raise RuntimeError(f"not all pods bound; controller log:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        all_bound_at = time.time()
        cycles = [json.loads(l) for l in log_path.read_text().splitlines() if l.startswith("{") and '"cycle"' in l]
        acting = [c for c in cycles if c.get("bound")]
        first = acting[0]
        first_start = first["finished_unix"] - first["seconds"]
        elapsed = max(all_bound_at - first_start, 1e-9)
        return BenchResult(
            nodes=config.nodes,
            pods=config.pods,
            engine=config.engine,
            create_seconds=round(create_seconds, 2),
            first_cycle_seconds=first["seconds"],
            first_cycle_solve_seconds=first.get("solve_seconds", 0.0),
            first_cycle_bound=first["bound"],
            cycles_that_bound=len(acting),
            all_bound_seconds=round(elapsed, 2),
            binds_per_second=round(config.pods / elapsed, 1),
        )
    finally:
        if controller is not None and controller.poll() is None:
            controller.terminate()
            controller.wait(30)
        if plane.stdin:
            plane.stdin.close()
        plane.wait(60)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Controller cycle latency and binds/s against a real kube-apiserver.")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--engine", default="greedy")
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args(argv)
    result = run(BenchConfig(nodes=args.nodes, pods=args.pods, engine=args.engine, time_limit_s=args.time_limit))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "controller_bench.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
    print("| " + " | ".join(asdict(result)) + " |")
    print("|" + "---|" * len(asdict(result)))
    print("| " + " | ".join(str(v) for v in asdict(result).values()) + " |")


if __name__ == "__main__":
    main()
