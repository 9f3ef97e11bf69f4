"""Documents and files: multi-document YAML, Lists, unknown kinds, files on disk, the JSON
form, the public API, and every example file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

import models.loaders
from models.errors import FieldError, InputFormatError
from models.loaders import (
    LoadResult,
    load_snapshot_documents,
    load_snapshot_files,
    load_snapshot_json,
    load_snapshot_yaml_text,
    snapshot_to_json,
)
from models.snapshot import NetworkTopology, Snapshot
from tests.models._kube_builders import load, node, pod, snapshot, vcjob

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CLUSTER_YAML = """\
apiVersion: v1
kind: Node
metadata:
  name: n1
status:
  allocatable: {cpu: "4", memory: 8Gi}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: x
  namespace: default
---
"""


def test_the_public_api_is_pinned() -> None:
    assert sorted(models.loaders.__all__) == [
        "DEFAULT_SCHEDULER_NAMES",
        "LoadResult",
        "load_snapshot_documents",
        "load_snapshot_files",
        "load_snapshot_json",
        "load_snapshot_yaml_text",
        "snapshot_to_json",
    ]


def test_multi_document_yaml_text_loads_and_skips_a_trailing_empty_document() -> None:
    result = load_snapshot_yaml_text(CLUSTER_YAML, source="cluster.yaml")
    assert isinstance(result, LoadResult)
    assert [n.name for n in result.snapshot.nodes] == ["n1"]


def test_an_unknown_kind_is_skipped_with_exactly_one_warning() -> None:
    result = load_snapshot_yaml_text(CLUSTER_YAML, source="cluster.yaml")
    assert result.warnings == (
        "cluster.yaml: document 2 (ConfigMap default/x): kind v1/ConfigMap is not used; skipped",
    )


def test_each_unknown_object_gets_its_own_warning() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "web"}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    result = load(deployment, service, deployment | {"metadata": {"name": "e"}})
    assert result.warnings == (
        "test.yaml: document 1 (Deployment web/d): kind apps/v1/Deployment is not used; skipped",
        "test.yaml: document 2 (Service default/s): kind v1/Service is not used; skipped",
        "test.yaml: document 3 (Deployment default/e): kind apps/v1/Deployment is not used; skipped",
    )


def test_a_kind_list_expands_its_items_as_kubectl_get_prints_them() -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [node("n1"), node("n2"), pod("p")]}
    loaded = snapshot(listed)
    assert [n.name for n in loaded.nodes] == ["n1", "n2"]
    assert [p.name for p in loaded.pods] == ["p"]


def test_items_of_a_typed_list_take_their_kind_from_the_list() -> None:
    bare = {key: value for key, value in node("n1").items() if key not in ("kind", "apiVersion")}
    assert [n.name for n in snapshot({"apiVersion": "v1", "kind": "NodeList", "items": [bare]}).nodes] == ["n1"]


def test_an_error_inside_a_list_item_names_the_item_and_its_path() -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [node("n1"), pod("p", cpu="-1")]}
    with pytest.raises(FieldError) as caught:
        load(listed)
    assert str(caught.value) == (
        "test.yaml: document 1 (Pod default/p): "
        "items[1].spec.containers[0].resources.requests.cpu: must be >= 0, got -1"
    )


def test_an_unknown_kind_inside_a_list_gets_one_warning() -> None:
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}],
    }
    assert load(listed).warnings == ("test.yaml: document 1 (Secret default/s): kind v1/Secret is not used; skipped",)


def test_documents_from_several_sources_keep_their_names_in_errors() -> None:
    documents = [("cluster.yaml", 1, node("n1")), ("jobs.yaml", 3, vcjob("job-a-1", {"name": "w", "replicas": -2}))]
    with pytest.raises(FieldError) as caught:
        load_snapshot_documents(documents)
    assert (
        str(caught.value) == "jobs.yaml: document 3 (Job default/job-a-1): spec.tasks[0].replicas: must be >= 0, got -2"
    )


def test_files_are_read_together_into_one_snapshot(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER_YAML)
    (tmp_path / "jobs.yaml").write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n"
        "spec:\n  tasks:\n  - {name: w, replicas: 2, template: {spec: {containers: [{name: c}]}}}\n"
    )
    result = load_snapshot_files([tmp_path / "cluster.yaml", str(tmp_path / "jobs.yaml")])
    assert [p.name for p in result.snapshot.pods] == ["j-w-0", "j-w-1"]
    assert result.warnings[0].startswith(f"{tmp_path / 'cluster.yaml'}: document 2 (ConfigMap default/x)")


def test_a_directory_reads_its_manifest_files_in_name_order_as_kubectl_apply_does(tmp_path: Path) -> None:
    """`.yaml`, `.yml` and `.json` files, sorted by name; other files and subdirectories are
    not read (a subdirectory's broken YAML would fail the load)."""
    (tmp_path / "b-jobs.yml").write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n"
        "spec:\n  tasks:\n  - {name: w, replicas: 1, template: {spec: {containers: [{name: c}]}}}\n"
    )
    (tmp_path / "a-cluster.yaml").write_text(CLUSTER_YAML)
    node_two = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi"}}}
    (tmp_path / "c-node.json").write_text(json.dumps(node_two))
    (tmp_path / "notes.txt").write_text("not: [yaml")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "broken.yaml").write_text("not: [yaml")
    result = load_snapshot_files([tmp_path])
    assert [n.name for n in result.snapshot.nodes] == ["n1", "n2"]
    assert [p.name for p in result.snapshot.pods] == ["j-w-0"]
    assert result.warnings[0].startswith(f"{tmp_path / 'a-cluster.yaml'}: document 2 (ConfigMap default/x)")


def test_a_directory_without_manifests_is_an_input_format_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# cycle 12")
    with pytest.raises(InputFormatError) as caught:
        load_snapshot_files([tmp_path])
    assert str(caught.value) == f"{tmp_path}: the directory holds no manifest file (ending .json, .yaml, .yml)"


def test_a_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(CLUSTER_YAML))
    result = load_snapshot_files(["-"])
    assert [n.name for n in result.snapshot.nodes] == ["n1"]
    assert result.warnings[0].startswith("<stdin>: document 2 (ConfigMap default/x)")


def test_a_missing_file_is_an_input_format_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match=r"missing\.yaml: cannot read the file"):
        load_snapshot_files([tmp_path / "missing.yaml"])


def test_a_file_that_is_not_utf8_is_an_input_format_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_bytes(b"\xff\xfe\x00kind")
    with pytest.raises(InputFormatError, match=r"bad\.yaml: cannot read the file"):
        load_snapshot_files([tmp_path / "bad.yaml"])


def test_yaml_timestamps_parsed_by_the_yaml_library_are_read_as_unix_seconds() -> None:
    text = (
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n"
        "metadata: {name: j, creationTimestamp: 2024-05-01T12:00:00Z}\n"
        "spec:\n  tasks: [{replicas: 0, template: {spec: {containers: [{name: c, image: x}]}}}]\n"
    )
    assert load_snapshot_yaml_text(text).snapshot.pod_groups[0].creation_time == 1714564800.0


# ---- the JSON form ----


def test_snapshot_json_round_trips() -> None:
    original = snapshot(node("n1", gpus=2), vcjob("j"), pod("r", node="n1", gpus=1))
    text = snapshot_to_json(original)
    assert json.loads(text) == original.model_dump(mode="json")
    assert load_snapshot_json(text, source="s.json") == original
    assert load_snapshot_json(text.encode()) == original
    assert load_snapshot_json(json.loads(text)) == original


def test_snapshot_json_is_indented_by_two() -> None:
    assert snapshot_to_json(Snapshot()).splitlines()[1].startswith('  "nodes"')


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (
            {"nodes": [{"name": "n1", "allocatable": {}, "colour": "red"}]},
            "s.json: nodes[0].colour: Extra inputs are not permitted",
        ),
        (
            {"nodes": [{"name": "n1", "allocatable": {"cpu": -1}}]},
            "s.json: nodes[0].allocatable.cpu: Input should be greater than or equal to 0",
        ),
        ({"queues": [{"name": "q", "weight": "heavy"}]}, "s.json: queues[0].weight: Input should be a valid integer"),
        (
            {"pods": [{"namespace": "d", "name": "p", "phase": "pending"}]},
            "s.json: pods[0]: a pending pod needs its pod_group and task",
        ),
        ({"nodes": [{"name": "n", "allocatable": {}}, {"name": "n", "allocatable": {}}]}, "s.json: duplicate node 'n'"),
    ],
    ids=[
        "an unknown key",
        "a negative quantity",
        "a wrong type",
        "a model rule",
        "a cross-object rule",
    ],
)
def test_bad_snapshot_json_is_a_field_error_with_the_path(payload: dict[str, object], expected: str) -> None:
    with pytest.raises(FieldError) as caught:
        load_snapshot_json(json.dumps(payload), source="s.json")
    assert str(caught.value).startswith(expected)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"queues": ["x"]}, "<input>: queues[0]: Input should be a valid dictionary"),
        ({"queues": 5}, "<input>: queues: Input should be a valid tuple"),
        (
            {"nodes": [{"name": "n", "allocatable": 5}]},
            "<input>: nodes[0].allocatable: Input should be a valid dictionary",
        ),
        ({"nodes": [{"name": "n", "allocatable": ["cpu"]}]}, "<input>: nodes[0].allocatable: Input should be"),
        ({"nodes": 5}, "<input>: nodes: Input should be a valid tuple"),
        ({"queues": [None]}, "<input>: queues[0]: Input should be a valid dictionary"),
    ],
    ids=[
        "a queue that is a string",
        "queues that are a number",
        "allocatable that is a number",
        "allocatable that is a list",
        "nodes that are a number",
        "a queue that is null",
    ],
)
def test_wrong_shapes_the_snapshot_validators_read_early_are_field_errors(
    payload: dict[str, object], expected: str
) -> None:
    with pytest.raises(FieldError) as caught:
        load_snapshot_json(payload)
    assert str(caught.value).startswith(expected)


def test_several_json_errors_are_counted_in_the_message() -> None:
    with pytest.raises(FieldError, match=r"\(and 1 more error\)"):
        load_snapshot_json({"nodes": [{"name": "n", "allocatable": {"cpu": -1, "memory": -1}}]})


@pytest.mark.parametrize(
    "text",
    ["{not json", "[1, 2]", '"a string"', b"\xff"],
    ids=["malformed JSON", "a JSON list", "a JSON string", "bytes that are not UTF-8"],
)
def test_json_that_is_not_an_object_is_an_input_format_error(text: str | bytes) -> None:
    with pytest.raises(InputFormatError):
        load_snapshot_json(text, source="s.json")


# ---- examples ----

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def test_every_named_example_exists() -> None:
    assert {path.name for path in EXAMPLE_FILES} == {
        "hello-volcano-job.yaml",
        "queue-weights.yaml",
        "gang-min-available-20.yaml",
        "gang-min-available-4.yaml",
        "workflow-job.yaml",
        "gpu-topology.yaml",
        "gpu-model-affinity.yaml",
        "mpi-job.yaml",
        "pytorch-job.yaml",
        "dra-gpus.yaml",
        "lws-disaggregated-serving.yaml",
        "subgroup-training.yaml",
    }


VOLCANO_POLICIES = "are for Volcano's job controller; placement does not read them"
KUBEFLOW_RESTART = (
    "spec.pytorchReplicaSpecs.Master.restartPolicy, spec.pytorchReplicaSpecs.Worker.restartPolicy "
    "are for Kubeflow's training operator; placement does not read them"
)
EXAMPLE_WARNINGS = {
    "hello-volcano-job.yaml": (
        f"document 5 (Job default/hello-volcano-job): spec.policies, spec.tasks[nginx].policies {VOLCANO_POLICIES}",
    ),
    "mpi-job.yaml": (
        f"document 10 (Job default/lm-mpi-job): spec.plugins (ssh, svc), spec.tasks[mpimaster].policies {VOLCANO_POLICIES}",
        f"document 11 (Job default/lm-mpi-job-gpu): spec.plugins (ssh, svc), spec.tasks[mpimaster].policies "
        f"{VOLCANO_POLICIES}",
    ),
    "pytorch-job.yaml": (
        f"document 7 (PyTorchJob default/bert-finetune): {KUBEFLOW_RESTART}",
        f"document 8 (PyTorchJob default/resnet-ddp): {KUBEFLOW_RESTART}",
    ),
}
"""What the examples are warned about: the fields of jobs as users submit them that only
their job controllers read. Every other example loads without a warning."""


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[path.stem for path in EXAMPLE_FILES])
def test_every_example_loads_with_only_the_warnings_it_promises_and_says_what_it_shows(path: Path) -> None:
    result = load_snapshot_files([path])
    assert result.warnings == tuple(f"{path}: {line}" for line in EXAMPLE_WARNINGS.get(path.name, ()))
    assert path.read_text().startswith(f"# {path.stem}: ")
    assert "# Expected:" in path.read_text()
    assert result.snapshot.pods


def test_queue_weights_example_has_six_one_pod_jobs_per_queue_on_3000m() -> None:
    loaded = load_snapshot_files([EXAMPLES / "queue-weights.yaml"]).snapshot
    assert sorted(g.queue for g in loaded.pod_groups) == ["queue-a"] * 6 + ["queue-b"] * 6
    assert {p.requests["cpu"] for p in loaded.pods} == {500}
    assert sum(n.allocatable["cpu"] for n in loaded.nodes) == 3000
    assert (loaded.queue_by_name["queue-a"].weight, loaded.queue_by_name["queue-b"].weight) == (1, 2)


def test_gpu_topology_example_leaves_two_whole_free_nodes_only_in_leaf_b() -> None:
    loaded = load_snapshot_files([EXAMPLES / "gpu-topology.yaml"]).snapshot
    held: dict[str, int] = {}
    for running in (p for p in loaded.pods if p.phase == "running"):
        held[running.node] = held.get(running.node, 0) + len(running.gpu_indices)  # type: ignore[index]
    free_nodes = {n.name for n in loaded.nodes if held.get(n.name, 0) == 0}
    assert free_nodes == {"gpu-a-0", "gpu-b-0", "gpu-b-1"}
    assert loaded.hypernode_chain["gpu-b-0"] == ("leaf-b", "spine")
    gang = loaded.pod_groups[0]
    assert (gang.min_member, gang.network_topology.mode, gang.network_topology.highest_tier_allowed) == (2, "hard", 1)  # type: ignore[union-attr]
    assert all(p.requests["gpu"] == 8000 for p in loaded.pods if p.phase == "pending")


def test_gpu_model_affinity_example_requires_the_h100_model_and_prefers_zone_b() -> None:
    loaded = load_snapshot_files([EXAMPLES / "gpu-model-affinity.yaml"]).snapshot
    finetune = loaded.pod_group_by_key["default/h100-finetune"].tasks[0]
    infer = loaded.pod_group_by_key["default/batch-infer"].tasks[0]
    (term,) = finetune.required_node_affinity
    assert [(r.key, r.operator, r.values) for r in term.match_expressions] == [
        ("nvidia.com/gpu.product", "In", ("NVIDIA-H100-80GB-HBM3",))
    ]
    (preferred,) = infer.preferred_node_affinity
    assert preferred.weight == 50 and preferred.preference.match_expressions[0].values == ("b",)


def test_workflow_example_task_b_depends_on_task_a_and_does_not_hold_the_gang() -> None:
    gang = load_snapshot_files([EXAMPLES / "workflow-job.yaml"]).snapshot.pod_groups[0]
    assert gang.task_by_name["task-b"].depends_on == ("task-a",)
    assert (gang.min_member, gang.task_by_name["task-b"].min_available) == (1, 0)


VOLCANO_MPI_EXAMPLE = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: lm-mpi-job
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins:
    ssh: []
    svc: []
  tasks:
    - replicas: 1
      name: mpimaster
      policies:
        - event: TaskCompleted
          action: CompleteJob
      template:
        spec:
          containers:
            - command:
                - /bin/sh
                - -c
                - |
                  MPI_HOST=`cat /etc/volcano/mpiworker.host | tr "\\n" ","`;
                  mkdir -p /var/run/sshd; /usr/sbin/sshd;
                  mpiexec --allow-run-as-root --host ${MPI_HOST} -np 2 mpi_hello_world;
              image: volcanosh/example-mpi:0.0.1
              name: mpimaster
              ports:
                - containerPort: 22
                  name: mpijob-port
              workingDir: /home
          restartPolicy: OnFailure
    - replicas: 2
      name: mpiworker
      template:
        spec:
          containers:
            - command:
                - /bin/sh
                - -c
                - |
                  mkdir -p /var/run/sshd; /usr/sbin/sshd -D;
              image: volcanosh/example-mpi:0.0.1
              name: mpiworker
              ports:
                - containerPort: 22
                  name: mpijob-port
              workingDir: /home
          restartPolicy: OnFailure
"""
"""Volcano's MPI example as its documentation writes it: the example file holds it verbatim."""


def test_mpi_example_holds_volcanos_mpi_job_verbatim() -> None:
    documents = yaml.safe_load_all((EXAMPLES / "mpi-job.yaml").read_text(encoding="utf-8"))
    (job,) = [d for d in documents if d and d["kind"] == "Job" and d["metadata"]["name"] == "lm-mpi-job"]
    assert job == yaml.safe_load(VOLCANO_MPI_EXAMPLE)


def test_mpi_example_expands_into_a_master_and_two_workers_and_a_gpu_variant_within_one_leaf() -> None:
    loaded = load_snapshot_files([EXAMPLES / "mpi-job.yaml"]).snapshot
    job = loaded.pod_group_by_key["default/lm-mpi-job"]
    assert (job.min_member, job.network_topology) == (3, None)
    assert [(t.name, t.min_available, t.requests) for t in job.tasks] == [("mpimaster", 1, {}), ("mpiworker", 2, {})]
    gpu = loaded.pod_group_by_key["default/lm-mpi-job-gpu"]
    assert (gpu.queue, gpu.min_member) == ("training", 3)
    assert gpu.network_topology == NetworkTopology(mode="hard", highest_tier_allowed=1)
    assert gpu.task_by_name["mpiworker"].requests["gpu"] == 8000
    assert {node: chain[0] for node, chain in loaded.hypernode_chain.items()} == {
        "mpi-a-0": "leaf-a", "mpi-a-1": "leaf-a", "mpi-b-0": "leaf-b", "mpi-b-1": "leaf-b",
    }


def test_pytorch_example_has_two_gangs_of_four_one_asking_for_one_leaf() -> None:
    loaded = load_snapshot_files([EXAMPLES / "pytorch-job.yaml"]).snapshot
    bert, resnet = loaded.pod_group_by_key["default/bert-finetune"], loaded.pod_group_by_key["default/resnet-ddp"]
    assert (bert.min_member, bert.network_topology) == (4, NetworkTopology(mode="hard", highest_tier_allowed=1))
    assert (resnet.min_member, resnet.network_topology) == (4, None)
    assert [(p.name, p.task, p.requests["gpu"]) for p in loaded.pods if p.pod_group == bert.key] == [
        ("bert-finetune-master-0", "master", 1000),
        ("bert-finetune-worker-0", "worker", 1000),
        ("bert-finetune-worker-1", "worker", 1000),
        ("bert-finetune-worker-2", "worker", 1000),
    ]
    assert sum(p.requests["gpu"] for p in loaded.pods if p.pod_group == resnet.key) == 8000
