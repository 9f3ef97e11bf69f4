"""The sub-group experiment: its clusters, its Volcano-like baseline on hand-made cases (which
sub-group lands in which rack), the checker's judgement the loop counts, and the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from batchplace.cli import app
from experiments.baselines.volcano_subgroups import VolcanoSubGroups, hypernode_binpack_score
from experiments.cluster_state import ClusterState, best_fit_devices
from experiments.subgroup_stream import (
    SubGroupConfig,
    SubGroupSnapshots,
    _placement,
    _whole_racks_free,
    run_subgroup_stream,
)
from experiments.subgroup_workload import (
    SubGroupCluster,
    SubGroupJob,
    SubGroupSpec,
    _nodes,
    lingjun_cluster,
    nvl72_cluster,
    subgroup_workload,
)
from solver.checker import check_placement


def _small_cluster() -> SubGroupCluster:
    """2 leaves × 2 racks × 2 nodes of 4 GPUs: rack-0, rack-1 under leaf-0; rack-2, rack-3 under leaf-1; one spine."""
    rack = np.arange(8) // 2
    leaf = rack // 2
    spine = np.zeros(8, dtype=np.int64)
    names = [f"n{n}" for n in range(8)]
    labels = (tuple(f"rack-{i}" for i in range(4)), ("leaf-0", "leaf-1"), ("spine-0",))
    return SubGroupCluster("small", _nodes(names, 4), (rack, leaf, spine), labels, 2)


def _training(ident: int, shards: int, pods: int, *, tier: int | None = 2, arrival_s: float = 0.0) -> SubGroupJob:
    subs = tuple(SubGroupSpec(f"shard-{i}", "shard", pods) for i in range(shards))
    return SubGroupJob(ident, "training", arrival_s, 600.0, 4, subs, {"shard": shards}, tier=tier)


def _occupy(state: ClusterState, job: SubGroupJob, nodes: list[int]) -> None:
    """Job's pods, in order, on `nodes` (a running job)."""
    slots = [(s, r) for s, spec in enumerate(job.sub_groups) for r in range(spec.pods)]
    for (sub, replica), node in zip(slots, nodes):
        pod = job.request(sub, replica)
        job.assignments[sub, replica] = state.bind(pod, node, best_fit_devices(state.gpu_left[node].tolist(), pod))
    job.start_s = 0.0


def _racks_of(cluster: SubGroupCluster, job: SubGroupJob, binds: list) -> dict[int, set[str]]:
    racks: dict[int, set[str]] = {}
    for bound_job, sub, _, assignment in binds:
        assert bound_job is job
        racks.setdefault(sub, set()).add(cluster.domain_names[0][int(cluster.domains[0][assignment.node])])
    return racks


def test_the_job_goes_to_the_first_leaf_where_all_its_shards_fit():
    """leaf-0 has 3 free nodes (n0 busy): one 2-node shard fits there, not two; leaf-1 takes both."""
    cluster = _small_cluster()
    state = ClusterState(cluster.nodes)
    _occupy(state, _training(0, 1, 1, tier=None), [0])
    job = _training(1, 2, 2)
    binds, _ = VolcanoSubGroups(cluster).cycle(state, [job])
    assert _racks_of(cluster, job, binds) == {0: {"rack-2"}, 1: {"rack-3"}}


def test_a_sub_group_goes_to_the_fullest_rack_it_fits():
    """The plugin's bin packing: a 1-pod shard goes to rack-1 (half used), not the idle rack-0."""
    cluster = _small_cluster()
    state = ClusterState(cluster.nodes)
    _occupy(state, _training(0, 1, 1, tier=None), [3])
    job = _training(1, 1, 1, tier=1)
    binds, _ = VolcanoSubGroups(cluster).cycle(state, [job])
    assert _racks_of(cluster, job, binds) == {0: {"rack-1"}}


def test_a_job_no_leaf_can_take_waits_and_its_dry_runs_leave_nothing_bound():
    """Shards of 1, 1 and 2 nodes inside one leaf: leaf-0 has 3 free nodes (n3 busy), leaf-1 4.
    Only leaf-1 has the 16 GPUs the job asks (`isEligibleHyperNode`); there the shards go one
    after another, each to the fullest rack that takes it (ties: the first): shard-0 and
    shard-1 share rack-2, shard-2 takes rack-3. With every second node busy, each leaf has the
    8 GPUs a 2-node shard asks but no rack two free nodes: both dry runs fail, the job waits
    and the cluster is as it was."""
    cluster = _small_cluster()
    state = ClusterState(cluster.nodes)
    _occupy(state, _training(0, 1, 1, tier=None), [3])
    subs = (SubGroupSpec("shard-0", "shard", 1), SubGroupSpec("shard-1", "shard", 1), SubGroupSpec("shard-2", "shard", 2))
    job = SubGroupJob(1, "training", 0.0, 600.0, 4, subs, {"shard": 3}, tier=2)
    binds, _ = VolcanoSubGroups(cluster).cycle(state, [job])
    assert _racks_of(cluster, job, binds) == {0: {"rack-2"}, 1: {"rack-2"}, 2: {"rack-3"}}
    state = ClusterState(cluster.nodes)
    _occupy(state, _training(0, 4, 1, tier=None), [1, 3, 5, 7])
    before = state.gpu_left.copy()
    binds, _ = VolcanoSubGroups(cluster).cycle(state, [_training(2, 1, 2)])
    assert binds == [] and (state.gpu_left == before).all()


def test_a_serving_job_waits_when_its_decode_groups_fit_but_no_prefill_group_does():
    """min_sub_groups prefill 1, decode 1: two 1-pod decode groups fit, the 3-pod prefill
    group of whole nodes fits no rack (racks of 2 nodes) — two decode groups do not make the
    job ready."""
    cluster = _small_cluster()
    state = ClusterState(cluster.nodes)
    subs = (SubGroupSpec("prefill-0", "prefill", 3), SubGroupSpec("decode-0", "decode", 1), SubGroupSpec("decode-1", "decode", 1))
    job = SubGroupJob(0, "serving", 0.0, 600.0, 4, subs, {"prefill": 1, "decode": 1})
    binds, _ = VolcanoSubGroups(cluster).cycle(state, [job])
    assert binds == [] and state.left_total.sum() == 8 * 4 * 1000


def test_hypernode_score_is_the_mean_of_cpu_and_memory_fill():
    cluster = _small_cluster()
    state = ClusterState(cluster.nodes)
    job = _training(0, 1, 1, tier=None)
    _occupy(state, job, [0])
    rack0 = cluster.domains[0] == 0
    pod = job.request(0, 0)
    # rack-0: 2 nodes of 4 GPUs, one full: (1 + 1) nodes' worth used of 2 after one more pod → 1.0
    assert hypernode_binpack_score(state, rack0, pod.cpu_milli, pod.memory_mib) == pytest.approx(1.0)
    assert hypernode_binpack_score(state, rack0, 2 * pod.cpu_milli, 2 * pod.memory_mib) == 0.0  # overflows
    assert hypernode_binpack_score(state, cluster.domains[0] == 1, pod.cpu_milli, pod.memory_mib) == pytest.approx(0.5)


def test_a_shard_split_over_two_racks_is_a_sub_group_violation_the_loop_counts():
    """The checker's wording the result's `sub_group_violations` counts: shard-0 on n0 (rack-0) and n2 (rack-1)."""
    cluster = _small_cluster()
    job = _training(0, 1, 2)
    snapshot = SubGroupSnapshots(cluster, sla_waiting_s=None).snapshot([job], 0.0)
    state = ClusterState(cluster.nodes)
    binds = []
    for replica, node in enumerate((0, 2)):
        pod = job.request(0, replica)
        binds.append((job, 0, replica, state.bind(pod, node, (0, 1, 2, 3))))
    found = check_placement(snapshot, _placement(binds, cluster.nodes.names))
    assert [(v.rule, "sub-group shard-0" in v.message) for v in found] == [("topology", True)]
    whole = [(job, 0, r, a) for r, a in enumerate([binds[0][3], state.bind(job.request(0, 1), 1, (0, 1, 2, 3))])]
    assert check_placement(snapshot, _placement(whole, cluster.nodes.names)) == ()


def test_whole_racks_free_counts_racks_with_every_gpu_idle():
    cluster = _small_cluster()
    state = ClusterState(cluster.nodes)
    assert _whole_racks_free(cluster, state) == 4
    pod = _training(0, 1, 1).request(0, 0)
    state.bind(pod.__class__(index=0, cpu_milli=0, memory_mib=0, num_gpu=1, gpu_milli=1000), 5, (0,))
    assert _whole_racks_free(cluster, state) == 3


def test_nvl72_is_racks_of_18_four_gpu_nodes_under_leaves_and_spines():
    cluster = nvl72_cluster(56)
    assert cluster.nodes.count == 1008 and cluster.gpus_per_node == 4 and cluster.rack_nodes == 18
    assert [len(names) for names in cluster.domain_names] == [56, 14, 2]
    tiers = {h["name"]: h["tier"] for h in cluster.hypernodes()}
    assert tiers["rack-0"] == 1 and tiers["leaf-13"] == 2 and tiers["spine-1"] == 3


def test_lingjun_reads_tor_labels_as_local_to_their_aggregation_switch(tmp_path: Path):
    topo = tmp_path / "topo.csv"
    topo.write_text("ip,DSW,PSW,ASW\nh1,G6,P10,S1\nh2,G6,P10,S1\nh3,G6,P12,S1\nh4,G6,P12,S2\n")
    cluster = lingjun_cluster(topo)
    assert cluster.domain_names == (("tor-p10-s1", "tor-p12-s1", "tor-p12-s2"), ("psw-p10", "psw-p12"), ("dsw-g6",))
    assert cluster.nodes.names == ("lj-p10-s1-0", "lj-p10-s1-1", "lj-p12-s1-0", "lj-p12-s2-0")
    assert cluster.domains[0].tolist() == [0, 0, 1, 2] and cluster.rack_nodes == 2
    snapshot = SubGroupSnapshots(cluster).snapshot([], 0.0)  # a valid forest of HyperNodes
    assert {h.name for h in snapshot.hypernodes if h.tier == 2} == {"psw-p10", "psw-p12"}


def test_the_stream_is_seeded_and_its_shards_fit_their_tiers():
    cluster = nvl72_cluster(16)
    first, again = subgroup_workload(cluster, 7, hours=2.0), subgroup_workload(cluster, 7, hours=2.0)
    assert [(j.arrival_s, j.duration_s, j.kind) for j in first] == [(j.arrival_s, j.duration_s, j.kind) for j in again]
    assert first != subgroup_workload(cluster, 8, hours=2.0)
    for job in first:
        if job.kind == "training":
            assert all(s.pods in (9, 18) and s.tier == 1 for s in job.sub_groups) and job.tier in (2, 3)
            if job.tier == 2:  # a leaf is 4 racks
                assert sum(s.pods for s in job.sub_groups) <= 72 and (job.sub_groups[0].pods < 18 or len(job.sub_groups) <= 4)
        else:
            assert job.min_sub_groups == {"prefill": 1, "decode": 1} and job.tier is None
            assert all(2 <= s.pods <= 8 for s in job.sub_groups)


@pytest.mark.parametrize("policy", ["volcano", "greedy", "auto"])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), load=st.floats(0.5, 2.0))
def test_every_policy_passes_the_checker_and_never_splits_a_sub_group(policy: str, seed: int, load: float):
    """Each cycle's binds are judged by the checker in the loop (a violation would be counted,
    not applied); and every placed sub-group is whole, in one rack, and a started job ready."""
    cluster = nvl72_cluster(6)
    jobs = subgroup_workload(cluster, seed, hours=0.5, load=load)
    config = SubGroupConfig("nvl72", policy, hours=0.5, cycle_s=300.0, time_limit_s=0.3)
    result = run_subgroup_stream(config, cluster, jobs=jobs)
    assert result.violations == ()
    for job in jobs:
        per_sub: dict[int, set[int]] = {}
        for (sub, _), assignment in job.assignments.items():
            per_sub.setdefault(sub, set()).add(int(cluster.domains[0][assignment.node]))
        for sub, racks in per_sub.items():
            placed = sum(1 for s, _ in job.assignments if s == sub)
            assert placed == job.sub_groups[sub].pods and len(racks) == 1
        if job.start_s is not None:
            assert job.ready()


def test_the_longest_wait_counts_a_job_never_started_until_the_stream_ends():
    """Two 16-GPU jobs fill both leaves at 0 s; a third waits for the first to end (600 s);
    a fourth of 24 GPUs fits no leaf (16 GPUs) and waits from 300 s to the end, 1,800 s."""
    cluster = _small_cluster()
    config = SubGroupConfig("small", "greedy", hours=0.5, cycle_s=300.0)
    fitting = [_training(i, 2, 2) for i in range(3)]
    waited = run_subgroup_stream(config, cluster, jobs=fitting)
    assert sorted(j.start_s for j in fitting) == [0.0, 0.0, 600.0]
    assert waited.longest_wait_s == 600.0
    never = _training(3, 3, 2, arrival_s=300.0)
    starved = run_subgroup_stream(config, cluster, jobs=[_training(i, 2, 2) for i in range(3)] + [never])
    assert never.start_s is None and starved.jobs_started == 3
    assert starved.longest_wait_s == 1800.0 - 300.0


def test_cli_writes_the_table_csvs_and_plot_and_refuses_a_missing_topology(tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "out"
    done = runner.invoke(app, ["experiment", "subgroups", "--clusters", "nvl72", "--racks", "4", "--hours", "0.2",
                               "--policies", "volcano", "--out", str(out)])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert {p.name for p in out.iterdir()} == {"subgroups.csv", "subgroups_cycles.csv", "summary_subgroups.md", "subgroups_racks_free_nvl72.png"}
    assert "| nvl72 | volcano | 42 | 0 | 0 |" in (out / "summary_subgroups.md").read_text()
    refused = runner.invoke(app, ["experiment", "subgroups", "--clusters", "lingjun", "--lingjun-dir", str(tmp_path / "none")],
                            env={"BATCHPLACE_LINGJUN_DIR": ""})  # fmt: skip
    assert refused.exit_code == 2 and "topo.csv" in refused.output and "Traceback" not in refused.output
    bad = tmp_path / "topo.csv"
    bad.write_text("ip,core,PSW,ASW\nh1,G6,P10,S1\n")
    wrong = runner.invoke(app, ["experiment", "subgroups", "--clusters", "lingjun", "--lingjun-dir", str(tmp_path)])
    assert wrong.exit_code == 2 and "no column DSW" in wrong.output and "Traceback" not in wrong.output
    unknown = runner.invoke(app, ["experiment", "subgroups", "--policies", "kube"])
    assert unknown.exit_code == 2 and "--policies: unknown kube" in unknown.output
