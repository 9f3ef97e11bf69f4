"""Form each PodGroup's sub-groups (`SubGroup`, gangs inside the gang) from its pods.

Input: the `Workload` after jobs are expanded and one-pod PodGroups added, each PodGroup
record with what it said (`sub_group_policy`). Output: the PodGroup records' `sub_groups`
and `min_sub_groups` and the pod records' `sub_group`, which `assemble` puts on the
snapshot; pending pods that name a pod group their Workload lacks are dropped.

Volcano `subGroupPolicy` (scheduling.volcano.sh/v1beta1), as Volcano's scheduler forms its
sub-jobs (`JobInfo.getOrCreateSubJob`): a pod joins the first policy whose `labelSelector`
matches it (every pod when there is none) and that finds a non-empty value for each of its
`matchLabelKeys` on the pod; its sub-group is `<policy>-<value1>[-<value2>…]` (`<policy>`
alone when the policy has no keys). A pod no policy takes is in no sub-group: it counts for
the PodGroup's own `minMember` and topology only (`solver.rules.gang`). Each sub-group's
min_member is `subGroupSize`, else all its pods (running and pending) — where Volcano's CRD
defaults an absent `subGroupSize` to 1 (any pod starts the sub-group), batchplace reads an
absent size as "the whole sub-group", the gang the policy was written for; a PodGroup read
from a cluster carries the defaulted 1 and means the same here as there. A sub-group with
fewer pods than its `subGroupSize` waits for more, with a warning. `minSubGroups` (>
0) is the PodGroup's `min_sub_groups[policy]`: more than the sub-groups there are is not an
error — the PodGroup stays pending, as in Volcano — and is said in a warning. A policy that
forms no sub-group (its selector matches no pod, or no pod has its keys) is a warning, and
its `minSubGroups` cannot apply. Example: policy `shard`, `matchLabelKeys: [shard]`,
`subGroupSize: 8`, `minSubGroups: 4`, 32 pods labelled shard 0-3 → sub-groups shard-0 …
shard-3 of min 8, min_sub_groups {shard: 4}.

Kubernetes Workload API (`scheduling.k8s.io`): the pod group policy applies to each replica
of a pod group separately, so each replica is a sub-group `<pod group>-<replica key>` (the
replica without a key: `<pod group>`) of policy `<pod group>` and min_member the pod
group's gang `minCount` (1 for `basic`). A PodGroup object whose pods give no replica key
has no sub-groups (it is one gang, as before); when some do, a pod without one is the
keyless replica, with a warning naming its `podGroupReplicaKey`. Example: Workload `llm`,
pod group `decode` with minCount 4, pods with replica keys 0 and 1 → sub-groups decode-0
and decode-1 of min 4.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from models.errors import FieldError, format_path
from models.snapshot import SubGroup

from .grouping import Workload
from .raw import Warnings
from .sub_group_policy import PodGroupReplica, SubGroupPolicyRecord
from .workloads import PodGroupRecord, PodRecord

__all__ = ["assign_sub_groups"]


@dataclasses.dataclass
class _Assigned:
    """What `assign_sub_groups` assigned, applied to the workload once at its end."""

    groups: dict[str, PodGroupRecord] = dataclasses.field(default_factory=dict)  # key → record with its sub-groups
    pod_sub_group: dict[str, str] = dataclasses.field(default_factory=dict)  # pod key → its sub-group


def assign_sub_groups(workload: Workload, warnings: Warnings) -> None:
    """Fill the workload's sub-groups (module docstring); drop pending pods that name a pod
    group their Workload does not have, or a Workload not in the input."""
    groups = {group.key: group for group in workload.groups}
    members: dict[str, list[PodRecord]] = {}
    kept: list[PodRecord] = []
    for pod in workload.pods:
        group = groups.get(f"{pod.namespace}/{pod.group_name}") if pod.group_name else None
        if group is None and pod.replica is not None and pod.replica.path[-1] == "workloadRef":
            unknown = f"{format_path((*pod.replica.path, 'name'))} names Workload {pod.group_name!r}, which is not in the input"
            action = "skipped" if pod.pending else "it only takes capacity"
            warnings.add(pod.location, f"{unknown}; {action}", like="a pod's Workload is not in the input")
            if pod.pending:
                continue
            pod = dataclasses.replace(pod, group_name=None, replica=None)
        kept.append(pod)
        if group is not None:
            members.setdefault(group.key, []).append(pod)
    workload.pods = kept
    dropped: set[str] = set()
    assigned = _Assigned()
    for key, pods in members.items():
        group = groups[key]
        if group.sub_group_policies:
            _apply_policies(group, pods, warnings, assigned)
        elif group.replica_min_member:
            dropped |= _apply_replicas(group, pods, warnings, assigned)
    workload.groups = [assigned.groups.get(group.key, group) for group in workload.groups]
    workload.pods = [
        dataclasses.replace(pod, sub_group=assigned.pod_sub_group[pod.key]) if pod.key in assigned.pod_sub_group else pod
        for pod in workload.pods
        if pod.key not in dropped
    ]


# ---- Volcano subGroupPolicy ----


def _apply_policies(
    group: PodGroupRecord,
    pods: Sequence[PodRecord],
    warnings: Warnings,
    assigned: _Assigned,
) -> None:
    members: dict[str, list[PodRecord]] = {}
    policy_of: dict[str, SubGroupPolicyRecord] = {}
    for pod in pods:
        found = _policy_sub_group(group.sub_group_policies, pod)
        if found is None:
            continue
        policy, name = found
        if policy_of.setdefault(name, policy) is not policy:
            raise FieldError(
                f"policy {policy.name!r} forms sub-group {name!r}, which policy {policy_of[name].name!r} forms too; "
                "rename one of the policies",
                location=group.location,
                path=(*policy.path, "name"),
            )
        members.setdefault(name, []).append(pod)
    sub_groups = [
        SubGroup(
            name=name,
            policy=policy_of[name].name,
            min_member=policy_of[name].sub_group_size or len(pods_of),
            network_topology=policy_of[name].network_topology,
        )
        for name, pods_of in members.items()
    ]
    for sub in sub_groups:
        if len(members[sub.name]) < sub.min_member:
            warnings.add(
                group.location,
                f"sub-group {sub.name} has {len(members[sub.name])} pod(s), fewer than its subGroupSize {sub.min_member}; "
                "it cannot start until more arrive",
                like="a sub-group has fewer pods than its subGroupSize",
            )
    min_sub_groups = {}
    for policy in group.sub_group_policies:
        formed = sum(1 for sub in sub_groups if sub.policy == policy.name)
        where = format_path(policy.path)
        if not formed:
            warnings.add(
                group.location,
                f"{where} ({policy.name}) takes no pod: its labelSelector matches none, or none has a value for each of "
                f"its matchLabelKeys; it forms no sub-group"
                + (f" and its minSubGroups {policy.min_sub_groups} does not apply" if policy.min_sub_groups else ""),
            )
            continue
        if policy.min_sub_groups:
            min_sub_groups[policy.name] = policy.min_sub_groups
        if policy.min_sub_groups > formed:
            warnings.add(
                group.location,
                f"{where}.minSubGroups {policy.min_sub_groups} is more than the {formed} sub-group(s) its pods form; "
                "the PodGroup stays pending until pods for more arrive",
            )
    _record(group, sub_groups, members, min_sub_groups, assigned)


def _policy_sub_group(policies: Sequence[SubGroupPolicyRecord], pod: PodRecord) -> tuple[SubGroupPolicyRecord, str] | None:
    """The first policy that takes the pod, and the pod's sub-group name under it."""
    labels = pod.template.labels
    for policy in policies:
        if policy.selector is not None and not policy.selector.matches(labels):
            continue
        values = [labels.get(key, "") for key in policy.match_label_keys]
        if all(values):
            return policy, "-".join((policy.name, *values))
    return None


# ---- Kubernetes Workload API pod group replicas ----


def _apply_replicas(
    group: PodGroupRecord,
    pods: Sequence[PodRecord],
    warnings: Warnings,
    assigned: _Assigned,
) -> set[str]:
    """Sub-groups per pod group replica; returns the pending pods to drop."""
    if not any(pod.replica is not None for pod in pods):
        return set()
    members: dict[str, list[PodRecord]] = {}
    policy_of: dict[str, str] = {}
    dropped: set[str] = set()
    for pod in pods:
        replica = pod.replica or _keyless_replica(group, pod, warnings)
        if replica.pod_group not in group.replica_min_member:
            field = format_path((*replica.path, "podGroup"))
            action = "skipped" if pod.pending else "it counts for the Workload alone"
            known = ", ".join(sorted(group.replica_min_member))
            warnings.add(
                pod.location,
                f"{field} {replica.pod_group!r} is not a pod group of Workload {group.name!r} ({known}); {action}",
                like="a pod names a pod group its Workload does not have",
            )
            if pod.pending:
                dropped.add(pod.key)
            continue
        name = replica.pod_group if replica.key is None else f"{replica.pod_group}-{replica.key}"
        policy_of[name] = replica.pod_group
        members.setdefault(name, []).append(pod)
    sub_groups = [
        SubGroup(name=name, policy=policy_of[name], min_member=group.replica_min_member[policy_of[name]])
        for name in members
    ]
    _record(group, sub_groups, members, {}, assigned)
    return dropped


def _keyless_replica(group: PodGroupRecord, pod: PodRecord, warnings: Warnings) -> PodGroupReplica:
    """A pod of a PodGroup object without a replica key, where other pods have one: the
    replica without a key (the pod group's name)."""
    path = (*pod.path, "spec", "schedulingGroup")
    warnings.add(
        pod.location,
        f"{format_path((*path, 'podGroupReplicaKey'))} is not set while other pods of PodGroup {group.name!r} "
        f"set one; it joins the replica without a key, sub-group {group.name!r}",
        like="a pod without podGroupReplicaKey among pods with one",
    )
    return PodGroupReplica(pod_group=group.name, key=None, path=path)


def _record(
    group: PodGroupRecord,
    sub_groups: list[SubGroup],
    members: dict[str, list[PodRecord]],
    min_sub_groups: dict[str, int],
    assigned: _Assigned,
) -> None:
    """Note the PodGroup's record with its sub-groups, and each member's sub-group, in `assigned`."""
    assigned.groups[group.key] = dataclasses.replace(group, sub_groups=tuple(sub_groups), min_sub_groups=min_sub_groups)
    for name, pods in members.items():
        for pod in pods:
            assigned.pod_sub_group[pod.key] = name
