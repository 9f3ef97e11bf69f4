"""The dashboard on PodGroups that bind one host port: the cluster view lays the nodes out,
and the row of the PodGroup that waits says which port is taken where."""

from __future__ import annotations

from models.snapshot import HostPort
from service.ui.analysis import analyze
from service.ui.cluster_view import build_cluster_view
from service.ui.podgroup_view import build_podgroup_rows
from tests.builders import make_gang, make_node, make_snapshot, with_host_ports

WEB = HostPort(port=8080)


def test_the_third_pod_of_one_port_on_two_nodes_waits_and_its_row_names_the_port() -> None:
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8), make_node("n2", cpu=8)], groups=[with_host_ports(make_gang(f"web-{i}", cpu=0.5), WEB) for i in range(3)])
    analysis = analyze(snapshot, now_s=0.0)
    rows = build_podgroup_rows(analysis)
    assert sorted(row.state for row in rows) == ["pending", "starting", "starting"]
    (waiting,) = [row for row in rows if row.state == "pending"]
    assert any("2 hostPort 0.0.0.0:8080/TCP in use" in reason for reason in waiting.reasons)
    view = build_cluster_view(analysis)
    assert view.node_count == 2  # the host-port columns lay out as no node resource of the picture
