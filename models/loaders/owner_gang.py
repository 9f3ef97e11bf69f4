"""The gang a workload controller's labels put a pod in: LeaderWorkerSet's groups and
JobSet's Jobs, whose pods name no PodGroup (they go to the default scheduler's queue with
labels only). `leader_worker_set` and `jobset` read it from a pod; `owner_gang_groups` turns
the pods of one owner (the set, the JobSet) into one PodGroup, each gang a sub-group of it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OwnerGang"]


@dataclass(frozen=True)
class OwnerGang:
    """One pod's gang as its controller's labels and annotations say it.

    `size` is the pods the controller makes for the gang (LeaderWorkerSet's `size`
    annotation); None when the pods do not say it (a JobSet Job's parallelism is on the Job,
    not its pods), and the gang is then the pods present. `leader`: the pod the others
    follow — with exclusive placement both controllers create the others only once it is
    scheduled. `exclusive_topology`: the node label key the gang is to sit inside one value
    of, which the controller's webhook turns into pod (anti-)affinity on that key.
    """

    kind: str  # "LeaderWorkerSet", "JobSet": for messages
    owner: str  # the set / JobSet's name
    name: str  # the PodGroup's name
    task: str  # the pod's task inside it
    size: int | None
    leader: bool
    exclusive_topology: str | None
    policy: str
    together: bool
