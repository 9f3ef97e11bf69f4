"""The Devices page: each node's DRA devices by driver, and which claim holds each.

Input: an `Analysis` (snapshot + this cycle's decision). Output: a frozen `DevicesView`
the template walks — a row per node (and one per network-attached pool, whose slices name
no single node), each holding its drivers' devices in slice order, then the claims.

Which devices show: those that count (`models.dra.counted_devices`: the newest complete
generation of each pool); a pool whose newest generation is incomplete is named apart,
as its devices are not allocated from until it is whole. A device's state, first match
wins:
  - `held`: an existing claim's `status.allocation` names it (`taken_by`); the claim's
    `reservedFor` pods use it;
  - `new`: this cycle's placement allocates it to a claim (`Placement.claims`), for the
    pods it binds — the claim's devices before the controller writes them;
  - `free` otherwise.
An admin-access result takes no device (monitoring access, shared with its holder), so
it changes no state. A partitionable device (it draws `consumesCounters`) says which
counter set it draws from, so a MIG slice and its whole GPU read as one piece of silicon.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from models.dra import CountedDevice, counted_devices
from models.node_affinity import NodeSelectorTerm
from models.placement import ClaimAllocation, devices_by_request
from service.ui.analysis import Analysis

__all__ = ["DeviceCell", "DriverDevices", "DeviceRow", "ClaimRow", "DevicesView", "build_devices_view"]

DeviceKey = tuple[str, str, str]
"""(driver, pool, device name), as a claim's allocation results name a device."""


@dataclass(frozen=True)
class DeviceCell:
    name: str
    state: str  # free | held | new
    claim: str | None  # the claim holding it (held), or the one this cycle allocates it to (new)
    title: str  # hover text: the device, its product or type, and who holds it


@dataclass(frozen=True)
class DriverDevices:
    driver: str
    cells: tuple[DeviceCell, ...]

    @property
    def free(self) -> int:
        return sum(cell.state == "free" for cell in self.cells)


@dataclass(frozen=True)
class DeviceRow:
    """A node's devices by driver; `network_attached` for a pool its slices share among nodes."""

    name: str
    network_attached: bool
    drivers: tuple[DriverDevices, ...]


@dataclass(frozen=True)
class ClaimRow:
    claim: str
    state: str  # allocated (already, in the snapshot) | this cycle
    node: str
    pods: tuple[str, ...]
    devices: str


@dataclass(frozen=True)
class DevicesView:
    rows: tuple[DeviceRow, ...]
    claims: tuple[ClaimRow, ...]
    incomplete_pools: tuple[str, ...]  # `driver/pool` whose newest generation is not whole yet

    def count(self, state: str) -> int:
        return sum(cell.state == state for row in self.rows for driver in row.drivers for cell in driver.cells)

    @property
    def total(self) -> int:
        return sum(len(driver.cells) for row in self.rows for driver in row.drivers)


def build_devices_view(analysis: Analysis) -> DevicesView:
    dra = analysis.snapshot.dra
    census = counted_devices(dra.resource_slices, dra.resource_claims)
    allocated_now = _allocated_this_cycle(analysis.decision.placement.claims)
    slice_by_name = {resource_slice.name: resource_slice for resource_slice in dra.resource_slices}
    rows: dict[str, dict[str, list[DeviceCell]]] = {}
    network_attached: set[str] = set()
    for counted in census.devices:
        resource_slice = slice_by_name[counted.slice_name]
        row = resource_slice.node_name or f"pool {counted.pool}"
        if resource_slice.node_name is None:
            network_attached.add(row)
        rows.setdefault(row, {}).setdefault(counted.device.driver, []).append(_cell(counted, allocated_now))
    return DevicesView(
        rows=tuple(
            DeviceRow(
                name=name,
                network_attached=name in network_attached,
                drivers=tuple(DriverDevices(driver, tuple(cells)) for driver, cells in sorted(drivers.items())),
            )
            for name, drivers in sorted(rows.items(), key=lambda item: (item[0] in network_attached, item[0]))
        ),
        claims=_claim_rows(analysis),
        incomplete_pools=tuple(f"{driver}/{pool}" for driver, pool in census.incomplete_pools),
    )


def _allocated_this_cycle(claims: Iterable[ClaimAllocation]) -> dict[DeviceKey, ClaimAllocation]:
    return {
        (result.driver, result.pool, result.device): allocation
        for allocation in claims
        for result in allocation.devices
        if not result.admin_access
    }


def _cell(counted: CountedDevice, allocated_now: dict[DeviceKey, ClaimAllocation]) -> DeviceCell:
    device = counted.device
    about = [device.name]
    kind = device.attributes.get(f"{device.driver}/productName") or device.attributes.get(f"{device.driver}/type")
    if kind is not None:
        about.append(str(kind))
    profile = device.attributes.get(f"{device.driver}/profile")
    if profile is not None:
        about.append(str(profile))
    if device.consumes_counters:
        about.append("draws " + ", ".join(draw.counter_set for draw in device.consumes_counters))
    if counted.taken_by is not None:
        return DeviceCell(device.name, "held", counted.taken_by, " · ".join([*about, f"held by {counted.taken_by}"]))
    allocation = allocated_now.get((device.driver, counted.pool, device.name))
    if allocation is not None:
        pods = ", ".join(allocation.reserved_for)
        return DeviceCell(device.name, "new", allocation.label, " · ".join([*about, f"this cycle: {allocation.label} for {pods}"]))
    return DeviceCell(device.name, "free", None, " · ".join([*about, "free"]))


def _claim_rows(analysis: Analysis) -> tuple[ClaimRow, ...]:
    """Claims already allocated (devices held), then those this cycle allocates."""
    rows: list[ClaimRow] = []
    for claim in analysis.snapshot.dra.resource_claims:
        if claim.allocation is None:
            continue
        nodes = [name for term in claim.allocation_node_selector for name in _node_names(term)]
        rows.append(
            ClaimRow(
                claim=claim.key,
                state="allocated",
                node=", ".join(nodes) or "any",
                pods=tuple(f"{claim.namespace}/{name}" for name in claim.reserved_for),
                devices=devices_by_request(claim.allocation, node=nodes[0] if len(nodes) == 1 else None),
            )
        )
    rows += [
        ClaimRow(
            claim=allocation.label, state="this cycle", node=allocation.node, pods=allocation.reserved_for,
            devices=allocation.devices_by_request,
        )
        for allocation in analysis.decision.placement.claims
    ]
    return tuple(rows)


def _node_names(term: NodeSelectorTerm) -> list[str]:
    """The node names a `metadata.name In [...]` field selector term allows (how the
    scheduler writes an allocation's node selector); other terms name no node."""
    return [name for field in term.match_fields if field.operator == "In" for name in field.values]
