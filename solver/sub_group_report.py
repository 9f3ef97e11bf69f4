"""How each sub-group of a PodGroup (a gang inside the gang: a shard, a serving replica, a
prefill or decode role) fares after a cycle: what the controller writes on the PodGroup
(`controller.sub_group_status`) and the dashboard shows inside its job. Pure.

Per sub-group: whether it started (its pods bound or running reach its minimum,
`solver.rules.gang.sub_group_minimum`), its pods placed and its minimum, the domain it landed
in — the closest HyperNode holding all its placed pods (of any tier: the rack of a shard on
one node), else the node itself when they share one outside every HyperNode, else none — and,
while it has not
started, why: the first of its PodGroup's reasons that names it ("gang: subgroup decode-1 of
llm-serve: …"), else the reason one of its pods is left out of a started PodGroup
(`PodGroupOutcome.unplaced_pods`), else the PodGroup's first reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from models.placement import Bind
from models.snapshot import NodeName, Pod, PodGroup, PodKey, Snapshot
from solver.rules.gang import sub_group_minimum, sub_group_pods
from solver.rules.topology import common_domain, domains_within

__all__ = ["SubGroupStatus", "sub_group_statuses", "summary"]

ANY_TIER = 1 << 30  # a tier above every HyperNode's: the domain is the closest, whatever its tier


@dataclass(frozen=True)
class SubGroupStatus:
    name: str
    policy: str
    started: bool
    placed: int  # its pods bound or running after the cycle
    minimum: int  # its pods that must be placed together for it to start
    domain: str | None  # the closest HyperNode (or the one node) holding its placed pods
    reason: str = ""  # why it has not started; "" once started


def sub_group_statuses(
    snapshot: Snapshot, group: PodGroup, binds: Iterable[Bind], reasons: Sequence[str],
    pod_reasons: Mapping[PodKey, str] = {},
) -> tuple[SubGroupStatus, ...]:
    """Each sub-group of `group` after its running pods stay and `binds` land, in the
    PodGroup's order; `reasons`: the PodGroup's, `pod_reasons`: why each pod a started
    PodGroup leaves pending is left out. Example: decode-0 (min 4) with 4 pods bound on rack
    r1's nodes → started, placed 4, domain "r1"; decode-1 with none → not started, its reason."""
    bound_node = {bind.pod: bind.node for bind in binds}
    members = sub_group_pods(snapshot, group)
    statuses = []
    for sub in group.sub_groups:
        nodes = [
            bound_node.get(pod.key) or pod.node
            for pod in members.get(sub.name, ())
            if pod.key in bound_node or (pod.phase == "running" and pod.node is not None)
        ]
        started = len(nodes) >= sub_group_minimum(sub)
        statuses.append(
            SubGroupStatus(
                name=sub.name,
                policy=sub.policy,
                started=started,
                placed=len(nodes),
                minimum=sub_group_minimum(sub),
                domain=_landed_in(snapshot, [n for n in nodes if n is not None]),
                reason="" if started else _reason_for(sub.name, reasons, members.get(sub.name, ()), pod_reasons),
            )
        )
    return tuple(statuses)


def _landed_in(snapshot: Snapshot, nodes: Sequence[NodeName]) -> str | None:
    """The closest HyperNode holding every node of `nodes` (`common_domain`, which for one node
    is the node: here its closest HyperNode, else the node); None when they share none."""
    distinct = sorted(set(nodes))
    if len(distinct) == 1:
        chain = domains_within(snapshot, distinct[0], ANY_TIER)
        return chain[0] if chain else distinct[0]
    return common_domain(snapshot, distinct, ANY_TIER)


def _reason_for(name: str, reasons: Sequence[str], pods: Sequence[Pod], pod_reasons: Mapping[PodKey, str]) -> str:
    """The first reason naming sub-group `name`, else the first of its pods', else the
    PodGroup's first, else ""."""
    for reason in reasons:
        if f"subgroup {name} " in reason or f"subgroup {name}:" in reason:
            return str(reason)
    for pod in pods:
        if pod.key in pod_reasons:
            return str(pod_reasons[pod.key])
    return str(reasons[0]) if reasons else ""


def summary(statuses: Sequence[SubGroupStatus]) -> str:
    """"sub-groups: 3 of 4 started" — what a PodGroup's condition message ends with."""
    started = sum(1 for status in statuses if status.started)
    return f"sub-groups: {started} of {len(statuses)} started"
