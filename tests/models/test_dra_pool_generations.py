"""Properties of `counted_devices` over random pools: per (driver, pool) the devices that
count are all those of the newest generation's slices when it is complete and none
otherwise, whatever order the slices come in."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from models.dra import Device, DevicePool, ResourceSlice, counted_devices

_POOLS = [("gpu.nvidia.com", "n1"), ("gpu.nvidia.com", "n2"), ("nic.example.com", "n1")]


@st.composite
def _slices(draw: st.DrawFn) -> list[ResourceSlice]:
    """Slices of a few pools and generations; within one (pool, generation) every slice states
    the same resourceSliceCount, as a driver writes it, and up to that many are present."""
    slices = []
    for driver, pool in _POOLS:
        for generation in draw(st.sets(st.integers(0, 3), max_size=3)):
            count = draw(st.integers(1, 3))
            for part in range(draw(st.integers(1, count))):
                name = f"{driver}-{pool}-g{generation}-{part}"
                devices = tuple(
                    Device(name=f"{name}-dev{index}", driver=driver) for index in range(draw(st.integers(0, 2)))
                )
                slices.append(
                    ResourceSlice(
                        name=name,
                        driver=driver,
                        pool=DevicePool(name=pool, generation=generation, resource_slice_count=count),
                        node_name=pool,
                        devices=devices,
                    )
                )
    return draw(st.permutations(slices))


@given(_slices(), st.randoms())
def test_the_newest_complete_generation_counts_whole_or_not_at_all(slices: list[ResourceSlice], rng: random.Random) -> None:
    census = counted_devices(slices)
    counted = {(c.device.driver, c.pool, c.device.name) for c in census.devices}
    for driver, pool in _POOLS:
        members = [s for s in slices if (s.driver, s.pool.name) == (driver, pool)]
        if not members:
            continue
        newest = max(s.pool.generation for s in members)
        current = [s for s in members if s.pool.generation == newest]
        complete = len(current) == current[0].pool.resource_slice_count
        newest_devices = {(driver, pool, d.name) for s in current for d in s.devices}
        pool_counted = {key for key in counted if key[:2] == (driver, pool)}
        assert pool_counted == (newest_devices if complete else set())
        assert ((driver, pool) in census.incomplete_pools) == (not complete)
    shuffled = list(slices)
    rng.shuffle(shuffled)
    again = counted_devices(shuffled)
    assert {(c.device.driver, c.pool, c.device.name) for c in again.devices} == counted
    assert set(again.incomplete_pools) == set(census.incomplete_pools)
