"""Properties of DRA allocation over drawn clusters (rule `dra`): every engine's placement
passes the checker, every bound pod's claims are allocated on its node, and CP-SAT's
answer is never worse than greedy's — it never allocates fewer devices unless it is fairer.

Why devices and not claims: the objective counts a device as a whole GPU of throughput, so
CP-SAT rightly prefers one 8-device claim to three 1-device ones. Where pods share a claim
each asks its share rounded up (rule `dra`'s columns), which can count a shared device
twice; such draws are judged by the score alone."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.checker import check_placement
from solver.objective import score
from solver.place import SolveConfig, place
from solver.rules import counted
from tests.solver._dra_cluster import allocated_claim, cluster, group, pod, queue, shared_claim, template


@st.composite
def dra_clusters(draw):
    nodes = draw(st.integers(1, 3))
    parts: list[str] = []
    held: dict[int, set[int]] = {n: set() for n in range(1, nodes + 1)}
    templates = []
    for count in sorted(set(draw(st.lists(st.sampled_from([1, 2, 3, 4, 8]), min_size=1, max_size=3)))):
        for domain in sorted(set(draw(st.lists(st.booleans(), min_size=1, max_size=2)))):
            name = f"t{count}{'d' if domain else ''}"
            parts.append(template(name, count, domain=domain))
            templates.append(name)
    for r in range(draw(st.integers(0, 3))):
        n = draw(st.integers(1, nodes))
        free = sorted(set(range(8)) - held[n])
        if not free:
            continue
        devices = sorted(draw(st.sets(st.sampled_from(free), min_size=1, max_size=min(3, len(free)))))
        held[n].update(devices)
        parts += [
            allocated_claim(f"r{r}-gpus", f"n{n}", devices, owner=f"r{r}"),
            group(f"run{r}", 1),
            pod(f"r{r}", f"run{r}", template_name=templates[0], node_name=f"n{n}"),
        ]
    capped = draw(st.booleans())
    if capped:
        parts.append(queue("q", f"gpu.nvidia.com: {draw(st.integers(1, 12))}"))
    for g in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 3))
        name = draw(st.sampled_from(templates))
        parts.append(group(f"g{g}", draw(st.integers(1, size)), queue_name="q" if capped and g % 2 else "default"))
        parts += [pod(f"g{g}-{i}", f"g{g}", template_name=name) for i in range(size)]
    if draw(st.booleans()):
        parts += [shared_claim("team", draw(st.integers(1, 4))), group("s", 2), pod("s-0", "s", claim="team"), pod("s-1", "s", claim="team")]
    return cluster(*parts, nodes=nodes)


def _devices(decision) -> int:
    return sum(len(claim.devices) for claim in decision.placement.claims)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=dra_clusters())
def test_every_engine_allocates_what_it_binds_and_cpsat_is_never_worse_than_greedy(snapshot) -> None:
    decisions = {engine: place(snapshot, SolveConfig(engine=engine, time_limit_s=2)) for engine in ("greedy", "cpsat")}
    for decision in decisions.values():
        assert check_placement(snapshot, decision.placement) == ()
        bound = {bind.pod: bind.node for bind in decision.placement.binds}
        for claim in decision.placement.claims:
            assert claim.reserved_for and all(bound[pod_key] == claim.node for pod_key in claim.reserved_for)
    scored = {engine: score(counted(snapshot), decision.placement) for engine, decision in decisions.items()}
    assert scored["cpsat"].key() >= scored["greedy"].key()
    shared = any(entry.resource_claim_name for pod in snapshot.pods for entry in pod.resource_claims)
    if not shared and scored["cpsat"].fairness == scored["greedy"].fairness:
        assert _devices(decisions["cpsat"]) >= _devices(decisions["greedy"])
