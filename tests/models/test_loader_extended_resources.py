"""Extended resources as the API server validates them (`models.loaders.extended_resources`):
whole numbers, requests equal to limits, a limit alone standing in for the request — in
the API server's words, behind batchplace's file / document / object / field prefix. GPU
shares (`batchplace.io/gpu-milli`, whole milli-GPUs) keep working."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.errors import SnapshotError
from models.loaders.extended_resources import is_extended_resource
from tests.builders import solve_checked
from tests.models._kube_builders import load_error, node, pod, snapshot, vcjob

POD = "test.yaml: document 1 (Pod default/p): spec.containers[0].resources"


def _pod(requests: dict[str, object] | None = None, limits: dict[str, object] | None = None) -> dict[str, object]:
    resources: dict[str, object] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return pod("p", containers=[{"name": "c", "image": "x", "resources": resources}])


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("nvidia.com/gpu", True),
        ("example.com/foo", True),
        ("batchplace.io/gpu-milli", True),
        ("volcano.sh/vgpu-memory", True),
        ("rdma/hca", True),
        ("cpu", False),
        ("memory", False),
        ("ephemeral-storage", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/something", False),
        ("subdomain.kubernetes.io/something", False),
        ("requests.example.com/foo", False),
        ("example.com/Bad Name", False),
    ],
)
def test_extended_resources_are_prefixed_names_outside_kubernetes_io(name: str, extended: bool) -> None:
    assert is_extended_resource(name) is extended


def test_half_a_gpu_device_is_refused_in_the_api_servers_words() -> None:
    message = load_error(_pod({"nvidia.com/gpu": "0.5"}, {"nvidia.com/gpu": "0.5"}))
    assert message == f'{POD}.requests.nvidia.com/gpu: Invalid value: "0.5": must be an integer'


def test_one_and_a_half_gpus_as_a_limit_alone_are_refused_at_the_limit() -> None:
    message = load_error(_pod(limits={"nvidia.com/gpu": "1.5"}))
    assert message == f'{POD}.limits.nvidia.com/gpu: Invalid value: "1.5": must be an integer'


def test_a_request_without_a_limit_is_refused() -> None:
    message = load_error(_pod({"cpu": "1", "example.com/foo": "1"}))
    assert message.startswith(f"{POD}.limits: Required value: Limit must be set for non overcommitable resources")
    assert "example.com/foo" in message


def test_a_request_other_than_its_limit_is_refused() -> None:
    message = load_error(_pod({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": 2}))
    assert message == f'{POD}.requests.nvidia.com/gpu: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'


def test_equal_amounts_written_differently_are_equal() -> None:
    assert snapshot(_pod({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": 2})).pods[0].requests == {"gpu": 2000}
    assert snapshot(_pod({"example.com/foo": "1k"}, {"example.com/foo": 1000})).pods[0].requests == {"example.com/foo": 1000}


def test_a_limit_alone_sets_the_request() -> None:
    assert snapshot(_pod(limits={"nvidia.com/gpu": "4"})).pods[0].requests == {"gpu": 4000}


def test_hugepages_need_their_limit_but_not_a_whole_number() -> None:
    assert "Limit must be set for non overcommitable resources" in load_error(_pod({"hugepages-2Mi": "1.5Mi"}))
    assert snapshot(_pod(limits={"hugepages-2Mi": "1.5Mi"})).pods[0].requests == {"hugepages-2Mi": 1572864}


def test_cpu_and_memory_may_be_fractions_and_below_their_limits() -> None:
    raw = _pod({"cpu": "0.5", "memory": "1.5Gi"}, {"cpu": "2", "memory": "4Gi"})
    assert snapshot(raw).pods[0].requests == {"cpu": 500, "memory": 1610612736}


def test_a_gpu_share_with_its_limit_is_a_fraction_of_one_device() -> None:
    raw = _pod({"batchplace.io/gpu-milli": "250"}, {"batchplace.io/gpu-milli": "250"})
    assert snapshot(raw).pods[0].requests == {"gpu": 250}


def test_a_fractional_extended_resource_on_a_node_is_refused() -> None:
    raw = node("n1")
    raw["status"] = {"allocatable": {"cpu": "4", "example.com/foo": "2.5"}}
    message = load_error(raw)
    assert message == 'test.yaml: document 1 (Node n1): status.allocatable.example.com/foo: Invalid value: "2.5": must be an integer'


def test_a_vcjob_template_is_held_to_the_same_rules() -> None:
    job = vcjob("j")
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "0.5"}}
    message = load_error(job)
    assert "spec.tasks[0].template.spec.containers[0].resources.requests.nvidia.com/gpu: Invalid value" in message
    assert message.endswith("must be an integer")


def test_two_half_gpu_pods_are_not_placed_on_one_device_they_are_refused() -> None:
    """The issue's case: two `nvidia.com/gpu: "0.5"` pods used to share device 0."""
    with pytest.raises(SnapshotError, match="must be an integer"):
        snapshot(node("n1", gpus=1), _pod({"nvidia.com/gpu": "0.5"}, {"nvidia.com/gpu": "0.5"}))


# ---- a property over the loaders ----

_RESOURCES = ("nvidia.com/gpu", "example.com/foo")


@st.composite
def _amounts(draw: st.DrawFn) -> tuple[str, str]:
    """An extended-resource amount as a manifest writes it: whole or not, in any notation."""
    thousandths = draw(st.integers(0, 8000))
    form = draw(st.sampled_from(["plain", "milli", "decimal", "exponent"]))
    if form == "milli":
        text = f"{thousandths}m"
    elif form == "decimal":
        text = str(Decimal(thousandths) / 1000)
    elif form == "exponent" and thousandths % 1000 == 0:
        text = f"{thousandths // 1000}e0"
    else:
        text = str(thousandths // 1000) if draw(st.booleans()) else str(Decimal(thousandths) / 1000)
    return draw(st.sampled_from(_RESOURCES)), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(asked=_amounts(), where=st.sampled_from(["both", "limit only"]))
def test_fractional_amounts_are_always_refused_by_field_and_whole_ones_load_and_place(
    asked: tuple[str, str], where: str
) -> None:
    name, text = asked
    whole = Decimal(text.removesuffix("m")) / (1000 if text.endswith("m") else 1) % 1 == 0
    requests = {"cpu": "100m", name: text} if where == "both" else {"cpu": "100m"}
    raw = _pod(requests, {name: text})
    cluster = node("n1", gpus=8)
    cluster["status"]["allocatable"]["example.com/foo"] = "8"
    if not whole:
        message = load_error(raw, cluster)
        field = "requests" if where == "both" else "limits"
        assert message == f'{POD}.{field}.{name}: Invalid value: "{text}": must be an integer'
        return
    loaded = snapshot(raw, cluster)
    amount = int(Decimal(text.removesuffix("m")) / (1000 if text.endswith("m") else 1))
    expected = amount * 1000 if name == "nvidia.com/gpu" else amount
    assert loaded.pods[0].requests.get("gpu" if name == "nvidia.com/gpu" else name, 0) == expected
    for engine in ("greedy", "cpsat"):
        decision = solve_checked(loaded, engine, time_limit_s=5)
        assert len(decision.placement.binds) == 1  # 0-8 of 8: it fits
