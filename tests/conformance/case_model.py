"""A case's `model` block: nested gangs said in the snapshot's own words, for objects the
loaders do not make sub-groups of.

Volcano's `subGroupPolicy` and the Kubernetes Workload API's `workloadRef` /
`podGroupReplicaKey` reach the snapshot as `SubGroup`s, `PodGroup.min_sub_groups` and
`Pod.sub_group`. A case keeps the objects as they are submitted (a Workload, which no loader
reads yet, as a comment) and says in `model` what they stand for, by the loaders' contract:

    model:
      c1/pg1:                          # a PodGroup the objects below make
        min_member: 0                  # optional: instead of what the loader read
        min_sub_groups: {task2: 2}     # policy -> sub-groups that must start
        sub_groups:
          - name: task2-worker         # <policy>-<label value>, as the contract names them
            policy: task2
            min_member: 2              # subGroupSize
            network_topology: {mode: hard, highest_tier_allowed: 1}
            pods: [p2, p3]             # pods of that PodGroup, by name

Once a loader reads the objects itself, the block stays as the contract's check: a PodGroup
that comes out of the loader with sub-groups must come out with exactly these (same
sub-groups, same minimums, same pods), else the case does not load.
"""

from __future__ import annotations

from collections.abc import Mapping

from models.snapshot import PodGroup, Snapshot, SubGroup

__all__ = ["with_case_model"]

_GROUP_KEYS = {"min_member", "min_sub_groups", "sub_groups"}
_SUB_GROUP_KEYS = {"name", "policy", "min_member", "network_topology", "pods"}


def with_case_model(snapshot: Snapshot, model: Mapping[str, Mapping[str, object]], *, case: str) -> Snapshot:
    """`snapshot` with the nested gangs `model` gives each PodGroup it names (module
    docstring). Example: {"c1/pg1": {"sub_groups": [{"name": "a", "min_member": 2, "pods":
    ["p1", "p2"]}]}} → pg1 has sub-group a of min 2, and pods p1, p2 belong to it."""
    if not model:
        return snapshot
    groups = dict(snapshot.pod_group_by_key)
    pods = {pod.key: pod for pod in snapshot.pods}
    for key, spec in model.items():
        if key not in groups:
            raise ValueError(f"{case}: model names PodGroup {key!r}, which the objects do not make")
        unknown = set(spec) - _GROUP_KEYS
        if unknown:
            raise ValueError(f"{case}: model.{key}: unknown keys {sorted(unknown)}")
        group, members = _group(groups[key], spec, case=case)
        _agree_with_loader(groups[key], group, members, snapshot, case=case)
        groups[key] = group
        for sub_group, names in members.items():
            for name in names:
                pod_key = f"{group.namespace}/{name}"
                if pod_key not in pods or pods[pod_key].pod_group != group.key:
                    raise ValueError(f"{case}: model.{key}: pod {name!r} is not a pod of {key}")
                pods[pod_key] = pods[pod_key].model_copy(update={"sub_group": sub_group})
    fields = {name: getattr(snapshot, name) for name in Snapshot.model_fields}
    return Snapshot.model_validate(
        {**fields, "pod_groups": tuple(groups[g.key] for g in snapshot.pod_groups), "pods": tuple(pods.values())}
    )


def _group(group: PodGroup, spec: Mapping[str, object], *, case: str) -> tuple[PodGroup, dict[str, list[str]]]:
    """The PodGroup with the block's sub-groups, and sub-group name → its pods' names."""
    subs, members = [], {}
    for index, sub in enumerate(spec.get("sub_groups") or ()):  # type: ignore[attr-defined]
        unknown = set(sub) - _SUB_GROUP_KEYS
        if unknown:
            raise ValueError(f"{case}: model.{group.key}.sub_groups[{index}]: unknown keys {sorted(unknown)}")
        fields = {name: value for name, value in sub.items() if name != "pods"}
        subs.append(SubGroup.model_validate(fields))
        members[sub["name"]] = list(sub.get("pods") or ())
    update: dict[str, object] = {"sub_groups": subs, "min_sub_groups": dict(spec.get("min_sub_groups") or {})}  # type: ignore[call-overload]
    if "min_member" in spec:
        update["min_member"] = spec["min_member"]
    return PodGroup.model_validate({**group.model_dump(), **update}), members


def _agree_with_loader(
    loaded: PodGroup, modelled: PodGroup, members: Mapping[str, list[str]], snapshot: Snapshot, *, case: str
) -> None:
    """A PodGroup the loader already gave sub-groups must have the block's, pod for pod."""
    if not loaded.sub_groups:
        return
    read = {pod.name: pod.sub_group for pod in snapshot.pods_by_group.get(loaded.key, ()) if pod.sub_group}
    said = {name: sub for sub, names in members.items() for name in names}
    same = (
        set(loaded.sub_groups) == set(modelled.sub_groups)
        and _counted(loaded.min_sub_groups) == _counted(modelled.min_sub_groups)
        and read == said
    )
    if not same:
        raise ValueError(
            f"{case}: the loader read {loaded.key} as sub-groups {[s.model_dump() for s in loaded.sub_groups]}, "
            f"min_sub_groups {loaded.min_sub_groups}, pods {read}; the case's model says "
            f"{[s.model_dump() for s in modelled.sub_groups]}, {modelled.min_sub_groups}, {said}"
        )


def _counted(min_sub_groups: Mapping[str, int]) -> dict[str, int]:
    """`minSubGroups: 0` and no `minSubGroups` say the same: drop the zeros."""
    return {policy: count for policy, count in min_sub_groups.items() if count}
