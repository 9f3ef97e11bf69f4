"""examples/dra-gpus.yaml end to end against a real API server: seeded as `kubectl apply`
would, its claims made as Kubernetes' resourceclaim controller makes them, solved by the
product's solver, and acted on by the controller's plan and act stages. The pods are read
as a 1.34 API server returns them (v1.20 drops `spec.resourceClaims`; see
test_dra_claims_live.py)."""

from __future__ import annotations

from controller.act import Actuator
from controller.assumed import AssumedPods
from controller.kinds import PODS, RESOURCE_CLAIMS
from controller.kube import KubeClient
from controller.loop import decide
from controller.metrics import ControllerMetrics
from controller.observe import observe
from controller.plan import plan
from controller.testing.claim_controller import make_claims
from controller.testing.control_plane import ControlPlane
from controller.testing.seed import EXAMPLES_DIR, create_all, seed_objects
from solver.place import SolveConfig
from tests.controller._dra_cycle import act_once, as_served_by_1_34, cached_view


def test_the_dra_gpus_example_end_to_end(
    control_plane: ControlPlane, admin: KubeClient, namespace: str, controller_client: KubeClient
) -> None:
    """examples/dra-gpus.yaml seeded (its claims made as Kubernetes makes them), solved by the
    product's solver and acted on: the training gang's two workers each hold the 8 GPUs of
    one NVLink domain of an HGX node, the notebook one 1g.10gb MIG slice of the A100's gpu-0,
    each claim written with its pod's node before the pod is bound there."""
    objects = seed_objects(EXAMPLES_DIR / "dra-gpus.yaml", namespace=namespace)
    create_all(admin, objects)
    bodies = {
        f"{namespace}/{obj.name}": {**obj.body, "metadata": admin.get(PODS, namespace, obj.name)["metadata"]}
        for obj in objects
        if obj.kind == PODS
    }
    made = make_claims(admin, [body for body in bodies.values() if not body["spec"].get("nodeName")])

    observation, decision = _solved(controller_client, bodies, made)
    report = act_once(Actuator(controller_client, assumed=AssumedPods(), metrics=ControllerMetrics()), plan(observation, decision))

    workers = {f"{namespace}/llm-train-worker-0", f"{namespace}/llm-train-worker-1"}
    assert sorted(report.bound) == sorted({*workers, f"{namespace}/notebook-infer"}), report.bind_failures
    held: dict[str, list[str]] = {}
    for key in report.bound:
        name = key.partition("/")[2]
        entry = "mig" if name == "notebook-infer" else "gpus"
        claim = admin.get(RESOURCE_CLAIMS, namespace, made[(key, entry)])
        results = claim["status"]["allocation"]["devices"]["results"]
        node_name = admin.get(PODS, namespace, name)["spec"]["nodeName"]
        assert {r["pool"] for r in results} == {node_name}
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [name]
        held[name] = sorted(r["device"] for r in results)
        held[f"{name} node"] = [node_name]
    assert sorted([held["llm-train-worker-0 node"][0], held["llm-train-worker-1 node"][0]]) == ["hgx-0", "hgx-1"]
    assert held["llm-train-worker-0"] == held["llm-train-worker-1"] == sorted(f"gpu-{i}" for i in range(8))
    assert held["notebook-infer node"] == ["a100-mig-0"] and len(held["notebook-infer"]) == 1
    assert held["notebook-infer"][0].startswith("gpu-0-"), held["notebook-infer"]


def _solved(client: KubeClient, bodies: dict[str, dict], made: dict[tuple[str, str], str]):
    observation = observe(as_served_by_1_34(cached_view(client), bodies, made), scheduler_names=("batchplace",))
    return observation, decide(observation.snapshot, SolveConfig(engine="auto", time_limit_s=2.0))
