"""Loading the cluster side: Node, Numatopology, HyperNode, Queue, PriorityClass."""

from __future__ import annotations

import pytest

from models.snapshot import Gpu, NumaCell, Queue, Taint
from tests.models._kube_builders import (
    container,
    hypernode,
    load,
    load_error,
    member,
    node,
    numatopology,
    pod,
    priority_class,
    queue,
    snapshot,
)

# ---- Node ----


def test_a_node_reads_allocatable_in_base_units() -> None:
    loaded = snapshot(node("n1", cpu="3500m", memory="1.5Gi", gpus=8)).nodes[0]
    assert loaded.allocatable == {"cpu": 3500, "memory": 1610612736, "pods": 110, "gpu": 8000}


def test_a_node_states_its_pod_count_or_allows_the_kubelet_default() -> None:
    limited, unstated = node("n1"), node("n2")
    limited["status"]["allocatable"]["pods"] = "3"  # type: ignore[index]
    del unstated["status"]["allocatable"]["pods"]  # type: ignore[attr-defined]
    assert [n.allocatable["pods"] for n in snapshot(limited, unstated).nodes] == [3, 110]


def test_a_container_requesting_pods_is_an_error_naming_the_field() -> None:
    message = load_error(pod("p", containers=[container("1", pods="1")]))
    assert "spec.containers[0].resources.requests.pods: a container does not request pods" in message


def test_a_node_without_allocatable_falls_back_to_capacity() -> None:
    raw = node("n1")
    raw["status"] = {"capacity": {"cpu": "2", "nvidia.com/gpu": 2}}
    assert snapshot(raw).nodes[0].allocatable == {"cpu": 2000, "gpu": 2000, "pods": 110}


def test_a_node_keeps_other_extended_resources_under_their_own_name() -> None:
    raw = node("n1")
    raw["status"] = {"allocatable": {"cpu": "1", "rdma/hca": "4", "batchplace.io/gpu-milli": "8000"}}
    assert snapshot(raw).nodes[0].allocatable == {"cpu": 1000, "rdma/hca": 4, "pods": 110}


def test_a_node_reads_labels_taints_unschedulable_and_gpu_model() -> None:
    raw = node(
        "n1",
        labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "zone": "a"},
        taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        unschedulable=True,
    )
    loaded = snapshot(raw).nodes[0]
    assert loaded.gpu_model == "NVIDIA-H100-80GB-HBM3"
    assert loaded.labels["zone"] == "a"
    assert loaded.taints == (Taint(key="gpu", value="true", effect="NoSchedule"),)
    assert loaded.unschedulable is True


def test_a_node_is_schedulable_without_taints_by_default() -> None:
    loaded = snapshot(node("n1")).nodes[0]
    assert (loaded.taints, loaded.unschedulable, loaded.gpu_model, loaded.gpus) == ((), False, None, ())


def test_gpu_numa_annotation_gives_each_gpu_its_cell_and_the_node_its_cells() -> None:
    loaded = snapshot(node("n1", gpus=4, annotations={"batchplace.io/gpu-numa": "0,0,1,1"})).nodes[0]
    assert [gpu.numa_cell for gpu in loaded.gpus] == [0, 0, 1, 1]
    assert loaded.numa_cells == (NumaCell(id=0), NumaCell(id=1))


def test_gpus_without_numa_annotation_sit_on_cell_zero_and_no_cells_are_known() -> None:
    loaded = snapshot(node("n1", gpus=2)).nodes[0]
    assert loaded.gpus == (Gpu(index=0), Gpu(index=1))
    assert loaded.numa_cells == ()


def test_gpu_numa_annotation_must_list_one_cell_per_gpu() -> None:
    message = load_error(node("n1", gpus=8, annotations={"batchplace.io/gpu-numa": "0,0,1,1"}))
    assert message == (
        "test.yaml: document 1 (Node n1): metadata.annotations.batchplace.io/gpu-numa: "
        "lists 4 NUMA cells but the node has 8 GPUs"
    )


def test_gpu_numa_annotation_must_be_numbers() -> None:
    assert "expected comma-separated NUMA cell numbers" in load_error(
        node("n1", gpus=2, annotations={"batchplace.io/gpu-numa": "0,x"})
    )


def test_a_fraction_of_a_gpu_on_a_node_is_an_error() -> None:
    raw = node("n1")
    raw["status"] = {"allocatable": {"nvidia.com/gpu": "1.5"}}
    assert 'status.allocatable.nvidia.com/gpu: Invalid value: "1.5": must be an integer' in load_error(raw)


# ---- Numatopology ----

NUMA_SPEC = {
    "numares": {"cpu": {"allocatable": "0-2,4-6", "capacity": 8}},
    "cpuDetail": {str(cpu): ({"numa": 1, "core": cpu} if cpu >= 4 else {"core": cpu}) for cpu in range(8)},
    "MemoryDetail": {
        "0": {"memoryMap": {"memory": {"total": 68719476736, "allocatable": 64424509440}}},
        1: {"memoryMap": {"memory": {"total": 68719476736}}},
    },
}


def test_numatopology_gives_cpu_and_memory_per_cell() -> None:
    loaded = snapshot(
        node("n1", gpus=2, annotations={"batchplace.io/gpu-numa": "0,1"}), numatopology("n1", NUMA_SPEC)
    ).nodes[0]
    assert loaded.numa_cells == (
        NumaCell(id=0, cpu_milli=3000, memory_bytes=64424509440),
        NumaCell(id=1, cpu_milli=3000, memory_bytes=68719476736),
    )


def test_numatopology_counts_every_cpu_when_no_allocatable_cpuset_is_given() -> None:
    spec = {"cpuDetail": {"0": {}, "1": {}, "2": {"numa": 1}}}
    loaded = snapshot(node("n1"), numatopology("n1", spec)).nodes[0]
    assert loaded.numa_cells == (NumaCell(id=0, cpu_milli=2000), NumaCell(id=1, cpu_milli=1000))


def test_numatopology_must_contain_every_cell_a_gpu_sits_on() -> None:
    spec = {"cpuDetail": {"0": {}}}
    message = load_error(node("n1", gpus=2, annotations={"batchplace.io/gpu-numa": "0,3"}), numatopology("n1", spec))
    assert "puts a GPU on NUMA cell 3, but Numatopology n1 has cells 0" in message


def test_numatopology_of_a_node_not_in_the_input_is_skipped_with_a_warning() -> None:
    result = load(node("n1"), numatopology("ghost", {"cpuDetail": {"0": {}}}))
    assert result.snapshot.nodes[0].numa_cells == ()
    assert result.warnings == (
        "test.yaml: document 2 (Numatopology ghost): names no Node in the input ('ghost'); skipped",
    )


def test_a_bad_cpuset_in_numatopology_is_an_error() -> None:
    spec = {"numares": {"cpu": {"allocatable": "0-x"}}, "cpuDetail": {"0": {}}}
    assert "spec.numares.cpu.allocatable: expected a cpuset" in load_error(node("n1"), numatopology("n1", spec))


# ---- HyperNode ----


def _nodes() -> list[dict[str, object]]:
    return [
        node("gpu-a-0", labels={"leaf": "a"}),
        node("gpu-a-1", labels={"leaf": "a"}),
        node("gpu-b-0", labels={"leaf": "b"}),
        node("gpu-b-1", labels={"leaf": "b"}),
    ]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (member(exact="gpu-a-1"), ("gpu-a-1",)),
        (member(regex="^gpu-b-"), ("gpu-b-0", "gpu-b-1")),
        (member(regex="a-"), ("gpu-a-0", "gpu-a-1")),
        (member(labels={"leaf": "a"}), ("gpu-a-0", "gpu-a-1")),
        (member(regex="^nothing$"), ()),
    ],
    ids=[
        "an exact match selects one node by name",
        "a regex match selects every node whose name matches",
        "a regex is unanchored, as Go's MatchString",
        "a label match selects nodes by labels",
        "a selector that matches nothing leaves the hypernode empty",
    ],
)
def test_hypernode_selectors_resolve_to_nodes_of_the_input(
    selector: dict[str, object], expected: tuple[str, ...]
) -> None:
    loaded = snapshot(*_nodes(), hypernode("leaf", 1, selector)).hypernodes[0]
    assert loaded.node_members == expected


def test_a_label_match_with_expressions_selects_like_a_label_selector() -> None:
    selector = {
        "type": "Node",
        "selector": {"labelMatch": {"matchExpressions": [{"key": "leaf", "operator": "NotIn", "values": ["a"]}]}},
    }
    assert snapshot(*_nodes(), hypernode("leaf", 1, selector)).hypernodes[0].node_members == ("gpu-b-0", "gpu-b-1")


def test_hypernode_members_resolve_to_hypernodes_and_give_each_node_its_chain() -> None:
    loaded = snapshot(
        *_nodes(),
        hypernode("leaf-a", 1, member(labels={"leaf": "a"})),
        hypernode("leaf-b", "1", member(regex="^gpu-b")),
        hypernode("spine", 2, member("HyperNode", exact="leaf-a"), member("HyperNode", regex="^leaf-b$")),
    )
    assert loaded.hypernode_by_name["spine"].hypernode_members == ("leaf-a", "leaf-b")
    assert loaded.hypernode_chain["gpu-b-1"] == ("leaf-b", "spine")


def test_an_exact_member_missing_from_the_input_is_left_out_with_a_warning() -> None:
    result = load(node("n1"), hypernode("leaf", 1, member(exact="n1"), member(exact="n9")))
    assert result.snapshot.hypernodes[0].node_members == ("n1",)
    assert result.warnings == (
        "test.yaml: document 2 (HyperNode leaf): member Node 'n9' is not in the input; left out",
    )


def test_a_node_selected_by_two_hypernodes_is_an_error_naming_both() -> None:
    message = load_error(
        node("n1"), hypernode("leaf-a", 1, member(regex="n")), hypernode("leaf-b", 1, member(exact="n1"))
    )
    assert message.startswith("test.yaml: document 3 (HyperNode leaf-b): spec.members[0]: selects 'n1', already")
    assert "HyperNode 'leaf-a' (test.yaml: document 2 (HyperNode leaf-a))" in message


@pytest.mark.parametrize(
    ("bad_member", "expected"),
    [
        (
            {"type": "Rack", "selector": {"exactMatch": {"name": "n1"}}},
            "spec.members[0].type: must be Node or HyperNode",
        ),
        ({"type": "Node", "selector": {}}, "spec.members[0].selector: needs exactly one of"),
        (
            {"type": "Node", "selector": {"exactMatch": {"name": "n1"}, "regexMatch": {"pattern": "n"}}},
            "needs exactly one of exactMatch, regexMatch, labelMatch, got 2",
        ),
        ({"type": "Node", "selector": {"regexMatch": {"pattern": "("}}}, "not a valid regular expression"),
    ],
    ids=[
        "a member type other than Node or HyperNode",
        "a selector with no match",
        "a selector with two matches",
        "a regex that does not compile",
    ],
)
def test_bad_hypernode_members_are_errors(bad_member: dict[str, object], expected: str) -> None:
    assert expected in load_error(node("n1"), hypernode("leaf", 1, bad_member))


def test_hypernode_tier_zero_is_an_error() -> None:
    assert "spec.tier: must be >= 1, got 0" in load_error(hypernode("leaf", 0))


# ---- Queue ----


def test_a_queue_with_only_a_name_gets_volcano_defaults() -> None:
    loaded = snapshot(queue("q")).queue_by_name["q"]
    assert loaded == Queue(name="q", weight=1, reclaimable=True, parent=None, capability=None, state="open")


def test_a_queue_reads_every_field() -> None:
    raw = queue(
        "q",
        weight=3,
        capability={"cpu": "10", "nvidia.com/gpu": 4},
        deserved={"cpu": "5"},
        guarantee={"resource": {"memory": "1Gi"}},
        reclaimable=False,
        priority=7,
        parent="research",
    )
    loaded = snapshot(queue("research"), raw).queue_by_name["q"]
    assert loaded.weight == 3
    assert loaded.capability == {"cpu": 10000, "gpu": 4000}
    assert loaded.deserved == {"cpu": 5000}
    assert loaded.guarantee == {"memory": 2**30}
    assert (loaded.reclaimable, loaded.priority, loaded.parent) == (False, 7, "research")


@pytest.mark.parametrize(
    ("raw", "state"),
    [
        (queue("q", status={"state": "Closed"}), "closed"),
        (queue("q", status={"state": "Closing"}), "closed"),
        (queue("q", state="Closed"), "closed"),
        (queue("q", status={"state": "Open"}), "open"),
    ],
    ids=["status Closed is closed", "status Closing is closed", "spec.state Closed is closed", "Open is open"],
)
def test_queue_state_comes_from_status_or_spec(raw: dict[str, object], state: str) -> None:
    assert snapshot(raw).queue_by_name["q"].state == state


def test_parent_root_means_a_top_level_queue_and_the_root_queue_object_is_implicit() -> None:
    loaded = snapshot(queue("root"), queue("q", parent="root"))
    assert loaded.queue_by_name["q"].parent is None
    assert "root" not in loaded.queue_by_name


def test_the_default_queue_exists_though_nobody_declared_it() -> None:
    assert snapshot().queue_by_name["default"].weight == 1


def test_a_zero_queue_weight_is_an_error() -> None:
    assert load_error(queue("q", weight=0)) == "test.yaml: document 1 (Queue q): spec.weight: must be >= 1, got 0"


# ---- PriorityClass ----


def test_priority_classes_are_read_with_their_global_default_flag() -> None:
    loaded = snapshot(priority_class("high", 1000), priority_class("normal", 10, global_default=True))
    assert [(c.name, c.value, c.global_default) for c in loaded.priority_classes] == [
        ("high", 1000, False),
        ("normal", 10, True),
    ]


def test_a_priority_class_needs_a_value() -> None:
    raw = priority_class("high", 1)
    del raw["value"]
    assert load_error(raw) == "test.yaml: document 1 (PriorityClass high): value: required, got nothing"


def test_two_global_default_priority_classes_are_an_error() -> None:
    message = load_error(priority_class("a", 1, global_default=True), priority_class("b", 2, global_default=True))
    assert message.startswith("test.yaml: document 2 (PriorityClass b): globalDefault:")
