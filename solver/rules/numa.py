"""Rule 6, NUMA `single-numa-node`: a pod's GPUs and CPUs come from one NUMA cell.

Rule: a pod bound this cycle whose task has numa_policy `single-numa-node`
  - with GPUs: all its devices sit on one cell (`Gpu.numa_cell`) and its bind names that
    cell as `numa_cell`;
  - without GPUs, on a node that declares `numa_cells`: its bind names one of them;
and on every cell with a known `cpu_milli`, the CPU of the single-cell pods on it (kept
running pods that hold a `numa_cell`, plus bound single-numa-node pods) fits that cell —
judged only on cells a bind adds to, as capacity is.

Worked example: node `n4` has GPUs 0–3 on cell 0 and 4–7 on cell 1, each cell 16 cores.
A 2-GPU single-numa-node pod bound to GPUs (3, 4) spans cells 0 and 1: a violation. Bound
to (0, 1) with numa_cell 0 and 20 cores, it overfills cell 0 (20000 > 16000m).

Other policies (`none`, `best-effort`, `restricted`) are preferences here, not checked.
"""

from __future__ import annotations

from models.snapshot import CPU, GPU, Node, Snapshot
from solver.after import After, BoundPod
from solver.violation import Violation

__all__ = ["NAME", "SINGLE_NUMA_NODE", "gpu_cells", "single_cell", "check"]

NAME = "numa"

SINGLE_NUMA_NODE = "single-numa-node"


def gpu_cells(node: Node, gpus: tuple[int, ...]) -> frozenset[int]:
    """The NUMA cells the devices `gpus` of `node` sit on (unknown indices ignored)."""
    return frozenset(node.gpu_by_index[i].numa_cell for i in gpus if i in node.gpu_by_index)


def single_cell(node: Node, gpus: tuple[int, ...]) -> int | None:
    """The one cell all of `gpus` sit on, or None when they span several (or there are none)."""
    cells = gpu_cells(node, gpus)
    return next(iter(cells)) if len(cells) == 1 else None


def _placement_violation(bound: BoundPod) -> Violation | None:
    node, key = bound.node, bound.pod.key
    if bound.pod.requests.get(GPU, 0) > 0:
        if not bound.gpus or not bound.gpus_well_formed:
            return None  # capacity / binding report a bind without (valid) devices
        cells = gpu_cells(node, bound.gpus)
        if len(cells) > 1:
            return Violation(
                rule=NAME,
                subject=key,
                message=(
                    f"pod {key} is {SINGLE_NUMA_NODE} but its GPUs {list(bound.gpus)} on node {node.name} "
                    f"span NUMA cells {sorted(cells)}"
                ),
            )
        (cell,) = cells
        if bound.numa_cell != cell:
            return Violation(
                rule=NAME,
                subject=key,
                message=(
                    f"pod {key} is {SINGLE_NUMA_NODE} with GPUs {list(bound.gpus)} on NUMA cell {cell} "
                    f"of node {node.name}, but its bind names numa_cell {bound.numa_cell}"
                ),
            )
        return None
    cell_ids = sorted(c.id for c in node.numa_cells)
    if cell_ids and bound.numa_cell not in cell_ids:
        return Violation(
            rule=NAME,
            subject=key,
            message=(
                f"pod {key} is {SINGLE_NUMA_NODE} but its bind names numa_cell {bound.numa_cell}; "
                f"node {node.name} has cells {cell_ids}"
            ),
        )
    return None


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []
    single = [b for b in after.bound if b.task.numa_policy == SINGLE_NUMA_NODE]
    for bound in single:
        wrong = _placement_violation(bound)
        if wrong is not None:
            violations.append(wrong)

    cpu_per_cell: dict[tuple[str, int], int] = {}
    added_per_cell: dict[tuple[str, int], int] = {}
    for pod in after.kept:
        if pod.numa_cell is not None and pod.node is not None:
            cell = (pod.node, pod.numa_cell)
            cpu_per_cell[cell] = cpu_per_cell.get(cell, 0) + pod.requests.get(CPU, 0)
    for bound in single:
        if bound.numa_cell is not None:
            cell = (bound.node.name, bound.numa_cell)
            cpu = bound.pod.requests.get(CPU, 0)
            cpu_per_cell[cell] = cpu_per_cell.get(cell, 0) + cpu
            added_per_cell[cell] = added_per_cell.get(cell, 0) + cpu
    for (node_name, cell_id), added in sorted(added_per_cell.items()):
        limit = next((c.cpu_milli for c in snapshot.node_by_name[node_name].numa_cells if c.id == cell_id), None)
        used = cpu_per_cell[(node_name, cell_id)]
        if added > 0 and limit is not None and used > limit:
            violations.append(
                Violation(
                    rule=NAME,
                    subject=node_name,
                    message=(
                        f"node {node_name} NUMA cell {cell_id}: cpu {used} > {limit}m of the cell after placement "
                        f"(single-numa-node binds add {added}m)"
                    ),
                )
            )
    return violations
