"""One PodGroup per gang a workload controller's labels form (`OwnerGang`: a LeaderWorkerSet
group, a JobSet Job replica), for the pods that name no PodGroup of their own.

Input: the `Workload` after jobs are expanded. Output: a `PodGroupRecord` per gang, its pods
naming it; run before `grouping.add_one_pod_groups`, which would otherwise give each pending
pod a PodGroup of its own. A pod that names a PodGroup (LWS with its Volcano provider
annotates `scheduling.k8s.io/group-name`) keeps it: that PodGroup is the gang.

The PodGroup: named as the gang (`leader_worker_set`, `jobset` say how), in the pods'
namespace; `min_member` the gang's size, else the pods present; when the only pod present
is the leader of a gang of more (with exclusive placement, and LWS's `LeaderReady` startup,
the controller creates the rest once the leader is scheduled or ready), the leader alone
(min 1), with a warning — as LWS's own Volcano provider sets `minMember: 1` for
`LeaderReady`; waiting for pods that come only after it would hold the gang forever. Queue
from the pods' `scheduling.volcano.sh/queue-name`, else "default"; priority class and
priority from its first pod; preemptable unless a pod says `volcano.sh/preemptable: false`;
no network topology (exclusive placement is the pods' affinity, read as such).

Warnings: one per set naming what is not enforced — the set as a whole is not one gang
(nested gangs come later) — and one per gang whose exclusive-topology key no pod's required
pod affinity or node selector names (the controller's webhook did not run on them).
"""

from __future__ import annotations

import dataclasses

from models.errors import FieldError
from models.snapshot import DEFAULT_QUEUE

from .grouping import Workload
from .leader_worker_set import LWS_SIZE_ANNOTATION
from .raw import Warnings
from .workloads import PodGroupRecord, PodRecord

__all__ = ["add_owner_gang_groups"]


def add_owner_gang_groups(workload: Workload, warnings: Warnings) -> None:
    gangs: dict[str, list[PodRecord]] = {}
    for pod in workload.pods:
        if pod.group_name is None and pod.owner_gang is not None:
            gangs.setdefault(f"{pod.namespace}/{pod.owner_gang.name}", []).append(pod)
    if not gangs:
        return
    sets: dict[tuple[str, str, str], list[str]] = {}
    for pods in gangs.values():
        first = pods[0]
        gang = first.owner_gang
        assert gang is not None  # selected above
        workload.groups.append(_group_record(pods, warnings))
        sets.setdefault((gang.kind, first.namespace, gang.owner), []).append(gang.name)
        _warn_unenforced_exclusive(pods, warnings)
    for (kind, namespace, owner), names in sets.items():
        location = next(pod.location for pod in gangs[f"{namespace}/{names[0]}"])
        unit = "group" if kind == "LeaderWorkerSet" else "Job replica"
        warnings.add(
            location,
            f"{kind} {namespace}/{owner}: each {unit} is a gang of its own ({', '.join(names)}); the {kind} as a "
            "whole is not one gang, and nothing keeps its gangs inside one network domain (not enforced yet)",
            like=f"a {kind} as a whole is not one gang (not enforced yet)",
        )
    grouped = {pod.key: key.partition("/")[2] for key, pods in gangs.items() for pod in pods}
    workload.pods = [
        dataclasses.replace(pod, group_name=grouped[pod.key]) if pod.key in grouped else pod for pod in workload.pods
    ]


def _group_record(pods: list[PodRecord], warnings: Warnings) -> PodGroupRecord:
    first = pods[0]
    gang = first.owner_gang
    assert gang is not None
    for pod in pods[1:]:
        if pod.owner_gang is not None and pod.owner_gang.size != gang.size:
            message = f"gang {gang.name}: size {pod.owner_gang.size}, but pod {first.name} of it says {gang.size}"
            path = (*pod.path, "metadata", "annotations", LWS_SIZE_ANNOTATION)
            raise FieldError(message, location=pod.location, path=path)
    min_member = len(pods) if gang.size is None else gang.size
    if len(pods) == 1 and gang.leader and min_member > 1:
        warnings.add(
            first.location,
            f"{gang.kind} {first.namespace}/{gang.owner}: only the leader of gang {gang.name} (size {gang.size}) is in "
            "the input; its controller creates the others once the leader is placed, so the gang is the leader alone",
            like=f"a {gang.kind} gang is its leader alone",
        )
        min_member = 1
    return PodGroupRecord(
        namespace=first.namespace,
        name=gang.name,
        queue=next((pod.queue_name for pod in pods if pod.queue_name), DEFAULT_QUEUE),
        min_member=min_member,
        min_task_member={},
        min_resources=None,
        priority_class=first.template.priority_class,
        creation_time=min(pod.creation_time or 0.0 for pod in pods),
        preemptable=all(pod.template.preemptable is not False for pod in pods),
        network_topology=None,
        location=first.location,
        priority=first.template.priority,
    )


def _warn_unenforced_exclusive(pods: list[PodRecord], warnings: Warnings) -> None:
    """The exclusive-topology key is enforced by what the controller's webhook injects: a
    required pod affinity on the key (the leader), a node selector on it (the others)."""
    gang = pods[0].owner_gang
    assert gang is not None
    key = gang.exclusive_topology
    if key is None:
        return
    for pod in pods:
        terms = pod.template.inter_pod.required_affinity
        if key in pod.template.node_selector or any(term.topology_key == key for term in terms):
            return
    warnings.add(
        pods[0].location,
        f"{gang.kind} gang {gang.name}: exclusive topology {key!r}, but no pod carries the pod affinity or node "
        f"selector on {key!r} that the {gang.kind} webhook adds; one domain per gang is not enforced",
        like=f"a {gang.kind} exclusive topology not enforced",
    )
