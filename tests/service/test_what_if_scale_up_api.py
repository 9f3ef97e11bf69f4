"""`POST /v1/what-if` with `scale_up` templates: the plan on the changed cluster, its binds
valid on the cluster with the bought nodes, and a bad template a 422 naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from models.node_templates import read_node_templates
from models.placement import Placement
from models.scale_up_plan import ScaleUpPlan
from models.snapshot import Snapshot
from service.schemas import WHAT_IF_EXAMPLE
from solver.checker import check_placement
from solver.scale_up import extended_by_plan
from solver.whatif import Changes, apply_changes
from tests.builders import make_gang, make_node, make_snapshot
from tests.service.service_helpers import snapshot_json

P5 = {"name": "p5", "allocatable": {"cpu": 192000, "memory": 2**40, "gpu": 8000}, "price_per_hour": 98.32, "max_count": 8}


def full_cluster() -> Snapshot:
    """Two 8-GPU nodes in one leaf, both held by a run nobody may preempt."""
    nodes = [make_node(f"n{i}", gpus=8, leaf="leaf-a") for i in range(2)]
    return make_snapshot(nodes=nodes, groups=[make_gang("busy", replicas=2, gpus=8, running_on=["n0", "n1"], preemptable=False)])


def ask(client: TestClient, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post("/v1/what-if", json=body)
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


def test_an_added_hard_leaf_gang_gets_its_nodes_in_the_leaf(client: TestClient) -> None:
    base = full_cluster()
    job = {**WHAT_IF_EXAMPLE["changes"]["add_jobs"][0]}
    job["spec"] = {**job["spec"], "queue": "default", "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    template = {**P5, "hypernodes": ["leaf-a"]}
    body = {"snapshot": snapshot_json(base), "changes": {"add_jobs": [job]}, "scale_up": [template], "options": {"time_limit_s": 1}}
    answer = ask(client, body)
    plan = ScaleUpPlan.model_validate(answer["scale_up"])
    assert plan.started == ("default/finetune",)
    assert [(row.template, row.domain, len(row.nodes)) for row in plan.bought] == [("p5", "leaf-a", 2)]
    assert answer["jobs"][0]["starts"] is False, "without the bought nodes it waits"
    changed = apply_changes(base, Changes(add_jobs=(("changes.add_jobs", 1, job),)), submitted_at_s=0.0).snapshot
    bigger = extended_by_plan(changed, read_node_templates([template], source="t"), plan)
    assert check_placement(bigger, Placement(binds=plan.binds, evictions=plan.evictions)) == ()


def test_without_scale_up_there_is_no_plan(client: TestClient) -> None:
    assert ask(client, {"snapshot": snapshot_json(full_cluster())})["scale_up"] is None


@pytest.mark.parametrize(
    ("template", "loc", "words"),
    [
        ({**P5, "price_per_hour": -1}, ["body", "scale_up", 0, "price_per_hour"], "greater than or equal to 0"),
        ({**P5, "max_count": -2}, ["body", "scale_up", 0, "max_count"], "greater than or equal to 0"),
        ({**P5, "colour": "red"}, ["body", "scale_up", 0, "colour"], "Extra inputs are not permitted"),
        ({**P5, "hypernodes": ["leaf-z"]}, ["body", "scale_up", 0, "hypernodes", 0], "no HyperNode 'leaf-z'"),
    ],
    ids=["a negative price", "a negative max count", "an unknown key", "an unknown HyperNode"],
)
def test_a_bad_template_is_a_422_naming_its_field(client: TestClient, template: dict[str, Any], loc: list[Any], words: str) -> None:
    answer = ask(client, {"snapshot": snapshot_json(full_cluster()), "scale_up": [template]}, status=422)
    (problem,) = answer["detail"]
    assert problem["loc"] == loc
    assert words in problem["msg"]
