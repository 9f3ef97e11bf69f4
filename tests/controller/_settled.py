"""What a fault test asserts once the cluster has settled, read back with the official client:
no node over its allocatable, no GPU index held twice, no half gang, nothing pending that fits.

Pods being deleted are not counted (they are leaving); a pod without the
`batchplace.io/gpus` annotation holds GPUs by count only. "Fits" is judged first-fit by
cpu and whole GPUs, gang by gang — a pending gang that first-fit places on the free room is
one the controller should have placed.
"""

from __future__ import annotations

from kubernetes import client as k8s

GPU_RESOURCE = "nvidia.com/gpu"


def _requests(pod: k8s.V1Pod) -> dict[str, int]:
    """cpu in milli, GPUs in devices."""
    total = {"cpu": 0, "gpu": 0}
    for container in pod.spec.containers:
        asked = (container.resources.requests if container.resources else None) or {}
        total["cpu"] += _milli(asked.get("cpu", "0"))
        total["gpu"] += int(asked.get(GPU_RESOURCE, "0"))
    return total


def _milli(text: str) -> int:
    return int(float(text[:-1])) if text.endswith("m") else int(float(text) * 1000)


def settled_problems(core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, namespace: str) -> list[str]:
    """Every broken invariant, one line each ([] when the cluster is settled and sound)."""
    nodes = {n.metadata.name: n for n in core.list_node().items}
    free = {
        name: {"cpu": _milli(n.status.allocatable["cpu"]), "gpu": int(n.status.allocatable.get(GPU_RESOURCE, "0"))}
        for name, n in nodes.items()
    }
    held: dict[tuple[str, int], list[str]] = {}
    pods = [p for p in core.list_namespaced_pod(namespace).items if not p.metadata.deletion_timestamp]
    problems = []
    bound_in: dict[str, int] = {}
    pending_in: dict[str, list[k8s.V1Pod]] = {}
    for pod in pods:
        group = (pod.metadata.annotations or {}).get("scheduling.k8s.io/group-name")
        if not pod.spec.node_name:
            if group:
                pending_in.setdefault(group, []).append(pod)
            continue
        if group:
            bound_in[group] = bound_in.get(group, 0) + 1
        room = free[pod.spec.node_name]
        for resource, amount in _requests(pod).items():
            room[resource] -= amount
        for index in ((pod.metadata.annotations or {}).get("batchplace.io/gpus") or "").split(","):
            if index.strip():
                held.setdefault((pod.spec.node_name, int(index)), []).append(pod.metadata.name)
    problems += [f"node {name} over its allocatable: {room}" for name, room in sorted(free.items()) if min(room.values()) < 0]
    problems += [f"GPU {index} of node {name} held by {names}" for (name, index), names in sorted(held.items()) if len(names) > 1]
    groups = custom.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups")["items"]
    for group in groups:
        name, minimum = group["metadata"]["name"], int(group["spec"].get("minMember", 1))
        if 0 < bound_in.get(name, 0) < minimum:
            problems.append(f"half gang {name}: {bound_in[name]} of min {minimum} bound")
    for name, waiting in sorted(pending_in.items()):
        minimum = next((int(g["spec"].get("minMember", 1)) for g in groups if g["metadata"]["name"] == name), 1)
        need = max(0, minimum - bound_in.get(name, 0)) or 1
        if _first_fit({n: dict(r) for n, r in free.items()}, [_requests(p) for p in waiting][:need]) and len(waiting) >= need:
            problems.append(f"gang {name} pending ({len(waiting)} pods) but {need} more fit the free room")
    return problems


def _first_fit(free: dict[str, dict[str, int]], asks: list[dict[str, int]]) -> bool:
    for ask in asks:
        for room in free.values():
            if all(room[r] >= ask[r] for r in ask):
                for r in ask:
                    room[r] -= ask[r]
                break
        else:
            return False
    return True

