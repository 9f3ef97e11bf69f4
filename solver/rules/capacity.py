"""Rule 1, capacity: per node and resource, and per GPU device, what is used fits.

Rule: on every node, kept running pods + pods bound this cycle request at most the
node's allocatable in every resource, and are at most its `pods` in number (each pod takes
one, whatever it asks: the kubelet's count, `models.snapshot`); every GPU device holds at most 1000 milli-GPU
(`Gpu.used_milli` included); a whole-GPU pod holds exactly `gpu / 1000` devices and no
one else is on them; a fractional pod (1–999) holds exactly one device; a pod asking for
no GPU holds none.

Worked example: node `n1` with 8 GPUs runs a 4-GPU pod on devices 0–3. Binding a
6-GPU pod there is `gpu 10000 > allocatable 8000 milli-GPU`; binding a 4-GPU pod to
devices 2–5 fits the node total but puts 2000 on devices 2 and 3. With `pods` 3 and two
pods running, binding two more is `pods 4 > allocatable 3`.

A violation is the placement's fault only: a node (device) already over its limit
before the cycle — allocatable lowered under running pods — is reported only when a
bind adds to the overflowing resource there. The empty placement is always valid.

Running pods count by the `gpu_indices` they hold (see `solver.after.milli_per_device`).
"""

from __future__ import annotations

from collections.abc import Iterable

from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, POD_SLOT, PODS, Snapshot, gpu_devices, is_fractional_gpu
from solver.after import After, BoundPod
from solver.columns import Column
from solver.rules import colocation
from solver.violation import Violation, describe_amount

__all__ = ["NAME", "fits", "devices_needed", "device_fits", "columns", "check"]

NAME = "capacity"

_POD_COUNT = Column(name=PODS, rule=NAME, offer=None, ask=POD_SLOT, task_ask=POD_SLOT)


def columns(snapshot: Snapshot) -> tuple[Column, ...]:
    """The pod count: each node's `pods` allocatable, one per pod whatever it asks (the
    kubelet's count), dealt to no queue and no packing dimension (`solver.columns`)."""
    return (_POD_COUNT,)


def fits(free, requests, asked: Iterable):  # noqa: ANN001, ANN201 — any indexable, see below
    """Whether one more pod asking `requests` fits in `free`, in every resource of `asked`
    (those it requests, > 0); one it does not ask for never blocks it, even on a node already
    over its limit there (the violation is not this pod's, see the module docstring).

    The engines' one-more-pod form of this rule, written with `>=` and `&` alone so that it
    holds for one node (mappings or rows by resource) and for every node at once (numpy
    [R, N] free, [R] requests → [N] bool); greedy's filter and its preemption's trial on a
    node call it. Example: free [[4000, 4000], [8000, 0]] (cpu, gpu on two nodes), requests
    [2000, 8000], asked (0, 1) → [True, False].
    """
    ok = True
    for r in asked:
        ok = ok & (free[r] >= requests[r])
    return ok


def devices_needed(gpu_milli: int) -> int:
    """How many devices a pod asking `gpu_milli` must list: 8000 → 8, 500 → 1, 0 → 0."""
    return 1 if is_fractional_gpu(gpu_milli) else gpu_devices(gpu_milli)


def device_fits(free_milli, gpu_milli: int):  # noqa: ANN001, ANN201 — int or numpy array
    """Whether a device with `free_milli` left takes one more pod asking `gpu_milli`
    (elementwise over an array of devices).

    A whole-GPU pod needs the device wholly free; a fractional one needs its share left.
    Example: free 400 → a 400-milli pod fits, a 500-milli pod does not, a 1-GPU pod does not.
    """
    if gpu_devices(gpu_milli) > 0:
        return free_milli == GPU_MILLI_PER_DEVICE
    return free_milli >= gpu_milli


def _device_count(bound: BoundPod) -> Violation | None:
    gpu_milli = bound.pod.requests.get(GPU, 0)
    needed = devices_needed(gpu_milli)
    if len(bound.gpus) == needed:
        return None
    shape = "no GPU" if needed == 0 else ("a fraction of one GPU" if is_fractional_gpu(gpu_milli) else "whole GPUs")
    return Violation(
        rule=NAME,
        subject=bound.pod.key,
        message=(
            f"pod {bound.pod.key} asks {gpu_milli} milli-GPU ({shape}), so it must hold {needed} "
            f"device(s), but its bind to node {bound.node.name} lists {len(bound.gpus)} {list(bound.gpus)}"
        ),
    )


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []
    # A column another rule declares is that rule's to judge, with its own numbers. Only
    # colocation's are requests (offline pods ask batch-cpu in the counted snapshot,
    # `solver.rules.counted`); other rules' columns (host ports) are never in `after.node_used`.
    others = {column.name for column in colocation.columns(snapshot)}
    for node_name, added in sorted(after.node_bound.items()):
        node = snapshot.node_by_name[node_name]
        used = after.node_used[node_name]
        for resource in sorted(added):
            if resource in others:
                continue  # a column another rule declares: that rule says it, with its numbers
            if added[resource] > 0 and used.get(resource, 0) > node.allocatable.get(resource, 0):
                violations.append(
                    Violation(
                        rule=NAME,
                        subject=node_name,
                        message=(
                            f"node {node_name}: {resource} {used[resource]} > allocatable "
                            f"{describe_amount(resource, node.allocatable.get(resource, 0))} after placement "
                            f"(binds add {describe_amount(resource, added[resource])})"
                        ),
                    )
                )

    for bound in after.bound:
        wrong_count = _device_count(bound)
        if wrong_count is not None:
            violations.append(wrong_count)

    for node_name, added_per_device in sorted(after.gpu_bound_milli.items()):
        overfull = {
            index: after.gpu_used_milli[node_name][index]
            for index, added in sorted(added_per_device.items())
            if added > 0 and after.gpu_used_milli[node_name][index] > GPU_MILLI_PER_DEVICE
        }
        if overfull:
            violations.append(_overfull_devices(snapshot, after, node_name, overfull))
    return violations


def _overfull_devices(snapshot: Snapshot, after: After, node_name: str, overfull: dict[int, int]) -> Violation:
    """One violation per node, naming every overfull device, who holds it, and outside use."""
    node = snapshot.node_by_name[node_name]
    holders = {b.pod.key: b.pod for b in after.bound if b.node.name == node_name and set(b.gpus) & set(overfull)}
    holders |= {p.key: p for p in after.kept if p.node == node_name and set(p.gpu_indices) & set(overfull)}
    outside = {i: node.gpu_by_index[i].used_milli for i in overfull if node.gpu_by_index[i].used_milli}
    devices = ", ".join(f"GPU {index} {used}" for index, used in overfull.items())
    notes = [f"held by {', '.join(sorted(holders))}"]
    if outside:
        notes.append("used outside pods: " + ", ".join(f"GPU {i} {m}" for i, m in outside.items()))
    if any(gpu_devices(p.requests.get(GPU, 0)) > 0 for p in holders.values()):
        notes.append("a whole-GPU pod takes its devices alone")
    return Violation(
        rule=NAME,
        subject=node_name,
        message=(
            f"node {node_name}: {devices} > {GPU_MILLI_PER_DEVICE} milli-GPU per device after placement "
            f"({'; '.join(notes)})"
        ),
    )

