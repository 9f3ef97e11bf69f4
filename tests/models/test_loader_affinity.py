"""Loading affinity: required node affinity read from Pods, vcjob task templates and a
PodGroup's pods, a malformed term refused at its field."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.node_affinity import NodeFieldRequirement, NodeSelectorRequirement, NodeSelectorTerm
from tests.models._kube_builders import load, load_error, pod, pod_group, snapshot, task, vcjob

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
TERMS_PATH = f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms"


def _affinity(*terms: dict[str, object]) -> dict[str, object]:
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": list(terms)}}}


def _expression(key: str, operator: str, *values: str) -> dict[str, object]:
    return {"key": key, "operator": operator, "values": list(values)}


H100 = {"matchExpressions": [_expression("gpu", "In", "h100")]}
BY_NAME = {"matchFields": [_expression("metadata.name", "In", "a100-0")]}
H100_TERM = NodeSelectorTerm(match_expressions=(NodeSelectorRequirement(key="gpu", operator="In", values=("h100",)),))
BY_NAME_TERM = NodeSelectorTerm(
    match_fields=(NodeFieldRequirement(key="metadata.name", operator="In", values=("a100-0",)),)
)


def test_a_pods_required_node_affinity_becomes_its_tasks_terms_in_order() -> None:
    loaded = snapshot(pod("p", affinity=_affinity(H100, BY_NAME)))
    assert loaded.pod_groups[0].tasks[0].required_node_affinity == (H100_TERM, BY_NAME_TERM)


def test_a_vcjob_task_templates_required_node_affinity_is_read() -> None:
    loaded = snapshot(vcjob("job", task("worker", replicas=2, affinity=_affinity(H100))))
    assert loaded.pod_groups[0].tasks[0].required_node_affinity == (H100_TERM,)


def test_pods_of_a_pod_group_that_differ_in_affinity_split_their_task() -> None:
    result = load(
        pod_group("pg", minMember=2),
        pod("a", group="pg", affinity=_affinity(H100)),
        pod("b", group="pg"),
    )
    tasks = result.snapshot.pod_groups[0].tasks
    assert sorted(task.required_node_affinity for task in tasks) == [(), (H100_TERM,)]
    assert any("node affinity" in line and "split into tasks" in line for line in result.warnings)


def test_a_pod_without_affinity_requires_nothing_and_gets_no_warning() -> None:
    result = load(pod("p"))
    assert result.snapshot.pod_groups[0].tasks[0].required_node_affinity == ()
    assert result.warnings == ()


@pytest.mark.parametrize(
    ("terms", "path", "message"),
    [
        ([{"matchExpressions": [_expression("gpu", "In")]}], "[0].matchExpressions[0].values", "operator In needs at least one value"),
        ([{"matchExpressions": [_expression("gpu", "NotIn")]}], "[0].matchExpressions[0].values", "operator NotIn needs at least one value"),
        ([{"matchExpressions": [_expression("gpu", "Exists", "x")]}], "[0].matchExpressions[0].values", "operator Exists takes no values"),
        ([H100, {"matchExpressions": [_expression("gen", "Gt", "1", "2")]}], "[1].matchExpressions[0].values", "operator Gt takes exactly one value"),
        ([{"matchExpressions": [_expression("gen", "Lt", "1.5")]}], "[0].matchExpressions[0].values", "operator Lt compares integers, got '1.5'"),
        ([{"matchExpressions": [_expression("gpu", "Equals", "h100")]}], "[0].matchExpressions[0].operator", "Input should be 'In'"),
        ([{"matchExpressions": [{"operator": "Exists"}]}], "[0].matchExpressions[0].key", "at least 1 character"),
        ([{"matchFields": [_expression("metadata.labels", "In", "x")]}], "[0].matchFields[0].key", "'metadata.name'"),
        ([{"matchFields": [_expression("metadata.name", "Exists")]}], "[0].matchFields[0].operator", "'In' or 'NotIn'"),
        ([{"matchFields": [_expression("metadata.name", "In", "a", "b")]}], "[0].matchFields[0].values", "at most 1 item"),
    ],
    ids=[
        "In without values",
        "NotIn without values",
        "Exists with a value",
        "Gt with two values in the second term",
        "Lt with a value that is not an integer",
        "an unknown operator",
        "a requirement without a key",
        "matchFields on a field other than the name",
        "matchFields with Exists",
        "matchFields In two names",
    ],
)
def test_a_malformed_term_is_an_error_naming_its_field(terms: list[dict[str, object]], path: str, message: str) -> None:
    error = load_error(pod("p", affinity=_affinity(*terms)))
    assert error.startswith(f"test.yaml: document 1 (Pod default/p): {TERMS_PATH}{path}: ")
    assert message in error


def test_required_affinity_without_terms_is_an_error_naming_the_field() -> None:
    error = load_error(pod("p", affinity=_affinity()))
    assert error == (
        f"test.yaml: document 1 (Pod default/p): {TERMS_PATH}: must have at least one node selector term"
    )


def test_a_malformed_term_in_a_vcjob_task_names_the_template_field() -> None:
    error = load_error(vcjob("job", task("worker", affinity=_affinity({"matchExpressions": [_expression("g", "In")]}))))
    assert f"spec.tasks[0].template.{TERMS_PATH}[0].matchExpressions[0].values: " in error


def test_preferred_node_affinity_is_read_with_its_weights_in_order() -> None:
    preferred = [{"weight": 80, "preference": H100}, {"weight": 5, "preference": BY_NAME}]
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    result = load(vcjob("job", task("worker", affinity=affinity)))
    (task_model,) = result.snapshot.pod_groups[0].tasks
    assert [(term.weight, term.preference) for term in task_model.preferred_node_affinity] == [(80, H100_TERM), (5, BY_NAME_TERM)]
    assert task_model.required_node_affinity == () and result.warnings == ()


@pytest.mark.parametrize(
    ("item", "path", "message"),
    [
        ({"weight": 0, "preference": H100}, "[0].weight", "must be 1-100, got 0"),
        ({"weight": 101, "preference": H100}, "[0].weight", "must be 1-100, got 101"),
        ({"preference": H100}, "[0].weight", "must be 1-100, got None"),
        ({"weight": 1, "preference": {"matchExpressions": [_expression("gpu", "Gt", "a")]}},
         "[0].preference.matchExpressions[0].values", "operator Gt compares integers"),
    ],
    ids=["weight 0", "weight 101", "no weight", "a malformed preference"],
)
def test_a_malformed_preferred_term_is_an_error_naming_its_field(item: dict[str, object], path: str, message: str) -> None:
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [item]}}
    error = load_error(pod("p", affinity=affinity))
    assert f"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution{path}: {message}" in error


def test_the_docs_name_each_affinity_field_hard_and_soft_as_the_rules_read_them() -> None:
    page = (Path(__file__).parents[2] / "docs" / "affinity.md").read_text()
    section = page.split("# Affinity and spread", 1)[1].split("\n#", 1)[0]
    rows = {line.split("|")[1].strip(): line.split("|")[3].strip() for line in section.splitlines() if line.startswith("| `")}
    assert rows[f"`spec.affinity.nodeAffinity.{REQUIRED}`"].startswith("**hard**")
    assert rows["`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`"].startswith("**soft**")
    assert "not read" not in "".join(rows.values())
    for rule in ("pod_affinity", "topology_spread"):
        assert any(value.startswith("**hard**") and f"`{rule}`" in value for value in rows.values()), rule
