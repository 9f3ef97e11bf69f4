"""Kubernetes quantities → exact integers in base units (models.quantity)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from models.quantity import QuantityError, format_bytes, format_milli, parse_quantity, to_base_units


@pytest.mark.parametrize(
    ("text", "scale", "expected"),
    [
        ("500m", 1000, 500),
        ("100Mi", 1, 100 * 2**20),
        ("1.5Gi", 1, 1610612736),
        (4, 1000, 4000),
        ("4", 1000, 4000),
        ("2e3", 1, 2000),
        ("1k", 1, 1000),
        ("0.1m", 1000, 1),
        ("1E", 1, 10**18),
        (".5", 1000, 500),
        ("+1", 1000, 1000),
        ("1e-3", 1000, 1),
        ("-2", 1, -2),
        (0.25, 1000, 250),
        (" 8Gi ", 1, 8 * 2**30),
    ],
    ids=[
        "500m is 500 millicores",
        "100Mi is 100 binary megabytes",
        "1.5Gi is exact in bytes",
        "an integer 4 is 4000 millicores",
        "a string 4 is 4000 millicores",
        "2e3 is an exponent",
        "1k is decimal kilo",
        "0.1m rounds up to 1 millicore",
        "1E is exa, not an exponent",
        "a leading dot is a fraction",
        "a plus sign is allowed",
        "1e-3 is one milli",
        "a negative number parses (the loader rejects it)",
        "a float 0.25 is exact",
        "surrounding spaces are ignored",
    ],
)
def test_to_base_units_converts_kubernetes_quantities(text: str | int | float, scale: int, expected: int) -> None:
    assert to_base_units(text, scale=scale) == expected


@pytest.mark.parametrize(
    "value",
    ["abc", "1.2.3", "", "5 Mi", True, None, "1Zi", "Mi", "1e", "--1", float("nan")],
    ids=[
        "letters are not a quantity",
        "two decimal points are not a number",
        "an empty string is not a quantity",
        "a space before the suffix is rejected",
        "a boolean is rejected although it is an int",
        "None is rejected",
        "an unknown suffix is rejected",
        "a suffix without a number is rejected",
        "an exponent without digits is rejected",
        "two signs are rejected",
        "NaN is rejected",
    ],
)
def test_parse_quantity_rejects_what_is_not_a_quantity(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


def test_parse_quantity_keeps_the_exact_decimal() -> None:
    assert parse_quantity("0.3") == Decimal("0.3")


def test_a_quantity_error_quotes_the_text() -> None:
    with pytest.raises(QuantityError, match=r"'1\.2\.3'"):
        parse_quantity("1.2.3")


@pytest.mark.parametrize(
    ("milli", "text"),
    [(2500, "2.5"), (500, "0.5"), (1000, "1"), (0, "0"), (1, "0.001"), (-1500, "-1.5")],
    ids=["2500 is 2.5", "500 is 0.5", "1000 is 1", "0 is 0", "1 is 0.001", "negative keeps its sign"],
)
def test_format_milli_writes_units_for_people(milli: int, text: str) -> None:
    assert format_milli(milli) == text


@pytest.mark.parametrize(
    ("memory_bytes", "text"),
    [(1610612736, "1.5Gi"), (2**20, "1Mi"), (512, "512"), (3 * 2**40, "3Ti"), (1536, "1.5Ki")],
    ids=["1.5Gi", "1Mi has no decimal", "under 1Ki stays bytes", "terabytes", "1.5Ki"],
)
def test_format_bytes_uses_the_largest_binary_unit(memory_bytes: int, text: str) -> None:
    assert format_bytes(memory_bytes) == text
