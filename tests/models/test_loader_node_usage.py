"""The `batchplace.io/usage` node annotation: a node's measured load in a file."""

from __future__ import annotations

import pytest

from models.snapshot import NodeUsage, Snapshot
from tests.models._kube_builders import load_error, node, snapshot

KEY = "batchplace.io/usage"
AT = "2024-05-01T12:00:00Z"
AT_S = 1_714_564_800.0


def _usage(text: str) -> NodeUsage | None:
    return snapshot(node("n1", annotations={KEY: text})).nodes[0].usage


def test_the_annotation_becomes_the_nodes_usage() -> None:
    assert _usage(f"cpu=91.5,memory=40%, gpu=70 ,observed={AT},window=300s") == NodeUsage(
        cpu_percent=91.5, memory_percent=40, gpu_percent=70, observed_at_s=AT_S, window_s=300
    )


def test_parts_may_be_left_out_and_the_time_may_be_unix_seconds() -> None:
    assert _usage(f"memory=12,observed={AT_S:.0f}") == NodeUsage(memory_percent=12, observed_at_s=AT_S)


def test_a_node_without_the_annotation_has_no_usage_and_json_round_trips() -> None:
    loaded = snapshot(node("n1"), node("n2", annotations={KEY: f"cpu=5,observed={AT}"}))
    assert loaded.nodes[0].usage is None
    assert Snapshot.model_validate_json(loaded.model_dump_json()) == loaded


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"cpu=hot,observed={AT}", "cpu: expected a percent from 0 to 1000 such as 73.5, got 'hot'"),
        (f"cpu=1001,observed={AT}", "cpu: expected a percent from 0 to 1000"),
        (f"memory=-1,observed={AT}", "memory: expected a percent"),
        (f"gpu=nan,observed={AT}", "gpu: expected a percent"),
        ("cpu=50", "observed: required"),
        ("cpu=50,observed=yesterday", "observed: expected an RFC 3339 time"),
        (f"cpu=50,observed={AT},window=long", "window: expected seconds"),
        (f"cpu=50,load=3,observed={AT}", "expected name=value parts named cpu, memory, gpu, online-cpu, online-memory, observed, window, got 'load=3'"),
        (f"cpu=50,cpu=60,observed={AT}", "cpu: given twice"),
    ],
    ids=[
        "a word for a percent",
        "a percent past the ceiling",
        "a negative percent",
        "not a number",
        "no observation time",
        "a time that is no time",
        "a window that is no number",
        "an unknown part",
        "a part given twice",
    ],
)
def test_a_bad_part_is_a_field_error_at_the_annotation_naming_the_part(text: str, message: str) -> None:
    error = load_error(node("n1", annotations={KEY: text}))
    assert "(Node n1): metadata.annotations.batchplace.io/usage: " in error
    assert message in error


def test_online_gpu_parts_give_each_devices_online_percent() -> None:
    """`online-gpu<i>`: percent of device i online work uses; devices left out are not measured."""
    loaded = snapshot(node("n1", gpus=4, annotations={KEY: f"online-gpu0=35,online-gpu2=80%,observed={AT}"}))
    assert loaded.nodes[0].usage == NodeUsage(online_gpu_device_percent={0: 35, 2: 80}, observed_at_s=AT_S)
    assert Snapshot.model_validate_json(loaded.model_dump_json()) == loaded


@pytest.mark.parametrize(
    ("gpus", "text", "message"),
    [
        (4, f"online-gpu4=10,observed={AT}", "online-gpu4: the node has GPU devices 0-3"),
        (0, f"online-gpu0=10,observed={AT}", "online-gpu0: the node has no GPU devices"),
        (4, f"online-gpu1=busy,observed={AT}", "online-gpu1: expected a percent from 0 to 1000 such as 73.5, got 'busy'"),
        (4, f"online-gpu1=2000,observed={AT}", "online-gpu1: expected a percent from 0 to 1000"),
        (4, f"online-gpu1=5,online-gpu1=6,observed={AT}", "online-gpu1: given twice"),
        (4, f"online-gpux=5,observed={AT}", "got 'online-gpux=5' (and per GPU device online-gpu<i>)"),
    ],
    ids=["index past the devices", "no devices", "a word", "past the ceiling", "twice", "no index"],
)
def test_a_bad_online_gpu_part_is_a_field_error_naming_the_device(gpus: int, text: str, message: str) -> None:
    error = load_error(node("n1", gpus=gpus, annotations={KEY: text}))
    assert "(Node n1): metadata.annotations.batchplace.io/usage: " in error
    assert message in error
