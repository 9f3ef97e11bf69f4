"""`batchplace demo --live --clusters N`: the multi-cluster example on N + 1 real local clusters.

It starts a manager cluster and N worker clusters (2 or 3), each its own etcd +
kube-apiserver on 127.0.0.1 (`controller.testing.fleet`), seeds each worker from
`examples/multicluster/<worker>.yaml` (nodes, HyperNodes, pods already running) and runs in
it a batchplace controller as batchplace's ServiceAccount, a Volcano job controller
stand-in and a kubelet stand-in. The manager gets the Queue and the vcjob of
`examples/multicluster/jobs.yaml` and the manager controller (`controller.fleet_manager`).
The demo waits until the job is dispatched, bound and Running in its worker, then lets its
pods succeed and waits for the manager's status to say Completed; it prints the manager's
job and Events and each worker's pods, and a verdict: expected vs got. All torn down after.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from batchplace.live_demo import LiveVerdict
from controller.fleet_manager import ALL_PODS, ATTEMPT_ANNOTATION, CLUSTER_ANNOTATION
from controller.kinds import EVENTS, QUEUES, VCJOBS
from controller.testing.files import RBAC_FILE
from controller.testing.fleet import Member, finish_pods, start_manager
from controller.testing.seed import EXAMPLES_DIR, create_all, seed_objects

__all__ = ["WORKERS", "run_live_fleet_demo"]

FLEET_DIR = EXAMPLES_DIR / "multicluster"
WORKERS = ("gpu-west", "gpu-east", "gpu-north")
NAMESPACE = "research"
JOB = "llm-pretrain"
EXPECTED = "llm-pretrain dispatched to gpu-east (attempt 1), bound on east-1, east-2, east-3, Completed"


def run_live_fleet_demo(console: Console, *, clusters: int = 2, timeout_s: float = 60.0) -> list[LiveVerdict]:
    if not 2 <= clusters <= len(WORKERS):
        raise ValueError(f"--clusters: 2 to {len(WORKERS)} worker clusters, got {clusters}")
    names = WORKERS[:clusters]
    console.print(f"[bold]starting {clusters + 1} clusters (a manager and {', '.join(names)}): etcd and kube-apiserver each, on 127.0.0.1[/bold]")
    members: dict[str, Member] = {}
    stop = threading.Event()
    try:
        for name in ("manager", *names):
            members[name] = Member.start(name)
        for name in names:
            worker = members[name]
            worker.plane.apply_yaml(RBAC_FILE)
            worker.namespace(NAMESPACE)
            create_all(worker.admin, seed_objects(FLEET_DIR / f"{name}.yaml", namespace=NAMESPACE))
            worker.run_worker(engine="auto", kubeconfig_token=worker.plane.controller_token)
        manager = members["manager"]
        manager.namespace(NAMESPACE)
        for document in yaml.safe_load_all((FLEET_DIR / "jobs.yaml").read_text(encoding="utf-8")):
            if document and document.get("kind") == "Queue":
                manager.admin.create(QUEUES, None, document)
            elif document and document.get("kind") == "Job":
                manager.admin.create(VCJOBS, NAMESPACE, document)
        start_manager(manager, {name: members[name].admin for name in names}, stop=stop, engine="auto")
        running = _wait(lambda: _phase(manager) == "Running", timeout_s)
        where = (_job(manager)["metadata"].get("annotations") or {}).get(CLUSTER_ANNOTATION, "")
        if running and where in members:
            finish_pods(members[where], NAMESPACE, JOB)
            _wait(lambda: _phase(manager) == "Completed", timeout_s)
        return [_verdict(console, members, names)]
    finally:
        stop.set()
        for member in members.values():
            member.stop()


def _verdict(console: Console, members: dict[str, Member], names: tuple[str, ...]) -> LiveVerdict:
    manager = members["manager"]
    job = _job(manager)
    annotations = job["metadata"].get("annotations") or {}
    where, attempt = annotations.get(CLUSTER_ANNOTATION, ""), annotations.get(ATTEMPT_ANNOTATION, "")
    console.rule("[bold]manager[/bold]: kubectl get vcjob and events")
    status = job.get("status") or {}
    console.print(f"vcjob {NAMESPACE}/{JOB}: {status.get('state', {}).get('phase', 'no status')} — "
                  f"{status.get('state', {}).get('message', '')} ({CLUSTER_ANNOTATION}={where}, {ATTEMPT_ANNOTATION}={attempt})")
    table = Table(title=f"kubectl get events -n {NAMESPACE}", title_justify="left", box=None)
    for column in ("TYPE", "REASON", "MESSAGE"):
        table.add_column(column)
    for event in sorted(manager.admin.list(EVENTS, namespace=NAMESPACE).items, key=lambda e: e.get("lastTimestamp") or ""):
        table.add_row(event.get("type", ""), event.get("reason", ""), event.get("message", ""))
    console.print(table)
    nodes: list[str] = []
    for name in names:
        console.rule(f"[bold]{name}[/bold]: kubectl get pods -n {NAMESPACE} -o wide")
        table = Table(box=None)
        for column in ("NAME", "STATUS", "NODE"):
            table.add_column(column)
        for pod in sorted(members[name].admin.list(ALL_PODS, namespace=NAMESPACE).items, key=lambda p: p["metadata"]["name"]):
            table.add_row(pod["metadata"]["name"], (pod.get("status") or {}).get("phase", ""), pod["spec"].get("nodeName") or "<none>")
            if name == where and pod["metadata"]["name"].startswith(f"{JOB}-"):
                nodes.append(pod["spec"].get("nodeName") or "")
        console.print(table)
    copies = sum(1 for name in names for copy in members[name].vcjobs(NAMESPACE) if copy["metadata"]["name"] == JOB)
    phase = status.get("state", {}).get("phase", "")
    got = f"{JOB} dispatched to {where or 'nowhere'} (attempt {attempt or '-'}), bound on {', '.join(sorted(nodes)) or 'nothing'}, {phase or 'no status'}"
    ok = where == "gpu-east" and attempt == "1" and sorted(nodes) == ["east-1", "east-2", "east-3"] and phase == "Completed" and copies == 1
    return LiveVerdict(f"multicluster ({len(names)} workers)", EXPECTED, got, ok)


def _job(manager: Member) -> dict[str, Any]:
    return manager.admin.get(VCJOBS, NAMESPACE, JOB)


def _phase(manager: Member) -> str:
    return str(((_job(manager).get("status") or {}).get("state") or {}).get("phase") or "")


def _wait(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()
