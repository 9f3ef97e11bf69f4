"""Rule `nodeports`: pods that bind the same host port never share a node — in the checker,
the problem's columns, every engine, the reasons and what-if. Cases ported from
kube-scheduler's `nodeports` plugin tests live in tests/conformance/cases/kubernetes/node_ports_test."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.loaders import load_snapshot_documents
from models.loaders.kube_yaml import parse_yaml_documents
from models.loaders.raw import FieldError
from models.snapshot import HostPort, Snapshot
from solver.place import ENGINES
from solver.problem import build_problem
from solver.rules import capacity, nodeports
from solver.whatif import Changes, apply_changes
from tests.builders import (
    bind_gang,
    make_gang,
    make_node,
    make_placement,
    make_running,
    make_snapshot,
    rule_violations,
    solve_checked,
    with_host_ports,
)

WEB = HostPort(port=8080)  # 0.0.0.0:8080/TCP
LOCAL = HostPort(port=8080, host_ip="127.0.0.1")
NODES = [make_node("n1", cpu=8), make_node("n2", cpu=8)]


def holding(name: str, node: str, *ports: HostPort):  # noqa: ANN201 - a running Pod
    return make_running(name, node=node).model_copy(update={"host_ports": ports})


@pytest.mark.parametrize(
    ("first", "second", "clashes"),
    [
        (HostPort(port=8001), HostPort(port=8001, host_ip="127.0.0.1"), True),  # every address includes 127.0.0.1
        (HostPort(port=8001, host_ip="127.0.0.1"), HostPort(port=8001, host_ip="127.0.0.2"), False),
        (HostPort(port=8001), HostPort(port=8001, protocol="UDP"), False),
        (HostPort(port=8001), HostPort(port=8002), False),
        (HostPort(port=8001, protocol="SCTP"), HostPort(port=8001, protocol="SCTP"), True),
    ],
)
def test_two_host_ports_clash_on_the_same_protocol_and_port_and_a_shared_address(first, second, clashes) -> None:  # noqa: ANN001
    assert nodeports.clash(first, second) is clashes
    assert nodeports.clash(second, first) is clashes


def test_the_checker_rejects_a_bind_beside_a_running_pod_that_holds_the_port() -> None:
    web = with_host_ports(make_gang("web"), WEB)
    snapshot = make_snapshot(nodes=NODES, groups=[web], running=[holding("proxy", "n1", LOCAL)])
    violations = rule_violations(nodeports, snapshot, make_placement(binds=bind_gang(web, ["n1"])))
    assert [(v.rule, v.subject) for v in violations] == [("nodeports", "default/web-worker-0")]
    assert "0.0.0.0:8080/TCP with default/proxy" in violations[0].message
    assert rule_violations(nodeports, snapshot, make_placement(binds=bind_gang(web, ["n2"]))) == []


def test_the_checker_rejects_the_second_of_two_binds_that_clash_on_one_node() -> None:
    web = with_host_ports(make_gang("web", replicas=2), WEB)
    snapshot = make_snapshot(nodes=NODES, groups=[web])
    violations = rule_violations(nodeports, snapshot, make_placement(binds=bind_gang(web, ["n1", "n1"])))
    assert [v.subject for v in violations] == ["default/web-worker-1"]
    assert rule_violations(nodeports, snapshot, make_placement(binds=bind_gang(web, ["n1", "n2"]))) == []


def test_the_columns_are_one_per_address_and_a_wildcard_asks_every_address_of_its_port() -> None:
    wildcard = with_host_ports(make_gang("wild"), WEB)
    local = with_host_ports(make_gang("local"), LOCAL)
    snapshot = make_snapshot(nodes=NODES, groups=[wildcard, local], running=[holding("proxy", "n1", LOCAL)])
    problem = build_problem(snapshot)
    star, lo = (problem.resource_index[f"hostPort {ip}:8080/TCP"] for ip in ("0.0.0.0", "127.0.0.1"))
    assert problem.allocatable[[star, lo]].tolist() == [[1, 1], [1, 1]]
    assert problem.free[[star, lo]].tolist() == [[1, 1], [0, 1]]  # the proxy holds 127.0.0.1:8080 on n1
    wild_row = problem.task_row[(wildcard.key, "worker")]
    local_row = problem.task_row[(local.key, "worker")]
    assert problem.task_requests[wild_row, [star, lo]].tolist() == [1, 1]
    assert problem.task_requests[local_row, [star, lo]].tolist() == [0, 1]
    assert problem.column_rule[star] == problem.column_rule[lo] == "nodeports"
    assert not problem.column_dealt[star] and not problem.column_packs[star]
    assert problem.column_rule[problem.pods_column] == capacity.NAME
    assert problem.resources_dict(problem.task_requests[wild_row]) == {"cpu": 1000}  # no queue deals a port


def test_a_snapshot_without_host_ports_has_no_port_column() -> None:
    problem = build_problem(make_snapshot(nodes=NODES, groups=[make_gang("job")]))
    assert not [name for name in problem.resource_names if name.startswith("hostPort")]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_spreads_pods_of_one_port_over_nodes_and_says_why_the_third_waits(engine: str) -> None:
    jobs = [with_host_ports(make_gang(f"web-{i}", cpu=0.5), WEB) for i in range(3)]
    decision = solve_checked(make_snapshot(nodes=NODES, groups=jobs), engine)
    nodes = sorted(bind.node for bind in decision.placement.binds)
    assert nodes == ["n1", "n2"]
    waiting = [o for o in decision.podgroups if o.state == "pending"]
    assert len(waiting) == 1
    assert any("hostPort 0.0.0.0:8080/TCP" in reason for reason in waiting[0].reasons)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_places_a_port_beside_a_running_pod_on_another_address(engine: str) -> None:
    other = HostPort(port=8080, host_ip="127.0.0.2")
    job = with_host_ports(make_gang("web"), other)
    one_node = [make_node("n1", cpu=8)]
    decision = solve_checked(make_snapshot(nodes=one_node, groups=[job], running=[holding("proxy", "n1", LOCAL)]), engine)
    assert [bind.node for bind in decision.placement.binds] == ["n1"]
    clashing = with_host_ports(make_gang("web"), WEB)
    decision = solve_checked(make_snapshot(nodes=one_node, groups=[clashing], running=[holding("proxy", "n1", LOCAL)]), engine)
    assert decision.placement.binds == ()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_whose_pods_all_bind_one_port_needs_a_node_per_pod(engine: str) -> None:
    gang = with_host_ports(make_gang("ring", replicas=3, cpu=0.5), WEB)
    decision = solve_checked(make_snapshot(nodes=NODES, groups=[gang]), engine)
    assert decision.placement.binds == ()  # 3 pods, 2 nodes: the gang cannot start
    three = [*NODES, make_node("n3", cpu=8)]
    decision = solve_checked(make_snapshot(nodes=three, groups=[gang]), engine)
    assert sorted(bind.node for bind in decision.placement.binds) == ["n1", "n2", "n3"]


def test_what_if_a_node_is_added_the_waiting_port_starts() -> None:
    job = with_host_ports(make_gang("web-0", cpu=0.5), WEB)
    base = make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[job], running=[holding("proxy", "n1", WEB)])
    assert solve_checked(base, "auto").placement.binds == ()  # the proxy holds 8080 on the only node
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}
    changed = apply_changes(base, Changes(add_nodes=(("nodes.yaml", 1, node),)), submitted_at_s=0.0)
    decision = solve_checked(changed.snapshot, "auto")
    assert [(b.pod, b.node) for b in decision.placement.binds] == [("default/web-0-worker-0", "n2")]


YAML = """
apiVersion: v1
kind: Pod
metadata: {name: dns, namespace: default}
spec:
  schedulerName: volcano
  hostNetwork: true
  containers:
    - name: main
      ports: [{containerPort: 53, protocol: UDP}, {containerPort: 9153}]
"""


def _load(text: str) -> Snapshot:
    return load_snapshot_documents(parse_yaml_documents(text, source="pods.yaml")).snapshot


def test_a_host_network_pod_binds_its_container_ports_and_an_unset_host_ip_is_every_address() -> None:
    snapshot = _load(YAML)
    assert snapshot.pods[0].host_ports == (HostPort(port=53, protocol="UDP"), HostPort(port=9153))
    assert snapshot.pod_groups[0].tasks[0].host_ports == snapshot.pods[0].host_ports
    without = _load(YAML.replace("  hostNetwork: true\n", ""))
    assert without.pods[0].host_ports == ()  # a container port alone binds nothing on the node


def test_an_unknown_protocol_is_an_error_naming_the_field() -> None:
    with pytest.raises(FieldError) as error:
        _load(YAML.replace("protocol: UDP", "protocol: QUIC"))
    assert "protocol" in str(error.value) and "QUIC" in str(error.value)


def test_a_pending_pod_must_bind_its_tasks_ports() -> None:
    job = with_host_ports(make_gang("web"), WEB)
    pods = tuple(p.model_copy(update={"host_ports": (LOCAL,)}) for p in job.pods)
    with pytest.raises(ValidationError, match="binds host ports"):
        Snapshot.model_validate(make_snapshot(nodes=NODES, groups=[replace(job, pods=pods)]).model_dump())


_PORTS = st.builds(
    HostPort,
    port=st.sampled_from([80, 8080]),
    protocol=st.sampled_from(["TCP", "UDP"]),
    host_ip=st.sampled_from(["0.0.0.0", "127.0.0.1", "10.0.0.1"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    asked=st.lists(st.lists(_PORTS, min_size=1, max_size=2, unique=True), min_size=1, max_size=5),
    held=st.lists(st.tuples(st.sampled_from(["n1", "n2"]), _PORTS), max_size=3),
    engine=st.sampled_from(ENGINES),
)
def test_no_engine_ever_binds_two_clashing_ports_on_a_node(asked, held, engine) -> None:  # noqa: ANN001
    jobs = [with_host_ports(make_gang(f"job-{i}", cpu=0.5), *ports) for i, ports in enumerate(asked)]
    running = [holding(f"held-{i}", node, port) for i, (node, port) in enumerate(held)]
    decision = solve_checked(make_snapshot(nodes=NODES, groups=jobs, running=running), engine)  # the checker judges it
    on_node: dict[str, list[HostPort]] = {}
    for pod in running:
        on_node.setdefault(pod.node, []).extend(pod.host_ports)
    ports_of = {pod.key: pod.host_ports for job in jobs for pod in job.pods}
    for bind in decision.placement.binds:
        mine = ports_of[bind.pod]
        assert not any(nodeports.clash(a, b) for a in mine for b in on_node.get(bind.node, []))
        on_node.setdefault(bind.node, []).extend(mine)


@pytest.mark.parametrize(
    ("value", "message"),
    [("-1", "must be >= 0, got -1"), ("70000", "70000 is not a port number (1-65535)"), ("http", "expected an integer")],
)
def test_a_bad_host_port_is_an_error_naming_the_field(value: str, message: str) -> None:
    text = YAML.replace("  hostNetwork: true\n", "").replace("{containerPort: 9153}", f"{{containerPort: 9153, hostPort: {value}}}")
    with pytest.raises(FieldError) as error:
        _load(text)
    assert "spec.containers[0].ports[1].hostPort" in str(error.value) and message in str(error.value)
