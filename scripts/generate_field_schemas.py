"""Write `models/loaders/field_schemas.json`: the fields of every kind batchplace reads.

Why a generated file: the loader warns about fields an object's schema does not have
(`spec.minAvaliable`), but `models` may not import the `kubernetes` client (the import
contract in pyproject.toml). So this script reads the client's models (core kinds: their
`openapi_types` and `attribute_map`) and the upstream CRDs in `scripts/crds/` (Volcano's,
scheduler-plugins', Kubeflow's, LeaderWorkerSet's and JobSet's), and writes one JSON table the loader reads. Run it after
upgrading the client or copying newer CRDs; `tests/models/test_field_schemas.py` checks
the committed table is what it writes.

The table:

    {"kinds": {group: {kind: {"label": "Volcano Job", "versions": [...], "type": name,
                              "version_types": {version: name}?}}},
     "types": {name: {"fields": {jsonName: type name, or null}, "open": true?}
               | {"values": type name}}}

A field's type is null when its keys are not checked: scalars, free-form objects, maps of
scalars (labels, resources). A list's type is its items' type. A map whose values are
objects (`additionalProperties` with properties, such as a PyTorchJob's
`pytorchReplicaSpecs`, keyed by replica type) is a `values` type: its keys are not
checked, each value is checked against the values' type. `open`
marks an object whose schema keeps unknown fields (`x-kubernetes-preserve-unknown-fields`).
A CRD's top-level `metadata` is the client's `V1ObjectMeta`, as the API server validates it.
`version_types` names the type of a version whose shape differs from the kind's (the
Workload API's first shape, `spec.podGroups`, which the client no longer carries).
Identical CRD object types are stored once, under the first path that has them.

Usage: python scripts/generate_field_schemas.py [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import kubernetes.client
import yaml

ROOT = Path(__file__).resolve().parent.parent
CRD_DIR = ROOT / "scripts" / "crds"
OUTPUT = ROOT / "models" / "loaders" / "field_schemas.json"

# (group, kind, label, the client's class names per served version)
CORE_KINDS = (
    ("", "Node", "Kubernetes Node", {"v1": "V1Node"}),
    ("", "Pod", "Kubernetes Pod", {"v1": "V1Pod"}),
    ("scheduling.k8s.io", "PriorityClass", "Kubernetes PriorityClass", {"v1": "V1PriorityClass"}),
    ("resource.k8s.io", "DeviceClass", "Kubernetes DeviceClass", {"v1": "V1DeviceClass"}),
    ("resource.k8s.io", "ResourceSlice", "Kubernetes ResourceSlice", {"v1": "V1ResourceSlice"}),
    ("resource.k8s.io", "ResourceClaim", "Kubernetes ResourceClaim", {"v1": "ResourceV1ResourceClaim"}),
    ("resource.k8s.io", "ResourceClaimTemplate", "Kubernetes ResourceClaimTemplate", {"v1": "V1ResourceClaimTemplate"}),
    # v1alpha3's PodGroup has v1beta1's fields (the client's models agree), so one schema serves both.
    (
        "scheduling.k8s.io",
        "PodGroup",
        "Kubernetes PodGroup",
        {"v1alpha2": "V1beta1PodGroup", "v1alpha3": "V1beta1PodGroup", "v1beta1": "V1beta1PodGroup"},
    ),
    # v1alpha3's Workload has v1beta1's fields too; the earlier shape is in WRITTEN_VERSIONS.
    ("scheduling.k8s.io", "Workload", "Kubernetes Workload", {"v1alpha3": "V1beta1Workload", "v1beta1": "V1beta1Workload"}),
)
# Versions of a kind whose schema the client no longer carries, written from the upstream Go
# types (kubernetes/kubernetes staging/src/k8s.io/api/scheduling, KEP-4671 and KEP-5832):
# (group, kind, versions, type name, OpenAPI schema, client types of further `spec` fields).
# The table lists them under the kind's `version_types`. The alphas have been published with
# either shape (inline `podGroups`, or `podGroupTemplates` as in v1beta1), so they know both.
_WORKLOAD_POLICY = {
    "type": "object",
    "properties": {"basic": {"type": "object"}, "gang": {"type": "object", "properties": {"minCount": {"type": "integer"}}}},
}
_WORKLOAD_PODGROUPS = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {},
        "spec": {
            "type": "object",
            "properties": {
                "controllerRef": {
                    "type": "object",
                    "properties": {"apiGroup": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"}},
                },
                "podGroups": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "policy": _WORKLOAD_POLICY}},
                },
            },
        },
    },
}
WRITTEN_VERSIONS = (
    (
        "scheduling.k8s.io",
        "Workload",
        ("v1alpha1", "v1alpha2"),
        "scheduling.k8s.io/Workload(alpha)",
        _WORKLOAD_PODGROUPS,
        {"podGroupTemplates": "V1beta1PodGroupTemplate", "compositePodGroupTemplates": "V1beta1CompositePodGroupTemplate"},
    ),
)
# Pod fields of the Workload API that the client's models lack (the first API shape, or newer
# than the client): (client type, field, OpenAPI schema of its value).
CLIENT_EXTRA_FIELDS = (
    (
        "V1PodSpec",
        "workloadRef",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "podGroup": {"type": "string"}, "podGroupReplicaKey": {"type": "string"}},
        },
    ),
    ("V1PodSchedulingGroup", "podGroupReplicaKey", {"type": "string"}),
    (
        "V1beta1PodGroupSpec",
        "podGroupTemplateRef",
        {
            "type": "object",
            "properties": {
                "workloadName": {"type": "string"},
                "podGroupTemplateName": {"type": "string"},
                "workload": {
                    "type": "object",
                    "properties": {"workloadName": {"type": "string"}, "podGroupTemplateName": {"type": "string"}},
                },
            },
        },
    ),
)
# (CRD file, label)
CRD_KINDS = (
    ("batch.volcano.sh_jobs.yaml", "Volcano Job"),
    ("scheduling.volcano.sh_podgroups.yaml", "Volcano PodGroup"),
    ("scheduling.volcano.sh_queues.yaml", "Volcano Queue"),
    ("topology.volcano.sh_hypernodes.yaml", "Volcano HyperNode"),
    ("nodeinfo.volcano.sh_numatopologies.yaml", "Volcano Numatopology"),
    ("scheduling.x-k8s.io_podgroups.yaml", "scheduler-plugins PodGroup"),
    ("kubeflow.org_pytorchjobs.yaml", "Kubeflow PyTorchJob"),
    ("leaderworkerset.x-k8s.io_leaderworkersets.yaml", "LeaderWorkerSet"),
    ("jobset.x-k8s.io_jobsets.yaml", "JobSet"),
)
# Fields batchplace reads that the upstream schema lacks, added so reading them is no
# warning: (group, kind, path to the object, field). Each is explained where it is read
# (models/loaders/cluster_objects.py).
EXTRA_FIELDS = (
    ("nodeinfo.volcano.sh", "Numatopology", ("spec",), "MemoryDetail"),  # per-cell memory, as exporters write it
    ("scheduling.volcano.sh", "Queue", ("spec",), "state"),  # Closed/Closing, older Volcano's place for it
)
_WRAPPER = re.compile(r"^(?:List|list)\[(.*)\]$")


def _client_type(type_text: str, types: dict[str, dict]) -> str | None:
    """`List[V1Container]` → `V1Container` (added to `types`); scalars and maps → None."""
    while match := _WRAPPER.match(type_text):
        type_text = match.group(1)
    model = getattr(kubernetes.client, type_text, None)
    if model is None or not hasattr(model, "attribute_map"):
        return None
    if type_text not in types:
        types[type_text] = {}  # reserved first: a type may contain itself
        fields = {
            model.attribute_map[attribute]: _client_type(attribute_type, types)
            for attribute, attribute_type in model.openapi_types.items()
        }
        types[type_text] = {"fields": dict(sorted(fields.items()))}
    return type_text


def _crd_type(schema: dict, name: str, types: dict[str, dict], seen: dict[str, str]) -> str | None:
    """An OpenAPI v3 schema → a type name (objects with properties, maps of such objects) or
    None (not checked)."""
    if schema.get("type") == "array":
        return _crd_type(schema.get("items") or {}, name + "[]", types, seen)
    properties = schema.get("properties")
    values = schema.get("additionalProperties")
    if not properties and isinstance(values, dict):
        value_type = _crd_type(values, name + "{}", types, seen)
        return None if value_type is None else _stored(name, {"values": value_type}, types, seen)
    if not properties:
        return None
    fields = {key: _crd_type(value, f"{name}.{key}", types, seen) for key, value in sorted(properties.items())}
    entry: dict[str, object] = {"fields": fields}
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        entry["open"] = True
    return _stored(name, entry, types, seen)


def _stored(name: str, entry: dict[str, object], types: dict[str, dict], seen: dict[str, str]) -> str:
    """The name `entry` is stored under: `name`, or the first name an identical entry took."""
    shape = json.dumps(entry, sort_keys=True)
    if shape not in seen:
        seen[shape] = name
        types[name] = entry
    return seen[shape]


def build_table() -> dict[str, object]:
    types: dict[str, dict] = {}
    kinds: dict[str, dict[str, dict]] = {}
    for group, kind, label, classes in CORE_KINDS:
        names = {_client_type(class_name, types) for class_name in classes.values()}
        if len(names) != 1:
            raise SystemExit(f"{kind}: one schema per kind is supported, got {sorted(map(str, names))}")
        kinds.setdefault(group, {})[kind] = {"label": label, "versions": sorted(classes), "type": names.pop()}
    seen: dict[str, str] = {}
    for type_name, field, schema in CLIENT_EXTRA_FIELDS:
        fields = {**types[type_name]["fields"], field: _crd_type(schema, f"{type_name}.{field}", types, seen)}
        types[type_name]["fields"] = dict(sorted(fields.items()))
    for group, kind, versions, name, schema, spec_fields in WRITTEN_VERSIONS:
        stored = str(_crd_type(schema, name, types, seen))
        types[stored]["fields"] = {**types[stored]["fields"], "metadata": _client_type("V1ObjectMeta", types)}
        spec_type = types[str(types[stored]["fields"]["spec"])]
        further = {field: _client_type(class_name, types) for field, class_name in spec_fields.items()}
        spec_type["fields"] = dict(sorted({**spec_type["fields"], **further}.items()))
        entry = kinds[group][kind]
        entry["versions"] = sorted((*entry["versions"], *versions))
        entry["version_types"] = {**entry.get("version_types", {}), **{version: stored for version in versions}}
    for file_name, label in CRD_KINDS:
        crd = yaml.safe_load((CRD_DIR / file_name).read_text(encoding="utf-8"))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        served = [version for version in crd["spec"]["versions"] if version.get("served", True)]
        storage = next(version for version in served if version.get("storage"))
        schema = storage["schema"]["openAPIV3Schema"]
        schema["properties"]["metadata"] = {}
        for extra_group, extra_kind, path, field in EXTRA_FIELDS:
            if (extra_group, extra_kind) == (group, kind):
                target = schema
                for part in path:
                    target = target["properties"][part]
                target["properties"][field] = {}
        name = _crd_type(schema, f"{group}/{kind}", types, seen)
        types[str(name)]["fields"] = {**types[str(name)]["fields"], "metadata": _client_type("V1ObjectMeta", types)}
        versions = sorted(version["name"] for version in served)
        kinds.setdefault(group, {})[kind] = {"label": label, "versions": versions, "type": name}
    return {
        "about": "generated by scripts/generate_field_schemas.py; do not edit",
        "kinds": kinds,
        "types": dict(sorted(types.items())),
    }


def render(table: dict[str, object]) -> str:
    return json.dumps(table, indent=1, sort_keys=False) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = OUTPUT.relative_to(ROOT)
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"where to write (default {default})")
    args = parser.parse_args()
    args.output.write_text(render(build_table()), encoding="utf-8")


if __name__ == "__main__":
    main()
