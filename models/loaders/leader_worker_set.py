"""Read a LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`, kubernetes-sigs/lws): from the
labels and annotations the LWS controller and its pod webhook put on its pods, or, when none
of its pods is in the input, from the object itself (`leader_worker_set_object`).

LWS makes `replicas` groups of `size` pods: a leader `<set>-<group index>` (worker index 0)
and workers `<set>-<group index>-<worker index>`. Every pod carries the labels
`leaderworkerset.sigs.k8s.io/name` (the set), `group-index`, `worker-index` (0 on the
leader), `group-key` (a hash of the group), and the annotation `leaderworkerset.sigs.k8s.io/
size`. A group is a unit that starts whole — a model replica sharded over its pods — so it
is a sub-group gang `<set>-<group index>` of `size` members, policy `<set>`; the set is one
PodGroup `<set>`, tasks `leader` and `worker`, which one whole group starts (its replicas
serve alone). `owner_gang_groups` builds that PodGroup from the pods.

Exclusive placement: the set's annotation `leaderworkerset.sigs.k8s.io/exclusive-topology:
<node label key>` is copied onto its pods, and the webhook adds to the leader a required pod
affinity to its own group-key and a required anti-affinity to other groups' group-keys, both
on that key; the workers are created only once the leader is scheduled, with a node selector
for the leader's value of the key. batchplace reads that affinity and node selector as it
reads any pod's (`solver.rules.pod_affinity`), and makes the key each group's hard network
topology at the tier whose HyperNodes group the nodes by it (`exclusive_topology`).
`subgroup-exclusive-topology` with `leaderWorkerTemplate.subGroupPolicy` splits a group
further (a third gang level the model does not hold): inside a group it is kept by the
pods' webhook affinity, once the pods exist.
"""

from __future__ import annotations

from models.errors import FieldError

from .owner_gang import OwnerGang
from .raw import Metadata, RawObject

__all__ = [
    "read_leader_worker_set_gang",
    "LWS_NAME_LABEL",
    "LWS_WORKER_INDEX_LABEL",
    "LWS_SIZE_ANNOTATION",
    "LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION",
    "LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION",
    "LEADER_TASK",
    "WORKER_TASK",
]

LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION = "leaderworkerset.sigs.k8s.io/exclusive-topology"
LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
LEADER_TASK = "leader"
WORKER_TASK = "worker"


def read_leader_worker_set_gang(obj: RawObject, meta: Metadata) -> OwnerGang | None:
    """The group a pod with the label `leaderworkerset.sigs.k8s.io/name` is in; None for other
    pods. A pod with that label but no readable group index or size is an error naming the
    label or annotation (the LWS webhook always sets both)."""
    set_name = meta.labels.get(LWS_NAME_LABEL)
    if not set_name:
        return None
    group_index = _index(obj, meta, ("labels", LWS_GROUP_INDEX_LABEL), meta.labels.get(LWS_GROUP_INDEX_LABEL))
    worker_index = meta.labels.get(LWS_WORKER_INDEX_LABEL, "0")
    size_text = meta.annotations.get(LWS_SIZE_ANNOTATION)
    size = _index(obj, meta, ("annotations", LWS_SIZE_ANNOTATION), size_text)
    if size < 1:
        raise FieldError(
            f"a group's size is at least 1, got {size_text!r}",
            location=obj.location,
            path=(*obj.path, "metadata", "annotations", LWS_SIZE_ANNOTATION),
        )
    leader = worker_index == "0"
    return OwnerGang(
        kind="LeaderWorkerSet",
        owner=set_name,
        name=f"{set_name}-{group_index}",
        task=LEADER_TASK if leader else WORKER_TASK,
        size=size,
        leader=leader,
        exclusive_topology=meta.annotations.get(LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION) or None,
        policy=set_name,
        together=False,
    )


def _index(obj: RawObject, meta: Metadata, where: tuple[str, str], text: str | None) -> int:
    """A non-negative integer label or annotation of an LWS pod, or an error naming it."""
    if text is None or not text.strip().isdigit():
        got = "it is missing" if text is None else f"got {text!r}"
        message = f"a LeaderWorkerSet pod ({LWS_NAME_LABEL}: {meta.labels[LWS_NAME_LABEL]}) needs an integer here; {got}"
        raise FieldError(message, location=obj.location, path=(*obj.path, "metadata", *where))
    return int(text)

