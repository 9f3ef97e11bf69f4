"""`batchplace.io/last-checkpoint`: a running pod's last checkpoint, an RFC 3339 time; a
value that is not one is a field error naming the annotation."""

from __future__ import annotations

from tests.models._kube_builders import load_error, node, pod, snapshot

KEY = "batchplace.io/last-checkpoint"


def test_a_running_pod_carries_its_last_checkpoint() -> None:
    loaded = snapshot(node("n1"), pod("p", node="n1", annotations={KEY: "2024-05-01T12:00:00Z"}, phase="Running"))
    assert loaded.pod_by_key["default/p"].checkpoint_time == 1714564800.0


def test_a_checkpoint_that_is_not_a_time_is_a_field_error_naming_the_annotation() -> None:
    message = load_error(node("n1"), pod("p", node="n1", annotations={KEY: "banana"}, phase="Running"))
    assert f"metadata.annotations.{KEY}" in message and "RFC 3339" in message
