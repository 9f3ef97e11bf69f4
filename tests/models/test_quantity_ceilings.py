"""Quantity ceilings (models.quantity): at the ceiling a snapshot loads and solves, above it
the loaders refuse the field by name — never an overflow, never a traceback."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.errors import FieldError, SnapshotError
from models.loaders import load_snapshot_json, load_snapshot_yaml_text, snapshot_to_json
from models.loaders.extended_resources import is_extended_resource
from models.quantity import (
    CPU_MILLI_CEILING,
    GPU_MILLI_CEILING,
    MEMORY_BYTES_CEILING,
    OTHER_RESOURCE_CEILING,
    POD_COUNT_CEILING,
    QUOTA_NODES,
    ceiling_problem,
    quota_ceiling,
    resource_ceiling,
)
from models.snapshot import Node, Snapshot
from tests.builders import (
    make_gang,
    make_node,
    make_queue,
    make_snapshot,
    solve_checked,
)
from tests.quantity_strategies import EDGES, FIELDS, Field, QuantityCase, quantity_cases


def test_each_resource_has_its_ceiling_and_quotas_a_cluster_of_them() -> None:
    assert [resource_ceiling(r) for r in ("cpu", "memory", "gpu", "pods", "example.com/widgets")] == [
        CPU_MILLI_CEILING, MEMORY_BYTES_CEILING, GPU_MILLI_CEILING, POD_COUNT_CEILING, OTHER_RESOURCE_CEILING
    ]
    assert (CPU_MILLI_CEILING, MEMORY_BYTES_CEILING, GPU_MILLI_CEILING) == (2**35, 2**42, 1024 * 1000)
    assert quota_ceiling("memory") == QUOTA_NODES * MEMORY_BYTES_CEILING >= 100_000 * MEMORY_BYTES_CEILING


def test_the_arithmetic_of_the_docstring_holds() -> None:
    """The sums `models.quantity` promises fit: CP-SAT's ±(2^62 − 1), int64's 2^63."""
    pods, weight, age_class, cp_sat = 500_000, 100_001, 27, 2**62 - 1
    pod_value = 1 + CPU_MILLI_CEILING // 1000 + GPU_MILLI_CEILING
    assert 2 * pods * max(MEMORY_BYTES_CEILING, OTHER_RESOURCE_CEILING, CPU_MILLI_CEILING) <= cp_sat
    assert pod_value * weight * pods <= cp_sat
    assert weight * (1000 + GPU_MILLI_CEILING * age_class) * pods <= cp_sat
    assert QUOTA_NODES * OTHER_RESOURCE_CEILING + pods * OTHER_RESOURCE_CEILING < 2**63


def _amount_in(snapshot: Snapshot, field: Field) -> int:
    resources = {
        "Node": lambda: snapshot.nodes[0].allocatable,
        "Pod": lambda: snapshot.pods[0].requests,
        "Queue": lambda: snapshot.queue_by_name["q"].capability or {},  # type: ignore[index]
        "PodGroup": lambda: snapshot.pod_groups[0].min_resources or {},
    }[field.kind]()
    return resources.get(field.snapshot_resource, 0)


def _solves_and_checks(snapshot: Snapshot) -> None:
    for engine in ("greedy", "cpsat"):
        solve_checked(snapshot, engine, time_limit_s=5)


def _at(field: Field, amount: int) -> str:
    """`amount` base units of `field` as a manifest writes it: millicores as `…m`, GPUs whole."""
    if field.snapshot_resource == "gpu":
        return str(amount // 1000)
    return f"{amount}m" if field.scale == 1000 else str(amount)


@pytest.mark.parametrize("field", FIELDS, ids=[f"{f.kind} {f.path}" for f in FIELDS])
def test_at_the_ceiling_a_field_loads_and_solves_and_one_unit_more_is_refused_by_name(field: Field) -> None:
    at = QuantityCase(field, _at(field, field.ceiling))
    snapshot = load_snapshot_yaml_text(at.yaml_text()).snapshot
    assert _amount_in(snapshot, field) == field.ceiling
    _solves_and_checks(snapshot)
    above = QuantityCase(field, _at(field, field.ceiling + (1000 if field.snapshot_resource == "gpu" else 1)))
    with pytest.raises(FieldError) as refused:
        load_snapshot_yaml_text(above.yaml_text(), source="cluster.yaml")
    assert f"({field.kind} " in str(refused.value) and f"{field.path}: " in str(refused.value)
    assert "above the " in str(refused.value)


def test_a_cluster_at_every_ceiling_at_once_solves_with_every_engine() -> None:
    """Nodes, pods and queues at their ceilings together: the sums every engine forms stay
    exact. Each pod takes a whole node; one runs, three are pending for the two other nodes."""
    widgets = {"example.com/widgets": OTHER_RESOURCE_CEILING}
    at_ceiling = {"cpu": CPU_MILLI_CEILING, "memory": MEMORY_BYTES_CEILING, "gpu": 8000, "pods": POD_COUNT_CEILING, **widgets}
    nodes = [
        Node.model_validate({**make_node(f"n{i}", gpus=8).node.model_dump(), "allocatable": at_ceiling})
        for i in range(3)
    ]
    quota = {name: quota_ceiling(name) for name in at_ceiling}
    queues = [make_queue(name, capability=quota, deserved=quota, guarantee=quota) for name in ("a", "b")]
    cores = CPU_MILLI_CEILING // 1000
    groups = [
        make_gang(f"g{i}", queue="ab"[i % 2], cpu=cores, memory=MEMORY_BYTES_CEILING / 2**30, gpus=8, extra=widgets,
                  running_on=["n0"] if i == 0 else ())
        for i in range(4)
    ]
    snapshot = make_snapshot(nodes=nodes, queues=queues, groups=groups)
    assert max(p.requests["memory"] for p in snapshot.pods) == MEMORY_BYTES_CEILING
    for engine in ("greedy", "cpsat", "auto"):
        decision = solve_checked(snapshot, engine, time_limit_s=10)
        assert sorted(bind.node for bind in decision.placement.binds) == ["n1", "n2"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=quantity_cases())
def test_any_quantity_in_any_resource_field_loads_within_its_ceiling_or_is_refused_by_name(case: QuantityCase) -> None:
    expected = case.expected_amount()
    try:
        snapshot = load_snapshot_yaml_text(case.yaml_text(), source="cluster.yaml").snapshot
    except SnapshotError as error:
        message = str(error)
        assert message.startswith("cluster.yaml: document ") and f"({case.field.kind} " in message
        if expected is None or expected < 0 or expected > case.field.ceiling:
            assert f"{case.field.path}: " in message
        if expected is not None and expected > case.field.ceiling:
            assert "above the " in message
        if expected is not None and 0 <= expected <= case.field.ceiling:  # the API server's integer rule
            assert not case.field.quota and is_extended_resource(case.field.resource) and case.fractional
            assert f'{case.field.path}: Invalid value: "{case.value}": must be an integer' in message
        return
    assert expected is not None and 0 <= expected <= case.field.ceiling
    assert case.field.quota or not (is_extended_resource(case.field.resource) and case.fractional)
    assert _amount_in(snapshot, case.field) == expected
    _solves_and_checks(snapshot)


_JSON_FIELDS = (
    ("nodes", 0, "allocatable"),
    ("pods", 0, "requests"),
    ("pod_groups", 0, "tasks", 0, "requests"),
    ("queues", 0, "capability"),
    ("queues", 0, "guarantee"),
    ("pod_groups", 0, "min_resources"),
)


@settings(max_examples=200, deadline=None)
@given(
    where=st.sampled_from(_JSON_FIELDS),
    resource=st.sampled_from(["cpu", "memory", "gpu", "pods", "example.com/widgets"]),
    amount=st.one_of(st.sampled_from(EDGES), st.integers(-(2**70), 2**70)),
)
def test_any_integer_in_the_json_snapshot_loads_within_its_ceiling_or_is_refused_at_its_pointer(
    where: tuple[str | int, ...], resource: str, amount: int
) -> None:
    body = json.loads(snapshot_to_json(load_snapshot_yaml_text(QuantityCase(FIELDS[0], "64").yaml_text()).snapshot))
    target = body  # every list of `where` is set in the small cluster's snapshot
    for part in where:
        target = target[part]
    target[resource] = amount
    if where[0] == "pod_groups" and where[2] == "tasks":  # a pending pod asks what its task asks
        body["pods"][0]["requests"] = dict(target)
    quota = where[-1] in ("capability", "guarantee", "min_resources")
    try:
        snapshot = load_snapshot_json(json.dumps(body))
    except FieldError as error:
        if amount < 0 or ceiling_problem(resource, amount, quota=quota):
            assert error.path[: len(where) + 1] in ((*where, resource), ("pods", 0, "requests", resource))
        return
    assert 0 <= amount and ceiling_problem(resource, amount, quota=quota) is None
    _solves_and_checks(snapshot)
