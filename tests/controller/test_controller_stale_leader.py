"""A leader that may have lost its Lease does not write (issue 36, fault 2).

Live: two `batchplace controller` processes with leader election against the real API
server; the leader is stopped (SIGSTOP) in the middle of binding a cluster's worth of gangs,
for longer than the lease duration; the standby takes the Lease and fills the cluster; the
old leader is resumed (SIGCONT). After settling: no node over its allocatable, no GPU index
held twice, no half gang, nothing bound after the resume, and the resumed leader logged that
it dropped the rest of its plan (or sent nothing: it was between cycles).

Below it, the rules it rests on: a renew counts from when it was sent (on a driven clock);
a write is sent only while the Lease covers its budget; the connection itself refuses to
send a write the Lease no longer covers (against the real API server).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from controller.kinds import NODES, PODS, QUEUES, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.leader import LeaderElector, LeaseConfig
from controller.testing.control_plane import free_port
from controller.write_fence import WriteNotSent
from tests.controller._cluster_queries import bound, http_get, lease_holder, stop_controllers, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller.test_controller_pure import _FakeClock, _MemoryLeases

LEASE_DURATION_S, RENEW_DEADLINE_S, RETRY_PERIOD_S = 4.0, 3.0, 0.5
POD_NAMESPACE = "batchplace-system"  # where deploy/rbac.yaml grants the Lease verbs
NODE_COUNT, GPUS_PER_NODE = 16, 8
GANG_COUNT, GANG_SIZE = 40, 4  # 160 one-GPU pods for 128 GPUs: 125 %, so pods stay pending
DROPPED = "the lease may be lost"


# ---- live: SIGSTOP the leader mid-binding, SIGCONT it after the standby filled the cluster ----


def _controller(kubeconfig: Path, identity: str, lease: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-c", "from batchplace.cli import main; main()", "controller",
        "--kubeconfig", str(kubeconfig), "--identity", identity, "--lease-name", lease,
        "--lease-duration", str(LEASE_DURATION_S), "--renew-deadline", str(RENEW_DEADLINE_S),
        "--retry-period", str(RETRY_PERIOD_S), "--period", "0.3", "--engine", "greedy",
        "--port", str(port), "--host", "127.0.0.1",
    ]
    environment = {**os.environ, "POD_NAMESPACE": POD_NAMESPACE}
    with log.open("wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment)


def _bound_pods(core: k8s.CoreV1Api, namespace: str) -> dict[str, tuple[str, str]]:
    """pod name → (node, its GPU devices annotation), for the namespace's bound pods."""
    return {
        p.metadata.name: (p.spec.node_name, (p.metadata.annotations or {}).get("batchplace.io/gpus", ""))
        for p in core.list_namespaced_pod(namespace).items
        if p.spec.node_name
    }


def _overcommits(bound: Mapping[str, tuple[str, str]]) -> list[str]:
    """What breaks a node's allocatable or a GPU's single owner: one line each ([] when none)."""
    gpus_used: Counter[str] = Counter()
    owners: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, (on, devices) in bound.items():
        gpus_used[on] += 1  # every pod asks one GPU (and 1 of 64 cpu: never the limit)
        for device in filter(None, devices.split(",")):
            owners[(on, device)].append(name)
    over = [f"{on}: {used}/{GPUS_PER_NODE} GPUs" for on, used in sorted(gpus_used.items()) if used > GPUS_PER_NODE]
    twice = [f"GPU {device} of {on} held by {names}" for (on, device), names in sorted(owners.items()) if len(names) > 1]
    missing = [f"{name} on {on} has no GPU devices" for name, (on, devices) in bound.items() if not devices]
    return over + twice + missing


def _half_gangs(bound: Mapping[str, tuple[str, str]]) -> list[str]:
    per_gang = Counter(name.rsplit("-", 1)[0] for name in bound)
    return [f"{gang}: {count}/{GANG_SIZE} bound" for gang, count in sorted(per_gang.items()) if count != GANG_SIZE]


def _create_cluster(admin: KubeClient, namespace: str, queue: str) -> None:
    """The nodes, and the gangs in `queue`, Closed: nothing can bind until it opens."""
    admin.create(QUEUES, None, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": queue},
                                "spec": {"weight": 1, "state": "Closed"}})
    _create_gangs(admin, namespace, queue, prefix="g", count=GANG_COUNT)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: admin.create(NODES, None, for_api(node(f"n{i:02d}", cpu=64, memory="512Gi", gpus=GPUS_PER_NODE))),
                      range(NODE_COUNT)))


def _create_gangs(admin: KubeClient, namespace: str, queue: str, *, prefix: str, count: int) -> None:
    def gang(index: int) -> None:
        name = f"{prefix}{index:02d}"
        admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(name, namespace=namespace, min_member=GANG_SIZE, queue=queue)))
        for member in range(GANG_SIZE):
            admin.create(PODS, namespace, for_api(pod(f"{name}-{member}", namespace=namespace, group=name, gpus=1)))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(gang, range(count)))


def _turn_the_standby_elsewhere(admin: KubeClient, namespace: str, queue: str, bound: Mapping[str, tuple[str, str]]) -> None:
    """Make the standby fill the room the paused leader planned for its untouched gangs with
    other pods: those gangs' minMember goes past their size (the standby waits for them, the
    API server does not), and new gangs arrive. A bind from the old plan then double-books."""
    touched = {name.rsplit("-", 1)[0] for name in bound}
    for index in range(GANG_COUNT):
        if f"g{index:02d}" not in touched:
            admin.patch(VOLCANO_PODGROUPS, namespace, f"g{index:02d}", {"spec": {"minMember": GANG_SIZE + 1}})
    _create_gangs(admin, namespace, queue, prefix="late", count=GANG_COUNT)


def _stop_at_first_bind(core: k8s.CoreV1Api, namespace: str, process: subprocess.Popen[bytes]) -> threading.Thread:
    """A thread that stops `process` (SIGSTOP) as soon as a watch shows a pod of `namespace` bound:
    the leader is then in the middle of its binds."""
    since = core.list_namespaced_pod(namespace).metadata.resource_version
    stream = k8s_watch.Watch()

    def run() -> None:
        for event in stream.stream(core.list_namespaced_pod, namespace, resource_version=since, timeout_seconds=30):
            if event["object"].spec.node_name:
                process.send_signal(signal.SIGSTOP)
                stream.stop()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _settled(core: k8s.CoreV1Api, namespace: str, *, quiet_s: float, timeout_s: float) -> tuple[dict[str, tuple[str, str]], float]:
    """The bound pods once nothing changed for `quiet_s`, and when they last changed (monotonic)."""
    deadline = time.monotonic() + timeout_s
    last, changed_at = _bound_pods(core, namespace), time.monotonic()
    while time.monotonic() - changed_at < quiet_s:
        assert time.monotonic() < deadline, f"still changing after {timeout_s:.0f} s"
        time.sleep(0.2)
        now = _bound_pods(core, namespace)
        if now != last:
            last, changed_at = now, time.monotonic()
    return last, changed_at


def _json_lines(log: Path, *, since: int = 0) -> list[dict[str, Any]]:
    text = log.read_bytes()[since:].decode("utf-8", errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_a_leader_paused_mid_binding_and_resumed_after_a_takeover_sends_nothing_of_its_old_plan(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, api_client: k8s.ApiClient, controller_kubeconfig: Path, tmp_path: Path
) -> None:
    coordination = k8s.CoordinationV1Api(api_client)
    lease = f"paused-{namespace}"
    queue = f"held-{namespace}"
    _create_cluster(admin, namespace, queue)
    logs = {name: tmp_path / f"{name}.log" for name in ("a", "b")}
    ports = {name: free_port() for name in ("a", "b")}
    first = _controller(controller_kubeconfig, "replica-a", lease, ports["a"], logs["a"])
    second: subprocess.Popen[bytes] | None = None
    try:
        wait_until(lambda: lease_holder(coordination, lease, POD_NAMESPACE) == "replica-a", timeout_s=30, what="replica-a to lead")
        second = _controller(controller_kubeconfig, "replica-b", lease, ports["b"], logs["b"])
        wait_until(lambda: http_get(f"http://127.0.0.1:{ports['b']}/readyz")[0] == 200, timeout_s=30, what="replica-b synced")
        stopper = _stop_at_first_bind(core, namespace, first)
        admin.patch(QUEUES, None, queue, {"spec": {"state": "Open"}})  # at once: replica-a plans a cluster's worth of binds
        stopper.join(30)
        assert not stopper.is_alive(), "replica-a bound nothing"
        stopped_at = time.monotonic()
        bound_at_stop = _bound_pods(core, namespace)
        _turn_the_standby_elsewhere(admin, namespace, queue, bound_at_stop)

        wait_until(lambda: lease_holder(coordination, lease, POD_NAMESPACE) == "replica-b", timeout_s=30, what="replica-b to take the Lease")
        full = NODE_COUNT * GPUS_PER_NODE
        wait_until(lambda: len(_bound_pods(core, namespace)) >= full, timeout_s=30, what="replica-b to fill the cluster")
        before_resume, _ = _settled(core, namespace, quiet_s=1.0, timeout_s=30)
        assert time.monotonic() - stopped_at > LEASE_DURATION_S
        resume_offset = logs["a"].stat().st_size
        first.send_signal(signal.SIGCONT)
        resumed_at = time.monotonic()

        after, changed_at = _settled(core, namespace, quiet_s=3.0, timeout_s=30)
        settle_s = max(changed_at, resumed_at) - stopped_at
        assert _overcommits(after) == []
        assert _half_gangs(after) == []
        assert after == before_resume, "bound after the old leader resumed"
        resumed_lines = _json_lines(logs["a"], since=resume_offset)
        cycles = [line for line in resumed_lines if "cycle" in line and "bound" in line]
        drops = [line for line in resumed_lines if line["message"].startswith(DROPPED)]
        assert all("; the lease may be lost" in line["message"] for line in cycles), cycles  # any act it finished was cut
        assert drops or not cycles, resumed_lines
        assert all(line["level"] == "warning" and line["writes_dropped"] >= 0 for line in drops)
        sys.stderr.write(f"paused with {len(bound_at_stop)} bound, {sum(line['writes_dropped'] for line in drops)} writes dropped; "
                         f"settled {settle_s:.1f} s after the pause\n")
        assert lease_holder(coordination, lease, POD_NAMESPACE) == "replica-b"
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGCONT)
        stop_controllers(*(p for p in (first, second) if p is not None), logs=tmp_path)
        for name, log in logs.items():
            if log.exists() and sys.exc_info()[0] is not None:
                sys.stderr.write(f"--- replica-{name} ---\n{log.read_text(errors='replace')[-3000:]}\n")


# ---- the rules, one by one ----


class _PausedWhileRenewing(_MemoryLeases):
    """The renew lands, then the process stops before it reads the answer."""

    def __init__(self, clock: _FakeClock, pause_s: float) -> None:
        super().__init__()
        self._clock, self._pause_s = clock, pause_s

    def replace(self, kind, namespace, name, body):  # type: ignore[no-untyped-def]
        landed = super().replace(kind, namespace, name, body)
        self._clock.t += self._pause_s
        return landed


def test_a_renew_answered_after_a_pause_does_not_make_the_leader_fresh() -> None:
    clock = _FakeClock()
    leases = _PausedWhileRenewing(clock, pause_s=20.0)
    config = LeaseConfig(identity="a", namespace="kube-system", lease_duration_s=4, renew_deadline_s=3, retry_period_s=0.5)
    elector = LeaderElector(leases, config, clock=clock)
    assert elector.try_acquire_or_renew()  # created: not paused
    assert elector.try_acquire_or_renew()  # renewed, then 20 s stopped: a standby took over meanwhile
    assert not elector.is_leader() and not elector.may_write()


def test_a_write_goes_out_only_while_the_lease_covers_its_budget() -> None:
    clock, leases = _FakeClock(), _MemoryLeases()
    config = LeaseConfig(identity="a", namespace="kube-system", lease_duration_s=4, renew_deadline_s=3, retry_period_s=0.5)
    elector = LeaderElector(leases, config, clock=clock)
    assert config.write_budget_s == 1.25 and elector.write_timeout_s == 1.25
    assert elector.try_acquire_or_renew()
    clock.t += 1.7  # 1.3 s of Lease left
    assert elector.may_write()
    clock.t += 0.1  # 1.2 s left: still leading, but a write might outlive the Lease
    assert elector.is_leader() and not elector.may_write()
    assert elector.lease_left_s() == pytest.approx(1.2)


class _Lease:
    """Covers the first `checks` checks, then no more."""

    def __init__(self, checks: int) -> None:
        self.checks = checks
        self.write_timeout_s = 2.0

    def may_write(self) -> bool:
        self.checks -= 1
        return self.checks >= 0


def test_the_connection_does_not_send_a_write_the_lease_no_longer_covers(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api
) -> None:
    admin.create(NODES, None, for_api(node("n1", cpu=8)))
    for name in ("refused", "cut", "sent"):
        admin.create(PODS, namespace, for_api(pod(name, namespace=namespace)))
    with pytest.raises(WriteNotSent):
        admin.bind(namespace, "refused", "n1", lease=_Lease(checks=0))
    with pytest.raises(WriteNotSent):  # the headers went out, the body did not: the API server drops the request
        admin.bind(namespace, "cut", "n1", lease=_Lease(checks=1))
    admin.bind(namespace, "sent", "n1", lease=_Lease(checks=3))
    with pytest.raises(WriteNotSent):
        admin.evict(namespace, "sent", lease=_Lease(checks=0))
    time.sleep(0.5)
    assert bound(core, namespace) == {"sent": "n1"}
