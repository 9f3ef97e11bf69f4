"""The clusters and the job stream of the sub-group experiment (`experiments.subgroup_stream`).

Clusters (`SubGroupCluster`): nodes as an `OpenbNodes` list plus, per tier, each node's
domain (tier 1 = rack, the domain a shard or a serving replica group must sit in):
- `nvl72_cluster`: an NVL72-style tree — racks of 18 nodes × 4 GPUs (72 GPUs, one NVLink
  domain) as tier-1 HyperNodes, leaves of 4 racks (tier 2), spines of 7 leaves (tier 3);
  1,008 nodes (56 racks) by default;
- `lingjun_cluster`: Alibaba's Lingjun 2023 switch tree (`topo.csv`, Cao et al., "Crux",
  SIGCOMM '24): 847 hosts of 8 GPUs (most of its workers take all 8, its notebook says), the
  ToR (`ASW`) as tier 1, the aggregation switch (`PSW`) tier 2 and the core (`DSW`) tier 3.
  ASW labels repeat under several PSWs; we read them as local to their PSW (119 ToRs of 2–8
  hosts), not as 48 ToRs multi-homed to several PSWs: a ToR that spans aggregation switches
  would not be a tree, which HyperNodes must be.

Jobs (`subgroup_workload`, seeded; Poisson arrivals sized to an offered load, by default
1.0 × the cluster's GPUs over the horizon; lognormal durations, σ 0.8):
- training (60 % of arrivals, mean 30 min): 2, 4 or 8 data-parallel shards
  (p 0.4/0.4/0.2), each a whole rack or half a rack of whole-node pods, each shard inside one
  rack (hard, tier 1); the job inside one leaf (tier 2) when its shards fit one leaf's racks
  and a coin says so, else one spine (tier 3); every shard must start (`min_sub_groups` = all);
- serving (40 %, mean 20 min): disaggregated inference, 1–2 prefill and 1–3 decode replica
  groups of 2–8 pods each (one size per role) of half a node's GPUs, each group inside one
  rack, no job-level domain; it starts with one prefill and one decode group, the others join
  when they fit (`min_sub_groups` prefill 1, decode 1).
Not promised: realism of the mix beyond its stated distributions.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from experiments.cluster_state import WHOLE, Assignment, PodRequest
from experiments.trace_openb import OpenbNodes

__all__ = [
    "LINGJUN_ENV",
    "LINGJUN_SOURCE",
    "LingjunNotFound",
    "SubGroupCluster",
    "SubGroupSpec",
    "SubGroupJob",
    "nvl72_cluster",
    "lingjun_cluster",
    "lingjun_topology_file",
    "subgroup_workload",
]

LINGJUN_ENV = "BATCHPLACE_LINGJUN_DIR"
LINGJUN_SOURCE = "alibaba/alibaba-lingjun-dataset-2023, data/topo.csv (Cao et al., SIGCOMM '24)"
LINGJUN_COLUMNS = ("ip", "DSW", "PSW", "ASW")
CPU_PER_GPU_MILLI = 12_000
MEMORY_PER_GPU_MIB = 120 * 1024
NVL72_RACK_NODES = 18
NVL72_GPUS = 4
NVL72_LEAF_RACKS = 4
NVL72_SPINE_LEAVES = 7
LINGJUN_GPUS = 8


class LingjunNotFound(FileNotFoundError):
    """No `topo.csv` where we looked."""


@dataclass(frozen=True, eq=False)
class SubGroupCluster:
    """Nodes and their domains: `domains[t - 1][n]` is node n's domain id at tier t, named
    `domain_names[t - 1][id]`. `rack_nodes`: the nodes of a full rack (a full shard)."""

    name: str
    nodes: OpenbNodes
    domains: tuple[np.ndarray, ...]
    domain_names: tuple[tuple[str, ...], ...]
    rack_nodes: int

    @property
    def top_tier(self) -> int:
        return len(self.domains)

    @property
    def gpus_per_node(self) -> int:
        return int(self.nodes.gpus[0])

    def hypernodes(self) -> list[dict[str, object]]:
        """The snapshot's HyperNodes: tier 1 lists nodes, higher tiers the domains below."""
        names = self.nodes.names
        found: list[dict[str, object]] = []
        for tier, (ids, labels) in enumerate(zip(self.domains, self.domain_names), start=1):
            for domain, label in enumerate(labels):
                members = np.flatnonzero(ids == domain)
                if tier == 1:
                    found.append({"name": label, "tier": 1, "node_members": [names[n] for n in members]})
                else:
                    below = sorted({self.domain_names[tier - 2][int(d)] for d in self.domains[tier - 2][members]})
                    found.append({"name": label, "tier": tier, "hypernode_members": below})
        return found


def _nodes(names: list[str], gpus: int) -> OpenbNodes:
    count = len(names)
    return OpenbNodes(
        names=tuple(names),
        cpu_milli=np.full(count, gpus * CPU_PER_GPU_MILLI, dtype=np.int64),
        memory_mib=np.full(count, gpus * MEMORY_PER_GPU_MIB, dtype=np.int64),
        gpus=np.full(count, gpus, dtype=np.int64),
        model=np.zeros(count, dtype=np.int64),
    )


def nvl72_cluster(racks: int = 56) -> SubGroupCluster:
    """`racks` racks of 18 × 4-GPU nodes; leaves of 4 racks, spines of 7 leaves."""
    count = racks * NVL72_RACK_NODES
    rack = np.arange(count) // NVL72_RACK_NODES
    leaf = rack // NVL72_LEAF_RACKS
    spine = leaf // NVL72_SPINE_LEAVES
    names = [f"nvl-{r:02d}-{n % NVL72_RACK_NODES:02d}" for n, r in enumerate(rack.tolist())]
    labels = tuple(
        tuple(f"{word}-{i}" for i in range(int(ids.max()) + 1)) for word, ids in (("rack", rack), ("leaf", leaf), ("spine", spine))
    )
    return SubGroupCluster("nvl72", _nodes(names, NVL72_GPUS), (rack, leaf, spine), labels, NVL72_RACK_NODES)


def lingjun_topology_file(explicit: Path | None) -> Path:
    """`topo.csv` in `explicit`, else in `$BATCHPLACE_LINGJUN_DIR`; `LingjunNotFound` otherwise."""
    folder = explicit if explicit is not None else (Path(os.environ[LINGJUN_ENV]) if os.environ.get(LINGJUN_ENV) else None)
    if folder is None:
        raise LingjunNotFound("no Lingjun topology folder given")
    path = folder / "topo.csv" if folder.is_dir() else folder
    if not path.is_file():
        raise LingjunNotFound(f"{path}: no such file")
    return path


def lingjun_cluster(path: Path) -> SubGroupCluster:
    """The Lingjun hosts (columns `ip, DSW, PSW, ASW`), ordered by core, aggregation switch,
    ToR and host hash; nodes are named `lj-<PSW>-<ASW>-<k>`."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in LINGJUN_COLUMNS if column not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)} (expected {', '.join(LINGJUN_COLUMNS)})")
        rows = sorted((row["DSW"], row["PSW"], row["ASW"], row["ip"]) for row in reader)
    if not rows:
        raise ValueError(f"{path}: no hosts")
    tors = sorted({(d, p, a) for d, p, a, _ in rows})
    psws = sorted({(d, p) for d, p, _, _ in rows})
    dsws = sorted({d for d, _, _, _ in rows})
    tor_id = {key: i for i, key in enumerate(tors)}
    psw_id = {key: i for i, key in enumerate(psws)}
    dsw_id = {key: i for i, key in enumerate(dsws)}
    names, seen = [], dict.fromkeys(tors, 0)
    for d, p, a, _ in rows:
        names.append(f"lj-{p.lower()}-{a.lower()}-{seen[d, p, a]}")
        seen[d, p, a] += 1
    domains = (
        np.array([tor_id[d, p, a] for d, p, a, _ in rows], dtype=np.int64),
        np.array([psw_id[d, p] for d, p, _, _ in rows], dtype=np.int64),
        np.array([dsw_id[d] for d, _, _, _ in rows], dtype=np.int64),
    )
    labels = (
        tuple(f"tor-{p.lower()}-{a.lower()}" for _, p, a in tors),
        tuple(f"psw-{p.lower()}" for _, p in psws),
        tuple(f"dsw-{d.lower()}" for d in dsws),
    )
    return SubGroupCluster("lingjun", _nodes(names, LINGJUN_GPUS), domains, labels, max(seen.values()))


@dataclass(frozen=True)
class SubGroupSpec:
    """One shard or replica group: `pods` pods, all inside one domain of tier `tier`."""

    name: str
    policy: str
    pods: int
    tier: int = 1


@dataclass
class SubGroupJob:
    """A job of sub-groups; pods are `(sub-group index, replica)`, all of one shape."""

    ident: int
    kind: str  # training | serving
    arrival_s: float
    duration_s: float
    gpus_per_pod: int
    sub_groups: tuple[SubGroupSpec, ...]
    min_sub_groups: dict[str, int]
    tier: int | None = None  # the job's hard tier; None: no job-level domain
    start_s: float | None = None
    end_s: float | None = None
    assignments: dict[tuple[int, int], Assignment] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.ident}"

    @property
    def min_member(self) -> int:
        """Pods of the smallest set of sub-groups meeting `min_sub_groups`."""
        total = 0
        for policy, count in self.min_sub_groups.items():
            sizes = sorted(sub.pods for sub in self.sub_groups if sub.policy == policy)
            total += sum(sizes[:count])
        return total

    def request(self, sub: int, replica: int) -> PodRequest:
        return PodRequest(
            index=(self.ident * 64 + sub) * 64 + replica,
            cpu_milli=self.gpus_per_pod * CPU_PER_GPU_MILLI,
            memory_mib=self.gpus_per_pod * MEMORY_PER_GPU_MIB,
            num_gpu=self.gpus_per_pod,
            gpu_milli=WHOLE,
        )

    def started_sub_groups(self) -> set[int]:
        """Sub-groups with every pod placed."""
        placed: dict[int, int] = {}
        for sub, _ in self.assignments:
            placed[sub] = placed.get(sub, 0) + 1
        return {s for s, count in placed.items() if count >= self.sub_groups[s].pods}

    def ready(self) -> bool:
        """Its started sub-groups meet `min_sub_groups`."""
        started = self.started_sub_groups()
        return all(
            sum(1 for s in started if self.sub_groups[s].policy == policy) >= count
            for policy, count in self.min_sub_groups.items()
        )


def _duration(rng: np.random.Generator, mean_s: float) -> float:
    sigma = 0.8
    return float(rng.lognormal(np.log(mean_s) - sigma**2 / 2, sigma))


def _draw(rng: np.random.Generator, cluster: SubGroupCluster, ident: int, arrival_s: float) -> SubGroupJob:
    node_gpus = cluster.gpus_per_node
    if rng.random() < 0.6:
        shards = int(rng.choice([2, 4, 8], p=[0.4, 0.4, 0.2]))
        size = cluster.rack_nodes if rng.random() < 0.5 else cluster.rack_nodes // 2
        leaf_racks = int(np.bincount(cluster.domains[0][cluster.domains[1] == 0]).astype(bool).sum())
        fits_leaf = shards * size <= leaf_racks * cluster.rack_nodes and (size < cluster.rack_nodes or shards <= leaf_racks)
        tier = 2 if fits_leaf and rng.random() < 0.5 else 3
        subs = tuple(SubGroupSpec(f"shard-{i}", "shard", size) for i in range(shards))
        return SubGroupJob(ident, "training", arrival_s, _duration(rng, 1800.0), node_gpus, subs, {"shard": shards},
                           tier=min(tier, cluster.top_tier))  # fmt: skip
    prefill, decode = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    prefill_pods, decode_pods = int(rng.integers(2, 9)), int(rng.integers(2, 9))
    subs = tuple(SubGroupSpec(f"prefill-{i}", "prefill", prefill_pods) for i in range(prefill)) + tuple(
        SubGroupSpec(f"decode-{i}", "decode", decode_pods) for i in range(decode)
    )
    return SubGroupJob(ident, "serving", arrival_s, _duration(rng, 1200.0), node_gpus // 2, subs, {"prefill": 1, "decode": 1})


def _gpu_seconds(job: SubGroupJob) -> float:
    return sum(sub.pods for sub in job.sub_groups) * job.gpus_per_pod * job.duration_s


def subgroup_workload(cluster: SubGroupCluster, seed: int, *, hours: float, load: float = 1.0) -> list[SubGroupJob]:
    """Jobs in arrival order (module docstring): the rate is set from the mean GPU-seconds of
    2,000 draws of the mix (their own generator), so the offered load is `load` × capacity."""
    sampler = np.random.default_rng(seed + 1_000_003)
    mean_gpu_s = float(np.mean([_gpu_seconds(_draw(sampler, cluster, 0, 0.0)) for _ in range(2000)]))
    capacity_gpus = int(cluster.nodes.gpus.sum())
    rate = load * capacity_gpus / mean_gpu_s
    rng = np.random.default_rng(seed)
    jobs: list[SubGroupJob] = []
    now = 0.0
    horizon = hours * 3600.0
    while True:
        now += float(rng.exponential(1.0 / rate))
        if now >= horizon:
            return jobs
        jobs.append(_draw(rng, cluster, len(jobs), now))
