"""Properties of the checker over drawn snapshots (tests/strategies.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Bind, Eviction, Placement
from models.snapshot import Snapshot
from solver.checker import Violation, check_placement
from solver.rules import RULES
from tests.strategies import snapshots

RULE_NAMES = {rule.NAME for rule in RULES}
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(snapshots(max_nodes=12, max_groups=10))
def test_the_empty_placement_is_valid_on_any_snapshot(snapshot: Snapshot) -> None:
    """Doing nothing cannot break a rule: the checker blames placements, not the cluster."""
    assert check_placement(snapshot, Placement()) == ()


@st.composite
def snapshot_and_any_placement(draw: st.DrawFn) -> tuple[Snapshot, Placement]:
    """A snapshot and a placement drawn without regard to any rule — what a client may POST."""
    snapshot = draw(snapshots(max_nodes=8, max_groups=8))
    pods = [p.key for p in snapshot.pods] + ["default/ghost"]
    nodes = [n.name for n in snapshot.nodes] + ["ghost-node"]
    groups = [g.key for g in snapshot.pod_groups] + ["default/ghost-group"]
    binds = draw(
        st.lists(
            st.builds(
                Bind,
                pod=st.sampled_from(pods),
                node=st.sampled_from(nodes),
                gpus=st.lists(st.integers(0, 9), max_size=4).map(tuple),
                numa_cell=st.one_of(st.none(), st.integers(0, 2)),
            ),
            max_size=12,
        )
    )
    evictions = draw(
        st.lists(
            st.builds(
                lambda pod, node, reason, for_: Eviction.model_validate(
                    {"pod": pod, "node": node, "reason": reason, "for": for_}
                ),
                st.sampled_from(pods),
                st.sampled_from(nodes),
                st.sampled_from(["preempt", "reclaim"]),
                st.sampled_from(groups),
            ),
            max_size=6,
        )
    )
    return snapshot, Placement(binds=tuple(binds), evictions=tuple(evictions))


@FAST
@given(snapshot_and_any_placement())
def test_any_placement_gets_violations_not_an_exception(case: tuple[Snapshot, Placement]) -> None:
    snapshot, placement = case
    violations = check_placement(snapshot, placement)
    assert all(isinstance(v, Violation) and v.rule in RULE_NAMES and v.message for v in violations)
    order = [v.rule for v in violations]
    ranks = [[rule.NAME for rule in RULES].index(name) for name in order]
    assert ranks == sorted(ranks), "violations come rule by rule, in RULES order"
