"""What-if on a cluster whose devices are DRA devices: the base's DRA objects stay in the
changed snapshot (its allocated claims keep their devices), a job is added with the claim
templates its pods name, resolving the base's DeviceClasses, and a template the base
already holds is a conflict naming the added document."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from batchplace.demo import EXAMPLES_DIR
from models.dra import counted_devices
from models.errors import FieldError
from models.loaders import load_snapshot_documents
from solver.whatif import Changes, apply_changes

ADDED = frozenset({"notebook-infer", "one-mig-slice"})


def _example_documents() -> list[dict[str, Any]]:
    text = (EXAMPLES_DIR / "dra-gpus.yaml").read_text()
    return [document for document in yaml.safe_load_all(text) if document]


def _split() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The DRA example without its inference pod and that pod's MIG template, and those two."""
    documents = _example_documents()
    added = [document for document in documents if document["metadata"]["name"] in ADDED]
    return [document for document in documents if document not in added], added


def _base(documents: list[dict[str, Any]]):
    return load_snapshot_documents([("base.yaml", index + 1, document) for index, document in enumerate(documents)]).snapshot


def _changes(added: list[dict[str, Any]]) -> Changes:
    return Changes(add_jobs=tuple(("changes.add_jobs", index + 1, document) for index, document in enumerate(added)))


def test_the_changed_snapshot_keeps_the_bases_slices_classes_and_allocated_claims() -> None:
    documents, _ = _split()
    base = _base(documents)
    changed = apply_changes(base, Changes(drain_nodes=("hgx-1",)), submitted_at_s=100.0).snapshot
    assert changed.dra.resource_slices == base.dra.resource_slices
    assert [c.name for c in changed.dra.device_classes] == ["gpu.nvidia.com", "mig.nvidia.com"]
    census = counted_devices(changed.dra.resource_slices, changed.dra.resource_claims)
    assert sorted(d.device.name for d in census.devices if d.taken_by == "ml/serve-llm-gpus") == ["gpu-0", "gpu-1"]


def test_an_added_pod_comes_with_its_claim_template_which_names_a_base_device_class() -> None:
    documents, added = _split()
    changed = apply_changes(_base(documents), _changes(added), submitted_at_s=100.0)
    assert [t.key for t in changed.snapshot.dra.resource_claim_templates] == ["ml/eight-gpus-one-nvlink", "ml/one-mig-slice"]
    (request,) = changed.snapshot.dra.resource_claim_templates[1].requests
    assert request.device_class_names == ("mig.nvidia.com",)
    (pod,) = [pod for pod in changed.snapshot.pods if pod.key == "ml/notebook-infer"]
    assert [claim.resource_claim_template_name for claim in pod.resource_claims] == ["one-mig-slice"]
    assert len(changed.added_jobs) == 1


def test_an_added_template_the_base_already_holds_is_a_conflict_naming_its_document() -> None:
    documents, added = _split()
    base = _base([*documents, added[0]])  # the base holds one-mig-slice already
    with pytest.raises(FieldError) as caught:
        apply_changes(base, _changes(added), submitted_at_s=100.0)
    assert str(caught.value) == (
        "changes.add_jobs: document 1 (ResourceClaimTemplate ml/one-mig-slice): metadata.name: "
        "ResourceClaimTemplate ml/one-mig-slice already exists in the base snapshot"
    )


def test_an_added_template_naming_a_class_the_cluster_lacks_names_the_added_document() -> None:
    documents, added = _split()
    added[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "tpu.example.com"
    with pytest.raises(FieldError) as caught:
        apply_changes(_base(documents), _changes(added), submitted_at_s=100.0)
    assert "changes.add_jobs: document 1 (ResourceClaimTemplate ml/one-mig-slice)" in str(caught.value)
    assert "tpu.example.com" in str(caught.value)
