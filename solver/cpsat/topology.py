"""Topology for the CP-SAT engine's data step: atoms, candidate domains, atom patterns.

Input (a `BuildContext`, `cpsat.build_context`, and the data step's results): the units with their hard tier limit or soft
topology, the snapshot's HyperNodes, what could be free on each node if every candidate
victim left, and the greedy hint. Output: each topology-tracked unit's candidate domains
(hard: HyperNodes of tier ≤ its limit, or single nodes in none) and atoms, and the
patterns with tracked pods per (profile, atom).

An *atom* is the smallest set of nodes topology cannot tell apart: the lowest HyperNode
of tier ≤ the smallest hard tier limit, sub-groups' included (else the node itself); with soft topology only,
the lowest-tier HyperNode (else `OUTSIDE`). Every hard domain is a union of atoms,
because HyperNodes nest. A unit is *tracked* when topology can matter: soft, or hard
with more than one pod in all (one pod is always inside one domain).

Sub-groups (`UnitSubGroup`): a hard one gets candidate domains of its own, of tier ≤ its
limit, each inside one of its job's candidates when the job is hard (a sub-group's pods
are the job's pods: a domain outside every job candidate could never be used), holding
its running pods; its tasks' pods go only to its candidates' atoms, the job's other pods
to the job's. The model then picks every sub-group's domain and the job's together
(`cpsat.constraints._sub_group_domain`).

Candidate pruning that cannot cut off the optimum: a hard domain is dropped when, even
with every candidate victim gone, its eligible nodes cannot hold the unit's minimum —
devices and each resource summed, and for each task the pods its nodes could hold one
node at a time (both optimistic tests). The second matters for whole-node pods: a leaf
with 24 free GPUs in threes holds no gang of two 8-GPU pods, yet passes the sums, and
best fit ranks it before a leaf of two empty nodes — so such leaves took every kept slot.

Restrictions (reported): more than `max_domains_per_gang` candidates keep that many —
best fitting first (lowest tier, least free key resource), but a domain that earlier
units kept goes behind those fewer units kept — plus the hint's. Why spread: identical
gangs rank the domains identically, so best fit alone gives forty gangs of two 8-GPU
pods the same eight leaves, and however the search goes, no more of them can run than
those leaves hold; spread, each domain that fits is a candidate of some of them.
Together the two took CP-SAT on the `tight` bench family from proving greedy's
placement optimal within its candidates to placing every pending GPU (docs/results.md).
Atom patterns beyond `max_topology_patterns` become homogeneous (k pods of one tracked
shape).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import sparse

from models.snapshot import GPU_MILLI_PER_DEVICE, gpu_devices
from solver.after import milli_per_device
from solver.cpsat.build_context import BuildContext
from solver.cpsat.patterns import Pattern, topology_patterns
from solver.cpsat.units import Unit, UnitSubGroup, task_atoms
from solver.rules.gang import task_shortfalls

__all__ = ["OUTSIDE", "atoms", "candidates", "topology_sets"]

OUTSIDE = "outside:"
"""Atom of the nodes in no lowest-tier HyperNode (soft spans do not count them)."""



def atoms(build: BuildContext, units: list[Unit]) -> tuple[dict[int, str], dict[str, str | None], dict[str, frozenset[str]]]:
    snapshot, problem = build.snapshot, build.problem
    hard = [u for u in units if u.tracked and u.hard_limit is not None]
    soft = [u for u in units if u.tracked and u.soft]
    sub_limits = [sub.hard_limit for u in units for sub in u.sub_groups if sub.tracked]
    atom_of: dict[int, str] = {}
    soft_domain: dict[str, str | None] = {}
    domain_atoms: dict[str, frozenset[str]] = {}
    if not hard and not soft and not sub_limits:
        return atom_of, soft_domain, domain_atoms
    tier = snapshot.hypernode_by_name
    limit = min([*(u.hard_limit for u in hard), *sub_limits], default=None)  # type: ignore[type-var]
    members: dict[str, set[str]] = {}
    for n, name in enumerate(problem.node_names):
        chain = snapshot.hypernode_chain[name]
        lowest = chain[0] if chain else None
        if limit is not None:
            atom = lowest if lowest is not None and tier[lowest].tier <= limit else f"node:{name}"
        else:
            atom = build.ctx.span_domain.get(name, OUTSIDE)
        atom_of[n] = atom
        soft_domain.setdefault(atom, build.ctx.span_domain.get(name))
        for hypernode in chain:
            members.setdefault(hypernode, set()).add(atom)
    if limit is not None:
        for hypernode, atoms in members.items():
            domain_atoms[hypernode] = frozenset(atoms)
    return atom_of, soft_domain, domain_atoms

def candidates(build: BuildContext, units, atom_of, domain_atoms, victims_on, kinds, tasks) -> None:  # noqa: ANN001
    """Candidate domains (hard) and atoms (soft) of each topology unit, best fit first.

    Capacity is judged optimistically (every candidate victim gone), so a domain
    dropped here could not have held the unit's minimum."""
    if not atom_of:
        return
    snapshot, problem = build.snapshot, build.problem
    atom_names = sorted(set(atom_of.values()))
    atom_id = {a: i for i, a in enumerate(atom_names)}
    node_atom = np.array([atom_id[atom_of[n]] for n in range(problem.node_count)], dtype=np.int64)
    potential = problem.free.astype(np.int64).copy()
    device_free = problem.gpu_free_milli.copy()
    victim_pods = [p for per_kind in victims_on.values() for pods in per_kind.values() for p in pods]
    if victim_pods:
        victims = np.array(victim_pods, dtype=np.int64)
        np.add.at(potential.T, problem.pod_node[victims], problem.pod_requests[victims])
        slot_node: list[int] = []
        slot_column: list[int] = []
        slot_milli: list[int] = []
        gpu_of = problem.pod_requests[victims, build.gpu_column].tolist()
        for p, node, gpu in zip(victim_pods, problem.pod_node[victims].tolist(), gpu_of):
            per_device = milli_per_device(gpu)
            for g in problem.pod_gpu_slots.get(p, ()):
                slot_node.append(node)
                slot_column.append(g)
                slot_milli.append(per_device)
        np.add.at(device_free, (np.array(slot_node, dtype=np.int64), np.array(slot_column, dtype=np.int64)), slot_milli)
    whole = (device_free >= GPU_MILLI_PER_DEVICE).sum(axis=1)
    domain_names = sorted(domain_atoms)
    domain_tier = np.array([snapshot.hypernode_by_name[name].tier for name in domain_names], dtype=np.int64)
    rows = [d for d, name in enumerate(domain_names) for _ in domain_atoms[name]]
    atom_columns = [atom_id[a] for name in domain_names for a in sorted(domain_atoms[name])]
    incidence = sparse.csr_matrix(
        (np.ones(len(rows)), (rows, atom_columns)), shape=(len(domain_names), len(atom_names))
    )
    domain_anchor = {name: {atom_id[a] for a in atoms} for name, atoms in domain_atoms.items()}
    single_nodes = np.array([n for n in range(problem.node_count) if atom_of[n].startswith("node:")], dtype=np.int64)
    limit_k = build.limits.max_domains_per_gang
    kept_by: dict[str, int] = {}  # domain → units that kept it among their cut candidates
    pods_per_domain = _PodsPerDomain(build, potential, whole, device_free, node_atom, len(atom_names), incidence)
    sub_domains = _SubGroupDomains(
        build, pods_per_domain, domain_names, domain_tier, domain_anchor, atom_of, atom_id, single_nodes, domain_atoms
    )
    hinted_sub = _hint_nodes_per_sub_group(build) if any(sub.tracked for u in units for sub in u.sub_groups) else {}
    for unit in units:
        if not unit.tracked:
            continue  # no topology, or one pod in all: always inside one domain
        eligible = np.zeros(problem.node_count, dtype=bool)
        for task in unit.tasks:
            eligible |= problem.eligible_nodes(task.row)
        hinted = build.hint_nodes.get(unit.group.key, set())
        demand = np.zeros(len(problem.resource_names), dtype=np.int64)
        devices = 0
        facts = problem.group_facts[unit.group_index]
        shortfalls = task_shortfalls(facts.requirement, facts.running)
        job_tasks = list({task.name: task for task in unit.tasks}.values())  # a task cut by sub-group: once
        for task in job_tasks:
            need = shortfalls.get(task.name, 0)
            demand += need * problem.task_requests[task.row]
            gpu = int(problem.task_requests[task.row, build.gpu_column])
            devices += need * gpu_devices(gpu)
        key = build.gpu_column if demand[build.gpu_column] > 0 else problem.cpu_column
        columns = [int(r) for r in np.flatnonzero(demand)]
        everywhere = bool(eligible.all())
        per_atom = {
            r: np.bincount(
                node_atom, weights=potential[r] if everywhere else potential[r] * eligible, minlength=len(atom_names)
            )
            for r in {*columns, key}
        }
        whole_atom = np.bincount(node_atom, weights=whole if everywhere else whole * eligible, minlength=len(atom_names))
        if unit.hard_limit is not None:
            anchor_atoms = {atom_id[atom_of[n]] for n in unit.anchors}
            options: list[tuple[tuple[object, ...], str]] = []
            fits = (domain_tier <= unit.hard_limit) & (incidence @ whole_atom >= devices)
            for r in columns:
                fits &= incidence @ per_atom[r] >= demand[r]
            for task in job_tasks:
                if shortfalls.get(task.name, 0) > 0:
                    fits &= pods_per_domain.of(task.row) >= shortfalls[task.name]
            key_sums = incidence @ per_atom[key]
            for d in np.flatnonzero(fits).tolist():
                name = domain_names[d]
                if anchor_atoms and not anchor_atoms.issubset(domain_anchor[name]):
                    continue
                options.append(((int(domain_tier[d]), float(key_sums[d]), name), name))
            # A node on its own: eligible, holds the minimum with every candidate victim
            # gone, and holds every running pod of the unit (anchors) — one numpy pass.
            anchor_set = set(unit.anchors)
            alone = single_nodes
            if len(anchor_set) > 1:
                alone = alone[:0]
            elif anchor_set:
                alone = alone[alone == next(iter(anchor_set))]
            if alone.size:
                fits_alone = eligible[alone] & (whole[alone] >= devices)
                fits_alone &= (potential[:, alone] >= demand[:, None]).all(axis=0)
                for n in alone[fits_alone].tolist():
                    options.append(((0, float(potential[key, n]), atom_of[n]), atom_of[n]))
                    domain_atoms.setdefault(atom_of[n], frozenset({atom_of[n]}))
            hint_domain = _hint_domain(build, set(unit.anchors) | hinted, unit.hard_limit, atom_of, domain_atoms)
            unit.domains = _kept_candidates(build, unit.group.key, options, hint_domain, kept_by)
            unit.atoms = sorted({a for d in unit.domains for a in domain_atoms[d]})
        elif unit.soft:
            key_free = per_atom[key].tolist()
            fits = [i for i in range(len(atom_names)) if key_free[i] > 0]
            required = {atom_of[n] for n in (*unit.anchors, *hinted)}
            ranked = sorted((atom_names[i] for i in fits), key=lambda a: (a not in required, -key_free[atom_id[a]], a))
            if len(ranked) > limit_k:
                keep = ranked[: max(limit_k, len(required))]
                build.restricted.append(f"{unit.group.key}: {len(ranked)} candidate atoms, kept {len(keep)}")
                ranked = keep
            unit.atoms = sorted(set(ranked) | required)
        subs = [sub for sub in unit.sub_groups if sub.tracked]
        if subs:
            job_domains = [domain_atoms[d] for d in unit.domains] if unit.hard_limit is not None else None
            for sub in subs:
                options = sub_domains.options(sub, job_domains)
                nodes = set(sub.anchors) | hinted_sub.get((unit.group.key, sub.sub.name), set())
                hint_domain = _hint_domain(build, nodes, sub.hard_limit, atom_of, domain_atoms)
                sub.domains = _kept_candidates(
                    build, f"{unit.group.key} sub-group {sub.sub.name}", options, hint_domain, kept_by,
                    within=unit.domains if unit.hard_limit is not None else None, domain_atoms=domain_atoms,
                )
                sub.atoms = sorted({a for d in sub.domains for a in domain_atoms[d]})


def _kept_candidates(
    build: BuildContext,
    what: str,
    options: list[tuple[tuple[object, ...], str]],
    hint_domain: str | None,
    kept_by: dict[str, int],
    within: list[str] | None = None,
    domain_atoms: Mapping[str, frozenset[str]] | None = None,
) -> list[str]:
    """The candidate domains kept of `options` ((rank, name), best fit first once sorted):
    all, or past `max_domains_per_gang` that many, a domain fewer earlier gangs kept first,
    plus the hint's (module docstring: why spread). `within`: a hard sub-group's job's
    candidate domains — the kept ones then come from each of them in turn (`_round_robin`)."""
    options.sort()
    chosen = [name for _, name in options]
    limit_k = build.limits.max_domains_per_gang
    if len(chosen) > limit_k:
        spread = sorted(chosen, key=lambda name: kept_by.get(name, 0))  # stable: best fit within a count
        keep = spread[:limit_k] if within is None else _round_robin(spread, within, domain_atoms, limit_k)
        for name in keep:
            kept_by[name] = kept_by.get(name, 0) + 1
        if hint_domain is not None and hint_domain not in keep and hint_domain in chosen:
            keep.append(hint_domain)
        build.restricted.append(f"{what}: {len(chosen)} candidate domains, kept {len(keep)}")
        chosen = keep
    return chosen


def _round_robin(spread: list[str], within: list[str], domain_atoms: Mapping[str, frozenset[str]], limit: int) -> list[str]:
    """Up to `limit` of `spread` (in its order), taking in turn the next one inside each of
    the job's candidate domains `within`. Why: the job's sub-groups must all sit inside the
    one job domain chosen; cut by spread alone, each shard of a job on one leaf kept racks
    of other leaves than its sibling shards, few leaves had a rack for every shard, and on
    an NVL72-style tree with dozens of sharded jobs the model, proven optimal within its
    candidates, left most of the pods that fit pending."""
    queues = [[name for name in spread if domain_atoms[name] <= domain_atoms[job]] for job in within]
    keep: list[str] = []
    while len(keep) < limit and any(queues):
        for queue in queues:
            while queue and queue[0] in keep:
                queue.pop(0)
            if queue and len(keep) < limit:
                keep.append(queue.pop(0))
    return keep


class _SubGroupDomains:
    """A hard sub-group's candidate domains (`UnitSubGroup`): HyperNodes of tier ≤ its limit
    (or single nodes in none) holding its running pods, inside one of its job's candidate
    domains when the job is hard, whose eligible nodes could hold the pods its minimum
    still lacks — each task's pods counted one node at a time with every candidate victim
    gone, summed over its tasks (optimistic: a domain dropped could never hold it)."""

    def __init__(  # noqa: ANN001 — the arrays `candidates` builds, as it names them
        self, build: BuildContext, pods_per_domain: _PodsPerDomain, domain_names, domain_tier, domain_anchor, atom_of,
        atom_id, single_nodes, domain_atoms,
    ):
        self.build, self.pods_per_domain = build, pods_per_domain
        self.domain_names, self.domain_tier, self.domain_anchor = domain_names, domain_tier, domain_anchor
        self.atom_of, self.atom_id, self.single_nodes, self.domain_atoms = atom_of, atom_id, single_nodes, domain_atoms

    def options(self, sub: UnitSubGroup, job_domains: list[frozenset[str]] | None) -> list[tuple[tuple[object, ...], str]]:
        rows = sorted({task.row for task in sub.tasks})
        lacking = max(0, sub.minimum - sub.running)
        capacity = sum((self.pods_per_domain.of(row) for row in rows), np.zeros(len(self.domain_names)))
        fits = (self.domain_tier <= sub.hard_limit) & (capacity >= lacking)
        anchor_atoms = {self.atom_id[self.atom_of[n]] for n in sub.anchors}
        options: list[tuple[tuple[object, ...], str]] = []
        for d in np.flatnonzero(fits).tolist():
            name = self.domain_names[d]
            if anchor_atoms and not anchor_atoms.issubset(self.domain_anchor[name]):
                continue
            if job_domains is not None and not any(self.domain_atoms[name] <= job for job in job_domains):
                continue
            options.append(((int(self.domain_tier[d]), float(capacity[d]), name), name))
        alone = self.single_nodes
        if len(set(sub.anchors)) > 1:
            alone = alone[:0]
        elif sub.anchors:
            alone = alone[alone == sub.anchors[0]]
        if alone.size:
            per_node = sum((self.pods_per_domain.per_node_of(row) for row in rows), np.zeros(self.build.problem.node_count))
            for n in alone[per_node[alone] >= max(1, lacking)].tolist():
                atom = self.atom_of[n]
                if job_domains is not None and not any(atom in job for job in job_domains):
                    continue
                options.append(((0, float(per_node[n]), atom), atom))
                self.domain_atoms.setdefault(atom, frozenset({atom}))
        return options


def _hint_nodes_per_sub_group(build: BuildContext) -> dict[tuple[str, str], set[int]]:
    """(PodGroup key, sub-group name) → the nodes the hint binds its pods to."""
    nodes: dict[tuple[str, str], set[int]] = {}
    pods = build.snapshot.pod_by_key
    for bind in build.hint.binds:
        pod = pods.get(bind.pod)
        if pod is not None and pod.pod_group is not None and pod.sub_group is not None:
            nodes.setdefault((pod.pod_group, pod.sub_group), set()).add(build.problem.node_index[bind.node])
    return nodes

class _PodsPerDomain:
    """Per task shape: how many of its pods each domain's eligible nodes could hold, one
    node at a time, with every candidate victim gone — computed once per (eligibility
    class, requests), since the units of a snapshot share a few shapes."""

    def __init__(
        self,
        build: BuildContext,
        potential: np.ndarray,  # [R, N] free with every candidate victim gone
        whole: np.ndarray,  # [N] wholly free devices, likewise
        device_free: np.ndarray,  # [N, G] free milli per device, likewise (−1 padding)
        node_atom: np.ndarray,  # [N] atom id
        atom_count: int,
        incidence: sparse.csr_matrix,  # [D, atoms] domain holds atom
    ):
        self.problem = build.problem
        self.gpu_column = build.gpu_column
        self.potential = potential
        self.whole = whole
        self.device_free = np.maximum(device_free, 0)
        self.node_atom = node_atom
        self.atom_count = atom_count
        self.incidence = incidence
        self.cache: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}

    def of(self, task_row: int) -> np.ndarray:
        """[D] pods of the task's shape per domain (rows of the incidence matrix)."""
        problem = self.problem
        requests = problem.task_requests[task_row]
        key = (int(problem.task_eligibility_class[task_row]), tuple(requests.tolist()))
        found = self.cache.get(key)
        if found is None:
            per_node = self._per_node(requests) * problem.eligible_nodes(task_row)
            found = self.cache[key] = self.incidence @ np.bincount(
                self.node_atom, weights=per_node, minlength=self.atom_count
            )
        return found

    def per_node_of(self, task_row: int) -> np.ndarray:
        """[N] pods of the task's shape each eligible node could hold (0 where not eligible)."""
        problem = self.problem
        key = (-1 - int(problem.task_eligibility_class[task_row]), tuple(problem.task_requests[task_row].tolist()))
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = self._per_node(problem.task_requests[task_row]) * problem.eligible_nodes(task_row)
        return found

    def _per_node(self, requests: np.ndarray) -> np.ndarray:
        """[N] pods asking `requests` each node holds: the fewest over the resources asked,
        whole devices for whole GPUs, the shares its devices hold for a fraction.
        Example: 8 cores free and 3 whole devices, a pod of 2 cores and 2 GPUs → min(4, 1) = 1."""
        count = np.full(self.potential.shape[1], np.iinfo(np.int64).max, dtype=np.int64)
        for r in np.flatnonzero(requests).tolist():
            count = np.minimum(count, np.maximum(self.potential[r], 0) // requests[r])
        milli = int(requests[self.gpu_column])
        if milli >= GPU_MILLI_PER_DEVICE:
            count = np.minimum(count, self.whole // gpu_devices(milli))
        elif milli > 0:
            count = np.minimum(count, (self.device_free // milli).sum(axis=1))
        return count


def _hint_domain(
    build: BuildContext, nodes: set[int], limit: int | None, atom_of: Mapping[int, str], domain_atoms: Mapping[str, frozenset[str]]
) -> str | None:
    """The smallest candidate-able domain of tier ≤ `limit` holding `nodes` (the hint's and
    the running pods'), so that a cut candidate list keeps the hint representable."""
    if not nodes:
        return None
    atoms = {atom_of[n] for n in nodes}
    if len(atoms) == 1 and next(iter(atoms)).startswith("node:"):
        return next(iter(atoms))
    best = None
    limit = limit or 0
    for name, tier, members in _hypernode_domains(build, domain_atoms):
        if tier > limit:
            continue
        if atoms <= members and (best is None or len(members) < len(domain_atoms[best])):
            best = name
    return best

def _hypernode_domains(build: BuildContext, domain_atoms: Mapping[str, frozenset[str]]) -> list[tuple[str, int, frozenset[str]]]:
    """(name, tier, atoms) of the HyperNode domains in `domain_atoms`, in its order,
    without the "node:" ones `candidates` adds (recomputed whenever the mapping grew)."""
    count = len(domain_atoms)
    cached = build.hypernode_domains.get(count)
    if cached is None:
        cached = [
            (name, build.snapshot.hypernode_by_name[name].tier, members)
            for name, members in domain_atoms.items()
            if not name.startswith("node:")
        ]
        build.hypernode_domains.clear()
        build.hypernode_domains[count] = cached
    return cached


def topology_sets(build: BuildContext, node_groups, pattern_sets, shapes, tasks, units, most) -> dict[tuple[int, str], list[Pattern]]:  # noqa: ANN001
    """Per (profile, tracked atom): patterns holding at least one pod of a tracked task
    that may go to that atom. Mixed with untracked pods (exact) while the estimated total
    stays within `max_topology_patterns`; else homogeneous patterns of one tracked shape,
    at most as many pods as the tracked tasks of that shape have (`most`: pending pods per
    shape; a restriction)."""
    relevant: dict[str, set[int]] = {}
    pods_in: dict[tuple[str, int], int] = {}  # (atom, shape) → pending pods of the tasks that may go there
    for task in tasks:
        for atom in task_atoms(units[task.unit], task):
            relevant.setdefault(atom, set()).add(task.shape)
            pods_in[(atom, task.shape)] = pods_in.get((atom, task.shape), 0) + len(task.pending)
    pairs = sorted({(p, g.atom) for g in node_groups if g.atom for p in g.after})
    keys = {pair: (pair[0], frozenset(relevant.get(pair[1], ()))) for pair in pairs}
    usage: dict[tuple[int, frozenset[int]], int] = {}
    for key in keys.values():
        usage[key] = usage.get(key, 0) + 1
    estimate = sum(len(pattern_sets[key[0]].patterns) * atoms for key, atoms in usage.items())
    if estimate <= build.limits.max_topology_patterns:
        built: dict[tuple[int, frozenset[int]], list[Pattern]] = {}
        restricted = False
        for key in sorted(usage, key=lambda k: (k[0], sorted(k[1]))):
            patterns, cut = topology_patterns(
                pattern_sets[key[0]],
                [shapes[i] for i in sorted(key[1])],
                mode="mixed",
                measure=build.ctx.packing,
                cap=build.limits.max_patterns_per_profile,
                most=most,
            )
            built[key] = patterns
            restricted = restricted or cut
        if restricted:
            build.restricted.append("topology atoms: mixed patterns cut")
        return {pair: built[key] for pair, key in keys.items()}
    build.restricted.append("topology atoms: homogeneous patterns only")
    # Past the node pattern budget (`DataLimits.max_patterns`) the fill patterns are sparse here too.
    sparse = any(pattern_set.sparse_fill for pattern_set in pattern_sets.values())
    single: dict[tuple[int, int], list[Pattern]] = {}
    result: dict[tuple[int, str], list[Pattern]] = {}
    for pair, (profile_id, shape_ids) in keys.items():
        patterns: list[Pattern] = []
        for shape_id in sorted(shape_ids):
            if (profile_id, shape_id) not in single:
                single[(profile_id, shape_id)], _ = topology_patterns(
                    pattern_sets[profile_id],
                    [shapes[shape_id]],
                    mode="homogeneous",
                    measure=build.ctx.packing,
                    cap=build.limits.max_patterns_per_profile,
                    most=most,
                    sparse_fill=sparse,
                )
            # k pods of the shape on a node of this atom: never more than the tasks that may
            # go to the atom have pending (exact; the variables of larger k could never be used).
            limit = pods_in[(pair[1], shape_id)]
            patterns.extend(p for p in single[(profile_id, shape_id)] if p.counts[0][1] <= limit)
        result[pair] = patterns
    return result
