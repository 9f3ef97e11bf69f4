"""A key written twice in one YAML mapping is an input error naming file, document, line and
key, as kubectl refuses it: with "last one wins" a Node with `status:` twice used the second,
and two objects run together without `---` became one (a GPU node vanished into a Job)."""

from __future__ import annotations

import pytest

from models.errors import InputFormatError
from models.loaders.kube_yaml import load_snapshot_yaml_text, parse_yaml_documents

NODE_STATUS_TWICE = """\
apiVersion: v1
kind: Node
metadata: {name: gpu-0}
status:
  allocatable: {cpu: "8", nvidia.com/gpu: "8"}
status:
  allocatable: {cpu: "8"}
"""

NODE_THEN_JOB_WITHOUT_SEPARATOR = """\
apiVersion: v1
kind: Node
metadata: {name: gpu-0}
status: {allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "8"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status: {allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "8"}}
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  tasks:
    - replicas: 1
      template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: "8"}}}]}}
"""


def _error(text: str) -> str:
    with pytest.raises(InputFormatError) as caught:
        load_snapshot_yaml_text(text, source="cluster.yaml")
    return str(caught.value)


def test_a_node_with_status_twice_is_refused_naming_line_and_key() -> None:
    assert _error(NODE_STATUS_TWICE) == (
        'cluster.yaml: document 1: not valid YAML: key "status" already set in map (first at line 4) (line 6, column 1)'
    )


def test_two_objects_run_together_are_refused_not_merged() -> None:
    assert _error(NODE_THEN_JOB_WITHOUT_SEPARATOR) == (
        'cluster.yaml: document 2: not valid YAML: key "apiVersion" already set in map (first at line 6) '
        "(line 10, column 1)"
    )


def test_a_duplicate_deep_inside_names_its_own_line() -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {app: a, app: b}\n"
    assert 'key "app" already set in map (first at line 5) (line 5, column 20)' in _error(text)


def test_a_quoted_and_a_plain_key_of_the_same_text_are_the_same_key() -> None:
    assert 'key "kind" already set' in _error('apiVersion: v1\nkind: Node\n"kind": Pod\n')


def test_a_merge_key_may_be_overridden_as_yaml_means_it() -> None:
    text = "base: &b {cpu: '1', memory: 1Gi}\nmerged:\n  <<: *b\n  cpu: '2'\n"
    assert parse_yaml_documents(text, source="x") == [("x", 1, {"base": {"cpu": "1", "memory": "1Gi"},
                                                               "merged": {"cpu": "2", "memory": "1Gi"}})]


def test_the_same_key_in_two_mappings_is_fine() -> None:
    text = "a: {name: x}\nb: {name: y}\n---\na: {name: z}\n"
    assert [doc for _, _, doc in parse_yaml_documents(text, source="x")] == [
        {"a": {"name": "x"}, "b": {"name": "y"}},
        {"a": {"name": "z"}},
    ]
