"""Question: which CEL library should evaluate DRA device selectors — how long does each take
to compile a typical selector, and to evaluate it on one device?

Data: the selectors DRA users write (driver, product name, memory as a quantity, driver
version as a semver, domain presence, and all of them joined by &&), on an H100-like device
with 8 attributes and 2 capacities in two domains.

Run: for each library, the same Kubernetes DRA environment (`device`, `quantity()`,
`semver()`, `compareTo`/`isGreaterThan`/`isLessThan`) — `common-expression-language` (Rust
bindings, module `cel`) through `solver.dra_cel` itself; `cel-python` (pure Python, module
`celpy`) through a small adapter here (quantities and versions as Python objects, which celpy
carries and the Rust bindings cannot). Compile = one expression to a program, the library's
own cache bypassed. Evaluate = one device to a boolean, building the device's CEL value each
time (what a cache miss costs); "cached" = `Selector.matches` on a device already seen.

Metrics: microseconds per operation, median of `--repeats` rounds of `--iterations` calls
(time.perf_counter). Both libraries must give the same answers (checked; the run fails if not).

Output: the table printed and `results/cel-bench/cel_bench.csv`.
Run: `python -m experiments.cel_bench [--iterations N] [--repeats R]`.

Not promised: quiet numbers on a shared machine; the ratio between libraries is what the
choice rests on.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import cel

from models.quantity import parse_quantity
from solver.dra_cel import Version, compile_selector

SELECTORS = {
    "driver": 'device.driver == "gpu.nvidia.com"',
    "product": 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"',
    "memory-quantity": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "version-semver": 'device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))',
    "domain-in": '"gpu.nvidia.com" in device.attributes',
}
CHECKED_DEVICES = 50  # devices both libraries answer before timing; the answers must agree
SELECTORS["all-joined"] = " && ".join(f"({expression})" for expression in SELECTORS.values())


@dataclass(frozen=True)
class BenchDevice:
    driver: str = "gpu.nvidia.com"
    attributes: dict = field(default_factory=dict)
    capacity: dict = field(default_factory=dict)


def h100(index: int) -> BenchDevice:
    """A distinct device per index, so no evaluation is answered from a cache."""
    return BenchDevice(
        attributes={
            "productName": "NVIDIA H100 80GB HBM3",
            "index": index,
            "uuid": f"GPU-{index:08d}",
            "architecture": "Hopper",
            "brand": "Nvidia",
            "cudaComputeCapability": Version(9, 0, 0),
            "pcieRoot": f"pci0000:{index % 4}",
            "dra.example.com/driverVersion": Version(1, 2, index % 7),
        },
        capacity={"memory": 80 * 2**30, "dra.example.com/channels": 16},
    )


class CelpyEnvironment:
    """The DRA environment on cel-python: quantities as Fractions, versions as Version."""

    def __init__(self) -> None:
        import celpy

        self.celpy = celpy
        self.environment = celpy.Environment()
        types = celpy.celtypes
        compare = lambda a, b: types.IntType((a > b) - (a < b))  # noqa: E731
        self.functions = {
            "quantity": lambda text: Fraction(parse_quantity(str(text))),
            "semver": lambda text: Version.parse(str(text)),
            "compareTo": compare,
            "isGreaterThan": lambda a, b: types.BoolType(a > b),
            "isLessThan": lambda a, b: types.BoolType(a < b),
        }

    def compile(self, expression: str) -> Any:
        return self.environment.program(self.environment.compile(expression), functions=self.functions)

    def evaluate(self, program: Any, device: BenchDevice) -> bool:
        types = self.celpy.celtypes
        return bool(program.evaluate({"device": self.device_value(device, types)}))

    def device_value(self, device: BenchDevice, types: Any) -> Any:
        def by_domain(items: Any) -> Any:
            grouped: dict = {}
            for qualified, value in items:
                domain, _, name = qualified.rpartition("/")
                grouped.setdefault(types.StringType(domain or device.driver), {})[types.StringType(name)] = value
            return types.MapType({domain: types.MapType(names) for domain, names in grouped.items()})

        def attribute(value: Any) -> Any:
            if isinstance(value, bool):
                return types.BoolType(value)
            if isinstance(value, int):
                return types.IntType(value)
            return types.StringType(value) if isinstance(value, str) else value

        return types.MapType(
            {
                types.StringType("driver"): types.StringType(device.driver),
                types.StringType("attributes"): by_domain((k, attribute(v)) for k, v in device.attributes.items()),
                types.StringType("capacity"): by_domain((k, Fraction(v)) for k, v in device.capacity.items()),
            }
        )


def per_call_us(call: Callable[[int], Any], iterations: int, repeats: int) -> float:
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for index in range(iterations):
            call(index)
        rounds.append((time.perf_counter() - start) / iterations * 1e6)
    return statistics.median(rounds)


def run(iterations: int, repeats: int) -> list[dict[str, Any]]:
    celpy_env = CelpyEnvironment()
    rows = []
    for name, expression in SELECTORS.items():
        selector = compile_selector(expression, where=f"bench {name}")
        celpy_program = celpy_env.compile(expression)
        checked, unseen = CHECKED_DEVICES, iterations * repeats
        devices = [h100(index) for index in range(checked + unseen)]
        for device in devices[:checked]:
            if selector.matches(device) != celpy_env.evaluate(celpy_program, device):
                raise SystemExit(f"libraries disagree on {name} for {device}")
        fresh = iter(devices[checked:])  # each device unseen: every call a cache miss

        def rust_compile(index: int) -> Any:
            return cel.compile(expression + " " * (index % 2))  # past solver.dra_cel's cache

        rust_eval_us = per_call_us(lambda _: selector.matches(next(fresh)), iterations, repeats)
        fresh = iter(devices[checked:])
        celpy_eval_us = per_call_us(lambda _: celpy_env.evaluate(celpy_program, next(fresh)), iterations, repeats)
        seen = devices[0]
        selector.matches(seen)
        rows.append(
            {
                "selector": name,
                "rust_compile_us": round(per_call_us(rust_compile, iterations, repeats), 1),
                "celpy_compile_us": round(per_call_us(lambda _: celpy_env.compile(expression), max(1, iterations // 10), repeats), 1),
                "rust_evaluate_us": round(rust_eval_us, 1),
                "celpy_evaluate_us": round(celpy_eval_us, 1),
                "cached_match_us": round(per_call_us(lambda _: selector.matches(seen), iterations, repeats), 2),
                "evaluate_speedup": round(celpy_eval_us / rust_eval_us, 1),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.cel_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200, help="calls per timed round (default 200)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds; the median is reported (default 5)")
    parser.add_argument("--output-dir", type=Path, default=Path("results/cel-bench"), help="where the CSV goes")
    args = parser.parse_args(argv)
    rows = run(args.iterations, args.repeats)
    columns = list(rows[0])
    widths = [max(len(column), *(len(str(row[column])) for row in rows)) for column in columns]
    print("  ".join(column.ljust(width) for column, width in zip(columns, widths)))
    for row in rows:
        print("  ".join(str(row[column]).ljust(width) for column, width in zip(columns, widths)))
    args.output_dir.mkdir(parents=True, exist_ok=True)
    with (args.output_dir / "cel_bench.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.output_dir / 'cel_bench.csv'}")


if __name__ == "__main__":
    main()
