"""DRA claims in the CP-SAT model: which multisets of pods fit a node's devices.

Why: the model places pods by node patterns (`cpsat.patterns`), each a multiset of pod
shapes checked to fit one node. Rule `dra`'s columns count devices per class, which a
`matchAttribute` constraint or a partitionable device's counters can still defeat (two
2-GPU pods on one NVLink domain each need a domain with 2 free; 3 + 3 free holds one per
domain, not three). So every multiset is also asked of the allocator
(`solver.dra_allocation`) on a node of the profile's eligibility class — whose devices,
free at the snapshot, are alike on every node of the class (rule `dra`'s node filter
splits classes by them) — and only multisets whose claims all fit become patterns. The
check is down-closed, as patterns need: fewer pods never need more devices.

Input: the build context and, per shape, the task rows it stands for. Output: per node
eligibility class, a `MultisetFit` (None when no pending pod names a claim). Not
promised: devices an eviction frees — an eviction option's node is judged as the
snapshot has it, so CP-SAT may miss a preemption only the freed devices allow (greedy's
hint keeps it, allocated exactly as greedy binds).
"""

from __future__ import annotations

from collections.abc import Mapping

from models.snapshot import GPU_MILLI_PER_DEVICE
from solver.cpsat.build_context import BuildContext
from solver.cpsat.devices import MultisetFit
from solver.dra_allocation import ClaimAsk, Shortfall, allocate
from solver.rules import dra

__all__ = ["multiset_fits"]


def multiset_fits(build: BuildContext, shape_rows: Mapping[int, int]) -> dict[int, MultisetFit] | None:
    """Per eligibility class, the check of a multiset {shape index: pods} (module docstring)."""
    snapshot, problem = build.snapshot, build.problem
    if not dra.has_claims(snapshot):
        return None
    inventory = dra.inventory(snapshot)
    asks: dict[int, tuple[list[ClaimAsk], list[ClaimAsk]]] = {}  # shape → (per pod, once per node)
    for shape, row in shape_rows.items():
        pod = dra.example_pod(snapshot, problem.task_keys[row])
        if pod is None:
            continue
        fresh = [c for c in dra.pod_claims(snapshot, pod) if c.spec is not None and c.allocated is None]
        per_pod = [dra.claim_ask(snapshot, c) for c in fresh if not c.shared]
        shared = [dra.claim_ask(snapshot, c) for c in fresh if c.shared]
        if per_pod or shared:
            asks[shape] = (per_pod, shared)
    if not asks:
        return None
    state = dra.snapshot_state(snapshot)
    # Nodes alike in their devices (rule `dra`'s node signature) answer alike: one check each,
    # whatever else splits their classes.
    by_signature: dict[object, MultisetFit] = {}
    fits: dict[int, MultisetFit] = {}
    for node_class, representative in enumerate(problem.node_class_representative):
        node = problem.node_names[representative]
        signature = dra.node_signature(snapshot, node)
        if signature not in by_signature:
            by_signature[signature] = _fit(snapshot, node, state, inventory, asks)
        fits[node_class] = by_signature[signature]
    return fits


def _fit(
    snapshot, node: str, state, inventory: dra.Inventory, asks: Mapping[int, tuple[list[ClaimAsk], list[ClaimAsk]]]
) -> MultisetFit:
    """The check for a node like `node`: the claims of the multiset allocated together, and
    the devices they leave stranded in partly taken domains, in milli (`solver.objective`'s
    packing tier counts them so)."""
    candidates = inventory.candidates.get(node, ())
    answers: dict[tuple[tuple[int, int], ...], int | None] = {}

    def fits(counts: Mapping[int, int]) -> int | None:
        key = tuple(sorted(item for item in counts.items() if item[1] and item[0] in asks))
        if key not in answers:
            if not key:
                answers[key] = dra.stranded_devices(snapshot, node, state.taken) * GPU_MILLI_PER_DEVICE
                return answers[key]
            claims: list[ClaimAsk] = []
            shared: dict[str, ClaimAsk] = {}
            for shape, pods in key:
                per_pod, once = asks[shape]
                claims += per_pod * pods
                shared.update((ask.label, ask) for ask in once)
            answer = allocate(
                candidates,
                state,
                [*claims, *shared.values()],
                fragment_attributes=inventory.fragment_attributes,
                incomplete_drivers=inventory.incomplete_drivers,
            )
            if isinstance(answer, Shortfall):
                answers[key] = None
            else:
                taken = state.taken | {candidate.key for candidate in answer.taking()}
                answers[key] = dra.stranded_devices(snapshot, node, taken) * GPU_MILLI_PER_DEVICE
        return answers[key]

    return fits
