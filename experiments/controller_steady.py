"""Question: in steady state — a full cluster, a new 8-pod gang every second, old gangs
finishing at the same rate — how long does a pod wait from creation to bind under
`batchplace controller`, with kube-apiserver and etcd on the same machine?

Data: synthetic, seeded (`--seed`). `--nodes` Nodes of 8 GPUs, 64 cpu, 512Gi (default
10,000: 80,000 GPUs). `--running` pods (default 100,000, rounded down to whole gangs of 8)
already bound and Running before the controller starts, in complete Volcano PodGroups of 8
(minMember 8, phase Running, the status batchplace writes for a running gang, so its first
cycle has nothing to rewrite): GPU gangs first, each pod asking 1 GPU + 4 cpu, up to
`GPU_FILL` of the GPUs (at the defaults 64,000 pods fill 80 % of the 80,000 GPUs); the
other pods are CPU-only gangs (1 cpu a pod: loaders, services), at most
`CPU_SLOTS_PER_NODE` a node, so a node's cpu never blocks a GPU pod. Each pod takes a GPU
slot (or a cpu slot) from a seeded shuffle of all slots: gangs spread over nodes, free GPUs
scattered. Created with the official client, `--threads` threads and a progress bar: each
pod with `spec.nodeName` set, then its status Running through pods/status, as a kubelet
writes it.

Run: the control plane and `batchplace controller --engine ENGINE --no-leader-elect` with
its default period (and time limit, unless `--time-limit`) as processes
(`experiments.live_cluster`). A warm-up gang is submitted and waited for, then the writes
are left to settle: the controller's caches are synced and its first cycles are over. Then
every `--interval` s for `--duration` s: one bound GPU gang, drawn at random, finishes (its
pods deleted with grace 0, then its PodGroup), and a new gang is submitted (its PodGroup,
minMember 8, then its 8 pods of 1 GPU + 4 cpu, created in parallel); the GPUs in use stay
where they started. One watch notes when each new pod is first seen bound (`spec.nodeName`
set), and the bench plays the kubelet: each bound pod is marked Running. After the last
submission the bench waits up to `--drain` s for the last gangs.

Metrics (`experiments.controller_steady_report`): per pod, creation → bind latency, from
this bench's clock when the create returned to the watch first seeing it bound (the
object's creationTimestamp is kept in the CSV too, but it has one-second resolution); per
gang, from its first pod's create to its last pod bound; p50/p90/p99/max of both; gangs
bound whole / submitted; the controller's cycle times from its JSON cycle log (the cycles
that bound: total, observe, solve, act); CPU seconds of kube-apiserver, etcd, the
controller and this client in the measured window, against window × cores; the rate the
running pods were created at.
Baseline: none — `experiments.controller_bench` times the first cycle of a cold start.

Output: a table printed; under `--out` (default results/controller-steady/): steady.json,
steady_pods.csv, steady_cycles.csv and steady_latency.png (latency over time).
Run: `python -m experiments.controller_steady [--nodes N] [--running N] [--engine auto|greedy|cpsat]
[--interval S] [--duration S]`; small: `--nodes 200 --running 1000 --duration 15`.

Not promised: quiet numbers — the API server, etcd, the controller and this client share
the machine's cores, and the bench's own writes (creates, deletes, Running statuses, the
watch) are part of the load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from experiments.controller_steady_records import GANG_PODS, CycleRecord, PodRecord, SteadyConfig, SteadyRun
from experiments.controller_steady_report import summarize, table, write_outputs
from experiments.live_cluster import (
    GROUP_ANNOTATION,
    CpuSampler,
    LiveCluster,
    PodWatch,
    node_manifest,
    read_answer,
    request_counts,
    settled_counts,
)
from solver.place import ENGINES

NAMESPACE = "steady"
GPUS_PER_NODE = 8
GPU_FILL = 0.8  # share of the GPUs the running GPU gangs take
CPU_SLOTS_PER_NODE = 32  # 1-cpu pods a node takes at most: 64 cpu − 8 GPU pods × 4 cpu
WARM_UP_GANG = "warmup"
CYCLE_LOG_S = 1.0  # after the last bind, time for the cycle that bound it to write its log line
GROUP_API = ("scheduling.volcano.sh", "v1beta1")


@dataclass(frozen=True)
class RunningLoad:
    """Where the running pods sit: gang name → the node of each of its pods (in pod order)."""

    gpu_gangs: dict[str, tuple[str, ...]]
    cpu_gangs: dict[str, tuple[str, ...]]

    @property
    def pods(self) -> int:
        return GANG_PODS * (len(self.gpu_gangs) + len(self.cpu_gangs))


def running_load(config: SteadyConfig) -> RunningLoad:
    """Place the running gangs on seeded random slots. Example: 200 nodes (1,600 GPUs), 1,000
    pods → 125 GPU gangs (1,000 GPUs, under 80 % of 1,600) and no CPU-only gang."""
    rng = random.Random(config.seed)
    gangs = config.running // GANG_PODS
    gpu_gangs = min(gangs, int(GPU_FILL * config.nodes * GPUS_PER_NODE) // GANG_PODS)
    cpu_gangs = gangs - gpu_gangs
    if cpu_gangs * GANG_PODS > config.nodes * CPU_SLOTS_PER_NODE:
        raise ValueError(
            f"--running {config.running}: {cpu_gangs * GANG_PODS} CPU-only pods do not fit {config.nodes} nodes "
            f"× {CPU_SLOTS_PER_NODE} cpu slots; ask fewer pods or more nodes"
        )
    return RunningLoad(
        gpu_gangs=_spread(rng, "gpu", gpu_gangs, nodes=config.nodes, slots_per_node=GPUS_PER_NODE),
        cpu_gangs=_spread(rng, "cpu", cpu_gangs, nodes=config.nodes, slots_per_node=CPU_SLOTS_PER_NODE),
    )


def _spread(rng: random.Random, kind: str, gangs: int, *, nodes: int, slots_per_node: int) -> dict[str, tuple[str, ...]]:
    slots = [_node_name(n) for n in range(nodes) for _ in range(slots_per_node)]
    rng.shuffle(slots)
    return {f"run-{kind}-{g:05d}": tuple(slots[g * GANG_PODS:(g + 1) * GANG_PODS]) for g in range(gangs)}


def _node_name(index: int) -> str:
    return f"node-{index:05d}"


def _pod_group(name: str, *, running: bool) -> dict[str, Any]:
    group: dict[str, Any] = {
        "apiVersion": "/".join(GROUP_API),
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"minMember": GANG_PODS, "queue": "default"},
    }
    if running:  # what batchplace writes for a gang it started (controller.status.scheduled)
        group["status"] = {"phase": "Running", "running": GANG_PODS, "conditions": [{
            "type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled",
            "message": f"{GANG_PODS}/{GANG_PODS} tasks bound or running, minMember {GANG_PODS}",
            "transitionID": "steady-bench", "lastTransitionTime": _now()}]}
    return group


def _pod(name: str, group: str, *, gpus: int, cpu: int, node: str | None = None) -> dict[str, Any]:
    requests = {"cpu": str(cpu), **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    spec: dict[str, Any] = {
        "schedulerName": "batchplace",
        "containers": [{"name": "main", "image": "busybox", "resources": {
            "requests": requests, **({"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {})}}],
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": {GROUP_ANNOTATION: group}},
        "spec": spec,
    }


RUNNING_STATUS_CONDITIONS = ("Initialized", "ContainersReady", "Ready")


def _running_status() -> dict[str, Any]:
    """The pods/status patch a kubelet sends once the containers started."""
    now = _now()
    return {"status": {"phase": "Running", "startTime": now, "hostIP": "127.0.0.1", "conditions": [
        {"type": condition, "status": "True", "lastTransitionTime": now} for condition in RUNNING_STATUS_CONDITIONS]}}


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn())  # fmt: skip


def _in_parallel(pool: ThreadPoolExecutor, call: Callable[[Any], object], items: Iterable[Any], *, what: str, progress: Progress) -> None:
    """`call(item)` for each item in the pool, a bar advancing as each returns; the first error is raised."""
    items = list(items)
    task = progress.add_task(what, total=len(items))
    futures = [pool.submit(call, item) for item in items]
    for future in futures:
        future.result()
        progress.advance(task)


def create_running(cluster: LiveCluster, config: SteadyConfig, load: RunningLoad) -> float:
    """Nodes, the running gangs' PodGroups and their pods, bound and Running. Returns the
    seconds the pods took (create + status), for the creation rate."""
    core, custom = k8s.CoreV1Api(cluster.admin), k8s.CustomObjectsApi(cluster.admin)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})

    def start_pod(item: tuple[str, str, int, str]) -> None:
        name, group, gpus, node = item
        read_answer(core.create_namespaced_pod(NAMESPACE, _pod(name, group, gpus=gpus, cpu=4 if gpus else 1, node=node), _preload_content=False))
        read_answer(core.patch_namespaced_pod_status(name, NAMESPACE, _running_status(), _preload_content=False))

    pods = [(f"{group}-{i}", group, gpus, node)
            for gangs, gpus in ((load.gpu_gangs, 1), (load.cpu_gangs, 0))
            for group, nodes in gangs.items() for i, node in enumerate(nodes)]  # fmt: skip
    with ThreadPoolExecutor(config.threads) as pool, _progress() as progress:
        _in_parallel(pool, lambda n: read_answer(core.create_node(node_manifest(_node_name(n), gpus=GPUS_PER_NODE), _preload_content=False)),
                     range(config.nodes), what="nodes", progress=progress)  # fmt: skip
        _in_parallel(pool, lambda g: read_answer(custom.create_namespaced_custom_object(
                         *GROUP_API, NAMESPACE, "podgroups", _pod_group(g, running=True), _preload_content=False)),
                     [*load.gpu_gangs, *load.cpu_gangs], what="running PodGroups", progress=progress)  # fmt: skip
        started = time.monotonic()
        _in_parallel(pool, start_pod, pods, what="running pods (bound, Running)", progress=progress)
        return time.monotonic() - started


@dataclass
class _Tracker:
    """What the watch and the submitters learn, under one lock: when each new pod was created
    and bound, and which GPU gangs are bound whole (those the bench may finish)."""

    finishable: list[str]
    created: dict[str, tuple[str, float, str]] = field(default_factory=dict)  # pod → (gang, created_unix, creationTimestamp)
    bound: dict[str, tuple[float, str]] = field(default_factory=dict)  # pod → (bound_unix, node)
    gang_bound: dict[str, int] = field(default_factory=dict)  # gang → pods bound
    lock: threading.Lock = field(default_factory=threading.Lock)

    def saw_bound(self, pod: str, gang: str, node: str, at_unix: float) -> bool:
        """True the first time `pod` is seen bound."""
        with self.lock:
            if pod in self.bound:
                return False
            self.bound[pod] = (at_unix, node)
            self.gang_bound[gang] = self.gang_bound.get(gang, 0) + 1
            if self.gang_bound[gang] == GANG_PODS:
                self.finishable.append(gang)
            return True

    def whole(self, gang: str) -> bool:
        with self.lock:
            return self.gang_bound.get(gang, 0) == GANG_PODS


class _Steady:
    """The measured phase: gangs in, gangs out, the watch noting binds and playing the kubelet."""

    def __init__(self, cluster: LiveCluster, config: SteadyConfig, load: RunningLoad) -> None:
        self._core = k8s.CoreV1Api(cluster.admin)
        self._custom = k8s.CustomObjectsApi(cluster.admin)
        self._rng = random.Random(config.seed + 1)
        self._tracker = _Tracker(finishable=list(load.gpu_gangs))
        self._requests = ThreadPoolExecutor(config.threads, thread_name_prefix="steady-request")
        self._gangs = ThreadPoolExecutor(4, thread_name_prefix="steady-gang")
        self.watch = PodWatch(self._core, NAMESPACE, self._seen)

    def close(self) -> None:
        self.watch.stop()
        self._gangs.shutdown(wait=True)
        self._requests.shutdown(wait=True)

    def _seen(self, kind: str, pod: dict[str, Any]) -> bool:
        node = (pod.get("spec") or {}).get("nodeName")
        name = pod["metadata"]["name"]
        gang = (pod["metadata"].get("annotations") or {}).get(GROUP_ANNOTATION, "")
        if kind == "DELETED" or not node or gang.startswith("run-"):
            return False
        if self._tracker.saw_bound(name, gang, node, time.time()):
            self._requests.submit(self._mark_running, name)
        return False

    def _mark_running(self, pod: str) -> None:
        try:
            read_answer(self._core.patch_namespaced_pod_status(pod, NAMESPACE, _running_status(), _preload_content=False))
        except ApiException as error:
            if error.status != 404:  # finished before it started: nothing to mark
                raise

    def submit(self, gang: str) -> None:
        self._gangs.submit(self._submit, gang)

    def _submit(self, gang: str) -> None:
        read_answer(self._custom.create_namespaced_custom_object(
            *GROUP_API, NAMESPACE, "podgroups", _pod_group(gang, running=False), _preload_content=False))
        futures = [self._requests.submit(self._create_pod, gang, f"{gang}-{i}") for i in range(GANG_PODS)]
        for future in futures:
            future.result()

    def _create_pod(self, gang: str, pod: str) -> None:
        response = self._core.create_namespaced_pod(NAMESPACE, _pod(pod, gang, gpus=1, cpu=4), _preload_content=False)
        created_unix = time.time()
        stamp = json.loads(read_answer(response))["metadata"]["creationTimestamp"]
        with self._tracker.lock:
            self._tracker.created[pod] = (gang, created_unix, stamp)

    def finish_one(self) -> bool:
        """A bound GPU gang, drawn at random, ends: its pods deleted (grace 0), then its
        PodGroup. False when none is bound."""
        with self._tracker.lock:
            if not self._tracker.finishable:
                return False
            index = self._rng.randrange(len(self._tracker.finishable))
            finishable = self._tracker.finishable
            finishable[index], finishable[-1] = finishable[-1], finishable[index]
            gang = finishable.pop()
        self._gangs.submit(self._delete, gang)
        return True

    def _delete(self, gang: str) -> None:
        futures = [self._requests.submit(self._delete_pod, f"{gang}-{i}") for i in range(GANG_PODS)]
        for future in futures:
            future.result()
        read_answer(self._custom.delete_namespaced_custom_object(*GROUP_API, NAMESPACE, "podgroups", gang, _preload_content=False))

    def _delete_pod(self, pod: str) -> None:
        read_answer(self._core.delete_namespaced_pod(pod, NAMESPACE, grace_period_seconds=0, _preload_content=False))

    def wait_submitted(self) -> None:
        """Every create and delete asked for so far has returned."""
        self._gangs.shutdown(wait=True)
        self._gangs = ThreadPoolExecutor(4, thread_name_prefix="steady-gang")

    def wait_bound(self, gangs: list[str], *, timeout_s: float, alive: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(self._tracker.whole(g) for g in gangs):
                return True
            if self.watch.error or not alive():
                return False
            time.sleep(0.05)
        return False

    def records(self, gangs: list[str]) -> tuple[PodRecord, ...]:
        with self._tracker.lock:
            created, bound = dict(self._tracker.created), dict(self._tracker.bound)
        records = []
        for gang in gangs:
            for i in range(GANG_PODS):
                pod = f"{gang}-{i}"
                if pod not in created:
                    continue
                _, created_unix, stamp = created[pod]
                bound_unix, node = bound.get(pod, (None, None))
                records.append(PodRecord(gang=gang, pod=pod, created_unix=created_unix, creation_timestamp=stamp,
                                         bound_unix=bound_unix, node=node))  # fmt: skip
        return tuple(records)


def run(config: SteadyConfig) -> SteadyRun:
    load = running_load(config)
    with LiveCluster(prefix="controller-steady-") as cluster:
        create_seconds = create_running(cluster, config, load)
        steady = _Steady(cluster, config, load)
        sampler = CpuSampler({**cluster.pids, "bench client": os.getpid()})
        sampler.start()
        try:
            started, at_start = time.monotonic(), request_counts(cluster.admin)
            args = ["--no-leader-elect", "--engine", config.engine]
            controller = cluster.start_controller(args + (["--time-limit", str(config.time_limit_s)] if config.time_limit_s else []))
            sampler.add("controller", controller.pid)
            alive = lambda: controller.poll() is None  # noqa: E731
            steady.submit(WARM_UP_GANG)
            if not steady.wait_bound([WARM_UP_GANG], timeout_s=config.warm_up_timeout_s, alive=alive):
                raise RuntimeError(f"the warm-up gang was not bound ({steady.watch.error or 'timeout'}); controller log:\n{cluster.log_tail()}")
            before, _ = settled_counts(cluster.admin)
            warm_up_seconds = time.monotonic() - started
            gangs = [f"new-{n:04d}" for n in range(config.gangs())]
            finished = 0
            window_start = time.time()
            for n, gang in enumerate(gangs):
                time.sleep(max(0.0, window_start + n * config.interval_s - time.time()))
                finished += steady.finish_one()
                steady.submit(gang)
            steady.wait_submitted()
            steady.wait_bound(gangs, timeout_s=config.drain_s, alive=alive)
            window_end = time.time()
            requests = request_counts(cluster.admin) - before
            time.sleep(CYCLE_LOG_S)
            sampler.stop()
            cycles = tuple(
                CycleRecord(finished_unix=c["finished_unix"], seconds=c["seconds"], observe_seconds=c.get("observe_seconds", 0.0),
                            solve_seconds=c.get("solve_seconds", 0.0), act_seconds=c.get("act_seconds", 0.0),
                            bound=c.get("bound", 0), engine=str(c.get("engine", "")))
                for c in cluster.cycles() if c.get("bound") and window_start <= c["finished_unix"] - c["seconds"] <= window_end
            )  # fmt: skip
            return SteadyRun(
                config=config,
                gpu_running_pods=GANG_PODS * len(load.gpu_gangs),
                cpu_running_pods=GANG_PODS * len(load.cpu_gangs),
                running_create_seconds=round(create_seconds, 2),
                warm_up_seconds=round(warm_up_seconds, 2),
                window_start_unix=window_start,
                window_end_unix=window_end,
                gangs_finished=finished,
                pods=steady.records(gangs),
                cycles=cycles,
                cpu_seconds=sampler.between(window_start, window_end),
                requests=dict(requests.most_common()),
                warm_up_requests=dict((before - at_start).most_common()),
            )
        finally:
            sampler.stop()
            steady.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Pod creation → bind latency of the controller in steady state, against a real kube-apiserver.")
    parser.add_argument("--nodes", type=int, default=SteadyConfig.nodes, help="Nodes of 8 GPUs.")
    parser.add_argument("--running", type=int, default=SteadyConfig.running,
                        help=f"Pods bound and Running before the controller starts, in gangs of {GANG_PODS}: GPU gangs up to "
                             f"{GPU_FILL * 100:.0f} %% of the GPUs, the rest CPU-only.")  # fmt: skip
    parser.add_argument("--engine", default=SteadyConfig.engine, choices=ENGINES, help="The controller's --engine.")
    parser.add_argument("--time-limit", type=float, default=None, help="The controller's --time-limit (default: its own).")
    parser.add_argument("--interval", type=float, default=SteadyConfig.interval_s, help="Seconds between new gangs.")
    parser.add_argument("--duration", type=float, default=SteadyConfig.duration_s, help="Seconds of submissions.")
    parser.add_argument("--drain", type=float, default=SteadyConfig.drain_s,
                        help="Seconds to wait after the last submission for the gangs not yet bound.")
    parser.add_argument("--seed", type=int, default=SteadyConfig.seed)
    parser.add_argument("--threads", type=int, default=SteadyConfig.threads, help="Client threads creating objects.")
    parser.add_argument("--out", type=Path, default=Path("results") / "controller-steady")
    args = parser.parse_args(argv)
    for flag, value in (("--nodes", args.nodes), ("--running", args.running), ("--interval", args.interval),
                        ("--duration", args.duration), ("--threads", args.threads)):  # fmt: skip
        if value <= 0:
            parser.error(f"{flag}: must be positive, got {value}")
    config = SteadyConfig(nodes=args.nodes, running=args.running, engine=args.engine, time_limit_s=args.time_limit,
                          interval_s=args.interval, duration_s=args.duration, drain_s=args.drain, seed=args.seed,
                          threads=args.threads)  # fmt: skip
    try:
        running_load(config)
    except ValueError as error:
        parser.error(str(error))
    try:
        result = run(config)
    except RuntimeError as error:  # the control plane or the controller did not come up: its own words, no traceback
        raise SystemExit(f"controller_steady: {error}") from None
    summary = summarize(result)
    written = write_outputs(result, summary, args.out)
    print(table(summary))
    print(f"wrote {', '.join(str(p) for p in written)}")


if __name__ == "__main__":
    main()
