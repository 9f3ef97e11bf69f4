"""Loading pod (anti-)affinity and topology spread constraints: read from Pods, vcjob task
templates and running pods, resolved against the pod (namespaces, matchLabelKeys), a
malformed constraint refused at its field."""

from __future__ import annotations

import pytest

from models.pod_affinity import LabelSelector, LabelSelectorRequirement, PodAffinityTerm, TopologySpreadConstraint
from tests.models._kube_builders import load, load_error, node, pod, snapshot, task, vcjob

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
WEB = {"matchLabels": {"app": "web"}}


def _anti(**term: object) -> dict[str, object]:
    return {"podAntiAffinity": {REQUIRED: [{"labelSelector": WEB, "topologyKey": "kubernetes.io/hostname", **term}]}}


def test_required_anti_affinity_is_read_with_the_pods_namespace_and_labels() -> None:
    loaded = snapshot(pod("p", namespace="team", labels={"app": "web"}, affinity=_anti()))
    (task_model,) = loaded.pod_groups[0].tasks
    assert task_model.labels == {"app": "web"}
    assert task_model.inter_pod.required_anti_affinity == (
        PodAffinityTerm(label_selector=LabelSelector(match_labels={"app": "web"}), topology_key="kubernetes.io/hostname"),
    )
    assert not task_model.inter_pod.required_affinity and not task_model.inter_pod.topology_spread


def test_preferred_affinity_keeps_its_weight_and_an_empty_namespace_selector_means_every_namespace() -> None:
    affinity = {"podAffinity": {PREFERRED: [{"weight": 30, "podAffinityTerm": {"labelSelector": WEB, "topologyKey": "zone", "namespaceSelector": {}}}]}}
    (weighted,) = snapshot(pod("p", affinity=affinity)).pod_groups[0].tasks[0].inter_pod.preferred_affinity
    assert weighted.weight == 30 and weighted.term.all_namespaces and weighted.term.topology_key == "zone"


def test_match_label_keys_pin_the_selector_to_the_pods_own_values() -> None:
    affinity = _anti(matchLabelKeys=["rev", "absent"], mismatchLabelKeys=["tenant"])
    (term,) = snapshot(pod("p", labels={"app": "web", "rev": "7", "tenant": "a"}, affinity=affinity)).pod_groups[0].tasks[0].inter_pod.required_anti_affinity
    assert term.label_selector is not None
    assert LabelSelectorRequirement(key="rev", operator="In", values=("7",)) in term.label_selector.match_expressions
    assert LabelSelectorRequirement(key="tenant", operator="NotIn", values=("a",)) in term.label_selector.match_expressions
    assert all(r.key != "absent" for r in term.label_selector.match_expressions)


def test_a_namespace_selector_with_labels_is_named_as_not_read() -> None:
    affinity = _anti(namespaceSelector={"matchLabels": {"team": "a"}})
    assert load(pod("p", affinity=affinity)).warnings == (
        "test.yaml: document 1 (Pod default/p): spec.affinity.*.namespaceSelector not read; placement ignores them",
    )


def test_topology_spread_is_read_with_kubernetes_defaults() -> None:
    spread = [{"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": WEB, "minDomains": 3}]
    (constraint,) = snapshot(pod("p", labels={"app": "web"}, topologySpreadConstraints=spread)).pod_groups[0].tasks[0].inter_pod.topology_spread
    assert constraint == TopologySpreadConstraint(
        max_skew=2, topology_key="zone", when_unsatisfiable="DoNotSchedule", label_selector=LabelSelector(match_labels={"app": "web"}), min_domains=3
    )
    assert constraint.node_affinity_policy == "Honor" and constraint.node_taints_policy == "Ignore"


@pytest.mark.parametrize(
    ("spread", "message"),
    [
        ({"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}, "spec.topologySpreadConstraints[0].maxSkew: must be >= 1, got 0"),
        ({"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}, "spec.topologySpreadConstraints[0].topologyKey"),
        ({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}, "spec.topologySpreadConstraints[0].whenUnsatisfiable"),
        ({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}, "minDomains is allowed only with whenUnsatisfiable DoNotSchedule"),
    ],
    ids=["maxSkew 0", "no topologyKey", "bad whenUnsatisfiable", "minDomains when soft"],
)
def test_a_malformed_spread_constraint_is_an_error_naming_its_field(spread: dict[str, object], message: str) -> None:
    assert message in load_error(pod("p", topologySpreadConstraints=[spread]))


@pytest.mark.parametrize(
    ("term", "message"),
    [
        ({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}, "topologyKey": "zone"},
         f"spec.affinity.podAntiAffinity.{REQUIRED}[0].labelSelector.matchExpressions[0].values: operator In needs at least one value"),
        ({"labelSelector": WEB}, f"spec.affinity.podAntiAffinity.{REQUIRED}[0].topologyKey"),
    ],
    ids=["In without values", "no topologyKey"],
)
def test_a_malformed_pod_affinity_term_is_an_error_naming_its_field(term: dict[str, object], message: str) -> None:
    assert message in load_error(pod("p", affinity={"podAntiAffinity": {REQUIRED: [term]}}))


def test_a_weight_out_of_range_is_an_error() -> None:
    affinity = {"podAffinity": {PREFERRED: [{"weight": 0, "podAffinityTerm": {"labelSelector": WEB, "topologyKey": "zone"}}]}}
    assert f"spec.affinity.podAffinity.{PREFERRED}[0].weight: must be 1-100, got 0" in load_error(pod("p", affinity=affinity))


def test_a_vcjob_tasks_pods_carry_the_labels_volcanos_job_controller_gives_them() -> None:
    loaded = snapshot(vcjob("job", task("worker", replicas=2, affinity=_anti()), queue="default"))
    (task_model,) = loaded.pod_groups[0].tasks
    assert task_model.labels["volcano.sh/job-name"] == "job"
    assert task_model.labels["volcano.sh/task-spec"] == "worker"
    assert task_model.labels["volcano.sh/queue-name"] == "default"
    assert len(task_model.inter_pod.required_anti_affinity) == 1


def test_a_tasks_labels_are_those_every_pod_carries() -> None:
    pods = [pod(f"w{i}", group=None, labels={"app": "web", "index": str(i)}) for i in range(2)]
    groups = snapshot(*pods).pod_groups
    assert all(group.tasks[0].labels == {"app": "web", "index": group.name[-1]} for group in groups)


def test_a_running_pod_keeps_its_labels_and_its_required_anti_affinity() -> None:
    loaded = snapshot(node("n1"), pod("r", node="n1", labels={"app": "web"}, affinity=_anti()))
    (running,) = loaded.pods
    assert running.labels == {"app": "web"}
    assert running.required_anti_affinity[0].topology_key == "kubernetes.io/hostname"
