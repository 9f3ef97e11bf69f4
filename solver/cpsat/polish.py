"""Shares moved onto devices already in use, after extraction: the packing the model's own
restrictions can miss.

Why: past `EXACT_FRACTIONS` fractional pods on a node, or when a profile's patterns are
cut (`DataLimits.max_patterns_per_profile`), the model places the rest of a node's shares
best fit in a fixed order — a reported restriction — and can leave a share alone on a
device another used device had room for. The objective's packing tier then says the
placement is worse than it needs to be; this pass takes the moves it asks for.

What it does, node by node: a fractional bind (1–999 milli) moves to another device of its
node that is already in use and has room, when the node's packing value
(`PackingMeasure.state`, the tier's own per-node term) strictly falls. A pod that
holds a NUMA cell stays on a device of that cell. Nothing else changes — node, CPU, memory,
the pods' count, NUMA splits (one device) — so no hard rule can break and no other tier
moves; `place()` still runs the checker.

A share alone on its device also moves when the packing value stays the same: the typical
shapes may all be small enough that the measure cannot tell a spread from a packed node,
and a device freed whole is what the next whole-GPU job needs (the fullest target wins the
tie, best fit). Moves repeat until none improves: each one lowers the packing value, or
keeps it and frees a device, so the pair (value, devices in use) falls and the loop ends.

Worked example: three devices, used 850 / 700 / 100 by shares (the 100 alone on device 2),
typical shapes one whole GPU and 300 milli, weight 0.5 each, CPU to spare. Free 150 / 300 /
900: the 1-GPU shape fits nowhere (all 1,350 milli count), the 300 fits (the 150 counts)
→ 750. Moving the 100 onto device 1 leaves 150 / 200 / 1000: both shapes fit, the 150
and the 200 count for each → 350, so it moves.
"""

from __future__ import annotations

from collections import defaultdict

from models.placement import Bind, Placement
from models.snapshot import CPU, GPU, GPU_MILLI_PER_DEVICE, Snapshot, is_fractional_gpu
from solver.after import build_after, device_use
from solver.objective import ObjectiveContext

__all__ = ["pack_shares"]


def pack_shares(snapshot: Snapshot, placement: Placement, context: ObjectiveContext) -> Placement:
    """`placement` with its shares moved as the module docstring says (the same object when none moves)."""
    shares: dict[str, list[int]] = defaultdict(list)  # node → positions of fractional binds
    for position, bind in enumerate(placement.binds):
        pod = snapshot.pod_by_key.get(bind.pod)
        if pod is not None and len(bind.gpus) == 1 and is_fractional_gpu(pod.requests.get(GPU, 0)):
            shares[bind.node].append(position)
    if not any(len(positions) > 1 for positions in shares.values()):
        return placement
    evicted = {eviction.pod for eviction in placement.evictions}
    use = device_use(
        [snapshot.node_by_name[name] for name in shares],
        (pod for pod in snapshot.pods if pod.phase == "running" and pod.key not in evicted),
        ((bind.node, bind.gpus, snapshot.pod_by_key[bind.pod].requests.get(GPU, 0)) for bind in placement.binds),
    )
    binds = list(placement.binds)
    measure = context.packing
    after = build_after(snapshot, placement)
    node_row = {node.name: n for n, node in enumerate(snapshot.nodes)}
    for node_name, positions in shares.items():
        node = snapshot.node_by_name[node_name]
        used = use[node_name]
        cell_of = {gpu.index: gpu.numa_cell for gpu in node.gpus}
        lent = lambda index: node.gpu_by_index[index].lent_milli is not None  # noqa: E731, B023 — read at once
        cpu_free = node.allocatable.get(CPU, 0) - after.node_used[node_name].get(CPU, 0)  # moves keep it
        node_class = int(measure.node_class[node_row[node_name]])

        def packing() -> int:
            frees = [max(0, GPU_MILLI_PER_DEVICE - used[index]) for index in used]
            return measure.state(cpu_free, frees, node_class)  # noqa: B023 — read at once, in this loop

        improved = True
        while improved:
            improved = False
            for position in positions:
                bind = binds[position]
                share = snapshot.pod_by_key[bind.pod].requests[GPU]
                (current,) = bind.gpus
                now = packing()
                empties = used[current] == share  # the share is alone: a move frees its device whole
                best, best_key = None, (now, 0, 0)
                for target, taken in used.items():
                    if target == current or taken <= 0 or taken + share > GPU_MILLI_PER_DEVICE:
                        continue
                    if lent(current) or lent(target):  # a lent device's room is not its free milli: leave it be
                        continue
                    if bind.numa_cell is not None and cell_of[target] != bind.numa_cell:
                        continue
                    used[current] -= share
                    used[target] += share
                    value = packing()
                    used[target] -= share
                    used[current] += share
                    if value < now or (value == now and empties):
                        key = (value, -1 if empties else 0, -taken)  # lower value, a device freed, the fullest target
                        if key < best_key:
                            best, best_key = target, key
                if best is not None:
                    used[current] -= share
                    used[best] += share
                    binds[position] = Bind(pod=bind.pod, node=bind.node, gpus=(best,), numa_cell=bind.numa_cell)
                    improved = True
    return Placement(binds=tuple(binds), evictions=placement.evictions)
