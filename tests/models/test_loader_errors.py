"""Bad input of every class ends in a SnapshotError naming where, never a raw Python error."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.errors import FieldError, InputFormatError, SnapshotError
from models.loaders import load_snapshot_files, load_snapshot_json, load_snapshot_yaml_text
from tests.models._kube_builders import (
    container,
    hypernode,
    load,
    load_error,
    member,
    node,
    numatopology,
    pod,
    pod_group,
    priority_class,
    pytorch_job,
    queue,
    task,
    vcjob,
    xk8s_pod_group,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: [unclosed", "test.yaml: document 1: not valid YAML:"),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n- a\n- b\n",
            "test.yaml: document 2: expected a Kubernetes object",
        ),
        (
            "just a string\n",
            "test.yaml: document 1: expected a Kubernetes object (a mapping with apiVersion, kind, metadata), "
            "got a string",
        ),
        (
            "apiVersion: v1\nmetadata: {name: x}\n",
            "test.yaml: document 1 (x): not a Kubernetes object: kind is missing",
        ),
        (
            "kind: Node\nmetadata: {name: x}\n",
            "test.yaml: document 1 (Node x): not a Kubernetes object: apiVersion is missing",
        ),
        ("nodes: []\npods: []\n", "this looks like a snapshot in JSON form"),
        (
            "apiVersion: v1\nkind: List\nitems: [3]\n",
            "test.yaml: document 1: items[0]: expected a Kubernetes object, got a number 3",
        ),
        ("apiVersion: v1\nkind: List\nitems: {a: 1}\n", "test.yaml: document 1: items: expected a list, got a mapping"),
    ],
    ids=[
        "malformed YAML",
        "a document that is a list",
        "a document that is a string",
        "a mapping without kind",
        "a mapping without apiVersion",
        "a snapshot JSON fed to the YAML loader",
        "a List item that is not an object",
        "List items that are not a list",
    ],
)
def test_text_that_is_not_kubernetes_objects_is_an_input_format_error(text: str, expected: str) -> None:
    with pytest.raises(InputFormatError) as caught:
        load_snapshot_yaml_text(text, source="test.yaml")
    assert expected in str(caught.value)


def test_a_yaml_error_names_the_document_and_line() -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: [\n"
    with pytest.raises(InputFormatError) as caught:
        load_snapshot_yaml_text(text, source="c.yaml")
    assert str(caught.value).startswith("c.yaml: document 2: not valid YAML:")
    assert "line 7" in str(caught.value)


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        (
            (node("n1"), node("n1")),
            "test.yaml: document 2 (Node n1): duplicate Node 'n1'; the first is in test.yaml: document 1 (Node n1)",
        ),
        ((queue("q"), queue("q")), "test.yaml: document 2 (Queue q): duplicate Queue 'q'"),
        (
            (pod_group("g"), xk8s_pod_group("g")),
            "test.yaml: document 2 (PodGroup default/g): duplicate PodGroup 'default/g'",
        ),
        ((vcjob("j"), pod_group("j")), "duplicate PodGroup 'default/j'"),
        ((pod("p"), pod("p")), "test.yaml: document 2 (Pod default/p): duplicate Pod 'default/p'"),
        ((vcjob("j", task("w")), pod("j-w-0")), "duplicate Pod 'default/j-w-0'"),
        ((hypernode("h", 1), hypernode("h", 2)), "duplicate HyperNode 'h'"),
        ((priority_class("p", 1), priority_class("p", 2)), "duplicate PriorityClass 'p'"),
        ((node("n"), numatopology("n", {}), numatopology("n", {})), "duplicate Numatopology 'n'"),
    ],
    ids=[
        "two nodes",
        "two queues",
        "a Volcano and a scheduler-plugins PodGroup",
        "a vcjob and a PodGroup of its name",
        "two pods",
        "a vcjob pod and a pod of its name",
        "two hypernodes",
        "two priority classes",
        "two numatopologies",
    ],
)
def test_duplicate_names_are_errors_naming_both_documents(objects: tuple[object, ...], expected: str) -> None:
    assert expected in load_error(*objects)


def test_same_names_in_different_namespaces_are_not_duplicates() -> None:
    assert len(load(pod("p", namespace="a"), pod("p", namespace="b")).snapshot.pods) == 2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"apiVersion": "v1", "kind": "Node", "metadata": {}},
            "test.yaml: document 1 (Node): metadata.name: required, got nothing",
        ),
        ({"apiVersion": "v1", "kind": "Node", "metadata": []}, "metadata: expected a mapping, got a list"),
        ({**node("n"), "spec": None}, None),
        (
            {**pod("p"), "spec": "none"},
            "test.yaml: document 1 (Pod default/p): spec: expected a mapping, got a string 'none'",
        ),
        (pod("p", containers={"c": 1}), "spec.containers: expected a list, got a mapping"),  # type: ignore[arg-type]
        (pod("p", containers=["c"]), "spec.containers: item 0: expected a mapping, got a string 'c'"),  # type: ignore[list-item]
        (pod("p", labels={"a": 1}), "metadata.labels.a: expected a string (quote it in YAML), got a number 1"),  # type: ignore[dict-item]
        (pod("p", cpu=True), "requests.cpu: expected a quantity such as 500m or 1Gi, got a boolean True"),
        (pod("p", cpu=[1]), "requests.cpu: expected a quantity such as 500m or 1Gi, got a list"),
        (
            pod("p", containers=[container("1", memory="1.5.5Gi")]),
            "requests.memory: '1.5.5Gi' is not a Kubernetes quantity",
        ),
        (queue("q", weight="2"), "spec.weight: expected an integer, got a string '2'"),
        (queue("q", reclaimable="no"), "spec.reclaimable: expected true or false, got a string 'no'"),
        (pod_group("g", minMember=1.5), "spec.minMember: expected an integer, got 1.5"),
        (pod_group("g", minTaskMember=[1]), "spec.minTaskMember: expected a mapping, got a list"),
        (node("n", taints=[{"key": "k", "effect": "Sometimes"}]), "spec.taints[0].effect: must be one of NoSchedule"),
        (pod("p", tolerations=[{"value": "x"}]), "spec.tolerations[0].operator: must be Exists when key is empty"),
        (hypernode("h", "one"), "spec.tier: expected an integer, got a string 'one'"),
        (hypernode("h", 1, {"type": "Node"}), "spec.members[0].selector: needs exactly one of"),
        (
            {**pod("p"), "metadata": {"name": "p", "creationTimestamp": "yesterday"}},
            "metadata.creationTimestamp: expected an RFC 3339 time",
        ),
        (xk8s_pod_group("g", minMember=-1), "spec.minMember: must be >= 0, got -1"),
    ],
    ids=[
        "metadata without a name",
        "metadata that is a list",
        "a null spec reads as empty",
        "a spec that is a string",
        "containers that are a mapping",
        "a container that is a string",
        "a label value that is a number",
        "a quantity that is a boolean",
        "a quantity that is a list",
        "a quantity with two decimal points",
        "a queue weight that is a string",
        "a reclaimable flag that is a string",
        "a minMember that is a fraction",
        "a minTaskMember that is a list",
        "a taint with an unknown effect",
        "a toleration without key or operator Exists",
        "a hypernode tier that is a word",
        "a hypernode member without selector",
        "a creation timestamp that is not a time",
        "a negative scheduler-plugins minMember",
    ],
)
def test_wrong_types_at_every_level_are_field_errors(raw: dict[str, object], expected: str | None) -> None:
    if expected is None:
        assert load(raw).snapshot.nodes[0].name == "n"
        return
    with pytest.raises(FieldError) as caught:
        load(raw)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (node("n1", gpus=10**9), "above the ceiling of 1024000 milli-GPU (1024 GPUs)"),
        (vcjob("j", task("w", replicas=10**12)), "spec.tasks: the tasks' replicas total 1000000000000"),
        (
            {
                "apiVersion": "nodeinfo.volcano.sh/v1alpha1",
                "kind": "Numatopology",
                "metadata": {"name": "n1"},
                "spec": {"numares": {"cpu": {"allocatable": "0-99999999999"}}, "cpuDetail": {"5": {}}},
            },
            None,
        ),
    ],
    ids=[
        "a billion GPUs on a node is refused",
        "a trillion replicas is refused before any pod is made",
        "a huge cpuset is read as ranges, not expanded",
    ],
)
def test_huge_numbers_are_refused_or_read_without_exhausting_memory(
    raw: dict[str, object], expected: str | None
) -> None:
    if expected is None:
        assert load(node("n1"), raw).snapshot.nodes[0].numa_cells[0].cpu_milli == 1000
        return
    assert expected in load_error(raw)


def test_more_pods_than_a_snapshot_may_hold_are_refused_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("models.loaders.kube_yaml._MAX_PODS", 5)  # the real limit is 500,000: too slow to reach
    objects = [vcjob("j0", task("w", replicas=3)), pod("p"), vcjob("j1", task("w", replicas=2))]
    assert "test.yaml: document 3 (Job default/j1): the input holds more than 5 pods" in load_error(*objects)


# ---- garbage anywhere: a property test ----


def _valid_documents() -> list[object]:
    return [
        priority_class("high", 100, global_default=True),
        node(
            "n1",
            gpus=4,
            labels={"leaf": "a"},
            annotations={"batchplace.io/gpu-numa": "0,0,1,1"},
            taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}],
        ),
        numatopology(
            "n1",
            {
                "numares": {"cpu": {"allocatable": "0-3"}},
                "cpuDetail": {"0": {"numa": 0}, "1": {"numa": 1}},
                "MemoryDetail": {"0": {"memoryMap": {"memory": {"allocatable": 1024}}}},
            },
        ),
        hypernode("leaf", 1, member(labels={"leaf": "a"}), member(regex="^n")),
        queue("q", weight=2, capability={"cpu": "8"}, guarantee={"resource": {"cpu": "1"}}, parent="root"),
        pod_group("g", queue="q", minMember=1, minTaskMember={"main": 1}, networkTopology={"mode": "soft"}),
        pod(
            "a",
            group="g",
            nodeSelector={"leaf": "a"},
            tolerations=[{"key": "gpu", "operator": "Exists"}],
            annotations={"batchplace.io/numa-policy": "best-effort"},
        ),
        pod("r", gpus=1, node="n1", annotations={"batchplace.io/gpus": "1"}, initContainers=[container("2")]),
        vcjob("j", task("a", replicas=2, min_available=1), task("b", depends_on=["a"]), minAvailable=1),
        {"apiVersion": "v1", "kind": "List", "items": [pod("x", gpu_milli=500)]},
    ]


def _paths(value: object, prefix: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


def _replace(document: object, path: tuple[object, ...], garbage: object) -> object:
    if not path:
        return garbage
    document = copy.deepcopy(document)
    parent = document
    for part in path[:-1]:
        parent = parent[part]  # type: ignore[index]
    parent[path[-1]] = garbage  # type: ignore[index]
    return document


_GARBAGE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True)
    | st.text(max_size=5)
    | st.sampled_from(["-1", "1.5", "Always", "0,9", "n1", "Node", "hard", "x,y", "99Gi"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3) | st.integers(0, 2), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_garbage_at_any_place_of_valid_input_raises_only_snapshot_errors(data: st.DataObject) -> None:
    documents = _valid_documents()
    position = data.draw(st.integers(0, len(documents) - 1), label="document")
    paths = list(_paths(documents[position]))
    path = paths[data.draw(st.integers(0, len(paths) - 1), label="path")]
    documents[position] = _replace(documents[position], path, data.draw(_GARBAGE, label="garbage"))
    try:
        load(*documents)
    except SnapshotError as error:
        assert str(error).startswith("test.yaml: ")  # every error says where


def test_the_valid_documents_of_the_property_test_load() -> None:
    result = load(*_valid_documents())
    assert len(result.snapshot.pods) == 6
    assert result.warnings == ()


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_garbage_at_any_place_of_snapshot_json_raises_only_snapshot_errors(data: st.DataObject) -> None:
    valid = load(*_valid_documents()).snapshot.model_dump(mode="json")
    paths = list(_paths(valid))
    path = paths[data.draw(st.integers(0, len(paths) - 1), label="path")]
    broken = _replace(valid, path, data.draw(_GARBAGE, label="garbage"))
    try:
        load_snapshot_json(broken, source="s.json")  # type: ignore[arg-type]
    except SnapshotError as error:
        assert str(error).startswith("s.json")


def test_a_pod_without_containers_is_refused_as_kubernetes_refuses_it() -> None:
    bare = pod("p")
    del bare["spec"]["containers"]
    assert load_error(bare).endswith("spec.containers: a pod needs at least one container (Kubernetes rejects a pod with none)")
    misspelled = task()
    misspelled["template"]["spec"]["contianers"] = misspelled["template"]["spec"].pop("containers")
    message = load_error(vcjob("j", misspelled))
    assert "Job default/j" in message and "spec.tasks[0].template.spec.containers: a pod needs at least one container" in message


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (vcjob("train", task("w", replicas=2)), "duplicate Job 'default/train'"),
        (pytorch_job("bert"), "duplicate PyTorchJob 'default/bert'"),
    ],
    ids=["vcjob", "pytorchjob"],
)
def test_a_job_given_in_two_files_is_named_by_its_kind_and_name_and_both_files(
    tmp_path: Path, job: object, expected: str
) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(yaml.safe_dump_all([node("n1"), job]))
    second.write_text(yaml.safe_dump(job))
    with pytest.raises(SnapshotError) as caught:
        load_snapshot_files([first, second])
    message = str(caught.value)
    kind, name = expected.removeprefix("duplicate ").split(" ")
    ref = f"({kind} {name.strip(chr(39))})"
    assert message == f"{second}: document 1 {ref}: {expected}; the first is in {first}: document 2 {ref}"
    assert "Pod" not in message.replace("PyTorchJob", "")  # not by a pod or PodGroup the job expands into
