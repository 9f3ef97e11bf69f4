"""Hypothesis strategies that draw valid, consistent snapshots.

`snapshots()` draws up to 50 nodes (CPU, memory, 0–8 GPUs on two NUMA cells, some taints
and unschedulable nodes), leaf HyperNodes of up to four nodes under one spine, up to four
queues (weights, capabilities, guarantees, a child queue, non-reclaimable ones), and up to 30
PodGroups with one or two tasks: whole or fractional GPUs, hard topology, single-NUMA
pods, a dependency between tasks, priorities, node selectors, required node affinity
(`node_selector_terms`: every operator, ORed terms, `matchFields`) and preferred node
affinity (weighted terms of the same kind). Some pods of some groups already run —
placed first-fit so that the snapshot itself breaks no rule. A few PodGroups name a
queue that does not exist.

`share_levels()` draws one level of the queue tree for `solver.shares.water_fill`, and
`queue_trees()` a small two-level queue tree for `deserved_shares`, both with guarantees
that may sum above what the level has.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from models.snapshot import Snapshot

GIB = 2**30


@st.composite
def snapshots(draw: st.DrawFn, *, max_nodes: int = 50, max_groups: int = 30) -> Snapshot:
    node_count = draw(st.integers(1, max_nodes))
    nodes: list[dict[str, Any]] = []
    for index in range(node_count):
        gpus = draw(st.sampled_from([0, 0, 2, 4, 8]))
        node: dict[str, Any] = {
            "name": f"n{index:02d}",
            "allocatable": {
                "cpu": draw(st.sampled_from([4, 8, 16, 32])) * 1000,
                "memory": draw(st.sampled_from([16, 64, 256])) * GIB,
                "gpu": gpus * 1000,
            },
            "labels": {
                "zone": draw(st.sampled_from(["a", "b"])),
                **({"gpu": draw(st.sampled_from(["a100", "h100"]))} if gpus else {}),
                **draw(st.sampled_from([{}, {"gen": "7"}, {"gen": "9"}, {"gen": "x"}])),
            },
            "gpus": [{"index": g, "numa_cell": 0 if g < gpus // 2 else 1} for g in range(gpus)],
            "numa_cells": [{"id": 0, "cpu_milli": None}, {"id": 1, "cpu_milli": None}] if gpus else [],
        }
        if draw(st.integers(0, 9)) == 0:
            node["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
        if draw(st.integers(0, 19)) == 0:
            node["unschedulable"] = True
        nodes.append(node)

    leaf_size = draw(st.sampled_from([2, 4]))
    leaves = [
        {"name": f"leaf-{i}", "tier": 1, "node_members": [n["name"] for n in nodes[start : start + leaf_size]]}
        for i, start in enumerate(range(0, node_count, leaf_size))
    ]
    hypernodes = [*leaves, {"name": "spine", "tier": 2, "hypernode_members": [leaf["name"] for leaf in leaves]}]
    if not draw(st.booleans()):
        hypernodes = []

    queue_count = draw(st.integers(1, 4))
    queues: list[dict[str, Any]] = []
    for index in range(queue_count):
        queue: dict[str, Any] = {
            "name": f"q{index}",
            "weight": draw(st.integers(1, 4)),
            "reclaimable": draw(st.booleans()),
        }
        cap = draw(st.sampled_from([None, "gpu", "cpu"]))
        if cap == "gpu":
            queue["capability"] = {"gpu": draw(st.integers(0, 24)) * 1000}
        elif cap == "cpu":
            queue["capability"] = {"cpu": draw(st.integers(1, 64)) * 1000}
        guarantee = draw(st.sampled_from([None, None, None, "gpu", "cpu"]))
        if guarantee == "gpu":
            queue["guarantee"] = {"gpu": draw(st.integers(1, 16)) * 1000}
        elif guarantee == "cpu":
            queue["guarantee"] = {"cpu": draw(st.integers(1, 48)) * 1000}
        if index == 3:
            queue["parent"] = "q0"
        queues.append(queue)

    free_cpu = [n["allocatable"]["cpu"] for n in nodes]
    free_memory = [n["allocatable"]["memory"] for n in nodes]
    gpu_free = [[1000] * (n["allocatable"]["gpu"] // 1000) for n in nodes]

    def run_somewhere(requests: dict[str, int], numa: bool) -> tuple[int, list[int]] | None:
        """First fit of a running pod, so the drawn snapshot is itself valid."""
        gpu = requests.get("gpu", 0)
        for i, node in enumerate(nodes):
            if node.get("unschedulable") or node.get("taints"):
                continue
            if requests["cpu"] > free_cpu[i] or requests["memory"] > free_memory[i]:
                continue
            devices: list[int] = []
            if 0 < gpu < 1000:
                devices = [g for g, free in enumerate(gpu_free[i]) if free >= gpu][:1]
                if not devices:
                    continue
            elif gpu:
                whole = [g for g, free in enumerate(gpu_free[i]) if free == 1000]
                if numa:
                    cells = [[g for g in whole if node["gpus"][g]["numa_cell"] == c] for c in (0, 1)]
                    whole = next((c for c in cells if len(c) >= gpu // 1000), [])
                if len(whole) < gpu // 1000:
                    continue
                devices = whole[: gpu // 1000]
            free_cpu[i] -= requests["cpu"]
            free_memory[i] -= requests["memory"]
            for g in devices:
                gpu_free[i][g] -= gpu if gpu < 1000 else 1000
            return i, devices
        return None

    group_count = draw(st.integers(0, max_groups))
    pod_groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for g in range(group_count):
        name = f"job-{g:02d}"
        queue_name = f"q{draw(st.integers(0, queue_count - 1))}"
        if draw(st.integers(0, 14)) == 0:
            queue_name = "no-such-queue"
        task_count = draw(st.integers(1, 2))
        tasks: list[dict[str, Any]] = []
        replicas_by_task: list[int] = []
        numa = draw(st.integers(0, 4)) == 0
        for t in range(task_count):
            gpu = draw(st.sampled_from([0, 0, 250, 500, 1000, 2000, 4000, 8000]))
            replicas = draw(st.integers(1, 6))
            task: dict[str, Any] = {
                "name": f"t{t}",
                "min_available": draw(st.integers(0, replicas)),
                "requests": {
                    "cpu": draw(st.sampled_from([500, 1000, 2000, 4000])),
                    "memory": draw(st.sampled_from([1, 4, 16])) * GIB,
                    **({"gpu": gpu} if gpu else {}),
                },
                "numa_policy": "single-numa-node" if numa and gpu >= 1000 else "none",
            }
            if draw(st.booleans()):
                task["node_selector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
            if draw(st.integers(0, 3)) == 0:
                task["required_node_affinity"] = draw(node_selector_terms(node_count))
            if draw(st.integers(0, 3)) == 0:
                task["preferred_node_affinity"] = [
                    {"weight": draw(st.sampled_from([1, 30, 100])), "preference": term}
                    for term in draw(node_selector_terms(node_count))
                ]
            if t == 1 and draw(st.integers(0, 3)) == 0:
                task["depends_on"] = ["t0"]
            tasks.append(task)
            replicas_by_task.append(replicas)
        total = sum(replicas_by_task)
        group: dict[str, Any] = {
            "namespace": "default",
            "name": name,
            "queue": queue_name,
            "priority": draw(st.integers(0, 3)),
            "min_member": draw(st.integers(max(t["min_available"] for t in tasks), total)),
            "creation_time": float(g),
            "preemptable": draw(st.integers(0, 4)) > 0,
            "tasks": tasks,
        }
        if hypernodes and draw(st.integers(0, 3)) == 0:
            group["network_topology"] = {"mode": "hard", "highest_tier_allowed": draw(st.integers(1, 2))}
        pod_groups.append(group)

        running_group = queue_name != "no-such-queue" and "network_topology" not in group and draw(st.booleans())
        for task, replicas in zip(tasks, replicas_by_task):
            dependent = bool(task.get("depends_on"))
            for r in range(replicas):
                pod: dict[str, Any] = {
                    "namespace": "default",
                    "name": f"{name}-{task['name']}-{r}",
                    "phase": "pending",
                    "pod_group": f"default/{name}",
                    "task": task["name"],
                    "requests": task["requests"],
                    "priority": group["priority"],
                    "preemptable": group["preemptable"],
                }
                if running_group and not dependent and not task.get("node_selector") and not task.get(
                    "required_node_affinity"
                ):
                    spot = run_somewhere(
                        {"cpu": task["requests"]["cpu"], "memory": task["requests"]["memory"],
                         "gpu": task["requests"].get("gpu", 0)},
                        task["numa_policy"] == "single-numa-node",
                    )
                    if spot is not None:
                        node_index, devices = spot
                        pod.update(phase="running", node=nodes[node_index]["name"], gpu_indices=devices)
                        if task["numa_policy"] == "single-numa-node":
                            pod["numa_cell"] = nodes[node_index]["gpus"][devices[0]]["numa_cell"]
                pods.append(pod)

    return Snapshot.model_validate(
        {"nodes": nodes, "hypernodes": hypernodes, "queues": queues, "pod_groups": pod_groups, "pods": pods}
    )


_REQUIREMENT_VALUES = {
    "In": [["h100"], ["a100", "h100"], ["a"], ["7"]],
    "NotIn": [["h100"], ["b"], ["x"]],
    "Exists": [[]],
    "DoesNotExist": [[]],
    "Gt": [["6"], ["7"], ["8"]],
    "Lt": [["8"], ["9"], ["10"]],
}


@st.composite
def node_selector_terms(draw: st.DrawFn, node_count: int) -> list[dict[str, Any]]:
    """One or two ORed terms of one or two requirements each, every operator, over the
    labels `snapshots` gives nodes (`zone`, `gpu` on GPU nodes, `gen` on some, one of them
    not an integer), and now and then a `matchFields` on a node's name."""
    terms = []
    for _ in range(draw(st.integers(1, 2))):
        expressions = []
        for _ in range(draw(st.integers(1, 2))):
            operator = draw(st.sampled_from(sorted(_REQUIREMENT_VALUES)))
            key = draw(st.sampled_from(["zone", "gpu", "gen"]))
            expressions.append({"key": key, "operator": operator, "values": draw(st.sampled_from(_REQUIREMENT_VALUES[operator]))})
        term: dict[str, Any] = {"match_expressions": expressions}
        if draw(st.integers(0, 4)) == 0:
            name = f"n{draw(st.integers(0, node_count - 1)):02d}"
            term["match_fields"] = [{"key": "metadata.name", "operator": draw(st.sampled_from(["In", "NotIn"])), "values": [name]}]
        terms.append(term)
    return terms


@st.composite
def share_levels(draw: st.DrawFn) -> dict[str, Any]:
    """One level of the queue tree as `solver.shares.water_fill` takes it: a total of CPU
    and GPU, and 1–5 members with weights, requests (up to 1.5× the total), sometimes a
    capability, a guarantee (their sum may exceed the total) or an explicit deserved
    naming one resource; `level_guarantee` sometimes adds an idle queue's guarantee."""
    total = {"cpu": draw(st.integers(0, 64)) * 1000, "gpu": draw(st.integers(0, 16)) * 1000}

    def amounts(scale: float) -> dict[str, int]:
        return {name: draw(st.integers(0, int(limit * scale) // 1000)) * 1000 for name, limit in total.items()}

    members: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        fixed = draw(st.sampled_from([None, None, None, "cpu", "gpu"]))
        members.append(
            {
                "weight": draw(st.integers(1, 4)),
                "request": amounts(1.5),
                "capability": amounts(1.0) if draw(st.integers(0, 2)) == 0 else None,
                "guarantee": amounts(0.6) if draw(st.integers(0, 2)) == 0 else {},
                "fixed": None if fixed is None else {fixed: draw(st.integers(0, 48)) * 1000},
            }
        )
    level_guarantee: dict[str, int] = {}
    for member in members:
        for name, amount in member["guarantee"].items():
            level_guarantee[name] = level_guarantee.get(name, 0) + amount
    if draw(st.booleans()):
        for name, amount in amounts(0.3).items():
            level_guarantee[name] = level_guarantee.get(name, 0) + amount
    return {"total": total, "members": members, "level_guarantee": level_guarantee}


@st.composite
def queue_trees(draw: st.DrawFn) -> Snapshot:
    """A snapshot for `solver.shares.deserved_shares` over two levels: one node, queues
    q0 and q1 under the root and q2, q3 under q0, each with a drawn weight and sometimes a
    guarantee, capability or explicit deserved; pending one-pod PodGroups on any queue,
    q0 included (a parent with PodGroups of its own)."""
    cpu, gpu = draw(st.integers(1, 64)) * 1000, draw(st.integers(0, 16)) * 1000

    def amounts(scale: float) -> dict[str, int]:
        drawn = {"cpu": draw(st.integers(0, int(cpu * scale) // 1000)) * 1000,
                 "gpu": draw(st.integers(0, int(gpu * scale) // 1000)) * 1000}
        return {name: amount for name, amount in drawn.items() if amount}

    queues: list[dict[str, Any]] = []
    for index, parent in enumerate([None, None, "q0", "q0"]):
        queue: dict[str, Any] = {"name": f"q{index}", "parent": parent, "weight": draw(st.integers(1, 4))}
        if draw(st.integers(0, 2)) == 0:
            queue["guarantee"] = amounts(0.6)
        if draw(st.integers(0, 3)) == 0:
            queue["capability"] = amounts(1.0)
        if draw(st.integers(0, 4)) == 0:
            queue["deserved"] = {"cpu": draw(st.integers(0, cpu // 1000)) * 1000}
        queues.append(queue)
    pod_groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for g in range(draw(st.integers(0, 8))):
        requests = {"cpu": draw(st.integers(1, 16)) * 1000, "gpu": draw(st.sampled_from([0, 1000, 4000]))}
        requests = {name: amount for name, amount in requests.items() if amount}
        task = {"name": "t0", "min_available": 1, "requests": requests}
        pod_groups.append({"namespace": "default", "name": f"job-{g}", "queue": f"q{draw(st.integers(0, 3))}",
                           "min_member": 1, "tasks": [task]})
        pods.append({"namespace": "default", "name": f"job-{g}-t0-0", "phase": "pending",
                     "pod_group": f"default/job-{g}", "task": "t0", "requests": requests})
    node = {"name": "n0", "allocatable": {"cpu": cpu, "memory": 256 * GIB, "gpu": gpu},
            "gpus": [{"index": i, "numa_cell": 0} for i in range(gpu // 1000)]}
    return Snapshot.model_validate({"nodes": [node], "queues": queues, "pod_groups": pod_groups, "pods": pods})
