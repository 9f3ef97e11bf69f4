"""An exclusive-topology label key as a HyperNode tier (`models.loaders.exclusive_topology`):
the lowest tier whose HyperNodes group the nodes by the key — hand-computed cases and a
property over random racks and zones."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from models.loaders.exclusive_topology import label_key_tier
from models.snapshot import HyperNode, Node


def _node(name: str, labels: dict[str, str]) -> Node:
    return Node.model_validate({"name": name, "allocatable": {"cpu": 1000}, "labels": labels})


def _cluster(rack_of: list[int], zone_of_rack: list[int]) -> tuple[list[Node], list[HyperNode]]:
    """Node i in rack `rack_of[i]` (labels `rack`, `zone`); a tier-1 HyperNode per rack used
    and a tier-2 spine over them."""
    nodes = [_node(f"n{i}", {"rack": f"r{rack}", "zone": f"z{zone_of_rack[rack]}"}) for i, rack in enumerate(rack_of)]
    racks = sorted(set(rack_of))
    hypernodes = [
        HyperNode(name=f"rack-{rack}", tier=1, node_members=tuple(f"n{i}" for i, r in enumerate(rack_of) if r == rack))
        for rack in racks
    ]
    hypernodes.append(HyperNode(name="spine", tier=2, hypernode_members=tuple(f"rack-{rack}" for rack in racks)))
    return nodes, hypernodes


def test_racks_are_tier_1_and_a_zone_over_both_racks_is_tier_2() -> None:
    nodes, hypernodes = _cluster([0, 0, 1, 1], zone_of_rack=[0, 0])
    assert label_key_tier("rack", nodes, hypernodes) == 1
    assert label_key_tier("zone", nodes, hypernodes) == 2


def test_zones_that_split_the_spine_but_span_racks_match_no_tier() -> None:
    # Racks 0, 1 in zone 0, rack 2 in zone 1: no rack holds all of zone 0, the spine holds both zones.
    nodes, hypernodes = _cluster([0, 1, 2], zone_of_rack=[0, 0, 1])
    assert label_key_tier("zone", nodes, hypernodes) is None


def test_a_key_no_node_has_or_no_hypernodes_match_no_tier() -> None:
    nodes, hypernodes = _cluster([0, 1], zone_of_rack=[0, 1])
    assert label_key_tier("pool", nodes, hypernodes) is None
    assert label_key_tier("rack", nodes, []) is None


def test_nodes_without_the_key_do_not_count_but_every_labelled_node_must_be_covered() -> None:
    nodes, hypernodes = _cluster([0, 1], zone_of_rack=[0, 1])
    bare = _node("bare", {})
    rack_1_with_bare = hypernodes[1].model_copy(update={"node_members": ("n1", "bare")})
    assert label_key_tier("rack", [*nodes, bare], [hypernodes[0], rack_1_with_bare, hypernodes[2]]) == 1
    outside = _node("outside", {"rack": "r9"})
    assert label_key_tier("rack", [*nodes, outside], hypernodes) is None


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    rack_of=st.lists(st.integers(0, 3), min_size=1, max_size=12),
    zone_of_rack=st.lists(st.integers(0, 2), min_size=4, max_size=4),
)
def test_the_tier_is_the_lowest_whose_domains_are_the_keys_values(rack_of: list[int], zone_of_rack: list[int]) -> None:
    nodes, hypernodes = _cluster(rack_of, zone_of_rack)
    assert label_key_tier("rack", nodes, hypernodes) == 1
    racks_per_zone: dict[int, set[int]] = {}
    for rack in set(rack_of):
        racks_per_zone.setdefault(zone_of_rack[rack], set()).add(rack)
    if all(len(racks) == 1 for racks in racks_per_zone.values()):
        expected: int | None = 1  # each zone is one rack
    elif len(racks_per_zone) == 1:
        expected = 2  # one zone over several racks: the spine
    else:
        expected = None
    assert label_key_tier("zone", nodes, hypernodes) == expected
