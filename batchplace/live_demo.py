"""`batchplace demo --live`: the seed examples on a real local control plane, one command.

It starts what the controller tests use — etcd and kube-apiserver on 127.0.0.1
(`controller.testing.ControlPlane`, building kube-apiserver the first time) with Volcano's
CRDs and batchplace's RBAC — then runs the real controller loop as batchplace's
ServiceAccount (started once each example is created), and a kubelet stand-in that marks
bound pods Running and lets evicted pods go. For each example in turn it creates what
`kubectl apply` and the job controllers (Volcano's, Kubeflow's training operator) would
(`schedulerName: batchplace`), waits until the controller has settled, and prints the
pods, PodGroups (and their sub-groups, as the controller writes them) and Events as `kubectl
get` would, with a verdict: expected vs got.
Everything is torn down at the end.

`demo --live FILE...` does the same with the user's manifests instead of the examples
(`run_live_manifests`): all created at once, then one controller run, and per namespace
what was bound; there is no expectation to judge.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from controller.errors import ApiError
from controller.kinds import EVENTS, HYPERNODES, NAMESPACES, NODES, PODS, QUEUES, VOLCANO_PODGROUPS, XK8S_PODGROUPS
from controller.kube import KubeClient
from controller.loop import Controller, ControllerConfig
from controller.sub_group_status import SUB_GROUPS_ANNOTATION, read_annotation
from controller.testing.control_plane import ControlPlane
from controller.testing.files import RBAC_FILE
from controller.testing.kubelet import KubeletStandIn
from controller.testing.seed import EXAMPLES_DIR, create_all, seed_objects

__all__ = ["run_live_demo", "run_live_manifests", "LiveVerdict"]

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class LiveVerdict:
    scenario: str
    expected: str
    got: str
    ok: bool


@dataclass(frozen=True)
class _Scenario:
    file: str
    expected: str
    judge: Callable[[dict[str, str], dict[str, JsonObject]], tuple[bool, str]]


def _hello(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    phase = groups.get("hello-volcano-job", {}).get("phase")
    return bool(pods) and phase == "Running", f"{len(pods)} pod bound, PodGroup {phase}"


def _weights(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    jobs = Counter(name.rsplit("-", 3)[0] for name in pods)
    return (jobs["job-a"], jobs["job-b"]) == (2, 4), f"queue-a {jobs['job-a']} jobs, queue-b {jobs['job-b']} jobs bound"


def _gang20(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    status = groups.get("gang-job", {})
    condition = (status.get("conditions") or [{}])[-1]
    ok = not pods and condition.get("type") == "Unschedulable"
    return ok, f"{len(pods)} bound, {status.get('phase')}: {condition.get('message', 'no condition')}"


def _gang4(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    return len(pods) == 8, f"{len(pods)} of 20 bound (min 4), PodGroup {groups.get('gang-job', {}).get('phase')}"


def _workflow(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    tasks = sorted(name.split("-")[3] for name in pods)  # workflow-job-task-a-0 → a
    return tasks == ["a", "b"], f"bound: {', '.join(sorted(pods)) or 'none'} (task-b only once task-a ran)"


def _topology(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    workers = {p: n for p, n in pods.items() if p.startswith("llm-pretrain-")}
    return sorted(workers.values()) == ["gpu-b-0", "gpu-b-1"], f"workers on {', '.join(sorted(workers.values())) or 'nothing'}"


def _mpi(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    gpu = {p: n for p, n in pods.items() if p.startswith("lm-mpi-job-gpu-")}
    plain = {p: n for p, n in pods.items() if p.startswith("lm-mpi-job-") and p not in gpu}
    ok = len(plain) == 3 and len(gpu) == 3 and set(gpu.values()) <= {"mpi-b-0", "mpi-b-1"}
    return ok, f"lm-mpi-job {len(plain)} of 3 bound; lm-mpi-job-gpu {len(gpu)} of 3 on {', '.join(sorted(set(gpu.values()))) or 'nothing'}"


def _pytorch(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    bert = {p: n for p, n in pods.items() if p.startswith("bert-finetune-")}
    resnet = [p for p in pods if p.startswith("resnet-ddp-")]
    ok = len(bert) == 4 and set(bert.values()) == {"gpu-1", "gpu-2"} and not resnet
    where = ", ".join(sorted(set(bert.values()))) or "nothing"
    return ok, f"bert-finetune {len(bert)} of 4 on {where}; resnet-ddp {len(resnet)} of 4 bound"


def _disaggregated(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    """Each LeaderWorkerSet group (leader `<set>-<g>`, worker `<set>-<g>-1`) inside one rack
    (`gpu-<rack>-<n>`): prefill's in rack-b and rack-c, decode's in rack-a and rack-d."""
    racks = {
        f"{role}-{group}": {pods[name].split("-")[1] for name in (f"{role}-{group}", f"{role}-{group}-1") if name in pods}
        for role in ("prefill", "decode") for group in range(2)
    }
    whole = all(len(found) == 1 for found in racks.values())
    placed = {group: "".join(sorted(found)) for group, found in racks.items()}
    ok = whole and {placed["prefill-0"], placed["prefill-1"]} == {"b", "c"} and {placed["decode-0"], placed["decode-1"]} == {"a", "d"}
    return ok, ", ".join(f"{group} in rack-{rack or '?'}" for group, rack in placed.items())


def _shards(pods: dict[str, str], groups: dict[str, JsonObject]) -> tuple[bool, str]:
    """Each shard (trainer pods 2s, 2s+1) inside one leaf (`gpu-<leaf>-<n>`), all in spine-b."""
    leaves = {shard: {pods[f"llm-pretrain-trainer-{i}"].split("-")[1] for i in (2 * shard, 2 * shard + 1)
                      if f"llm-pretrain-trainer-{i}" in pods} for shard in range(4)}
    ok = all(len(found) == 1 for found in leaves.values()) and set().union(*leaves.values()) <= {"b1", "b2"}
    shown = ", ".join(f"shard {shard} in leaf-{'/'.join(sorted(found)) or '?'}" for shard, found in leaves.items())
    return ok, f"{sum(1 for name in pods if name.startswith('llm-pretrain-'))} of 8 bound: {shown}"


SCENARIOS = (
    _Scenario("hello-volcano-job.yaml", "the hello job bound, its PodGroup Running", _hello),
    _Scenario("queue-weights.yaml", "queue-b gets twice queue-a: 4 and 2 jobs", _weights),
    _Scenario("gang-min-available-20.yaml", "the gang of 20 unbound, condition Unschedulable", _gang20),
    _Scenario("gang-min-available-4.yaml", "the gang of min 4 started: 8 of 20 bound", _gang4),
    _Scenario("workflow-job.yaml", "task-a bound, task-b bound after task-a runs", _workflow),
    _Scenario("gpu-topology.yaml", "the 16-GPU gang inside leaf-b", _topology),
    _Scenario("mpi-job.yaml", "both MPI gangs bound whole, the GPU one inside leaf-b", _mpi),
    _Scenario("pytorch-job.yaml", "bert-finetune's 4 pods inside leaf-b, none of resnet-ddp", _pytorch),
    _Scenario("lws-disaggregated-serving.yaml", "each serving group in one rack: prefill in rack-b, rack-c; decode in rack-a, rack-d",
              _disaggregated),
    _Scenario("subgroup-training.yaml", "all 8 trainer pods in spine-b, each 2-pod shard inside one leaf", _shards),
)


def run_live_demo(
    console: Console, *, settle_s: float = 1.5, timeout_s: float = 30.0, only: Sequence[str] = ()
) -> list[LiveVerdict]:
    """Every example of `SCENARIOS` in turn (those named in `only`, when given)."""
    verdicts: list[LiveVerdict] = []
    with _live_control_plane(console) as (admin, kubeconfig):
        for number, scenario in enumerate(SCENARIOS, start=1):
            if only and scenario.file not in only:
                continue
            namespace = f"demo-{number}"
            admin.create(NAMESPACES, None, {"metadata": {"name": namespace}})
            create_all(admin, seed_objects(EXAMPLES_DIR / scenario.file, namespace=namespace))
            _run_controller_until_settled(admin, kubeconfig, [namespace], settle_s=settle_s, timeout_s=timeout_s)
            pods, groups = _show(console, admin, namespace, scenario.file)
            ok, got = scenario.judge(pods, groups)
            verdicts.append(LiveVerdict(scenario.file, scenario.expected, got, ok))
            _clean(admin, namespace)
    return verdicts


def run_live_manifests(
    console: Console, paths: Sequence[Path], *, settle_s: float = 1.5, timeout_s: float = 30.0
) -> list[str]:
    """`demo --live FILE...`: the user's manifests, all at once as `kubectl apply -f FILE...`
    would, each object in its own namespace; vcjobs and PyTorchJobs expanded as their
    controllers would and every pending pod handed to batchplace, as for the examples. No
    expectation to judge: per namespace, what was bound and each PodGroup's state."""
    created = [obj for path in paths for obj in seed_objects(path, namespace=None)]
    objects = sorted(created, key=lambda obj: obj.namespace is not None)  # Nodes, Queues, … first
    namespaces = sorted({obj.namespace for obj in objects if obj.namespace})
    title = ", ".join(Path(path).name for path in paths)
    summaries: list[str] = []
    with _live_control_plane(console) as (admin, kubeconfig):
        for namespace in namespaces:
            if namespace not in {ns["metadata"]["name"] for ns in admin.list(NAMESPACES).items}:
                admin.create(NAMESPACES, None, {"metadata": {"name": namespace}})
        create_all(admin, objects)
        _run_controller_until_settled(admin, kubeconfig, namespaces, settle_s=settle_s, timeout_s=timeout_s)
        for namespace in namespaces:
            pods, groups = _show(console, admin, namespace, title)
            pending = {obj.name for obj in objects if obj.namespace == namespace and obj.kind == PODS and not obj.body["spec"].get("nodeName")}
            summaries.append(_summary(namespace, pending, pods, groups))
    return summaries


def _summary(namespace: str, pending: set[str], pods: dict[str, str], groups: dict[str, JsonObject]) -> str:
    """`default: 3 of 5 pending pods bound; PodGroup job-a Running; PodGroup job-b Pending (gang: …)`."""
    parts = [f"{namespace}: {len(pending & pods.keys())} of {len(pending)} pending pods bound"]
    for name, status in sorted(groups.items()):
        condition = (status.get("conditions") or [{}])[-1]
        message = f" ({condition['message']})" if condition.get("message") and status.get("phase") != "Running" else ""
        parts.append(f"PodGroup {name} {status.get('phase', 'no phase')}{message}")
    return "; ".join(parts)


@contextmanager
def _live_control_plane(console: Console) -> Iterator[tuple[KubeClient, Path]]:
    """A local control plane with batchplace's RBAC and a kubelet stand-in; the admin client
    and the kubeconfig of batchplace's ServiceAccount. Torn down on exit."""
    console.print("[bold]starting etcd and kube-apiserver on 127.0.0.1[/bold] (the first run builds kube-apiserver: minutes)")
    with ControlPlane() as plane:
        plane.apply_yaml(RBAC_FILE)
        console.print(f"control plane at {plane.url}; kubeconfig {plane.admin_kubeconfig}")
        admin = KubeClient.from_kubeconfig(plane.admin_kubeconfig)
        kubeconfig = plane.write_kubeconfig(plane.workdir / "controller.kubeconfig", token=plane.controller_token)
        kubelet_stop = threading.Event()
        threading.Thread(target=KubeletStandIn(admin).run, args=(kubelet_stop,), kwargs={"interval_s": 0.3}, daemon=True).start()
        try:
            yield admin, kubeconfig
        finally:
            kubelet_stop.set()


def _run_controller_until_settled(
    admin: KubeClient, kubeconfig: Path, namespaces: Sequence[str], *, settle_s: float, timeout_s: float
) -> None:
    """A controller started once everything is created, as if it had been down while `kubectl
    apply` ran (the first cycle sees it all), stopped once the namespaces have settled."""
    config = ControllerConfig(period_s=0.3, time_limit_s=1.0)
    controller = Controller(KubeClient.from_kubeconfig(kubeconfig, pool_size=config.api_connections()), config)
    stop = threading.Event()
    controller.start(stop)
    try:
        _settle(admin, namespaces, settle_s=settle_s, timeout_s=timeout_s)
    finally:
        stop.set()
        controller.join(5)


def _settle(admin: KubeClient, namespaces: Sequence[str], *, settle_s: float, timeout_s: float) -> None:
    """Wait until the namespaces' pods and PodGroups stop changing for `settle_s`."""
    deadline = time.monotonic() + timeout_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        pods = [p for ns in namespaces for p in admin.list(PODS, namespace=ns).items]
        groups = [g for ns in namespaces for g in _pod_groups(admin, ns)]
        state = (
            sorted((p["metadata"]["namespace"], p["metadata"]["name"], p["spec"].get("nodeName"), p["status"].get("phase")) for p in pods),
            sorted((g["metadata"]["namespace"], g["metadata"]["name"], str(g.get("status"))) for g in groups),
        )
        if state != last:
            last, since = state, time.monotonic()
        elif time.monotonic() - since >= settle_s:
            return
        time.sleep(0.2)


def _show(console: Console, admin: KubeClient, namespace: str, title: str) -> tuple[dict[str, str], dict[str, JsonObject]]:
    console.rule(f"[bold]{title}[/bold]  (namespace {namespace})")
    pods = sorted(admin.list(PODS, namespace=namespace).items, key=lambda p: p["metadata"]["name"])
    table = Table(title=f"kubectl get pods -n {namespace} -o wide", title_justify="left", box=None)
    for column in ("NAME", "STATUS", "NODE"):
        table.add_column(column)
    for pod in pods:
        table.add_row(pod["metadata"]["name"], pod["status"].get("phase", ""), pod["spec"].get("nodeName") or "<none>")
    console.print(table)
    groups = _pod_groups(admin, namespace)
    table = Table(title=f"kubectl get podgroups -n {namespace}", title_justify="left", box=None)
    for column in ("NAME", "STATUS", "MINMEMBER", "RUNNINGS", "CONDITION", "MESSAGE"):
        table.add_column(column)
    for group in groups:
        status = group.get("status") or {}
        condition = (status.get("conditions") or [{}])[-1]
        table.add_row(
            group["metadata"]["name"], status.get("phase", ""), str(group["spec"].get("minMember", "")),
            str(status.get("running", 0)), f"{condition.get('type', '')} {condition.get('reason', '')}".strip(),
            condition.get("message", ""),
        )
    console.print(table)
    _show_sub_groups(console, namespace, groups)
    events = sorted(admin.list(EVENTS, namespace=namespace).items, key=lambda e: (e.get("lastTimestamp") or "", e["metadata"]["name"]))
    table = Table(title=f"kubectl get events -n {namespace}", title_justify="left", box=None)
    for column in ("TYPE", "REASON", "OBJECT", "MESSAGE"):
        table.add_column(column)
    shown = events[:12]
    for event in shown:
        involved = event.get("involvedObject") or {}
        table.add_row(event.get("type", ""), event.get("reason", ""), f"{involved.get('kind', '').lower()}/{involved.get('name', '')}",
                      event.get("message", ""))
    console.print(table)
    if len(events) > len(shown):
        console.print(f"… and {len(events) - len(shown)} more events")
    bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName") and not p["spec"].get("schedulerName") in (None, "default-scheduler")}
    return bound, {g["metadata"]["name"]: g.get("status") or {} for g in groups}


def _show_sub_groups(console: Console, namespace: str, groups: Sequence[JsonObject]) -> None:
    """Each PodGroup's sub-groups as the controller wrote them (`batchplace.io/sub-groups`)."""
    rows = [
        (group["metadata"]["name"], sub)
        for group in groups
        for sub in read_annotation((group["metadata"].get("annotations") or {}).get(SUB_GROUPS_ANNOTATION))
    ]
    if not rows:
        return
    table = Table(title=f"sub-groups ({SUB_GROUPS_ANNOTATION}) -n {namespace}", title_justify="left", box=None)
    for column in ("PODGROUP", "SUB-GROUP", "POLICY", "PLACED/MIN", "STATE", "DOMAIN", "WHY"):
        table.add_column(column)
    for name, sub in rows:
        table.add_row(name, sub.name, sub.policy, f"{sub.placed}/{sub.minimum}", "started" if sub.started else "waits",
                      sub.domain or "<none>", sub.reason)
    console.print(table)


def _pod_groups(admin: KubeClient, namespace: str) -> list[JsonObject]:
    """The namespace's PodGroups of both flavours: Volcano's, and scheduler-plugins' (a PyTorchJob's)."""
    return [*admin.list(VOLCANO_PODGROUPS, namespace=namespace).items, *admin.list(XK8S_PODGROUPS, namespace=namespace).items]


def _clean(admin: KubeClient, namespace: str) -> None:
    """Delete the example's pods and cluster-scoped objects, so the next one starts empty."""
    for pod in admin.list(PODS, namespace=namespace).items:
        _quietly(lambda: admin.delete(PODS, namespace, pod["metadata"]["name"], grace_period_s=0))
    for kind in (NODES, QUEUES, HYPERNODES):
        for obj in admin.list(kind).items:
            _quietly(lambda: admin.delete(kind, None, obj["metadata"]["name"]))


def _quietly(call: Callable[[], object]) -> None:
    try:
        call()
    except ApiError:
        pass
