"""One PodGroup per LeaderWorkerSet or JobSet whose pods name no PodGroup of their own, each
of its gangs (`OwnerGang`: a LeaderWorkerSet replica group, a JobSet Job replica) a
sub-group of it.

Input: the `Workload` after jobs are expanded. Output: a `PodGroupRecord` per set / JobSet,
its pods naming it and their sub-group; run before `grouping.add_one_pod_groups`, which would
otherwise give each pending pod a PodGroup of its own. A pod that names a PodGroup (LWS with
its Volcano provider annotates `scheduling.k8s.io/group-name`) keeps it: that PodGroup is
the gang.

The PodGroup: named as the set / JobSet, in the pods' namespace. Each gang is a `SubGroup`
named as the gang (`leader_worker_set`, `jobset` say how), of policy `OwnerGang.policy`,
its `min_member` the gang's size — else, for a JobSet Job whose pods do not state it, the
size its JobSet object in the input gives (`live_jobs`: what the parent adds to its pods),
else the pods present. When the only pod present is the leader of a gang of more (with
exclusive placement, and LWS's `LeaderReady` startup, the controller creates the rest once
the leader is scheduled or ready), the sub-group is the leader alone (min 1), with a warning
— as LWS's own Volcano provider sets `minMember: 1` for `LeaderReady`; waiting for pods that
come only after it would hold the gang forever.

How many gangs start the PodGroup (`OwnerGang.together`): a LeaderWorkerSet starts with
one whole replica group (min_member = the smallest sub-group minimum, no `min_sub_groups`:
its replicas serve alone); a JobSet starts with every Job present (min_member = the sum of
the sub-group minimums, `min_sub_groups` = the Jobs present per replicated Job), as a
JobSet's Jobs run as one job and its failure policy restarts them all together.

Queue from the pods' `scheduling.volcano.sh/queue-name`, else "default"; priority class and
priority from its first pod; preemptable unless a pod says `volcano.sh/preemptable: false`;
no network topology of the PodGroup's own. A gang's exclusive-topology key is recorded for
`exclusive_topology`, which makes it the sub-group's hard HyperNode tier.

Warnings: one per gang whose exclusive-topology key no pod's required pod affinity or node
selector names (the controller's webhook did not run on them): inside one domain is then
enforced only when the key resolves to a tier, and one gang per domain not at all.
"""

from __future__ import annotations

import dataclasses

from models.errors import FieldError
from models.snapshot import DEFAULT_QUEUE, SubGroup

from .grouping import Workload
from .leader_worker_set import LWS_SIZE_ANNOTATION
from .owner_gang import OwnerGang
from .raw import Warnings
from .workloads import PodGroupRecord, PodRecord

__all__ = ["add_owner_gang_groups"]


def add_owner_gang_groups(workload: Workload, warnings: Warnings) -> None:
    owners: dict[tuple[str, str, str], dict[str, list[PodRecord]]] = {}  # (kind, namespace, owner) → gang → pods
    for pod in workload.pods:
        gang = pod.owner_gang
        if pod.group_name is None and gang is not None:
            owners.setdefault((gang.kind, pod.namespace, gang.owner), {}).setdefault(gang.name, []).append(pod)
    membership: dict[str, tuple[str, str]] = {}
    for (_, namespace, owner), gangs in owners.items():
        parent = workload.live_jobs.get(f"{namespace}/{owner}")
        sizes = {sub.name: sub.min_member for sub in parent.group.sub_groups} if parent else {}
        workload.groups.append(_group_record(owner, gangs, sizes, warnings))
        for pods in gangs.values():
            _warn_unenforced_exclusive(pods, warnings)
            membership.update({pod.key: (owner, _gang(pod).name) for pod in pods})
    workload.pods = [
        dataclasses.replace(pod, group_name=membership[pod.key][0], sub_group=membership[pod.key][1])
        if pod.key in membership
        else pod
        for pod in workload.pods
    ]


def _gang(pod: PodRecord) -> OwnerGang:
    assert pod.owner_gang is not None  # only such pods are grouped here
    return pod.owner_gang


def _group_record(
    owner: str, gangs: dict[str, list[PodRecord]], sizes: dict[str, int], warnings: Warnings
) -> PodGroupRecord:
    pods = [pod for members in gangs.values() for pod in members]
    first = pods[0]
    sub_groups = tuple(_sub_group(members, sizes, warnings) for members in gangs.values())
    minimums = [sub.min_member for sub in sub_groups]
    together = _gang(first).together
    min_sub_groups: dict[str, int] = {}
    if together:
        for sub in sub_groups:
            min_sub_groups[sub.policy] = min_sub_groups.get(sub.policy, 0) + 1
    return PodGroupRecord(
        namespace=first.namespace,
        name=owner,
        queue=next((pod.queue_name for pod in pods if pod.queue_name), DEFAULT_QUEUE),
        min_member=sum(minimums) if together else min(minimums),
        min_task_member={},
        min_resources=None,
        priority_class=first.template.priority_class,
        creation_time=min(pod.creation_time or 0.0 for pod in pods),
        preemptable=all(pod.template.preemptable is not False for pod in pods),
        network_topology=None,
        location=first.location,
        priority=first.template.priority,
        sub_groups=sub_groups,
        min_sub_groups=min_sub_groups,
        sub_group_label_keys={
            name: key for name, members in gangs.items() if (key := _gang(members[0]).exclusive_topology)
        },
    )


def _sub_group(pods: list[PodRecord], sizes: dict[str, int], warnings: Warnings) -> SubGroup:
    first = pods[0]
    gang = _gang(first)
    for pod in pods[1:]:
        if _gang(pod).size != gang.size:
            message = f"gang {gang.name}: size {_gang(pod).size}, but pod {first.name} of it says {gang.size}"
            path = (*pod.path, "metadata", "annotations", LWS_SIZE_ANNOTATION)
            raise FieldError(message, location=pod.location, path=path)
    size = gang.size if gang.size is not None else sizes.get(gang.name)
    min_member = len(pods) if size is None else size
    if len(pods) == 1 and gang.leader and min_member > 1:
        warnings.add(
            first.location,
            f"{gang.kind} {first.namespace}/{gang.owner}: only the leader of gang {gang.name} (size {min_member}) "
            "is in the input; its controller creates the others once the leader is placed, so the gang is the "
            "leader alone",
            like=f"a {gang.kind} gang is its leader alone",
        )
        min_member = 1
    return SubGroup(name=gang.name, policy=gang.policy, min_member=min_member)


def _warn_unenforced_exclusive(pods: list[PodRecord], warnings: Warnings) -> None:
    """The exclusive-topology key is enforced by what the controller's webhook injects: a
    required pod affinity on the key (the leader), a node selector on it (the others)."""
    gang = _gang(pods[0])
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
        f"selector on {key!r} that the {gang.kind} webhook adds; one gang per domain is not enforced",
        like=f"a {gang.kind} exclusive topology not enforced",
    )
