"""What a PodGroup says about its sub-groups, as read, before its pods are known.

Two forms arrive, and `sub_groups.assign_sub_groups` turns both into `SubGroup`s once the
pods are in:

- a Volcano `spec.subGroupPolicy[]` (scheduling.volcano.sh/v1beta1, Volcano 1.14+), read
  here (`read_sub_group_policies`), or the one a vcjob task's `partitionPolicy` makes
  (`volcano_job`): a `SubGroupPolicyRecord` — which pods (label selector), how they split
  (`matchLabelKeys`), each sub-group's minimum (`subGroupSize`), how many must start
  (`minSubGroups`) and each one's network topology;
- a Kubernetes Workload API pod group replica: the pod names its pod group and replica key
  (`PodGroupReplica`, from `spec.schedulingGroup` or `spec.workloadRef`), and the PodGroup
  record knows each pod group's gang minimum (`PodGroupRecord.replica_min_member`).

Checks, as Volcano's CRD validates them: `subGroupSize` >= 1, `minSubGroups` >= 0, the
selector's operators. Added here: each policy needs a `name`, unique in the PodGroup, as
sub-groups are named after it and the snapshot counts started sub-groups per name.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.errors import PathPart
from models.snapshot import NetworkTopology

from .cluster_objects import LabelSelector, read_label_selector
from .network_topology_fields import read_network_topology
from .raw import RawObject, Warnings

__all__ = ["SubGroupPolicyRecord", "PodGroupReplica", "read_sub_group_policies"]


@dataclass(frozen=True)
class SubGroupPolicyRecord:
    """One Volcano sub-group policy: its pods are the PodGroup's pods its `selector` matches
    (every pod when None), one sub-group per distinct tuple of their `match_label_keys`
    values."""

    name: str
    selector: LabelSelector | None
    match_label_keys: tuple[str, ...]
    sub_group_size: int | None  # each sub-group's min_member; None: all its pods
    min_sub_groups: int
    network_topology: NetworkTopology | None
    path: tuple[PathPart, ...]  # `spec.subGroupPolicy[i]` of the object, for messages


@dataclass(frozen=True)
class PodGroupReplica:
    """The Workload API pod group (and replica of it) a pod names: its sub-group is
    `<pod_group>` or `<pod_group>-<key>`."""

    pod_group: str
    key: str | None
    path: tuple[PathPart, ...]  # the pod's `spec.schedulingGroup` or `spec.workloadRef`


def read_sub_group_policies(spec: RawObject, *, warnings: Warnings) -> tuple[SubGroupPolicyRecord, ...]:
    """`spec.subGroupPolicy[]` of a Volcano PodGroup. Example: `{name: shard, subGroupSize: 8,
    minSubGroups: 4, matchLabelKeys: [shard]}` → policy `shard`, sub-groups of min 8, 4 of
    them to start the job."""
    policies: list[SubGroupPolicyRecord] = []
    first_index: dict[str, int] = {}
    for index, policy in enumerate(spec.children("subGroupPolicy")):
        name = policy.optional_string("name")
        if name is None:
            raise policy.error("name", "a sub-group policy needs a name: its sub-groups are named after it")
        if name in first_index:
            raise policy.error("name", f"{name!r} repeats spec.subGroupPolicy[{first_index[name]}]")
        first_index[name] = index
        policies.append(
            SubGroupPolicyRecord(
                name=name,
                selector=read_label_selector(policy.child("labelSelector")) if policy.has("labelSelector") else None,
                match_label_keys=policy.string_list("matchLabelKeys"),
                sub_group_size=policy.optional_integer("subGroupSize", minimum=1),
                min_sub_groups=policy.integer("minSubGroups", 0, minimum=0),
                network_topology=read_network_topology(policy, warnings=warnings),
                path=policy.path,
            )
        )
    return tuple(policies)
