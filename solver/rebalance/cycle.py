"""The cluster as one solve leaves it: what what-if's `rebalance` advises on when it comes
with other changes (`solver.whatif`, `POST /v1/what-if`).

Input: the snapshot a `Placement` was solved on, and the placement. Output: a new validated
`Snapshot` where every bound pod runs on its node (with its devices and NUMA cell) and
every evicted pod is gone, its estimated share of its node's usage with it
(`solver.rebalance.load`: a node at 90 % cpu losing a pod whose share is 30 % reads 60 %).
A pod bound this cycle brings no usage: nothing has measured it yet, so the advice does
not guess what it will use — it takes room (requests, devices), not usage headroom.
"""

from __future__ import annotations

from models.placement import Placement
from models.snapshot import Node, NodeName, Pod, Snapshot
from solver.rebalance.load import RESOURCES, percent_of, usage_table

__all__ = ["cycle_snapshot"]


def cycle_snapshot(snapshot: Snapshot, placement: Placement) -> Snapshot:
    """`snapshot` with `placement` applied (see the module docstring)."""
    if not placement.binds and not placement.evictions:
        return snapshot
    binds = {bind.pod: bind for bind in placement.binds}
    evicted = {eviction.pod for eviction in placement.evictions}
    loads = usage_table(snapshot).loads
    relief: dict[NodeName, dict[str, int]] = {}
    pods: list[Pod] = []
    for pod in snapshot.pods:
        if pod.key in evicted:
            load = loads.get(pod.key)
            if load is not None:
                node_relief = relief.setdefault(load.node, {})
                for r, share in load.leaving.items():
                    node_relief[r] = node_relief.get(r, 0) + share
            continue
        bind = binds.get(pod.key)
        if bind is not None and pod.phase == "pending":
            pod = pod.model_copy(
                update={"phase": "running", "node": bind.node, "gpu_indices": bind.gpus, "numa_cell": bind.numa_cell}
            )
        pods.append(pod)
    nodes = [_relieved(node, relief.get(node.name)) for node in snapshot.nodes]
    return snapshot.replaced(nodes=nodes, pods=pods)


def _relieved(node: Node, relief: dict[str, int] | None) -> Node:
    if not relief or node.usage is None:
        return node
    update = {}
    for r in RESOURCES:
        percent = getattr(node.usage, f"{r}_percent")
        if percent is not None and r in relief:
            update[f"{r}_percent"] = max(0.0, percent - percent_of(relief[r]))
    return node.model_copy(update={"usage": node.usage.model_copy(update=update)})
