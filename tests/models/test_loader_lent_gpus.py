"""Running pods' GPU devices when offline pods borrow part of a device online pods share."""

from __future__ import annotations

from tests.models._kube_builders import load_error, node, pod, snapshot

def test_annotated_offline_fractions_are_counted_apart_from_online_ones_on_a_device() -> None:
    """GPU 0 holds an online 600m pod and offline 300m + 200m ones (lent, `solver.rules.colocation`):
    each class fits the device; two online pods of 600m + 500m do not."""
    def on_gpu0(name: str, milli: int, *, offline: bool) -> object:
        annotations = {"batchplace.io/gpus": "0", **({"volcano.sh/qos-level": "BE"} if offline else {})}
        return pod(name, gpu_milli=milli, node="n1", annotations=annotations)

    loaded = snapshot(node("n1", gpus=1), on_gpu0("infer", 600, offline=False), on_gpu0("a", 300, offline=True), on_gpu0("b", 200, offline=True))
    assert {p.name: (p.gpu_indices, p.offline) for p in loaded.pods} == {"infer": ((0,), False), "a": ((0,), True), "b": ((0,), True)}
    error = load_error(node("n1", gpus=1), on_gpu0("infer", 600, offline=False), on_gpu0("web", 500, offline=False))
    assert "GPU 0 of node n1 is already taken by other pods (600 of 1000 milli-GPU in use)" in error
