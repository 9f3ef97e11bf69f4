"""Which nodes the model may place pending pods on when the cluster dwarfs the batch: the
greedy hint's nodes and, per pod shape, the best-fitting few — a large neighbourhood of
the hint, the way LNS searches around an incumbent.

Why: on a trace replay a batch of 64 pods meets hundreds of partly used nodes, nearly
every one its own profile (free CPU differs node by node), so the model carries dozens of
packing patterns per node — tens of thousands of variables whose build alone outlasts a
1 s budget, and `auto` fell back to greedy on many batches (openb, seed 42, k = 64;
measured: docs/results.md, "The candidate-node neighbourhood"). Yet the choices
that decide packing are among the nodes a pod fits tightest; a node with most of its GPUs
free is one more such node, interchangeable for the batch.

Input: the problem, the units' tasks and shapes, the nodes holding candidate victims and
the hint's nodes. Output: the nodes *left out* — they keep their profile and count in the
tiers as they stand (their fragments), but take no pending pod. Kept: every node the hint
binds to (so the hint stays a model solution and `auto` is never worse than greedy),
every node with a candidate victim, and for each shape with p pending pods the
`per_pod · p` eligible nodes where one pod fits tightest (best fit). Nothing is left out
when nothing is pending, when the cluster has at most `NODES_PER_POD_KEPT_WHOLE` nodes per
pending pod, or when a PodGroup has topology (its candidate domains are chosen over all
nodes).

Best fit ranks by what the pod leaves on the devices first — for a share the milli left
on the tightest device it fits (the device `solver.greedy.state.choose_devices` gives
it), for whole GPUs the whole devices still free — then by the least GPU, then CPU, left
on the node; snapshot order breaks ties. Devices first, because the node's total hides
them: a 160 m pod leaves 30 m on a node with devices (190 m, 1,000 m) free, where the
node total (1,190 m) would rank it behind one with (500 m, 500 m), where it leaves 340 m.

A restriction: the result is reported, so the answer is FEASIBLE, never OPTIMAL.
Example: 551 nodes, 64 pending pods of 30 shapes, `per_pod` 1 (the default) → at most
64 hint nodes + 64 best fits (with `per_pod` 4, 256; how many were kept on openb batches:
docs/results.md, "The candidate-node neighbourhood").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from models.snapshot import GPU_MILLI_PER_DEVICE
from solver.cpsat.patterns import Shape
from solver.cpsat.units import Unit, UnitTask
from solver.problem import Problem
from solver.rules.capacity import device_fits, fits

__all__ = ["left_out_nodes", "NODES_PER_POD_KEPT_WHOLE"]

NODES_PER_POD_KEPT_WHOLE = 4
"""A cluster with at most this many nodes per pending pod keeps every node: its model is
small, and on it the default `per_pod` of 1 would leave nodes out of a model that can be
solved whole — and proven optimal."""


def left_out_nodes(
    problem: Problem,
    units: Sequence[Unit],
    tasks: Sequence[UnitTask],
    shapes: Sequence[Shape],
    *,
    per_pod: int,
    hint_nodes: Mapping[str, set[int]],
    victim_nodes: Sequence[int],
) -> frozenset[int]:
    """The nodes no pending pod may go to in this model (module docstring)."""
    pending = sum(len(task.pending) for task in tasks)
    small = problem.node_count <= NODES_PER_POD_KEPT_WHOLE * pending
    if per_pod <= 0 or pending == 0 or small or any(unit.tracked for unit in units):
        return frozenset()
    keep = np.zeros(problem.node_count, dtype=bool)
    for nodes in hint_nodes.values():
        keep[list(nodes)] = True
    keep[list(victim_nodes)] = True
    gpu_free = problem.free[problem.gpu_column]
    cpu_free = problem.free[problem.cpu_column]
    pods_of_shape: dict[int, int] = {}
    row_of_shape: dict[int, int] = {}
    for task in tasks:
        pods_of_shape[task.shape] = pods_of_shape.get(task.shape, 0) + len(task.pending)
        row_of_shape.setdefault(task.shape, task.row)
    for index, pods in pods_of_shape.items():
        shape = shapes[index]
        requests = problem.task_requests[row_of_shape[index]]
        ok = problem.eligible_nodes(row_of_shape[index]) & fits(problem.free, requests, np.flatnonzero(requests > 0))
        devices_left = np.zeros(problem.node_count, dtype=np.int64)  # whole devices, or milli on one device
        if shape.whole:
            whole_free = device_fits(problem.gpu_free_milli, GPU_MILLI_PER_DEVICE).sum(axis=1)
            ok &= whole_free >= shape.whole
            devices_left = whole_free - shape.whole
        elif shape.fraction:
            fitting = device_fits(problem.gpu_free_milli, shape.fraction)
            ok &= fitting.any(axis=1)
            devices_left = np.where(fitting, problem.gpu_free_milli - shape.fraction, GPU_MILLI_PER_DEVICE).min(
                axis=1, initial=GPU_MILLI_PER_DEVICE
            )  # a cluster without GPU devices has no device column to take the least of
        nodes = np.flatnonzero(ok)
        best_fit = nodes[np.lexsort((nodes, cpu_free[nodes], gpu_free[nodes], devices_left[nodes]))]
        keep[best_fit[: per_pod * pods]] = True
    return frozenset(np.flatnonzero(~keep).tolist())
