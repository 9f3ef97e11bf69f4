"""DRA CEL selectors: the Kubernetes environment (device, quantity, semver), errors, caching."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.errors import SnapshotError
from solver import dra_cel
from models.quantity import parse_quantity
from solver.dra_cel import SelectorCompileError, Version, compile_selector


@dataclass(frozen=True)
class FakeDevice:
    driver: str = "gpu.nvidia.com"
    attributes: Mapping[str, object] = field(default_factory=dict)
    capacity: Mapping[str, int] = field(default_factory=dict)


H100 = FakeDevice(
    attributes={
        "productName": "NVIDIA H100 80GB HBM3",
        "index": 3,
        "dra.example.com/driverVersion": Version.parse("1.2.0"),
    },
    capacity={"memory": 80 * 2**30, "dra.example.com/channels": 16},
)
A10 = FakeDevice(
    attributes={"productName": "NVIDIA A10", "dra.example.com/driverVersion": Version.parse("0.9.1")},
    capacity={"memory": 24 * 2**30},
)
NIC = FakeDevice(driver="nic.example.com", attributes={"speed": 400})


def matches(expression: str, device: FakeDevice) -> bool:
    return compile_selector(expression, where="test selectors[0]").matches(device)


@pytest.mark.parametrize(
    ("expression", "h100", "a10", "nic"),
    [
        ('device.driver == "gpu.nvidia.com"', True, True, False),
        ('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"', True, False, False),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True, False, False),
        ('device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))', True, False, False),
        ('"gpu.nvidia.com" in device.attributes', True, True, False),
    ],
)
def test_the_issue_examples_select_exactly_the_devices_they_describe(expression, h100, a10, nic):
    assert (matches(expression, H100), matches(expression, A10), matches(expression, NIC)) == (h100, a10, nic)


def test_an_unqualified_attribute_belongs_to_the_drivers_domain_and_a_qualified_one_to_its_own():
    assert matches('device.attributes["gpu.nvidia.com"].index == 3', H100)
    assert not matches('"driverVersion" in device.attributes["gpu.nvidia.com"]', H100)
    assert matches('"driverVersion" in device.attributes["dra.example.com"]', H100)


@pytest.mark.parametrize(
    ("expression", "h100", "a10"),
    [
        ('!has(device.attributes["other.example.com"].productName)', True, True),
        ('size(device.capacity["other.example.com"]) == 0', True, True),
        ('"other.example.com" in device.attributes', False, False),
        ('!("productName" in device.attributes["other.example.com"])', True, True),
    ],
)
def test_a_domain_the_device_lacks_is_an_empty_map_as_in_kubernetes(expression, h100, a10):
    assert (matches(expression, H100), matches(expression, A10)) == (h100, a10)


@pytest.mark.parametrize(
    ("expression", "h100", "a10"),
    [
        ('cel.bind(gpu, device.attributes["gpu.nvidia.com"], gpu.productName.startsWith("NVIDIA H") && gpu.index == 3)', True, False),
        ("cel.bind(x, 40, cel.bind(y, 2, x + y == 42))", True, True),
        ('cel.bind(d, device.capacity["dra.example.com"], d.channels.compareTo(quantity("16")) == 0)', True, False),
    ],
)
def test_cel_bind_binds_a_name_as_kubernetes_enables_it(expression, h100, a10):
    assert (matches(expression, H100), matches(expression, A10)) == (h100, a10)


def test_string_literals_are_never_rewritten():
    assert matches('"device.attributes[\\"x\\"]" + \'cel.bind(a, b, c)\' == "device.attributes[\\"x\\"]cel.bind(a, b, c)"', H100)


@pytest.mark.parametrize("expression", ["device.driver ==", 'device.driver == "a" &&', "frobnicate(device)", "cel.bind(1, 2, 3)", "cel.bind(x, 2)", 'devices.driver == "a"', "math.greatest(1, 2) == 2"])
def test_a_selector_that_does_not_compile_is_an_input_error_naming_where(expression):
    with pytest.raises(SelectorCompileError) as raised:
        compile_selector(expression, where="DeviceClass gpu.nvidia.com selectors[0]")
    assert isinstance(raised.value, SnapshotError)
    assert str(raised.value).startswith("DeviceClass gpu.nvidia.com selectors[0]: CEL selector does not compile")


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["gpu.nvidia.com"].missing == 1',  # no such attribute
        'device.attributes["other.example.com"].productName == "x"',  # no such domain
        'device.attributes["gpu.nvidia.com"].productName.isGreaterThan(semver("1.0.0"))',  # a string is no version
        'device.capacity["gpu.nvidia.com"].memory.compareTo(semver("1.0.0")) > 0',  # quantity vs version
        'quantity("forty") == quantity("40")',  # not a quantity
        'device.attributes["gpu.nvidia.com"].index',  # not a boolean
    ],
)
def test_a_run_time_error_on_a_device_means_no_match_not_an_exception(expression):
    selector = compile_selector(expression, where="ResourceClaim default/train-0-gpus requests[0]")
    assert selector.matches(H100) is False
    assert selector.failure(H100).startswith("ResourceClaim default/train-0-gpus requests[0]: CEL ")


def test_a_plain_false_is_no_failure():
    selector = compile_selector('device.driver == "nic.example.com"', where="DeviceClass nic selectors[0]")
    assert (selector.matches(H100), selector.failure(H100)) == (False, None)
    assert (selector.matches(NIC), selector.failure(NIC)) == (True, None)


@pytest.mark.parametrize(
    ("left", "right", "order"),
    [("1Gi", "1024Mi", 0), ("1G", "1Gi", -1), ("500m", "0.5", 0), ("1e3", "1k", 0), ("2Ki", "2k", 1), ("100n", "1u", -1)],
)
def test_quantities_in_different_units_compare_by_value(left, right, order):
    assert matches(f'quantity("{left}").compareTo(quantity("{right}")) == {order}', H100)
    assert matches(f'quantity("{left}").isGreaterThan(quantity("{right}")) == {str(order > 0).lower()}', H100)
    assert matches(f'quantity("{left}").isLessThan(quantity("{right}")) == {str(order < 0).lower()}', H100)
    assert matches(f'(quantity("{left}") == quantity("{right}")) == {str(order == 0).lower()}', H100)


@pytest.mark.parametrize(
    ("newer", "older"),
    [("1.10.0", "1.9.0"), ("2.0.0", "1.99.99"), ("1.0.0", "1.0.0-rc.1"), ("1.0.0-rc.10", "1.0.0-rc.9"), ("1.0.0-beta", "1.0.0-42")],
)
def test_semver_orders_numerically_and_releases_after_their_prereleases(newer, older):
    assert matches(f'semver("{newer}").isGreaterThan(semver("{older}"))', H100)
    assert matches(f'semver("{older}").isLessThan(semver("{newer}"))', H100)
    assert matches(f'semver("{newer}").compareTo(semver("{older}")) == 1', H100)
    assert Version.parse(newer) > Version.parse(older)


def test_is_quantity_and_is_semver_test_strings_without_failing():
    assert matches('isQuantity("40Gi") && !isQuantity("forty") && isSemver("1.2.3") && !isSemver("1.2")', H100)


def test_an_expression_is_compiled_once_and_each_device_evaluated_once(monkeypatch):
    dra_cel._program.cache_clear()
    first = compile_selector('device.driver == "gpu.nvidia.com"', where="DeviceClass a selectors[0]")
    second = compile_selector('device.driver == "gpu.nvidia.com"', where="ResourceClaim b requests[0]")
    assert first._program is second._program
    assert dra_cel._program.cache_info().misses == 1

    evaluations = []
    original = dra_cel.Selector._evaluate
    monkeypatch.setattr(dra_cel.Selector, "_evaluate", lambda self, key: evaluations.append(key) or original(self, key))
    assert first.failure(NIC) is None
    same_content = FakeDevice(attributes=dict(H100.attributes), capacity=dict(H100.capacity))
    assert [first.matches(H100), first.matches(same_content), first.matches(NIC), first.matches(H100)] == [True, True, False, True]  # NIC seen above
    assert len(evaluations) == 2


@given(st.integers(-(10**6), 10**6), st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi", "M", "G"]), st.integers(-(10**6), 10**6), st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi", "M", "G"]))
def test_quantity_comparisons_agree_with_python_arithmetic(a, unit_a, b, unit_b):
    scale = {"": 1, "m": Fraction(1, 1000), "k": 1000, "Ki": 1024, "Mi": 2**20, "Gi": 2**30, "M": 10**6, "G": 10**9}
    left, right = a * scale[unit_a], b * scale[unit_b]
    expected = (left > right) - (left < right)
    assert parse_quantity(f"{a}{unit_a}") == left
    assert matches(f'quantity("{a}{unit_a}").compareTo(quantity("{b}{unit_b}")) == {expected}', H100)


versions = st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))


@given(versions, versions)
def test_semver_comparisons_agree_with_python_tuple_order(a, b):
    expected = (a > b) - (a < b)
    text_a, text_b = ".".join(map(str, a)), ".".join(map(str, b))
    assert matches(f'semver("{text_a}").compareTo(semver("{text_b}")) == {expected}', H100)
    device = FakeDevice(attributes={"dra.example.com/v": Version(*a)})
    assert matches(f'device.attributes["dra.example.com"].v.isGreaterThan(semver("{text_b}")) == {str(a > b).lower()}', device)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.capacity["gpu.nvidia.com"].memory.add(quantity("48Gi")).compareTo(quantity("128Gi")) == 0', True),
        ('device.capacity["gpu.nvidia.com"].memory.sub(1).asInteger() == 85899345919', True),
        ('quantity("-5").sign() == -1 && quantity("0").sign() == 0', True),
        ('quantity("500m").isInteger() || quantity("500m").asApproximateFloat() != 0.5', False),
        ('quantity("500m").asInteger() == 0', False),  # not an integer: a run-time error
        ('device.attributes["dra.example.com"].driverVersion.major() == 1', True),
        ('device.attributes["dra.example.com"].driverVersion.minor() == 2', True),
        ('device.attributes["dra.example.com"].driverVersion.patch() == 0', True),
        ('semver("v01.2", true) == semver("1.2.0") && isSemver("v1", true) && !isSemver("v1")', True),
        ('device.attributes["dra.example.com"].driverVersion.add(1) != 0', False),  # add takes quantities
    ],
)
def test_the_rest_of_the_quantity_and_semver_libraries(expression, expected):
    assert matches(expression, H100) is expected


def test_a_function_failing_on_a_device_logs_nothing(caplog):
    with caplog.at_level("WARNING"):
        assert not matches('quantity("500m").asInteger() == 0', NIC)
    assert not [record for record in caplog.records if record.name == "cel"]


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["gpu.nvidia.com"].productName.lowerAscii() == "nvidia h100 80gb hbm3"',
        'device.attributes["gpu.nvidia.com"].productName.upperAscii().startsWith("NVIDIA H100")',
        'device.attributes["gpu.nvidia.com"].productName.split(" ")[1] == "H100"',
        '"a,b,c".split(",", 2) == ["a", "b,c"] && "a,b".split(",", 0) == [] && "ab".split("") == ["a", "b"]',
        '["a", "b"].join(",") == "a,b" && ["a", "b"].join() == "ab"',
        '"abcb".indexOf("b") == 1 && "abcb".indexOf("b", 2) == 3 && "abcb".lastIndexOf("b") == 3',
        '"abc".substring(1) == "bc" && "abc".substring(1, 2) == "b" && "abc".charAt(3) == ""',
        '"aaa".replace("a", "b") == "bbb" && "aaa".replace("a", "b", 2) == "bba" && " x ".trim() == "x"',
        '[1, 2].all(i, i > 0) && [1, 2].exists(j, j == 2) && [1, 2].map(k, k * 2) == [2, 4]',
    ],
)
def test_the_strings_extension_and_macros_kubernetes_has(expression):
    assert matches(expression, H100)


@pytest.mark.parametrize("expression", ['"abc".substring(2, 1) == ""', '"abc".charAt(4) == ""', '"abc".indexOf("a", 9) == -1'])
def test_a_string_index_out_of_range_is_a_run_time_error(expression):
    assert matches(expression, H100) is False


def test_a_bool_attribute_and_an_int_attribute_are_different_devices_to_the_cache():
    selector = compile_selector('device.attributes["gpu.nvidia.com"].shared == 1', where="DeviceClass a selectors[0]")
    as_int, as_bool = FakeDevice(attributes={"shared": 1}), FakeDevice(attributes={"shared": True})
    assert (selector.matches(as_int), selector.matches(as_bool)) == (True, False)
