"""`batchplace demo`: solve every seed example and say, per example, expected vs got.

Input: the YAML files in `examples/` (Volcano's quick-start manifests as written, with
`schedulerName: volcano`; Volcano's MPI example; Kubeflow PyTorchJobs; GPUs as DRA devices). Output: for each,
the placement table and a one-line verdict. The expectations live here, next to the code
that checks them, so the demo is also a smoke test: `run_demo()` returns the verdicts and
the test suite asserts all hold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from controller.testing.files import EXAMPLES_DIR
from models.loaders import load_snapshot_files
from models.placement import Decision, PodGroupOutcome
from models.snapshot import Snapshot
from solver.place import SolveConfig, place
from solver.rules import dependency, gang

__all__ = ["EXAMPLES_DIR", "Scenario", "Verdict", "SCENARIOS", "run_scenario", "run_demo"]


@dataclass(frozen=True)
class Verdict:
    scenario: str
    expected: str
    got: str
    ok: bool


@dataclass(frozen=True)
class Scenario:
    file: str
    expected: str
    judge: Callable[[Snapshot, Decision], tuple[bool, str]]


def _state(decision: Decision, name: str) -> str:
    for outcome in decision.podgroups:
        if outcome.name == name:
            return outcome.state
    return "absent"


def _hello(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    state = _state(decision, "default/hello-volcano-job")
    return state == "scheduled", f"hello-volcano-job {state}, {len(decision.placement.binds)} bind(s)"


def _queue_weights(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    scheduled = Counter(o.queue for o in decision.podgroups if o.state == "scheduled")
    got = f"queue-a {scheduled['queue-a']} jobs, queue-b {scheduled['queue-b']} jobs"
    return (scheduled["queue-a"], scheduled["queue-b"]) == (2, 4), got


def _first_rule(outcome: PodGroupOutcome) -> str:
    """The rule of a PodGroup's first reason, "" when it has none."""
    return outcome.reasons[0].rule if outcome.reasons else ""


def _gang_20(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    outcome = next(o for o in decision.podgroups if o.min_member == 20)
    reason = outcome.reasons[0] if outcome.reasons else "no reason"
    ok = outcome.state == "pending" and outcome.placed == 0 and _first_rule(outcome) == gang.NAME
    return ok, f"{outcome.name} {outcome.state}, {outcome.placed} placed: {reason}"


def _gang_4(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    outcome = next(o for o in decision.podgroups if o.min_member == 4)
    ok = outcome.state == "scheduled" and outcome.placed == 8
    return ok, f"{outcome.name} {outcome.state}, {outcome.placed} of 20 placed (min 4)"


def _workflow(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    tasks = Counter(snapshot.pod_by_key[b.pod].task for b in decision.placement.binds)
    waiting = [r for o in decision.podgroups for r in o.reasons if r.rule == dependency.NAME]
    ok = tasks["task-a"] > 0 and tasks["task-b"] == 0
    detail = f"; {waiting[0]}" if waiting else ""
    return ok, f"task-a {tasks['task-a']} bound, task-b {tasks['task-b']} bound{detail}"


def _topology(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    leaves = {snapshot.hypernode_chain[b.node][0] for b in decision.placement.binds if snapshot.hypernode_chain[b.node]}
    gpus = sum(len(b.gpus) for b in decision.placement.binds)
    ok = gpus == 16 and len(leaves) == 1
    return ok, f"{gpus} GPUs bound on {len(decision.placement.binds)} pods in leaf {', '.join(sorted(leaves)) or '-'}"


def _nodes_by_group(snapshot: Snapshot, decision: Decision) -> dict[str, list[str]]:
    """PodGroup key → the nodes its pods are bound to this cycle, in bind order."""
    nodes: dict[str, list[str]] = {}
    for bind in decision.placement.binds:
        nodes.setdefault(snapshot.pod_by_key[bind.pod].pod_group or "", []).append(bind.node)
    return nodes


def _leaves(snapshot: Snapshot, nodes: list[str]) -> set[str]:
    """The tier-1 HyperNodes of `nodes` (a node under none stands for itself)."""
    return {snapshot.hypernode_chain[node][0] if snapshot.hypernode_chain[node] else node for node in nodes}


def _gpu_model(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    nodes = _nodes_by_group(snapshot, decision)
    finetune, infer = nodes.get("default/h100-finetune", []), nodes.get("default/batch-infer", [])
    ok = finetune == ["h100-0"] and infer == ["a100-1", "a100-1"]
    return ok, f"h100-finetune on {', '.join(finetune) or '-'}; batch-infer on {', '.join(sorted(infer)) or '-'}"


def _mpi(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    nodes = _nodes_by_group(snapshot, decision)
    plain, gpu = nodes.get("default/lm-mpi-job", []), nodes.get("default/lm-mpi-job-gpu", [])
    leaves = _leaves(snapshot, gpu)
    ok = len(plain) == 3 and len(gpu) == 3 and leaves == {"leaf-b"}
    where = ", ".join(sorted(leaves)) or "-"
    return ok, f"lm-mpi-job {len(plain)} of 3 pods bound; lm-mpi-job-gpu {len(gpu)} of 3 bound, in {where}"


def _pytorch(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    nodes = _nodes_by_group(snapshot, decision)
    bert, resnet = nodes.get("default/bert-finetune", []), nodes.get("default/resnet-ddp", [])
    leaves = _leaves(snapshot, bert)
    waiting = next(o for o in decision.podgroups if o.name == "default/resnet-ddp")
    reason = waiting.reasons[0] if waiting.reasons else "no reason"
    ok = len(bert) == 4 and leaves == {"leaf-b"} and not resnet and _first_rule(waiting) == gang.NAME
    where = ", ".join(sorted(leaves)) or "-"
    return ok, f"bert-finetune {len(bert)} of 4 bound, in {where}; resnet-ddp {len(resnet)} of 4 bound: {reason}"


def _dra(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    """Each training worker's claim holds the 8 GPUs of one NVLink domain — only the HGX
    nodes have one — and the notebook's claim one 1g.10gb MIG device of a100-mig-0's gpu-0."""
    claims = {claim.pod: claim for claim in decision.placement.claims}
    nodes = _nodes_by_group(snapshot, decision)
    train = sorted(nodes.get("ml/llm-train", []))
    train_gpus = sorted({len(claims[pod].devices) for pod in ("ml/llm-train-worker-0", "ml/llm-train-worker-1") if pod in claims})
    notebook = claims.get("ml/notebook-infer")
    mig = [result.device for result in notebook.devices] if notebook is not None else []
    ok = (
        train == ["hgx-0", "hgx-1"]
        and train_gpus == [8]
        and notebook is not None
        and notebook.node == "a100-mig-0"
        and len(mig) == 1
        and mig[0].startswith("gpu-0-mig-19-")  # profile 19: 1g.10gb
    )
    where = notebook.node if notebook is not None else "-"
    return ok, (
        f"llm-train on {', '.join(train) or '-'}, {'/'.join(map(str, train_gpus)) or 0} GPUs per claim; "
        f"notebook-infer on {where}, {', '.join(mig) or 'no device'}"
    )


def _sub_group_domains(snapshot: Snapshot, decision: Decision) -> tuple[dict[str, set[str]], dict[str, int]]:
    """Each sub-group's lowest HyperNodes (its racks or leaves) and its bound pods."""
    domains: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for bind in decision.placement.binds:
        sub = snapshot.pod_by_key[bind.pod].sub_group or "-"
        domains.setdefault(sub, set()).add(snapshot.hypernode_chain[bind.node][0])
        counts[sub] = counts.get(sub, 0) + 1
    return domains, counts


def _lws_serving(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    """Only one assignment places every replica group whole inside one rack: the prefill
    groups (2 × 8 GPUs) in rack-b and rack-c, the decode groups (2 × 4 GPUs) in rack-a and
    rack-d — chosen jointly; group by group best fit leaves a prefill group out."""
    domains, counts = _sub_group_domains(snapshot, decision)
    subs = ("prefill-0", "prefill-1", "decode-0", "decode-1")
    whole = all(counts.get(sub) == 2 and len(domains[sub]) == 1 for sub in subs)
    prefill = set().union(*(domains.get(sub, set()) for sub in subs[:2]))
    decode = set().union(*(domains.get(sub, set()) for sub in subs[2:]))
    ok = whole and prefill == {"rack-b", "rack-c"} and decode == {"rack-a", "rack-d"}
    return ok, "; ".join(
        f"{sub} {counts.get(sub, 0)} of 2 in {', '.join(sorted(domains.get(sub, ()))) or '-'}" for sub in subs
    )


def _subgroup_training(snapshot: Snapshot, decision: Decision) -> tuple[bool, str]:
    """Four shards of 2 pods, each inside one leaf, the job inside one spine: spine-a has room
    for the 8 pods but only 3 whole shards, so all of it goes to spine-b."""
    domains, counts = _sub_group_domains(snapshot, decision)
    spines = {snapshot.hypernode_chain[bind.node][1] for bind in decision.placement.binds}
    shards = sorted(sub for sub in counts if sub != "-")
    whole = len(shards) == 4 and all(counts[sub] == 2 and len(domains[sub]) == 1 for sub in shards)
    ok = whole and spines == {"spine-b"} and len(decision.placement.binds) == 8
    where = "; ".join(f"{sub} in {', '.join(sorted(domains[sub]))}" for sub in shards)
    return ok, f"{len(decision.placement.binds)} of 8 pods in {', '.join(sorted(spines)) or '-'}; {where}"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("hello-volcano-job.yaml", "hello-volcano-job scheduled", _hello),
    Scenario("queue-weights.yaml", "queue-a 2 jobs, queue-b 4 jobs (weights 1:2)", _queue_weights),
    Scenario("gang-min-available-20.yaml", "gang of 20 pending with a gang reason, nothing bound", _gang_20),
    Scenario("gang-min-available-4.yaml", "gang of min 4 scheduled, 8 of 20 pods bound", _gang_4),
    Scenario("workflow-job.yaml", "task-a bound, task-b waits for it", _workflow),
    Scenario("gpu-topology.yaml", "16-GPU hard-topology gang inside one leaf", _topology),
    Scenario(
        "gpu-model-affinity.yaml", "fine-tune on the H100 it requires, inference on the zone it prefers", _gpu_model
    ),
    Scenario("mpi-job.yaml", "both MPI gangs bound whole (3 of 3), the GPU one inside leaf-b", _mpi),
    Scenario(
        "pytorch-job.yaml", "bert-finetune's 4 pods inside leaf-b; resnet-ddp waits whole, a gang reason", _pytorch
    ),
    Scenario(
        "dra-gpus.yaml", "llm-train's claims on hgx-0, hgx-1, 8 GPUs of one NVLink domain each; notebook-infer on a MIG slice",
        _dra,
    ),
    Scenario(
        "lws-disaggregated-serving.yaml",
        "prefill groups in rack-b and rack-c, decode groups in rack-a and rack-d, each whole in one rack",
        _lws_serving,
    ),
    Scenario("subgroup-training.yaml", "8 pods in spine-b, 4 shards of 2 each inside one leaf", _subgroup_training),
)


def run_scenario(scenario: Scenario, *, config: SolveConfig) -> tuple[Decision, Verdict]:
    loaded = load_snapshot_files([EXAMPLES_DIR / scenario.file])
    decision = place(loaded.snapshot, config)
    ok, got = scenario.judge(loaded.snapshot, decision)
    return decision, Verdict(scenario.file, scenario.expected, got, ok)


def run_demo(*, config: SolveConfig = SolveConfig()) -> list[tuple[Decision, Verdict]]:
    return [run_scenario(scenario, config=config) for scenario in SCENARIOS]
