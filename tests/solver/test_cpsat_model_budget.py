"""The CP-SAT model stays within its pattern budget on clusters of many node profiles, as
the `mixed` bench family's (docs/results.md, "A second bench family"): the node pattern
walk shares `DataLimits.max_patterns` among the profiles; past it, the homogeneous fill
patterns are sparse; a topology atom's homogeneous patterns never hold more pods than the
tasks that may go there have pending. Each answer still passes the checker and is exact
in its tiers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from solver.cpsat.config import CpsatConfig
from solver.cpsat.data import DataLimits, ModelData, build_model_data
from solver.cpsat.patterns import PatternSet, add_fill, assign, build_pattern_set, walk_further
from solver.objective import ObjectiveContext, score
from solver.problem import build_problem
from solver.checker import check_placement
from models.snapshot import GPU, Snapshot
from tests.builders import make_gang, make_node, make_snapshot
from tests.solver.test_cpsat_properties import PROPERTY_SETTINGS, run_cpsat
from tests.strategies import snapshots


def model_data(snapshot: Snapshot, limits: DataLimits) -> ModelData:
    return build_model_data(snapshot, build_problem(snapshot), ObjectiveContext.of(snapshot), limits=limits)


def many_profiles() -> Snapshot:
    """Six nodes that differ in free CPU (six profiles), each with room for many
    multisets of CPU-only pods, 1-GPU pods and 250-milli shares."""
    nodes = [make_node(f"n{i}", cpu=48 + 4 * i, memory=512, gpus=4) for i in range(6)]
    groups = [
        make_gang("cpu-jobs", replicas=40, cpu=2, memory=4),
        make_gang("gpu-jobs", replicas=10, cpu=4, memory=8, gpus=1),
        make_gang("shares", replicas=12, cpu=1, memory=4, gpu_milli=250),
    ]
    return make_snapshot(nodes=nodes, groups=groups)


def test_the_profiles_share_the_pattern_budget_and_the_answer_stays_valid() -> None:
    snapshot = many_profiles()
    unlimited = model_data(snapshot, DataLimits(max_patterns_per_profile=60, max_patterns=10**9))
    budgeted = model_data(snapshot, DataLimits(max_patterns_per_profile=60, max_patterns=60))
    assert len(budgeted.pattern_sets) == len(unlimited.pattern_sets) == 6
    assert all(len(s.patterns) > 60 for s in unlimited.pattern_sets.values())  # every profile is cut at 60
    # 60 shared by 6 profiles: each walk is cut at 10, plus its sparse fill patterns.
    assert all(len(s.patterns) <= 10 + 3 * 8 for s in budgeted.pattern_sets.values())
    assert any("more than 10 patterns" in note for note in budgeted.restricted)
    result, greedy, context = run_cpsat(snapshot, config=CpsatConfig(limits=DataLimits(max_patterns=60)))
    assert result.placement is not None and check_placement(snapshot, result.placement) == ()
    assert result.objective == score(snapshot, result.placement, context=context)
    assert result.objective >= score(snapshot, greedy.placement, context=context)


def test_past_the_budget_a_small_pod_fills_a_node_by_a_few_counts_not_every_count() -> None:
    snapshot = many_profiles()

    def cpu_only_fills(limits: DataLimits) -> list[set[int]]:
        """Per profile, the counts k of the patterns of k CPU-only pods alone."""
        data = model_data(snapshot, limits)
        cpu_only = next(s.index for s in data.shapes if s.requests[data.problem.gpu_column] == 0)
        return [
            {p.counts[0][1] for p in pattern_set.patterns if len(p.counts) == 1 and p.counts[0][0] == cpu_only}
            for pattern_set in data.pattern_sets.values()
        ]

    for alone in cpu_only_fills(DataLimits(max_patterns_per_profile=60, max_patterns=10**9)):
        assert alone == set(range(1, max(alone) + 1))  # under the budget: every count
    for alone in cpu_only_fills(DataLimits(max_patterns_per_profile=60, max_patterns=60)):
        most = max(alone)
        assert most >= 24  # the most that fit (48+ cores, 2 each) is kept …
        assert {k for k in alone if k > 10} <= {16, 32, most}  # … and above the walk's 10, powers of two only


def test_an_atom_holds_no_more_pods_of_a_tracked_shape_than_its_tasks_have_pending() -> None:
    leaf_a = [make_node(f"a{i}", cpu=64, memory=512, gpus=8, leaf="leaf-a") for i in range(2)]
    leaf_b = [make_node("b0", cpu=64, memory=512, gpus=8, leaf="leaf-b")]
    busy = make_gang("busy", gpus=4, cpu=4, running_on=["b0"], preemptable=False)  # b0: 4 GPUs free
    small = make_gang("small", replicas=2, cpu=4, gpus=1, topology_tier=1)  # fits either leaf
    large = make_gang("large", replicas=6, cpu=4, gpus=1, topology_tier=1)  # only leaf-a holds 6 GPUs
    single = make_gang("single", cpu=4, gpus=1)  # untracked: the atoms' nodes have node patterns too
    snapshot = make_snapshot(nodes=[*leaf_a, *leaf_b], groups=[busy, small, large, single])
    data = model_data(snapshot, DataLimits(max_topology_patterns=0))  # homogeneous atom patterns
    assert "topology atoms: homogeneous patterns only" in data.restricted
    by_atom = {atom: patterns for (_, atom), patterns in data.topology_sets.items()}
    assert max(p.counts[0][1] for p in by_atom["leaf-b"]) == 2  # b0 has room for 4, `small` has 2 pods
    assert max(p.counts[0][1] for p in by_atom["leaf-a"]) == 8
    result, _, context = run_cpsat(snapshot, config=CpsatConfig(limits=DataLimits(max_topology_patterns=0)))
    assert result.placement is not None and check_placement(snapshot, result.placement) == ()
    bound = {b.pod.split("/")[-1].rsplit("-", 2)[0] for b in result.placement.binds}
    assert bound == {"small", "large", "single"}
    assert sum(snapshot.pod_by_key[b.pod].requests[GPU] for b in result.placement.binds) == 9000


def test_profiles_with_few_patterns_leave_their_share_to_one_with_many() -> None:
    """Water-filling: ten small nodes (one GPU, a few patterns each) and one large node
    share a budget that an even split would cut the large one at; what the small ones do
    not use goes to it, so every profile keeps what it has without a budget."""
    small = [make_node(f"s{i}", cpu=8 + i, memory=64, gpus=1) for i in range(10)]
    large = make_node("large", cpu=96, memory=512, gpus=8)
    groups = [
        make_gang("gpu-jobs", replicas=8, cpu=2, memory=4, gpus=1),
        make_gang("pairs", replicas=4, cpu=4, memory=8, gpus=2),
        make_gang("shares", replicas=8, cpu=1, memory=2, gpu_milli=500),
    ]
    snapshot = make_snapshot(nodes=[*small, large], groups=groups)
    unlimited = model_data(snapshot, DataLimits(max_patterns=10**9))
    patterns = {p: len(s.patterns) for p, s in unlimited.pattern_sets.items()}
    budget = sum(patterns.values())
    assert max(patterns.values()) > budget // len(patterns)  # an even share would cut the large node
    shared = model_data(snapshot, DataLimits(max_patterns=budget))
    assert {p: [q.counts for q in s.patterns] for p, s in shared.pattern_sets.items()} == {
        p: [q.counts for q in s.patterns] for p, s in unlimited.pattern_sets.items()
    }


def test_fill_patterns_added_once_the_walk_is_final_are_the_ones_the_walk_would_add() -> None:
    """Water-filling walks a cut profile again with a larger share, so its fill patterns are
    added only to the final walk (`add_fill`): the same patterns, in the same order, as a
    set built with its fill at once."""
    data = model_data(many_profiles(), DataLimits(max_patterns_per_profile=60, max_patterns=60))
    most: dict[int, int] = {}
    for task in data.tasks:
        most[task.shape] = most.get(task.shape, 0) + len(task.pending)
    for pattern_set in data.pattern_sets.values():
        for sparse in (False, True):
            def built(fill: bool) -> PatternSet:
                return build_pattern_set(
                    pattern_set.profile, pattern_set.shapes, measure=pattern_set.measure, cap=10, most=most,
                    sparse_fill=sparse, fill=fill,
                )

            at_once, walked = built(True), built(False)
            assert walked.walk_cut and len(walked.patterns) == 10  # cut, and no fill yet
            add_fill(walked, most=most)
            assert len(at_once.patterns) > 10
            assert [(p.counts, p.splits, p.fragment) for p in walked.patterns] == [
                (p.counts, p.splits, p.fragment) for p in at_once.patterns
            ]
    budgeted = {p: [q.counts for q in s.patterns] for p, s in data.pattern_sets.items()}
    assert all(len(counts) > 10 for counts in budgeted.values())  # the final sets have their fill


def test_a_walk_continued_to_a_larger_cap_finds_what_a_walk_with_that_cap_finds() -> None:
    """Water-filling continues a cut walk where it stopped (`walk_further`) instead of
    walking its first patterns again: the set is the one a walk started at the larger cap
    builds — the same patterns in the same order, cut or not, restricted or not."""
    data = model_data(many_profiles(), DataLimits(max_patterns_per_profile=60, max_patterns=10**9))
    most: dict[int, int] = {}
    for task in data.tasks:
        most[task.shape] = most.get(task.shape, 0) + len(task.pending)
    for pattern_set in data.pattern_sets.values():
        def built(cap: int) -> PatternSet:
            return build_pattern_set(
                pattern_set.profile, pattern_set.shapes, measure=pattern_set.measure, cap=cap, most=most, fill=False
            )

        for small, large in ((10, 25), (10, 10_000)):
            continued = built(small)
            assert continued.walk_cut
            walk_further(continued, large, sparse_fill=True)
            at_once = built(large)
            assert [(p.counts, p.splits, p.fragment) for p in continued.patterns] == [
                (p.counts, p.splits, p.fragment) for p in at_once.patterns
            ]
            assert (continued.walk_cut, continued.restricted) == (at_once.walk_cut, at_once.restricted)
        assert len(at_once.patterns) > 25 and not at_once.walk_cut  # the whole walk, past both caps


@PROPERTY_SETTINGS
@given(snapshots(max_nodes=12, max_groups=8), st.integers(1, 12), st.integers(0, 40))
def test_on_any_cluster_a_walk_continued_is_the_walk_started_at_the_larger_cap(snapshot: Snapshot, small: int, more: int) -> None:
    data = model_data(snapshot, DataLimits())
    most: dict[int, int] = {}
    for task in data.tasks:
        most[task.shape] = most.get(task.shape, 0) + len(task.pending)
    for pattern_set in data.pattern_sets.values():
        def built(cap: int) -> PatternSet:
            return build_pattern_set(
                pattern_set.profile, pattern_set.shapes, measure=pattern_set.measure, cap=cap, most=most,
                fits=pattern_set.fits, sparse_fill=True, fill=False,
            )

        continued, at_once = built(small), built(small + more)
        walk_further(continued, small + more, sparse_fill=True)
        assert [(p.counts, p.splits, p.fragment, p._best) for p in continued.patterns] == [
            (p.counts, p.splits, p.fragment, p._best) for p in at_once.patterns
        ]
        assert (continued.walk_cut, continued.restricted, continued.sparse_fill) == (
            at_once.walk_cut, at_once.restricted, at_once.sparse_fill
        )


@PROPERTY_SETTINGS
@given(snapshots(max_nodes=12, max_groups=8))
def test_device_steps_shared_across_profiles_give_each_profile_its_own_walk(snapshot: Snapshot) -> None:
    """The data step's walks share their device steps (`devices.DeviceSteps`): every profile's
    set — patterns, splits, fragments, best device state and where each pod goes — is the
    one its walk gives alone, with no memory."""
    data = model_data(snapshot, DataLimits())
    most: dict[int, int] = {}
    for task in data.tasks:
        most[task.shape] = most.get(task.shape, 0) + len(task.pending)
    shapes = {shape.index: shape for shape in data.shapes}
    for pattern_set in data.pattern_sets.values():
        alone = build_pattern_set(
            pattern_set.profile, pattern_set.shapes, measure=pattern_set.measure, cap=len(pattern_set.patterns) + 1,
            most=most, fits=pattern_set.fits, sparse_fill=pattern_set.sparse_fill,
        )
        for pattern in pattern_set.patterns:
            mine = alone.find(pattern.counts)
            assert mine is not None, "the profile's own walk, at least as long, finds each of its patterns"
            assert (pattern.splits, pattern.fragment, pattern._best) == (mine.splits, mine.fragment, mine._best)
            assert assign(pattern, pattern_set.profile, shapes) == assign(mine, pattern_set.profile, shapes)
