"""DRA claims in what the CLI shows: the table lists each claim allocation (claim, node, devices
by request); a claim a template has not made yet reads as the pod's entry and its
template; a network-attached pool's device carries its pool, an admin-access one says so;
`solve` reads a directory holding slices, classes, claims and pods as it reads one file."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from batchplace.cli import app
from batchplace.demo import EXAMPLES_DIR
from batchplace.render import decision_tables
from models.dra import DeviceResult
from models.loaders import load_snapshot_files
from models.placement import Bind, ClaimAllocation, Decision, Placement
from solver.checker import check_placement


runner = CliRunner()


def _result(request: str, device: str, *, pool: str = "hgx-0", admin_access: bool = False) -> DeviceResult:
    return DeviceResult(request=request, driver="gpu.nvidia.com", pool=pool, device=device, admin_access=admin_access)


TRAIN = ClaimAllocation(
    claim="ml/llm-train-worker-0-gpus-x7k2p", pod="ml/llm-train-worker-0", pod_claim="gpus",
    template="eight-gpus-one-nvlink", node="hgx-0",
    devices=(_result("gpus", "gpu-0"), _result("gpus", "gpu-1"), _result("nic", "nic-3", pool="fabric-a")),
    reserved_for=("ml/llm-train-worker-0",),
)
NOT_MADE_YET = ClaimAllocation(
    claim=None, pod="ml/notebook-infer", pod_claim="mig", template="one-mig-slice", node="a100-mig-0",
    devices=(_result("mig", "gpu-0-mig-19-0-1", pool="a100-mig-0"), _result("mon", "gpu-0", pool="a100-mig-0", admin_access=True)),
    reserved_for=("ml/notebook-infer",),
)


def _rendered(decision: Decision) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(decision_tables(decision))
    return console.export_text()


def test_devices_are_grouped_by_request_in_request_order_with_foreign_pools_named() -> None:
    assert TRAIN.devices_by_request == "gpus: gpu-0, gpu-1; nic: fabric-a/nic-3"


def test_an_admin_access_device_is_marked_and_a_claim_not_made_yet_reads_as_its_pod_entry() -> None:
    assert NOT_MADE_YET.devices_by_request == "mig: gpu-0-mig-19-0-1; mon: gpu-0 (admin)"
    assert NOT_MADE_YET.label == "ml/notebook-infer mig (template one-mig-slice)"
    assert TRAIN.label == "ml/llm-train-worker-0-gpus-x7k2p"


def test_the_table_lists_each_claim_allocation_with_its_node_and_devices() -> None:
    decision = Decision(
        engine="greedy", status="GREEDY", solve_seconds=0.01,
        placement=Placement(
            binds=(Bind(pod="ml/llm-train-worker-0", node="hgx-0"), Bind(pod="ml/notebook-infer", node="a100-mig-0")),
            claims=(TRAIN, NOT_MADE_YET),
        ),
    )
    text = _rendered(decision)
    assert "DRA claims allocated" in text
    rows = [line for line in text.splitlines() if "ml/llm-train-worker-0-gpus-x7k2p" in line or "(template one-mig-slice)" in line]
    assert len(rows) == 2
    assert "hgx-0" in rows[0] and "gpus: gpu-0, gpu-1; nic: fabric-a/nic-3" in rows[0]
    assert "a100-mig-0" in rows[1] and "mig: gpu-0-mig-19-0-1; mon: gpu-0 (admin)" in rows[1]


def test_a_decision_without_claims_shows_no_claims_table() -> None:
    decision = Decision(engine="greedy", status="GREEDY", solve_seconds=0.01, placement=Placement(binds=(Bind(pod="a/b", node="n"),)))
    assert "DRA claims allocated" not in _rendered(decision)


def _solve_json(*paths: Path) -> dict[str, Any]:
    result = runner.invoke(app, ["solve", *map(str, paths), "--engine", "greedy", "--output", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_solve_reads_a_directory_of_slices_classes_claims_and_pods_as_the_one_file(tmp_path: Path) -> None:
    """`kubectl get … -o yaml > DIR/KIND.yaml` per kind: the same answer as the example file."""
    example = EXAMPLES_DIR / "dra-gpus.yaml"
    by_kind: dict[str, list[Any]] = {}
    for document in yaml.safe_load_all(example.read_text()):
        if document:
            by_kind.setdefault(document["kind"], []).append(document)
    assert {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "Pod", "Node"} <= set(by_kind)
    for kind, objects in by_kind.items():
        (tmp_path / f"{kind.lower()}.yaml").write_text(yaml.safe_dump_all(objects))
    from_directory, from_file = _solve_json(tmp_path), _solve_json(example)
    assert from_directory["binds"] == from_file["binds"] and len(from_file["binds"]) == 3
    assert from_directory["claims"] == from_file["claims"]


@pytest.mark.parametrize("engine", ["greedy", "cpsat", "auto"])
def test_every_engine_places_the_dra_example_whole_and_the_checker_accepts_its_claims(engine: str) -> None:
    example = EXAMPLES_DIR / "dra-gpus.yaml"
    result = runner.invoke(app, ["solve", str(example), "--engine", engine, "--output", "json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    node_of = {bind["pod"]: bind["node"] for bind in answer["binds"]}
    assert node_of["ml/notebook-infer"] == "a100-mig-0"  # the only MIG devices
    assert sorted(node_of[f"ml/llm-train-worker-{index}"] for index in (0, 1)) == ["hgx-0", "hgx-1"]  # NVLink domains of 8
    claims = tuple(ClaimAllocation.model_validate(claim) for claim in answer["claims"])
    assert sorted(len(claim.devices) for claim in claims) == [1, 8, 8]
    placement = Placement(binds=tuple(Bind.model_validate(bind) for bind in answer["binds"]), claims=claims)
    assert check_placement(load_snapshot_files([example]).snapshot, placement) == ()
    # the checker judges the claims: the same binds without them are rejected
    assert check_placement(load_snapshot_files([example]).snapshot, placement.model_copy(update={"claims": ()})) != ()
