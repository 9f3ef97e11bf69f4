"""Rule `nodeports`: two pods that bind the same host port never share a node.

Rule (kube-scheduler's NodePorts filter; the kubelet refuses the second pod): a pod binds
each of its `host_ports` (`models.snapshot.HostPort`: port, protocol, host IP) on its node.
Two host ports clash when their protocol and port are the same and their host IPs are the
same or either is `0.0.0.0`, which binds every address of the node. After a placement, no
pod bound this cycle clashes with a pod kept running on its node nor with another pod bound
there. A pod's own ports never clash with each other (the API server validates a pod's ports).

Worked example: n1 runs a pod binding `127.0.0.1:8001/TCP`. A pod binding `0.0.0.0:8001/TCP`
does not fit n1 (every address includes 127.0.0.1); one binding `127.0.0.2:8001/TCP` or
`0.0.0.0:8001/UDP` does. Two pending pods that both bind `0.0.0.0:8080/TCP` go to two
different nodes, in every engine.

How every engine enforces it: as columns (`solver.columns`), so no engine reads this file.
For each (protocol, port) some pod binds, one column per specific host IP bound and one
for `0.0.0.0` when some pod binds it, each offered once by every node. A pod binding a
specific IP asks 1 of that IP's column; a pod binding `0.0.0.0` asks 1 of the `0.0.0.0`
column and of every specific IP's column of that protocol and port. Then two pods share a
column exactly when their ports clash: two 0.0.0.0 pods share the 0.0.0.0 column, a
0.0.0.0 pod and a 127.0.0.1 pod the 127.0.0.1 column, two 127.0.0.1 pods that column;
127.0.0.1 and 127.0.0.2 pods share none. Running pods take theirs off a node's free column,
an eviction gives it back, and an explanation counts the nodes where a column is taken.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from models.snapshot import WILDCARD_HOST_IP, HostPort, NodeName, Pod, Snapshot
from solver.after import After
from solver.columns import Column, TaskKey
from solver.memo import memoized
from solver.violation import Violation

__all__ = ["NAME", "clash", "columns", "check"]

NAME = "nodeports"

_OFFERED_PER_NODE = 1
"""Each host port (protocol, port, IP) can be bound once per node."""


def clash(first: HostPort, second: HostPort) -> bool:
    """Whether two host ports cannot be bound on one node (module docstring).
    Example: 0.0.0.0:8001/TCP and 127.0.0.1:8001/TCP → True; the same with UDP → False."""
    if first.protocol != second.protocol or first.port != second.port:
        return False
    return first.host_ip == second.host_ip or WILDCARD_HOST_IP in (first.host_ip, second.host_ip)


def _column_name(protocol: str, port: int, host_ip: str) -> str:
    return f"hostPort {host_ip}:{port}/{protocol}"


def _asked(ports: Iterable[HostPort], ips_of: dict[tuple[str, int], set[str]]) -> set[str]:
    """The columns a pod binding `ports` asks 1 of (module docstring)."""
    names: set[str] = set()
    for port in ports:
        key = (port.protocol, port.port)
        if port.host_ip == WILDCARD_HOST_IP:
            names.update(_column_name(*key, ip) for ip in ips_of[key])
        else:
            names.add(_column_name(*key, port.host_ip))
    return names


def columns(snapshot: Snapshot) -> tuple[Column, ...]:
    """One column per (protocol, port, host IP) some pod or task binds (module docstring);
    none when nobody binds a host port, so the tables of such a snapshot do not change.
    Computed once per snapshot (the problem and the checker ask)."""
    return memoized(snapshot, ("nodeports_columns",), lambda: _columns(snapshot))


def _columns(snapshot: Snapshot) -> tuple[Column, ...]:
    pods = [pod for pod in snapshot.pods if pod.host_ports]
    tasks = [((group.key, task.name), task.host_ports) for group in snapshot.pod_groups for task in group.tasks if task.host_ports]
    if not pods and not tasks:
        return ()
    ips_of: dict[tuple[str, int], set[str]] = defaultdict(set)
    for ports in (*(pod.host_ports for pod in pods), *(ports for _, ports in tasks)):
        for port in ports:
            ips_of[(port.protocol, port.port)].add(port.host_ip)
    pod_asks: dict[str, dict] = defaultdict(dict)
    for pod in pods:
        for name in _asked(pod.host_ports, ips_of):
            pod_asks[name][pod.key] = 1
    task_asks: dict[str, dict[TaskKey, int]] = defaultdict(dict)
    for key, ports in tasks:
        for name in _asked(ports, ips_of):
            task_asks[name][key] = 1
    names = sorted(_column_name(*key, ip) for key, ips in ips_of.items() for ip in ips)
    return tuple(
        Column(
            name=name,
            rule=NAME,
            offer=_OFFERED_PER_NODE,
            ask=pod_asks.get(name, {}),
            task_ask=task_asks.get(name, {}),
            shortage=f"{name} in use",
        )
        for name in names
    )


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Every pod bound this cycle whose host ports clash with a pod kept on its node or bound
    there before it (in the placement's order), one violation per such pod."""
    held: dict[NodeName, list[tuple[Pod, HostPort]]] = defaultdict(list)
    for pod in after.kept:
        for port in pod.host_ports:
            held[pod.node].append((pod, port))  # type: ignore[index]  # kept pods run on a node
    violations: list[Violation] = []
    for bound in after.bound:
        ports = bound.pod.host_ports
        if not ports:
            continue
        on_node = held[bound.node.name]
        clashes = sorted(
            {f"{port.host_ip}:{port.port}/{port.protocol} with {other.key}" for port in ports for other, theirs in on_node if clash(port, theirs)}
        )
        if clashes:
            violations.append(
                Violation(
                    rule=NAME,
                    subject=bound.pod.key,
                    message=f"pod {bound.pod.key} on node {bound.node.name} binds host port {'; '.join(clashes)}",
                )
            )
        on_node.extend((bound.pod, port) for port in ports)
    return violations
