"""The manager controller: vcjobs submitted to a manager cluster, placed over every worker cluster at once.

As Kueue's MultiKueue, a manager cluster holds what users submit and copies each job to a
worker cluster, then mirrors its status back; unlike it, the worker is chosen by one solve
over all workers' snapshots together (`models.clusters`: the cluster is the top network
tier, a gang never spans two, queues are global — the manager's Queues hold the quota).

A cycle (leader only, `controller.leader` on the manager's Lease):

    read      manager vcjobs (spec.schedulerName ours), Queues, PriorityClasses;
              each worker's objects (pods, nodes, PodGroups, queues, HyperNodes, vcjobs)
    sweep     in each reachable worker, delete copies the manager no longer assigns there
              (a job re-dispatched after its worker was lost, or deleted in the manager)
    lose      a worker unreachable for `worker_lost_s`: its unfinished jobs lose their
              assignment (Event `WorkerLost`) and are placed again
    solve     merge the reachable workers and the jobs (`models.clusters`), `solver.fleet`
    dispatch  per job placed: FIRST record the worker on the manager job (annotations
              `batchplace.io/cluster`, `batchplace.io/dispatch-attempt`, a conditional
              update), THEN create the copy there (a create that finds it is done already)
    mirror    per dispatched job: its copy's PodGroup and pods → the manager job's status
              (phase Pending/Running/Completed/Failed, counts) and the copy's Events → Events
              on the manager job, prefixed with the worker's name

Binding is left to a batchplace controller running in each worker (as MultiKueue leaves it
to the worker's Kueue and kube-scheduler): the worker's controller holds that cluster's
Lease, sees its pods and nodes first-hand, evicts and binds there with its own RBAC, and
keeps working when the manager is away. The manager decides the cluster; the worker's solve,
over the same objects, decides the nodes. The job's Queue is copied to the worker when the
worker has none (MultiKueue likewise wants the job's queue in every worker). The copy is the vcjob itself; the worker's Volcano
job controller makes its PodGroup and pods (`controller.testing.job_controller` stands in
for it in tests).

Why the two steps of dispatch in that order: a manager that dies between them leaves an
assignment with no copy, which the next leader completes (it re-creates the copy in the
recorded worker); the other order could leave a copy nobody recorded, which a new leader
would dispatch a second time. A copy carries the manager job's uid (label
`batchplace.io/manager-uid`) and its attempt: the sweep deletes any copy whose job is gone
or is now assigned elsewhere or to a later attempt — with its PodGroup and pods.

A dispatched job whose copy has no pods yet (its worker's job controller has not expanded
it) is solved again, pinned to its worker, so its room is not given to another job.

What it does not promise: at-most-once under a partition. A worker cut off for
`worker_lost_s` but alive keeps running its copy while the manager places the job elsewhere;
the sweep deletes the stale copy as soon as the worker answers again (MultiKueue's
`workerLostTimeout` makes the same trade). Set `worker_lost_s` above the longest outage to
wait out rather than re-run.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.errors import ApiError, Conflict, NotFound
from controller.kinds import (
    EVENTS,
    HYPERNODES,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    VCJOBS,
    VOLCANO_PODGROUPS,
    XK8S_PODGROUPS,
    ResourceKind,
)
from controller.kube import KubeClient
from controller.leader import LeaderElector, LeaseConfig
from controller.observe import ClusterView, observe
from controller.timing import Clock, SystemClock, join_within, rfc3339
from models.clusters import CLUSTER_LABEL, ClusterName, merge_clusters
from models.errors import SnapshotError
from models.loaders import load_snapshot_documents
from models.loaders.keys import VOLCANO_JOB_NAME_KEY
from models.snapshot import PodGroup, Snapshot
from solver.fleet import FleetDecision, place_fleet
from solver.place import EngineName, SolveConfig

__all__ = [
    "CLUSTER_ANNOTATION",
    "ATTEMPT_ANNOTATION",
    "MANAGER_UID_LABEL",
    "ManagerConfig",
    "ManagerCycle",
    "FleetManager",
    "WorkerCluster",
]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]

CLUSTER_ANNOTATION = "batchplace.io/cluster"
"""On a manager job: the worker it is dispatched to."""
ATTEMPT_ANNOTATION = "batchplace.io/dispatch-attempt"
"""On a manager job and its copy: which dispatch this is (1, 2, … after a worker was lost)."""
MANAGER_UID_LABEL = "batchplace.io/manager-uid"
"""On a copy: the uid of the manager job it copies."""
FINISHED = ("Completed", "Failed")
ALL_PODS = dataclasses.replace(PODS, field_selector=None)
"""Pods in every phase: the mirror counts the finished ones, which the scheduler's list leaves out."""
_WORKER_KINDS = (ALL_PODS, NODES, PRIORITY_CLASSES, VOLCANO_PODGROUPS, XK8S_PODGROUPS, QUEUES, HYPERNODES, VCJOBS)


@dataclass(frozen=True)
class ManagerConfig:
    scheduler_names: tuple[str, ...] = ("batchplace",)
    period_s: float = 1.0
    time_limit_s: float = 2.0
    engine: EngineName = "auto"
    worker_lost_s: float = 60.0  # unreachable this long: its jobs are placed again (module docstring)
    lease: LeaseConfig | None = None  # None: no election (tests, demo)
    identity: str = "batchplace-manager"


@dataclass
class WorkerCluster:
    """A worker: its name (a DNS label, the top tier of the fleet) and the client to reach it."""

    name: ClusterName
    client: KubeClient
    unreachable_since: float | None = None


@dataclass(frozen=True)
class ManagerCycle:
    number: int
    skipped: str = ""
    reachable: tuple[str, ...] = ()
    dispatched: tuple[tuple[str, str], ...] = ()  # (manager job "ns/name", worker)
    lost: tuple[str, ...] = ()  # manager jobs whose worker was lost this cycle
    swept: tuple[tuple[str, str], ...] = ()  # (worker, copy "ns/name") deleted
    decision: FleetDecision | None = None


@dataclass
class _Job:
    """A manager vcjob and what this cycle knows of it."""

    body: JsonObject
    key: str
    uid: str
    cluster: str | None
    attempt: int
    phase: str

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


@dataclass
class _WorkerState:
    objects: dict[ResourceKind, list[JsonObject]] = field(default_factory=dict)
    snapshot: Snapshot | None = None


class FleetManager:
    def __init__(
        self,
        manager: KubeClient,
        workers: Sequence[WorkerCluster],
        config: ManagerConfig,
        *,
        clock: Clock | None = None,
    ) -> None:
        names = [w.name for w in workers]
        if len(set(names)) != len(names):
            raise ValueError(f"worker clusters named twice: {sorted(names)}")
        self.manager = manager
        self.workers = {w.name: w for w in workers}
        self.config = config
        self.clock = clock or SystemClock()
        self.elector = LeaderElector(manager, config.lease, clock=self.clock) if config.lease is not None else None
        self._solve_config = SolveConfig(engine=config.engine, time_limit_s=config.time_limit_s)
        self._numbers = itertools.count(1)
        self._said: dict[str, str] = {}  # manager job → the last pending message sent (no Event spam)
        self._threads: list[threading.Thread] = []
        self.last_cycle: ManagerCycle | None = None

    # ---- lifecycle ----

    def start(self, stop: threading.Event) -> None:
        if self.elector is not None:
            elector = threading.Thread(target=self.elector.run, args=(stop,), name="manager-election", daemon=True)
            elector.start()
            self._threads.append(elector)
        loop = threading.Thread(target=self._loop, args=(stop,), name="manager-loop", daemon=True)
        loop.start()
        self._threads.append(loop)

    def join(self, timeout_s: float = 10.0) -> None:
        """Wait for the loop and the election, `timeout_s` in all (`join_within`): both may
        be stuck in a request to an API server that stopped answering, and they are daemons."""
        join_within(self._threads, timeout_s)

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def _loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.last_cycle = self.run_cycle()
            except Exception:
                log.exception("manager cycle failed")
            if self.clock.sleep(self.config.period_s, stop):
                return

    # ---- the cycle ----

    def run_cycle(self) -> ManagerCycle:
        number = next(self._numbers)
        if not self.is_leader():
            return ManagerCycle(number=number, skipped="not leader")
        now = self.clock.monotonic()
        jobs = self._manager_jobs()
        states = {name: self._read_worker(worker, now) for name, worker in self.workers.items()}
        reachable = {name: state for name, state in states.items() if state is not None}
        swept = [pair for name in reachable for pair in self._sweep(name, reachable[name], jobs)]
        for name in {name for name, _ in swept}:  # read again: the deleted copies are no longer there
            reachable[name] = self._read_worker(self.workers[name], now) or _WorkerState()
        lost = self._lose(jobs, now)
        for name, state in reachable.items():
            state.snapshot = self._worker_snapshot(name, state)
        usable = {name: state for name, state in reachable.items() if state.snapshot is not None}
        for job in jobs.values():
            if job.cluster in usable and job.phase not in FINISHED:
                self._ensure_copy(job, usable[job.cluster])
        if not usable:
            return ManagerCycle(number=number, skipped="no worker reachable", lost=tuple(lost), swept=tuple(swept))
        decided, dispatched = self._solve_and_dispatch(jobs, usable)
        for job in jobs.values():
            if job.cluster in usable and job.phase not in FINISHED:
                self._mirror(job, usable[job.cluster])
        return ManagerCycle(
            number=number,
            reachable=tuple(sorted(usable)),
            dispatched=tuple(dispatched),
            lost=tuple(lost),
            swept=tuple(swept),
            decision=decided,
        )

    # ---- read ----

    def _manager_jobs(self) -> dict[str, _Job]:
        jobs = {}
        for body in _typed(VCJOBS, self.manager.list(VCJOBS).items):
            spec = body.get("spec") or {}
            if (spec.get("schedulerName") or "volcano") not in self.config.scheduler_names:
                continue
            metadata = body["metadata"]
            annotations = metadata.get("annotations") or {}
            key = f"{metadata['namespace']}/{metadata['name']}"
            jobs[key] = _Job(
                body=body,
                key=key,
                uid=str(metadata.get("uid", "")),
                cluster=annotations.get(CLUSTER_ANNOTATION) or None,
                attempt=_int(annotations.get(ATTEMPT_ANNOTATION)),
                phase=str(((body.get("status") or {}).get("state") or {}).get("phase") or "Pending"),
            )
        return jobs

    def _read_worker(self, worker: WorkerCluster, now: float) -> _WorkerState | None:
        """The worker's objects, or None when it does not answer (its outage clock starts)."""
        try:
            objects = {kind: _typed(kind, worker.client.list(kind).items) for kind in _WORKER_KINDS}
        except ApiError as error:
            if worker.unreachable_since is None:
                worker.unreachable_since = now
                log.warning("worker %s unreachable: %s", worker.name, error)
            return None
        worker.unreachable_since = None
        return _WorkerState(objects=objects)

    def _worker_snapshot(self, name: str, state: _WorkerState) -> Snapshot | None:
        view = ClusterView(
            pods=tuple(p for p in state.objects[ALL_PODS] if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")),
            nodes=tuple(state.objects[NODES]),
            priority_classes=tuple(state.objects[PRIORITY_CLASSES]),
            volcano_pod_groups=tuple(state.objects[VOLCANO_PODGROUPS]),
            xk8s_pod_groups=tuple(state.objects[XK8S_PODGROUPS]),
            queues=(),  # queues are global: the manager's hold the quota (models.clusters)
            hypernodes=tuple(state.objects[HYPERNODES]),
            vcjobs=tuple(state.objects[VCJOBS]),
        )
        try:
            return observe(view, scheduler_names=self.config.scheduler_names).snapshot
        except Exception as error:  # one worker's bad objects must not stop the fleet
            log.error("worker %s: no snapshot: %s", name, error)
            return None

    # ---- sweep and lose ----

    def _sweep(self, worker: str, state: _WorkerState, jobs: Mapping[str, _Job]) -> list[tuple[str, str]]:
        """Delete copies in `worker` whose manager job is gone, or assigned elsewhere or to another attempt."""
        by_uid = {job.uid: job for job in jobs.values()}
        swept = []
        for copy in state.objects[VCJOBS]:
            metadata = copy["metadata"]
            uid = (metadata.get("labels") or {}).get(MANAGER_UID_LABEL)
            if uid is None:
                continue  # not ours: submitted to the worker directly
            job = by_uid.get(uid)
            attempt = _int((metadata.get("annotations") or {}).get(ATTEMPT_ANNOTATION))
            if job is not None and job.cluster == worker and job.attempt == attempt:
                continue
            self._delete_copy(self.workers[ClusterName(worker)].client, metadata["namespace"], metadata["name"])
            swept.append((worker, f"{metadata['namespace']}/{metadata['name']}"))
        return swept

    def _delete_copy(self, client: KubeClient, namespace: str, name: str) -> None:
        """The copy, then its PodGroup and its pods (what Volcano's owner references would
        collect). The job goes first: while it exists, Volcano's job controller recreates a
        PodGroup deleted under it, and the new one and its pods would outlive the job."""
        _ignore_missing(lambda: client.delete(VCJOBS, namespace, name))
        selector = f"{VOLCANO_JOB_NAME_KEY}={name}"
        for kind in (VOLCANO_PODGROUPS, PODS):
            for obj in client.list(kind, namespace=namespace, label_selector=selector).items:
                _ignore_missing(lambda: client.delete(kind, namespace, obj["metadata"]["name"], grace_period_s=0))

    def _lose(self, jobs: Mapping[str, _Job], now: float) -> list[str]:
        """Jobs of workers unreachable for `worker_lost_s` are unassigned (placed again this cycle)."""
        lost_workers = {
            name
            for name, worker in self.workers.items()
            if worker.unreachable_since is not None and now - worker.unreachable_since >= self.config.worker_lost_s
        }
        lost = []
        for job in jobs.values():
            if job.cluster not in lost_workers or job.phase in FINISHED:
                continue
            try:
                self._annotate(job, cluster=None, attempt=job.attempt)
            except Conflict:
                continue  # changed meanwhile: next cycle
            self._event(job, "WorkerLost", f"worker {job.cluster} unreachable for {self.config.worker_lost_s:g} s: placing the job again", warning=True)
            lost.append(job.key)
            job.cluster = None
        return lost

    # ---- solve and dispatch ----

    def _solve_and_dispatch(
        self, jobs: Mapping[str, _Job], usable: Mapping[str, _WorkerState]
    ) -> tuple[FleetDecision | None, list[tuple[str, str]]]:
        waiting = [job for job in jobs.values() if job.cluster is None and job.phase not in FINISHED]
        in_flight = [job for job in jobs.values() if job.cluster in usable and not _has_pod_group(job, usable[job.cluster])]
        if not waiting:
            return None, []
        jobs_snapshot, group_of = self._jobs_snapshot(waiting, in_flight)
        if jobs_snapshot is None:
            return None, []
        fleet = merge_clusters({name: state.snapshot for name, state in usable.items()}, jobs=jobs_snapshot)  # type: ignore[misc]
        decided = place_fleet(fleet, self._solve_config)
        dispatched = []
        for dispatch in decided.jobs:
            job = group_of.get(dispatch.pod_group)
            if job is None or job.cluster is not None:
                continue  # an in-flight job, only there to keep its room
            if dispatch.cluster is None:
                message = next(j.reason for j in decided.jobs if j.pod_group == dispatch.pod_group)
                if self._said.get(job.key) != message:
                    self._event(job, "Unschedulable", message, warning=True)
                    self._said[job.key] = message
                continue
            try:
                self._annotate(job, cluster=dispatch.cluster, attempt=job.attempt + 1)
            except Conflict:
                continue  # another manager, or an edit: re-read next cycle
            job.cluster, job.attempt = dispatch.cluster, job.attempt + 1
            reason = next(j.reason for j in decided.jobs if j.pod_group == dispatch.pod_group)
            self._event(job, "Dispatched", f"to {dispatch.cluster} (attempt {job.attempt}); {reason}")
            self._ensure_copy(job, usable[dispatch.cluster])
            dispatched.append((job.key, dispatch.cluster))
        return decided, dispatched

    def _jobs_snapshot(self, waiting: Sequence[_Job], in_flight: Sequence[_Job]) -> tuple[Snapshot | None, dict[str, _Job]]:
        """The waiting jobs, and the in-flight ones pinned to their worker, as one snapshot with
        the manager's queues and priority classes; a job the loader refuses is reported and left out."""
        classes = [("manager", i + 1, obj) for i, obj in enumerate(_typed(PRIORITY_CLASSES, self.manager.list(PRIORITY_CLASSES).items))]
        queues = [("manager", i + 1, obj) for i, obj in enumerate(_typed(QUEUES, self.manager.list(QUEUES).items))]
        groups: list[PodGroup] = []
        pods = []
        group_of: dict[str, _Job] = {}
        for job in [*waiting, *in_flight]:
            try:
                loaded = load_snapshot_documents([*classes, (job.key, 1, _as_submitted(job.body))], scheduler_names=self.config.scheduler_names)
            except SnapshotError as error:
                if self._said.get(job.key) != str(error):
                    self._event(job, "Invalid", str(error)[:1000], warning=True)
                    self._said[job.key] = str(error)
                continue
            for group in loaded.snapshot.pod_groups:
                if job.cluster is not None:  # in flight: its room stays in its worker
                    group = group.model_copy(update={"tasks": tuple(
                        t.model_copy(update={"node_selector": {**t.node_selector, CLUSTER_LABEL: job.cluster}}) for t in group.tasks
                    )})
                groups.append(group)
                group_of[group.key] = job
            pods += loaded.snapshot.pods
        try:
            base = load_snapshot_documents([*classes, *queues], scheduler_names=self.config.scheduler_names).snapshot
            snapshot = Snapshot(queues=base.queues, priority_classes=base.priority_classes, pod_groups=tuple(groups), pods=tuple(pods))
        except (SnapshotError, ValueError) as error:
            log.error("the manager's jobs make no snapshot: %s", error)
            return None, {}
        return snapshot, group_of

    def _annotate(self, job: _Job, *, cluster: str | None, attempt: int) -> None:
        """Record the assignment on the manager job, conditional on its resourceVersion."""
        metadata = job.body["metadata"]
        patch = {
            "metadata": {
                "resourceVersion": metadata.get("resourceVersion"),
                "annotations": {CLUSTER_ANNOTATION: cluster, ATTEMPT_ANNOTATION: str(attempt)},
            }
        }
        job.body = self.manager.patch(VCJOBS, job.namespace, job.name, patch)

    def _ensure_copy(self, job: _Job, state: _WorkerState) -> None:
        """The job's copy in its worker, created when missing (namespace too)."""
        worker = self.workers[ClusterName(job.cluster or "")]
        if any(_is_copy_of(copy, job) for copy in state.objects.get(VCJOBS, ())):
            return
        try:
            worker.client.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": job.namespace}})
        except Conflict:
            pass
        self._ensure_queue(worker, str((job.body.get("spec") or {}).get("queue") or ""))
        try:
            worker.client.create(VCJOBS, job.namespace, _copy_body(job))
        except Conflict:
            pass  # made by an earlier leader, or an earlier call whose answer was lost
        except ApiError as error:
            log.warning("copy of %s to %s not made: %s", job.key, job.cluster, error)

    def _ensure_queue(self, worker: WorkerCluster, name: str) -> None:
        """The job's Queue in the worker, copied from the manager when the worker has none: its
        batchplace controller admits the copy against it (a job naming a queue it lacks waits
        with `queue:`). A worker's own Queue of that name is left as it is. The copy's
        capability is the fleet-wide one, which the worker's share can never pass."""
        if not name:
            return
        try:
            queue = self.manager.get(QUEUES, None, name)
        except ApiError:
            return  # the manager has no such queue (`default` is implicit): nothing to copy
        body = {"apiVersion": QUEUES.api_version, "kind": QUEUES.kind, "metadata": {"name": name,
                "labels": {MANAGER_UID_LABEL: str(queue["metadata"].get("uid", ""))}}, "spec": queue.get("spec") or {}}
        try:
            worker.client.create(QUEUES, None, body)
        except Conflict:
            pass
        except ApiError as error:
            log.warning("queue %s not copied to %s: %s", name, worker.name, error)

    # ---- mirror ----

    def _mirror(self, job: _Job, state: _WorkerState) -> None:
        """The copy's PodGroup and pods → the manager job's status; its Events → the manager's."""
        pods = [p for p in state.objects[ALL_PODS] if _labels(p).get(VOLCANO_JOB_NAME_KEY) == job.name and p["metadata"].get("namespace") == job.namespace]
        groups = [g for g in state.objects[VOLCANO_PODGROUPS] if _labels(g).get(VOLCANO_JOB_NAME_KEY) == job.name and g["metadata"].get("namespace") == job.namespace]
        phases = [str((p.get("status") or {}).get("phase") or "Pending") for p in pods]
        min_available = int((job.body.get("spec") or {}).get("minAvailable") or len(pods) or 1)
        counts = {phase: phases.count(phase) for phase in ("Pending", "Running", "Succeeded", "Failed")}
        bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
        if pods and counts["Succeeded"] == len(pods):
            phase = "Completed"
        elif counts["Failed"] and counts["Failed"] + counts["Succeeded"] == len(pods):
            phase = "Failed"
        elif counts["Running"] + counts["Succeeded"] >= min_available:
            phase = "Running"
        else:
            phase = "Pending"
        group_status = (groups[0].get("status") or {}) if groups else {}
        message = f"{job.cluster}: {bound} of {len(pods)} pods bound; PodGroup {group_status.get('phase') or 'not yet made'}"
        status = {
            "state": {"phase": phase, "reason": "Dispatched", "message": message},
            "minAvailable": min_available,
            "pending": counts["Pending"],
            "running": counts["Running"],
            "succeeded": counts["Succeeded"],
            "failed": counts["Failed"],
            "conditions": [
                {"status": c.get("status"), "type": c.get("type"), "reason": c.get("reason"), "message": f"{job.cluster}: {c.get('message') or ''}",
                 "lastTransitionTime": c.get("lastTransitionTime")}
                for c in (group_status.get("conditions") or []) if phase not in FINISHED  # a finished gang's PodGroup says no more
            ],
        }
        if (job.body.get("status") or {}) != {**(job.body.get("status") or {}), **status}:
            try:
                self.manager.patch(VCJOBS, job.namespace, job.name, {"status": status}, subresource="status")
            except ApiError as error:
                log.warning("status of %s not written: %s", job.key, error)
        self._mirror_events(job, pods, groups)

    def _mirror_events(self, job: _Job, pods: Sequence[JsonObject], groups: Sequence[JsonObject]) -> None:
        """Each Event of the copy's PodGroup and pods, once, on the manager job: the manager's
        Event is named after the worker's, so a second mirror (a new leader) is a 409."""
        worker = self.workers[ClusterName(job.cluster or "")]
        about = {("Pod", p["metadata"]["name"]) for p in pods} | {("PodGroup", g["metadata"]["name"]) for g in groups}
        if not about:
            return
        try:
            events = worker.client.list(EVENTS, namespace=job.namespace).items
        except ApiError:
            return
        for event in events:
            involved = event.get("involvedObject") or {}
            if (involved.get("kind"), involved.get("name")) not in about:
                continue
            name = f"{job.name}.{job.cluster}.{event['metadata'].get('uid', '')[:13]}"
            message = f"{job.cluster}: {involved.get('kind')} {involved.get('name')}: {event.get('message') or ''}"
            self._event(job, str(event.get("reason") or "Mirrored"), message, warning=event.get("type") == "Warning", name=name)

    def _event(self, job: _Job, reason: str, message: str, *, warning: bool = False, name: str | None = None) -> None:
        now = rfc3339(self.clock.now())
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": job.namespace, **({"name": name} if name else {"generateName": f"{job.name}."})},
            "involvedObject": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "namespace": job.namespace,
                               "name": job.name, "uid": job.uid},
            "reason": reason,
            "message": message[:1024],
            "type": "Warning" if warning else "Normal",
            "source": {"component": self.config.identity},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.manager.create_event(job.namespace, body)
        except Conflict:
            pass  # mirrored already
        except ApiError as error:
            log.warning("event on %s not written: %s", job.key, error)


# ---- pure functions over the raw objects ----


def _int(text: object) -> int:
    try:
        return int(str(text))
    except ValueError:
        return 0


def _typed(kind: ResourceKind, items: Sequence[JsonObject]) -> list[JsonObject]:
    """List items with the `apiVersion` and `kind` a list leaves out (the loader reads them)."""
    return [{"apiVersion": kind.api_version, "kind": kind.kind, **item} for item in items]


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _ignore_missing(call: Any) -> None:
    try:
        call()
    except NotFound:
        pass


def _is_copy_of(copy: Mapping[str, Any], job: _Job) -> bool:
    metadata = copy.get("metadata") or {}
    return (
        _labels(copy).get(MANAGER_UID_LABEL) == job.uid
        and _int((metadata.get("annotations") or {}).get(ATTEMPT_ANNOTATION)) == job.attempt
    )


def _has_pod_group(job: _Job, state: _WorkerState) -> bool:
    return any(
        _labels(g).get(VOLCANO_JOB_NAME_KEY) == job.name and g["metadata"].get("namespace") == job.namespace
        for g in state.objects.get(VOLCANO_PODGROUPS, ())
    )


def _as_submitted(body: JsonObject) -> JsonObject:
    """The manager job as the loader reads a submitted one: no status (a Volcano status would
    tell the loader about pods that do not exist here)."""
    return {key: value for key, value in body.items() if key != "status"}


def _copy_body(job: _Job) -> JsonObject:
    """The vcjob for the worker: the manager's spec, labelled with the job's uid and attempt."""
    metadata = job.body["metadata"]
    return {
        "apiVersion": job.body.get("apiVersion", "batch.volcano.sh/v1alpha1"),
        "kind": "Job",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": {**(metadata.get("labels") or {}), MANAGER_UID_LABEL: job.uid},
            "annotations": {
                **{k: v for k, v in (metadata.get("annotations") or {}).items() if k not in (CLUSTER_ANNOTATION,)},
                ATTEMPT_ANNOTATION: str(job.attempt),
            },
        },
        "spec": job.body.get("spec") or {},
    }
