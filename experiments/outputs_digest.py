"""Question: does a change to the solver leave every engine's answers exactly as they were?

A refactor that only moves code (how the `Problem` is built, how a rule declares its
columns) must not move a single pod. Counting binds would miss a pod sent to another node
or another device, so this writes every answer out in full and compares the files.

Data — the cases, each named by a path-like id (`--list` prints them):
  - `bench/<size>/r<repeat>/<engine>`: `batchplace bench`'s seeded synthetic snapshots
    (`experiments.bench.BenchConfig.snapshot`, family `standard`, seed 0), at
    1,000 × 1,000 and 10,000 × 5,000, repetitions 0–4, each engine of `solver.place` with
    the bench's `SolveConfig` (deterministic CP-SAT, one worker, the bench's time limit);
  - `conformance/<case>/<engine>`: every YAML case under `tests/conformance/cases/`, its
    cluster (the `ConformanceCase` document taken out) solved as the suite solves it
    (10 s limit) by each engine;
  - `fgd/<pod list>/<policy>/k<k>/seed<seed>`: the FGD replay (`experiments.fgd.run_fgd`,
    as `batchplace experiment fgd` runs it) at k = 16, seeds 42–46, for batchplace's
    policies: greedy and its variants (best fit, shapes from pending pods, whole GPUs
    first), `auto` and `cpsat`, each replay whole. For a quicker look, `--fgd-model-batches
    N` has `auto` and `cpsat` solve only their first N batches and turn later arrivals
    away unsolved (the case id then says `-first<N>`). The published baselines are left
    out: they do not call the solver.
Run: each case in this process, one after the other; a case that raises is recorded as
its error (type and first line), which is an output like any other.
Report: under `--out`, one canonical JSON per case in `cases/` (keys sorted, one-space
indent, so the file's sha256 is the answer's), `digest.tsv` (case → sha256) and
`timings.tsv` (seconds per case, never compared); a table of case → sha256 on stdout.
`--compare A B` reads two such folders and names, per case, the first field that differs.

What a case records:
  - an engine's answer: `Decision.to_contract()` — engine, status, fallback (cause and
    sentence), reproducible, objective, bound, gap, every bind (pod, node, GPU indices,
    NUMA cell), every eviction (pod, node, reason, for), every PodGroup outcome (placed,
    state, reasons, unplaced pods with their reasons) and every queue's allocated and
    deserved — with binds and evictions sorted by pod, PodGroups and queues by name;
    and `input_sha256`, the snapshot's JSON, so a changed input is told from a changed answer;
  - an FGD replay: per batch, where each arrival went (node, devices) or null; per batch
    the arrived, allocated and fragmented GPU milli; the curves (1 % bins); pods placed;
    the results table row (allocation, fragmentation and its rate at 130 %, final
    allocation); pods turned away by shape; idle GPU at the end; who answered each batch
    and how often CP-SAT beat or trailed greedy.
Excluded, because they measure the machine and not the answer: `Decision.solve_seconds`;
an FGD run's `solve_seconds`, `wall_seconds` and the results row's `wall_s`,
`solve_ms_mean`, `solve_ms_p99`; `EngineAnswers.place_seconds` and `comparison_seconds`.
Not compared either: the order an engine lists binds, evictions, PodGroups and queues in
(a placement is a set; the lists are sorted by key before writing).

Not promised: identical answers when `reproducible` is false (the wall-clock safety net
cut a CP-SAT search: the answer then depends on the machine's load) — such a case is
flagged in the table. Library functions return values; `main` is the thin CLI
(`python -m experiments.outputs_digest --help`).
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from experiments.bench import BenchConfig, BenchSize, parse_engines, parse_sizes
from models.placement import Decision
from models.snapshot import Snapshot
from solver.place import ENGINES, EngineName, SolveConfig, place

if TYPE_CHECKING:
    from experiments.trace_openb import OpenbNodes, OpenbPods

__all__ = [
    "DigestCase",
    "Difference",
    "bench_cases",
    "conformance_cases",
    "fgd_cases",
    "decision_record",
    "canonical_json",
    "write_digest",
    "read_digest",
    "compare_folders",
    "first_difference",
    "main",
]

Record = dict[str, object]
BENCH_SIZES = "1000x1000,10000x5000"
BENCH_REPEATS = 5
CONFORMANCE_DIR = Path(__file__).resolve().parents[1] / "tests" / "conformance" / "cases"
CONFORMANCE_TIME_LIMIT_S = 10.0  # as tests/conformance/test_conformance.py solves
CONFORMANCE_CASE_KIND = "ConformanceCase"
FGD_SEEDS = "42-46"
FGD_BATCH_SIZE = 16
FGD_POLICIES = "greedy,greedy-bestfit,greedy-pending,greedy-large-first,auto,cpsat"
FGD_MODEL_BATCHES = 0
"""Batches an `auto`/`cpsat` replay solves before it turns the rest away; 0: all (module docstring)."""
CASES_FOLDER = "cases"
DIGEST_FILE = "digest.tsv"
TIMINGS_FILE = "timings.tsv"


@dataclass(frozen=True)
class DigestCase:
    """One case: its id and how to compute its record."""

    name: str
    run: Callable[[], Record]


@dataclass(frozen=True)
class Difference:
    """The first field where two records of `case` differ (`path` like `binds[3].node`);
    `before`/`after` are the values (path `(case)`: whether the case was run at all)."""

    case: str
    path: str
    before: str
    after: str
    note: str = ""


# ---- the answer of one solve ----


def decision_record(decision: Decision) -> Record:
    """The JSON output contract without its wall-clock seconds, lists sorted by key.

    Example: binds (b → n2, a → n1) → `binds` [a → n1, b → n2]."""
    record = decision.to_contract()
    del record["solve_seconds"]
    record["binds"] = sorted(record["binds"], key=lambda bind: bind["pod"])
    record["evictions"] = sorted(record["evictions"], key=lambda eviction: eviction["pod"])
    record["podgroups"] = sorted(record["podgroups"], key=lambda outcome: outcome["name"])
    record["queues"] = sorted(record["queues"], key=lambda share: share["name"])
    return record


def _solved(snapshot: Snapshot, config: SolveConfig) -> Record:
    """The record of `place(snapshot, config)`, or of the error it raised."""
    record: Record = {"input_sha256": hashlib.sha256(snapshot.model_dump_json().encode()).hexdigest()}
    try:
        return {**record, **decision_record(place(snapshot, config))}
    except Exception as error:  # an engine's error is its answer: the same input must raise it again
        return {**record, "error": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"}


# ---- cases ----


def bench_cases(
    sizes: Sequence[BenchSize], *, repeats: int = BENCH_REPEATS, engines: Sequence[EngineName] = ENGINES
) -> list[DigestCase]:
    """Every (size, repetition, engine) of `batchplace bench`'s standard family, each engine on
    a freshly built snapshot, as the bench runs it."""
    config = BenchConfig(sizes=tuple(sizes), engines=tuple(engines), repeats=repeats)

    def case(size: BenchSize, repeat: int, engine: EngineName) -> DigestCase:
        return DigestCase(
            f"bench/{size.label}/r{repeat}/{engine}",
            lambda: _solved(config.snapshot(size, repeat), config.solve_config(engine, size)),
        )

    return [case(size, repeat, engine) for size in sizes for repeat in range(repeats) for engine in engines]


def conformance_cases(folder: Path = CONFORMANCE_DIR, *, engines: Sequence[EngineName] = ENGINES) -> list[DigestCase]:
    """Every YAML case under `folder` through each engine, as the conformance suite solves it;
    ValueError when `folder` holds none (a mistyped folder must not pass as "no difference")."""
    paths = sorted(folder.rglob("*.yaml"))
    if not paths:
        raise ValueError(f"{folder}: no conformance case (*.yaml) here")

    def case(path: Path, engine: EngineName) -> DigestCase:
        name = path.relative_to(folder).with_suffix("").as_posix()
        config = SolveConfig(engine=engine, time_limit_s=CONFORMANCE_TIME_LIMIT_S)
        return DigestCase(f"conformance/{name}/{engine}", lambda: _solved(_conformance_snapshot(path), config))

    return [case(path, engine) for path in paths for engine in engines]


def _conformance_snapshot(path: Path) -> Snapshot:
    """The case's cluster: its documents without the `ConformanceCase` one."""
    from models.loaders import load_snapshot_documents
    from models.loaders.kube_yaml import parse_yaml_documents

    documents = parse_yaml_documents(path.read_text(encoding="utf-8"), source=path.name)
    cluster = [entry for entry in documents if not (isinstance(entry[2], Mapping) and entry[2].get("kind") == CONFORMANCE_CASE_KIND)]
    return load_snapshot_documents(cluster).snapshot


def fgd_cases(
    *,
    seeds: Sequence[int],
    policies: Sequence[str],
    batch_size: int = FGD_BATCH_SIZE,
    trace: str = "default",
    trace_dir: Path | None = None,
    model_batches: int = FGD_MODEL_BATCHES,
) -> list[DigestCase]:
    """The FGD replay of each (policy, seed); `auto`/`cpsat` solve their first `model_batches`
    batches only (0: all)."""

    def case(policy: str, seed: int) -> DigestCase:
        limit = model_batches if policy in ("auto", "cpsat") and model_batches > 0 else None
        suffix = f"-first{limit}" if limit is not None else ""
        return DigestCase(
            f"fgd/{trace}/{policy}/k{batch_size}/seed{seed}{suffix}",
            lambda: _fgd_record(policy, seed, batch_size=batch_size, trace=trace, trace_dir=trace_dir, max_batches=limit),
        )

    return [case(policy, seed) for policy in policies for seed in seeds]


class _RecordedPolicy:
    """A policy whose every batch's assignments are kept (`steps`), solving only its first
    `max_batches` batches (None: all) and turning the rest away."""

    def __init__(self, policy: object, max_batches: int | None) -> None:
        self.policy = policy
        self.max_batches = max_batches
        self.answers = getattr(policy, "answers", None)  # read by run_fgd
        self.steps: list[list[list[object] | None]] = []

    def schedule(self, state, batch):  # noqa: ANN001, ANN201  # the FGD policy protocol
        if self.max_batches is not None and len(self.steps) >= self.max_batches:
            return [None] * len(batch)
        result = self.policy.schedule(state, batch)  # type: ignore[attr-defined]  # any FGD policy
        names = state.nodes.names
        self.steps.append([None if a is None else [names[a.node], list(a.devices)] for a in result])
        return result


def _fgd_record(
    policy: str, seed: int, *, batch_size: int, trace: str, trace_dir: Path | None, max_batches: int | None
) -> Record:
    from experiments.fgd import FgdConfig, run_fgd
    from experiments.policies import make_policy

    recorded: list[_RecordedPolicy] = []

    def factory(config, rng, tracker, state):  # noqa: ANN001, ANN202  # experiments.fgd.PolicyFactory
        recorded.append(_RecordedPolicy(make_policy(config, rng, tracker, state), max_batches))
        return recorded[0]

    config = FgdConfig(policy=policy, seed=seed, trace=trace, batch_size=batch_size)
    run = run_fgd(config, nodes=_openb_nodes(trace_dir), pods=_openb_pods(trace, trace_dir), make_policy=factory)
    answers = run.answers
    idle = run.idle_at_end
    return {
        "config": {"policy": policy, "seed": seed, "trace": trace, "batch_size": batch_size,
                   "time_limit_s": config.time_limit_s, "solved_batches": max_batches},  # fmt: skip
        "steps": recorded[0].steps,
        "arrived_milli": run.arrived_milli.tolist(),
        "allocated_milli": run.allocated_milli.tolist(),
        "fragmented_milli": run.fragmented_milli.tolist(),
        "alloc_curve": _finite(run.alloc_curve.tolist()),
        "frag_curve": _finite(run.frag_curve.tolist()),
        "frag_rate_curve": _finite(run.frag_rate_curve.tolist()),
        "capacity_milli": run.capacity_milli,
        "pods": run.pods,
        "placed": run.placed,
        "results_row": dict(zip(
            ("alloc_at_130_pct", "frag_at_130_pct", "frag_rate_at_130_pct", "final_alloc_pct"),
            _finite([run.alloc_at_130, run.frag_at_130, float(run.frag_rate_curve[130]), run.final_alloc]),
        )),  # fmt: skip
        "turned_away": {shape: asdict(away) for shape, away in sorted(run.turned_away.items())},
        "idle_at_end": None if idle is None else {"whole_devices": idle.whole_devices,
                                                  "leftover_milli": list(idle.leftover_milli),
                                                  "common_leftovers": [list(c) for c in idle.common_leftovers]},  # fmt: skip
        "answers": None if answers is None else {"answered_by": dict(sorted(answers.answered_by.items())),
                                                 "beat_greedy": answers.beat_greedy,
                                                 "behind_greedy": answers.behind_greedy},  # fmt: skip
    }


@functools.cache
def _openb_nodes(trace_dir: Path | None) -> OpenbNodes:
    """The trace's node list, read once per process."""
    from experiments.trace_openb import load_nodes

    return load_nodes(trace_dir)


@functools.cache
def _openb_pods(trace: str, trace_dir: Path | None) -> OpenbPods:
    """A pod list of the trace, read once per process."""
    from experiments.trace_openb import load_pods

    return load_pods(trace, trace_dir)


def _finite(values: list[float]) -> list[float | None]:
    """NaN (an empty bin) as null: JSON has no NaN."""
    return [None if math.isnan(v) else v for v in values]


# ---- write, read, compare ----


def canonical_json(record: Record) -> str:
    """Keys sorted, one-space indent, no NaN: equal records give equal text."""
    return json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _case_file(folder: Path, name: str) -> Path:
    return folder / CASES_FOLDER / (name.replace("/", "__") + ".json")


def write_digest(cases: Sequence[DigestCase], folder: Path) -> Iterator[tuple[str, str, float, Record]]:
    """Run each case, write its JSON under `folder/cases/`, and yield (case, sha256, seconds,
    record) as each finishes; `digest.tsv` and `timings.tsv` are written at the end."""
    (folder / CASES_FOLDER).mkdir(parents=True, exist_ok=True)
    digests: list[tuple[str, str]] = []
    timings: list[tuple[str, float]] = []
    for case in cases:
        started = time.perf_counter()
        record = case.run()
        seconds = time.perf_counter() - started
        text = canonical_json(record)
        _case_file(folder, case.name).write_text(text, encoding="utf-8")
        sha = hashlib.sha256(text.encode()).hexdigest()
        digests.append((case.name, sha))
        timings.append((case.name, seconds))
        yield case.name, sha, seconds, record
    (folder / DIGEST_FILE).write_text("".join(f"{name}\t{sha}\n" for name, sha in digests), encoding="utf-8")
    (folder / TIMINGS_FILE).write_text("".join(f"{name}\t{s:.2f}\n" for name, s in timings), encoding="utf-8")


def read_digest(folder: Path) -> dict[str, str]:
    """case → sha256 from `folder/digest.tsv`; FileNotFoundError names the file."""
    path = folder / DIGEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no digest here (write one with --out {folder})")
    return dict(line.split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines() if line)


def compare_folders(before: Path, after: Path) -> list[Difference]:
    """Per case that differs, the first differing field; a case run on one side only counts
    as a difference. The case files are compared, not the sums in `digest.tsv` (which
    only lists the cases): a file edited or rewritten since still counts. Cases in
    `before`'s order, then those only `after` has."""
    a, b = read_digest(before), read_digest(after)
    differences = []
    for case in [*a, *(name for name in b if name not in a)]:
        if case not in b or case not in a:
            differences.append(Difference(case, "(case)", _presence(case in a), _presence(case in b)))
        else:
            left_text = _case_file(before, case).read_text(encoding="utf-8")
            right_text = _case_file(after, case).read_text(encoding="utf-8")
            if left_text == right_text:
                continue
            left, right = json.loads(left_text), json.loads(right_text)
            path, x, y = first_difference(left, right) or ("(file)", "its text", "another text")
            differences.append(Difference(case, path, x, y, _objectives(left, right)))
    return differences


def _presence(present: bool) -> str:
    return "present" if present else "absent (not run)"


def _objectives(before: object, after: object) -> str:
    """"objective 12 vs 11" when both are a solve's records whose objectives differ: whether
    a changed placement is also a worse one."""
    if not (isinstance(before, dict) and isinstance(after, dict)) or before.get("objective") == after.get("objective"):
        return ""
    return f"objective {before.get('objective')} vs {after.get('objective')}"


def first_difference(before: object, after: object, path: str = "") -> tuple[str, str, str] | None:
    """(path, before, after) of the first field where two JSON values differ, depth first in
    key order; None when equal. Example: {"binds": [{"node": "n1"}]} vs {"binds": [{"node":
    "n2"}]} → ("binds[0].node", '"n1"', '"n2"')."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            where = f"{path}.{key}" if path else key
            if key not in before or key not in after:
                return where, _short(before.get(key, "(absent)")), _short(after.get(key, "(absent)"))
            found = first_difference(before[key], after[key], where)
            if found is not None:
                return found
        return None
    if isinstance(before, list) and isinstance(after, list):
        for i, (x, y) in enumerate(zip(before, after)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        if len(before) != len(after):
            return f"{path} (length)", str(len(before)), str(len(after))
        return None
    if before != after or type(before) is not type(after):
        return path or "(root)", _short(before), _short(after)
    return None


def _short(value: object, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- the thin CLI ----


def _int_list(text: str, *, option: str) -> list[int]:
    """`"42-46"` → 42…46; `"42,45"` → [42, 45]; ValueError names `option`."""
    values: list[int] = []
    try:
        for part in (p.strip() for p in text.split(",")):
            low, dash, high = part.partition("-")
            values.extend(range(int(low), int(high) + 1) if dash else [int(part)] if part else [])
    except ValueError:
        raise ValueError(f"{option}: expected numbers like 42-46 or 42,45, got {text!r}") from None
    return values


def _policies(text: str) -> list[str]:
    """`"greedy,auto"` → ["greedy", "auto"]; ValueError for a policy that is not batchplace's."""
    from experiments.policies import BATCHPLACE_POLICIES

    policies = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in policies if p not in BATCHPLACE_POLICIES]
    if unknown:
        raise ValueError(f"--fgd-policies: unknown {', '.join(unknown)}; choose from {', '.join(BATCHPLACE_POLICIES)}")
    return policies


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.outputs_digest",
        description="Write every engine's full answers (binds, devices, NUMA cells, evictions, pending reasons, "
        "status and fallback) on the bench sizes, the FGD replay and the conformance cases as one canonical JSON "
        "per case, with a table of case -> sha256; or, with --compare, name the first differing field per case "
        "between two such folders (exit 1 when any case differs). Wall-clock seconds are never recorded in a case.",
        epilog="Before/after a refactor: run with --out BEFORE on the old tree and --out AFTER on the new one, "
        "then --compare BEFORE AFTER.",
    )
    parser.add_argument("--out", type=Path, help="Folder to write cases/, digest.tsv and timings.tsv into.")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="Compare two digest folders.")
    parser.add_argument("--list", action="store_true", help="Print the selected case ids and exit.")
    parser.add_argument("--cases", action="append", default=[], metavar="GLOB",
                        help="Only cases whose id matches this glob (repeatable), e.g. 'bench/1000x1000/*'.")  # fmt: skip
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="Leave out cases matching this glob (repeatable).")
    parser.add_argument("--bench-sizes", default=BENCH_SIZES, help=f"NODESxPODS list (default {BENCH_SIZES}); empty: none.")
    parser.add_argument("--bench-repeats", type=int, default=BENCH_REPEATS, help=f"Repetitions per size, as the bench's (default {BENCH_REPEATS}).")
    parser.add_argument("--engines", default=",".join(ENGINES), help="Engines for bench and conformance cases (default all).")
    parser.add_argument("--conformance-dir", type=Path, default=CONFORMANCE_DIR, help="Folder of conformance case YAML (default the suite's).")
    parser.add_argument("--no-conformance", action="store_true", help="Leave out the conformance cases.")
    parser.add_argument("--fgd-seeds", default=FGD_SEEDS, help=f"FGD replay seeds (default {FGD_SEEDS}); empty: no FGD cases.")
    parser.add_argument("--fgd-policies", default=FGD_POLICIES, help=f"FGD policies (default {FGD_POLICIES}).")
    parser.add_argument("--fgd-batch-size", type=int, default=FGD_BATCH_SIZE, help=f"Batch size k (default {FGD_BATCH_SIZE}).")
    parser.add_argument("--fgd-model-batches", type=int, default=FGD_MODEL_BATCHES,
                        help="Batches auto/cpsat replays solve before turning the rest away, for a quicker look (default 0: all).")  # fmt: skip
    parser.add_argument("--trace-dir", type=Path, default=None, help="Folder of the openb trace CSVs (default $BATCHPLACE_OPENB_DIR or found beside the repo).")
    return parser


def _select(args: argparse.Namespace) -> list[DigestCase]:
    engines = parse_engines(args.engines)
    cases = bench_cases(parse_sizes(args.bench_sizes), repeats=args.bench_repeats, engines=engines) if args.bench_sizes else []
    if not args.no_conformance:
        cases += conformance_cases(args.conformance_dir, engines=engines)
    seeds = _int_list(args.fgd_seeds, option="--fgd-seeds")
    if seeds:
        from experiments.trace_openb import check_trace

        policies = _policies(args.fgd_policies)
        trace_dir = check_trace(args.trace_dir, ["default"])
        cases += fgd_cases(seeds=seeds, policies=policies, batch_size=args.fgd_batch_size, trace_dir=trace_dir,
                           model_batches=args.fgd_model_batches)  # fmt: skip
    if args.cases:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.name, glob) for glob in args.cases)]
    return [c for c in cases if not any(fnmatch.fnmatchcase(c.name, glob) for glob in args.exclude)]


def main(argv: Sequence[str] | None = None) -> int:
    """0: written, or the folders agree; 1: they differ; 2: bad arguments or input."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.compare:
        try:
            differences = compare_folders(*args.compare)
        except FileNotFoundError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        cases = len(read_digest(args.compare[0]).keys() | read_digest(args.compare[1]).keys())
        for d in differences:
            note = f" [{d.note}]" if d.note else ""
            print(f"DIFFERS {d.case}: first at {d.path}: {d.before} (before) vs {d.after} (after){note}")
        print(f"{cases - len(differences)} of {cases} cases identical, {len(differences)} differ")
        return 1 if differences else 0
    try:
        cases = _select(args)
    except (ValueError, OSError) as error:  # bad size, engine, seeds; trace or case folder not found
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(case.name for case in cases))
        return 0
    if args.out is None:
        parser.error("--out FOLDER is needed (or --compare BEFORE AFTER, or --list)")
    started = time.perf_counter()
    unreproducible = []
    for name, sha, seconds, record in write_digest(cases, args.out):
        flag = "" if record.get("reproducible", True) else "  NOT REPRODUCIBLE (safety net)"
        if flag:
            unreproducible.append(name)
        print(f"{sha}  {seconds:7.2f} s  {name}{flag}", flush=True)
    print(f"{len(cases)} cases in {time.perf_counter() - started:.0f} s; wrote {args.out}/{DIGEST_FILE}")
    if unreproducible:
        print(f"{len(unreproducible)} answers were cut by the wall-clock safety net and may differ run to run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
