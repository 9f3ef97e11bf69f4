"""The checker as a whole: one valid placement on a small cluster, then one mutation per rule.

Every mutation must be caught, and caught by exactly its rule (`{v.rule} == {NAME}`), so a
rule that goes silent or one that reports another rule's business both fail here.

The cluster (`cluster()`), all nodes 32 cores / 256 GiB / 8 GPUs, under spine `sp`:
    leaf sw-a: n1 (2 NUMA cells; GPU 4 has 100 milli used outside pods, GPU 5 600), n2
    leaf sw-b: n3, n4 (pool=infer, taint dedicated=infer:NoSchedule, 2 cells of 16 cores),
               n5 (cordoned), n6
Queues: org (cap 24 GPUs) ⊃ team-a (cap 16 GPUs, deserves 16) and team-b (deserves 4,
reclaimable); frozen (closed); default.
The valid placement:
    llm (team-a, prio 10, 2×4 GPUs, hard tier 1) → n1 GPUs 0-3 and n2 GPUs 0-3,
        after preempting low (team-a, prio 1, 8 GPUs on n2);
    eval (team-a, 4 GPUs) → n3 GPUs 4-7, after reclaiming batch-1 (team-b runs 2×4 GPUs
        on n3, deserves 4);
    notebook (500 milli) → n1 GPU 4, beside a running 300-milli sidecar: 100+300+500 = 900;
    infer (single-numa-node, 2 GPUs, 4 cores) → n4 GPUs 0-1, cell 0;
    pipeline: prep runs on n3, train (depends on prep) → n3; report (depends on train) waits.
Pending and not placed: extra (team-a, 8 GPUs), etl (30 cores), late (queue frozen),
orphan (queue nope). Running and untouched on n6: vip (team-a, prio 100), critical
(team-a, not preemptable).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from models.placement import Bind, Eviction, Placement
from models.snapshot import Pod, Snapshot, Toleration
from solver.checker import PlacementRejected, Violation, check_placement, require_valid
from solver.rules import (
    binding,
    capacity,
    dependency,
    eligibility,
    gang,
    numa,
    preemption,
    quota,
    topology,
)
from tests.builders import (
    Gang,
    make_bind,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_queue,
    make_running,
    make_snapshot,
    make_task,
    resources,
)


@dataclass(frozen=True)
class Scenario:
    snapshot: Snapshot
    gangs: dict[str, Gang]
    placement: Placement

    def pod(self, gang: str, index: int = 0, *, task: str | None = None) -> Pod:
        """The `index`-th pod of `gang` (of its `task`, when given)."""
        pods = self.gangs[gang].pods if task is None else self.gangs[gang].pods_of(task)
        return pods[index]


def cluster(
    *,
    team_a_cap_gpus: int | None = 16,
    org_cap_gpus: int = 24,
    team_b_reclaimable: bool = True,
    team_b_guarantee_gpus: int = 0,
    batch_min_member: int = 1,
    infer_cpu: float = 4,
) -> Scenario:
    """The cluster and valid placement of the module docstring; keywords make snapshot variants."""
    nodes = [
        make_node("n1", gpus=8, leaf="sw-a", spine="sp", numa_cells=2, gpu_used_milli={4: 100, 5: 600}),
        make_node("n2", gpus=8, leaf="sw-a", spine="sp"),
        make_node("n3", gpus=8, leaf="sw-b", spine="sp"),
        make_node(
            "n4",
            gpus=8,
            leaf="sw-b",
            spine="sp",
            labels={"pool": "infer"},
            taints=["dedicated=infer:NoSchedule"],
            numa_cells=2,
            cell_cpu=16,
        ),
        make_node("n5", gpus=8, leaf="sw-b", spine="sp", unschedulable=True),
        make_node("n6", gpus=8, leaf="sw-b", spine="sp"),
    ]
    everything = resources(cpu=1000, memory=10_000)
    queues = [
        make_queue("org", capability=resources(gpus=org_cap_gpus)),
        make_queue(
            "team-a",
            parent="org",
            capability=None if team_a_cap_gpus is None else resources(gpus=team_a_cap_gpus),
            deserved={**everything, **resources(gpus=16)},
        ),
        make_queue(
            "team-b",
            parent="org",
            deserved={**everything, **resources(gpus=4)},
            guarantee=resources(gpus=team_b_guarantee_gpus),
            reclaimable=team_b_reclaimable,
        ),
        make_queue("frozen", state="closed"),
    ]
    infer_toleration = Toleration(key="dedicated", value="infer", effect="NoSchedule")
    gangs = {
        "llm": make_gang("llm", replicas=2, gpus=4, cpu=4, queue="team-a", priority=10, topology_tier=1),
        "low": make_gang("low", gpus=8, queue="team-a", priority=1, running_on=["n2"]),
        "batch": make_gang(
            "batch", replicas=2, gpus=4, queue="team-b", min_member=batch_min_member, running_on=["n3", "n3"]
        ),
        "eval": make_gang("eval", gpus=4, queue="team-a", priority=5),
        "vip": make_gang("vip", cpu=2, queue="team-a", priority=100, running_on=["n6"]),
        "critical": make_gang("critical", queue="team-a", preemptable=False, running_on=["n6"]),
        "extra": make_gang("extra", gpus=8, queue="team-a", priority=10),
        "notebook": make_gang("notebook", gpu_milli=500),
        "infer": make_gang(
            "infer",
            gpus=2,
            cpu=infer_cpu,
            numa_policy="single-numa-node",
            node_selector={"pool": "infer"},
            tolerations=[infer_toleration],
        ),
        "pipeline": make_gang(
            "pipeline",
            tasks=[
                make_task("prep"),
                make_task("train", depends_on=["prep"]),
                make_task("report", depends_on=["train"]),
            ],
            running_on={"prep": ["n3"]},
        ),
        "etl": make_gang("etl", cpu=30),
        "late": make_gang("late", queue="frozen"),
        "orphan": make_gang("orphan", queue="nope"),
    }
    sidecar = make_running("sidecar", node="n1", gpu_milli=300, gpu_indices=[4])
    snapshot = make_snapshot(nodes=nodes, groups=gangs.values(), running=[sidecar], queues=queues)
    g = gangs
    placement = make_placement(
        binds=[
            make_bind(g["llm"].pods[0], "n1", gpus=(0, 1, 2, 3)),
            make_bind(g["llm"].pods[1], "n2", gpus=(0, 1, 2, 3)),
            make_bind(g["eval"].pods[0], "n3", gpus=(4, 5, 6, 7)),
            make_bind(g["notebook"].pods[0], "n1", gpus=(4,)),
            make_bind(g["infer"].pods[0], "n4", gpus=(0, 1), numa_cell=0),
            make_bind(g["pipeline"].pods_of("train")[0], "n3"),
        ],
        evictions=[
            make_eviction(g["low"].pods[0], for_=g["llm"], reason="preempt"),
            make_eviction(g["batch"].pods[1], for_=g["eval"], reason="reclaim"),
        ],
    )
    return Scenario(snapshot=snapshot, gangs=gangs, placement=placement)


# ---- placement edits: each returns a new Placement ----


def rebind(placement: Placement, bind: Bind) -> Placement:
    """Replace the bind of `bind.pod` (or add it)."""
    others = [b for b in placement.binds if b.pod != bind.pod]
    return placement.model_copy(update={"binds": (*others, bind)})


def unbind(placement: Placement, pod: Pod) -> Placement:
    return placement.model_copy(update={"binds": tuple(b for b in placement.binds if b.pod != pod.key)})


def add(placement: Placement, *, binds: tuple[Bind, ...] = (), evictions: tuple[Eviction, ...] = ()) -> Placement:
    return Placement(binds=(*placement.binds, *binds), evictions=(*placement.evictions, *evictions))


def re_evict(placement: Placement, eviction: Eviction) -> Placement:
    """Replace the eviction of `eviction.pod` (or add it)."""
    others = [e for e in placement.evictions if e.pod != eviction.pod]
    return placement.model_copy(update={"evictions": (*others, eviction)})


def unchanged(s: Scenario) -> Placement:
    return s.placement


Mutation = Callable[[Scenario], Placement]

MUTATIONS: list[Any] = [
    # -- binding
    pytest.param(
        {},
        lambda s: add(s.placement, binds=(make_bind(s.pod("notebook"), "n1", gpus=(4,)),)),
        binding.NAME,
        id="binding a pod twice is a binding violation",
    ),
    pytest.param(
        {},
        lambda s: add(s.placement, binds=(make_bind(s.pod("batch", 0), "n6", gpus=(0, 1, 2, 3)),)),
        binding.NAME,
        id="binding a running pod is a binding violation",
    ),
    pytest.param(
        {},
        lambda s: add(s.placement, evictions=(make_eviction(s.pod("extra"), "n6", for_="default/llm"),)),
        binding.NAME,
        id="evicting a pending pod is a binding violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("etl"), "n9")),
        binding.NAME,
        id="binding to a node the snapshot lacks is a binding violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("llm", 0), "n1", gpus=(0, 1, 2, 9))),
        binding.NAME,
        id="binding to a GPU index the node lacks is a binding violation",
    ),
    pytest.param(
        {},
        lambda s: re_evict(s.placement, make_eviction(s.pod("low"), "n1", for_=s.gangs["llm"])),
        binding.NAME,
        id="evicting a pod from a node it does not run on is a binding violation",
    ),
    # -- capacity
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("etl"), "n3")),
        capacity.NAME,
        id="cpu beyond a node's allocatable is a capacity violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("eval"), "n3", gpus=(0, 1, 2, 3))),
        capacity.NAME,
        id="a whole-GPU pod on devices a running pod holds is a capacity violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("notebook"), "n1", gpus=(5,))),
        capacity.NAME,
        id="fractional pods summing over 1000 milli on a device are a capacity violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("eval"), "n1", gpus=(4, 5, 6, 7))),
        capacity.NAME,
        id="a whole-GPU pod on a partly used device is a capacity violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("eval"), "n6", gpus=(0, 1))),
        capacity.NAME,
        id="a 4-GPU pod listing 2 devices is a capacity violation",
    ),
    # -- eligibility
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("infer"), "n6", gpus=(0, 1), numa_cell=0)),
        eligibility.NAME,
        id="a node selector mismatch is an eligibility violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("notebook"), "n4", gpus=(7,))),
        eligibility.NAME,
        id="an untolerated taint is an eligibility violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("notebook"), "n5", gpus=(0,))),
        eligibility.NAME,
        id="a cordoned node is an eligibility violation",
    ),
    # -- gang
    pytest.param(
        {},
        lambda s: unbind(s.placement, s.pod("llm", 1)),
        gang.NAME,
        id="binding fewer than min_member is a gang violation",
    ),
    pytest.param(
        {"batch_min_member": 2}, unchanged, gang.NAME, id="a victim gang cut below min_member is a gang violation"
    ),
    # -- quota
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("extra"), "n6", gpus=range(8))),
        quota.NAME,
        id="exceeding a queue's capability is a quota violation",
    ),
    pytest.param(
        {"team_a_cap_gpus": None, "org_cap_gpus": 20},
        lambda s: rebind(s.placement, make_bind(s.pod("extra"), "n6", gpus=range(8))),
        quota.NAME,
        id="exceeding an ancestor queue's capability is a quota violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("late"), "n6")),
        quota.NAME,
        id="binding into a closed queue is a quota violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("orphan"), "n6")),
        quota.NAME,
        id="binding into a queue that does not exist is a quota violation",
    ),
    pytest.param(
        # team-b deserves max(4, guarantee 6) = 6 of the 8 it runs, so reclaiming one 4-GPU
        # pod is a legal reclaim (4 + 4 > 6) that leaves it 4 < its guarantee 6.
        {"team_b_guarantee_gpus": 6},
        unchanged,
        quota.NAME,
        id="reclaiming below a queue's guarantee is a quota violation",
    ),
    # -- topology
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("llm", 1), "n6", gpus=(0, 1, 2, 3))),
        topology.NAME,
        id="a tier-1 gang across two leaves is a topology violation",
    ),
    # -- numa
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("infer"), "n4", gpus=(3, 4), numa_cell=0)),
        numa.NAME,
        id="single-numa-node GPUs split across cells are a numa violation",
    ),
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("infer"), "n4", gpus=(0, 1))),
        numa.NAME,
        id="a single-numa-node bind without its cell is a numa violation",
    ),
    pytest.param(
        {"infer_cpu": 20}, unchanged, numa.NAME, id="single-numa-node cpu beyond its cell is a numa violation"
    ),
    # -- dependency
    pytest.param(
        {},
        lambda s: rebind(s.placement, make_bind(s.pod("pipeline", task="report"), "n3")),
        dependency.NAME,
        id="binding a task whose dependency is not running is a dependency violation",
    ),
    # -- preemption
    pytest.param(
        {},
        lambda s: add(s.placement, evictions=(make_eviction(s.pod("critical"), for_=s.gangs["llm"]),)),
        preemption.NAME,
        id="evicting a non-preemptable pod is a preemption violation",
    ),
    pytest.param(
        {},
        lambda s: add(s.placement, evictions=(make_eviction(s.pod("vip"), for_=s.gangs["llm"]),)),
        preemption.NAME,
        id="evicting a higher-priority pod is a preemption violation",
    ),
    pytest.param(
        {"team_b_reclaimable": False},
        unchanged,
        preemption.NAME,
        id="reclaiming from a non-reclaimable queue is a preemption violation",
    ),
    pytest.param(
        {},
        lambda s: re_evict(s.placement, make_eviction(s.pod("low"), for_=s.gangs["extra"])),
        preemption.NAME,
        id="evicting for a pod group that gets no bind is a preemption violation",
    ),
    pytest.param(
        {},
        lambda s: add(
            s.placement, evictions=(make_eviction(s.pod("batch", 0), for_=s.gangs["eval"], reason="reclaim"),)
        ),
        preemption.NAME,
        id="reclaiming a queue down to its deserved share is a preemption violation",
    ),
]


def test_the_base_placement_is_valid() -> None:
    scenario = cluster()
    assert check_placement(scenario.snapshot, scenario.placement) == ()


def test_the_empty_placement_is_valid() -> None:
    assert check_placement(cluster().snapshot, Placement()) == ()


@pytest.mark.parametrize(("variant", "mutate", "rule"), MUTATIONS)
def test_each_mutation_is_reported_by_exactly_its_rule(variant: dict[str, Any], mutate: Mutation, rule: str) -> None:
    scenario = cluster(**variant)
    violations = check_placement(scenario.snapshot, mutate(scenario))
    assert violations, "the mutation went unnoticed"
    assert {v.rule for v in violations} == {rule}, [str(v) for v in violations]


def test_a_cpu_overflow_message_carries_the_numbers() -> None:
    s = cluster()
    (violation,) = check_placement(s.snapshot, rebind(s.placement, make_bind(s.pod("etl"), "n3")))
    # n3 keeps batch-0 1 + prep 1 core; binds add eval 1 + train 1 + etl 30 = 32 → 34 > 32.
    assert violation == Violation(
        rule=capacity.NAME,
        subject="n3",
        message="node n3: cpu 34000 > allocatable 32000m after placement (binds add 32000m)",
    )


def test_a_queue_overflow_names_the_queue_and_the_amounts() -> None:
    s = cluster()
    (violation,) = check_placement(s.snapshot, rebind(s.placement, make_bind(s.pod("extra"), "n6", gpus=range(8))))
    assert violation.subject == "team-a"
    assert "gpu 20000 > capability 16000 milli-GPU" in violation.message


def test_violations_come_in_the_order_of_the_rules() -> None:
    s = cluster()
    broken = rebind(s.placement, make_bind(s.pod("etl"), "n3"))  # capacity
    broken = unbind(broken, s.pod("llm", 1))  # gang
    broken = add(broken, binds=(broken.binds[0],))  # binding (a pod bound twice)
    rules = [v.rule for v in check_placement(s.snapshot, broken)]
    assert rules == [binding.NAME, capacity.NAME, gang.NAME]  # one violation per broken thing


def test_require_valid_raises_placement_rejected_with_the_violations() -> None:
    s = cluster()
    broken = unbind(s.placement, s.pod("llm", 1))
    with pytest.raises(PlacementRejected) as raised:
        require_valid(s.snapshot, broken)
    assert raised.value.violations == check_placement(s.snapshot, broken)
    assert "gang" in str(raised.value)


def test_require_valid_accepts_a_valid_placement() -> None:
    s = cluster()
    require_valid(s.snapshot, s.placement)


def test_an_already_overcommitted_node_is_not_the_placements_fault() -> None:
    """Allocatable lowered under running pods: binds elsewhere are still valid."""
    gang_on_n1 = make_gang("old", cpu=8, running_on=["n1"])
    newcomer = make_gang("new", cpu=1)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=4), make_node("n2", cpu=4)], groups=[gang_on_n1, newcomer])
    assert check_placement(snapshot, Placement()) == ()
    assert check_placement(snapshot, make_placement(binds=[make_bind(newcomer.pods[0], "n2")])) == ()
    (violation,) = check_placement(snapshot, make_placement(binds=[make_bind(newcomer.pods[0], "n1")]))
    assert violation.rule == capacity.NAME
    assert "cpu 9000 > allocatable 4000m" in violation.message


def test_the_checker_imports_no_engine_and_no_numpy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, solver.checker; "
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('solver', 'numpy', 'ortools')))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    allowed = {"solver", "solver.after", "solver.checker", "solver.columns", "solver.shares", "solver.memo", "solver.reasons", "solver.violation", "solver.rules", "solver.made_when_read"}
    # CEL evaluation, which `dra.check` reads device selectors with; and the device allocator,
    # which rule `dra` declares its node filter with (its `check` never calls it).
    allowed |= {"solver.dra_cel", "solver.dra_cel_rewrite", "solver.dra_cel_strings", "solver.dra_allocation"}
    unexpected = [m for m in loaded.split(",") if m not in allowed and not m.startswith("solver.rules.")]
    assert unexpected == []
