"""Load a Snapshot from Kubernetes YAML: the manifests people write, or `kubectl get -o yaml`.

Input: files, YAML text, or already-parsed documents as `(source, 1-based number, object)`
(what the HTTP service will hand over). Each document is one object or a `List` / `*List`
with `items` (items without `kind` take it from the list: a `PodList`'s items are Pods).
Output: a `LoadResult` — the validated `Snapshot` plus warnings, one line each, such as
`cluster.yaml: document 4 (ConfigMap default/x): kind v1/ConfigMap is not used; skipped`.

Kinds read (what each reads is in the reader's module docstring; a field or apiVersion
their schema does not have is a warning with the nearest known name, see `field_schemas`):

    v1 Node, v1 Pod                           cluster_objects, workloads
    scheduling.k8s.io PriorityClass           cluster_objects
    scheduling.volcano.sh Queue, PodGroup     cluster_objects, workloads
    scheduling.x-k8s.io PodGroup              workloads
    scheduling.k8s.io PodGroup                kube_pod_group
    scheduling.k8s.io Workload                kube_workload
    batch.volcano.sh Job (vcjob)              volcano_job
    kubeflow.org PyTorchJob                   pytorch_job
    leaderworkerset.x-k8s.io LeaderWorkerSet  leader_worker_set(_object)
    jobset.x-k8s.io JobSet                    jobset(_object)
    topology.volcano.sh HyperNode             cluster_objects
    nodeinfo.volcano.sh Numatopology          cluster_objects
    resource.k8s.io DeviceClass, ResourceSlice,
      ResourceClaim, ResourceClaimTemplate    dra_objects

A Kubernetes Workload with podGroupTemplates is skipped with a note that it is read through
the PodGroups its controller makes. Every other kind is skipped with one
warning. Errors (all `SnapshotError`, see
`models.errors`): `InputFormatError` when text is not YAML or a document is not a
Kubernetes object, `FieldError` when a field's value is wrong; both say file, document,
object and field path. It does not read from a cluster: that is the controller's job.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from models.errors import InputFormatError, Location
from models.snapshot import Snapshot, SnapshotLimits

from .assemble import Inventory, assemble
from .cluster_objects import (
    read_hypernode,
    read_node,
    read_numatopology,
    read_priority_class,
    read_queue,
)
from .dra_objects import read_device_class, read_resource_claim, read_resource_claim_template, read_resource_slice
from .field_schemas import KindSchema, kind_schema, warn_unknown_fields
from .object_names import check_object_name
from .read_memo import ObjectRead, ReadMemo
from .step_memo import NO_STEP_MEMO
from .kube_pod_group import read_kube_pod_group
from .kube_workload import PodGroupTemplates, read_kube_workload
from .jobset_object import read_jobset
from .leader_worker_set_object import read_leader_worker_set
from .pytorch_job import read_pytorch_job
from .raw import (
    DEFAULT_NAMESPACE,
    Metadata,
    RawObject,
    RecordedWarnings,
    Warnings,
    describe,
    read_metadata,
)
from .volcano_job import read_volcano_job
from .workloads import JobRecord, read_pod, read_volcano_pod_group, read_xk8s_pod_group

__all__ = [
    "DEFAULT_SCHEDULER_NAMES",
    "Document",
    "LoadResult",
    "load_snapshot_files",
    "load_snapshot_documents",
    "load_snapshot_yaml_text",
    "parse_yaml_documents",
    "read_manifest_documents",
    "require_objects",
]

DEFAULT_SCHEDULER_NAMES: tuple[str, ...] = ("batchplace", "volcano")
STDIN_SOURCE = "<stdin>"
_MAX_PODS = SnapshotLimits().max_pods
Document = tuple[str, int, object]
"""(source name, 1-based document number, the parsed object)."""

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _UniqueKeyLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """The safe loader (the C one when PyYAML has it: the parser stays in C, only this
    check is Python) refusing a key written twice in one mapping, as kubectl does: with
    "last one wins" a Node with `status:` twice, or two objects run together without `---`,
    would load as something nobody wrote. Keys are compared as written (tag and text), before
    `<<` merges: a key a merge brings in may be overridden, as YAML means it to be. Cost: a
    small share of a large file's load time (measured: docs/results.md, "Refusing duplicate
    keys when loading YAML")."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
        if isinstance(node, yaml.MappingNode):
            keys = [(key.tag, key.value) for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
            if len(set(keys)) != len(keys):  # rare: find the first repeat, with its lines
                _refuse_repeated_key(node)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


def _refuse_repeated_key(node: yaml.MappingNode) -> None:
    first_line: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        key = (key_node.tag, key_node.value)
        if key in first_line:
            problem = f'key "{key_node.value}" already set in map (first at line {first_line[key]})'
            raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
        first_line[key] = key_node.start_mark.line + 1


_SafeLoader = _UniqueKeyLoader
_CLUSTER_SCOPED = frozenset(
    {
        "Node",
        "Namespace",
        "PriorityClass",
        "Queue",
        "HyperNode",
        "Numatopology",
        "PersistentVolume",
        "StorageClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "RuntimeClass",
        "DeviceClass",
        "ResourceSlice",
        "IngressClass",
    }
)


def _not_read(fields: Collection[str]) -> str:
    """The warning for scheduling fields batchplace ignores (`affinity_fields` says why)."""
    return f"{', '.join(sorted(fields))} not read; placement ignores them"


@dataclass(frozen=True)
class LoadResult:
    snapshot: Snapshot
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Context:
    inventory: Inventory
    warnings: Warnings
    scheduler_names: frozenset[str]
    check_fields: bool


# ---- public API ----


def load_snapshot_files(
    paths: Sequence[str | Path], *, scheduler_names: Collection[str] = DEFAULT_SCHEDULER_NAMES
) -> LoadResult:
    """Read YAML files (multi-document) into one Snapshot (`read_manifest_documents` says what
    is read and refused)."""
    return load_snapshot_documents(read_manifest_documents(paths), scheduler_names=scheduler_names)


def read_manifest_documents(paths: Sequence[str | Path]) -> list[Document]:
    """The documents of YAML files; `-` reads standard input (named `<stdin>` in messages), a
    directory its manifest files (`manifest_files`). A file that cannot be read, a directory
    with no manifest, or input that holds no object at all (empty files, only `---`, a
    `List` with no items) is an `InputFormatError` naming it — as `kubectl apply` refuses
    it with "no objects passed to apply"."""
    documents: list[Document] = []
    sources: list[str] = []
    for path in [file for given in paths for file in manifest_files(given)]:
        source = STDIN_SOURCE if str(path) == "-" else str(path)
        try:
            text = sys.stdin.read() if source == STDIN_SOURCE else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InputFormatError(f"cannot read the file: {error}", location=Location(source)) from None
        documents += parse_yaml_documents(text, source=source)
        sources.append(source)
    require_objects(documents, source=", ".join(sources))
    return documents


def require_objects(documents: Sequence[Document], *, source: str) -> None:
    """Refuse input that holds no object, as kubectl refuses it ("no objects passed to
    apply"): a solve of nothing is a mistake to say, not an empty answer to print."""
    if not any(_holds_an_object(document) for _, _, document in documents):
        message = "no objects passed: the input holds no Kubernetes object (it is empty, only `---`, or a List with no items)"
        raise InputFormatError(message, location=Location(source))


def _holds_an_object(document: object) -> bool:
    """False only for a `List` whose `items` are empty; anything else is an object (or an
    error `_objects` reports with its place)."""
    if not isinstance(document, Mapping):
        return True
    kind = document.get("kind")
    return not (isinstance(kind, str) and kind.endswith("List") and "items" in document and not document.get("items"))


MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")
"""The files a directory contributes, as `kubectl apply -f DIR` picks them (JSON is YAML)."""


def manifest_files(path: str | Path) -> list[str | Path]:
    """`path` itself, or for a directory its files ending in `MANIFEST_SUFFIXES`, sorted by
    name, not recursing — how a replay or `kubectl get -o yaml > DIR/KIND.yaml` per kind
    hands over one cycle's objects. Example: DIR holding nodes.yaml, pods.yml, notes.txt and
    sub/ → [DIR/nodes.yaml, DIR/pods.yml]."""
    if str(path) == "-" or not Path(path).is_dir():
        return [path]
    files: list[str | Path] = sorted(p for p in Path(path).iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    if not files:
        suffixes = ", ".join(MANIFEST_SUFFIXES)
        raise InputFormatError(f"the directory holds no manifest file (ending {suffixes})", location=Location(str(path)))
    return files


def load_snapshot_yaml_text(
    text: str, *, source: str = "<input>", scheduler_names: Collection[str] = DEFAULT_SCHEDULER_NAMES
) -> LoadResult:
    return load_snapshot_documents(parse_yaml_documents(text, source=source), scheduler_names=scheduler_names)


def load_snapshot_documents(
    documents: Iterable[Document],
    *,
    scheduler_names: Collection[str] = DEFAULT_SCHEDULER_NAMES,
    check_fields: bool = True,
    memo: ReadMemo | None = None,
) -> LoadResult:
    """`check_fields=False` skips the warnings about unknown fields and apiVersions
    (`field_schemas`): objects read from a live API server passed its own schema, which
    may be newer than batchplace's table, and a cycle should not pay to walk them again.
    `memo` reads each version of an object once across loads (`read_memo`). `documents` is
    read once, in order: a generator keeps a large input's triples from living all at once."""
    context = _Context(Inventory(), Warnings(), frozenset(scheduler_names), check_fields)
    if memo is not None:
        memo.begin()
    for source, number, document in documents:
        context.inventory.sources.append(source)
        key = None if memo is None else memo.key(source, number, document, context.scheduler_names, check_fields)
        if memo is not None and key is not None:
            _read_remembered(source, number, document, key, context, memo)
            continue
        for obj in _objects(source, number, document):
            _read_object(obj, context)
    snapshot = assemble(context.inventory, context.warnings, NO_STEP_MEMO if memo is None else memo.steps)
    if memo is not None:
        memo.end()
    return LoadResult(snapshot=snapshot, warnings=context.warnings.lines)


def parse_yaml_documents(text: str, *, source: str) -> list[Document]:
    """Parse multi-document YAML; empty documents (a trailing `---`) are dropped but counted."""
    documents: list[Document] = []
    number = 0
    try:
        for number, document in enumerate(yaml.load_all(text, Loader=_SafeLoader), start=1):
            if document is not None:
                documents.append((source, number, document))
    except yaml.YAMLError as error:
        message = f"not valid YAML: {_yaml_problem(error)}"
        raise InputFormatError(message, location=Location(source, number + 1)) from None
    except RecursionError:
        raise InputFormatError("YAML nested too deeply", location=Location(source, number + 1)) from None
    return documents


def _yaml_problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    if mark is None:
        return str(problem)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"


# ---- documents to objects ----


def _object_location(source: str, number: int, obj: Mapping[object, object]) -> Location:
    """`Location(source, number, "Kind ns/name")`, as far as the object says it."""
    kind = obj.get("kind")
    kind_text = kind if isinstance(kind, str) and kind else None
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        return Location(source, number, kind_text)
    if kind_text is None:
        return Location(source, number, name)
    if kind_text in _CLUSTER_SCOPED:
        return Location(source, number, f"{kind_text} {name}")
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    namespace_text = namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE
    return Location(source, number, f"{kind_text} {namespace_text}/{name}")


def _objects(source: str, number: int, document: object) -> Iterator[RawObject]:
    """The Kubernetes objects in one document: itself, or the items of a List."""
    location = Location(source, number)
    if not isinstance(document, Mapping):
        raise InputFormatError(
            f"expected a Kubernetes object (a mapping with apiVersion, kind, metadata), got {describe(document)}",
            location=location,
        )
    kind = document.get("kind")
    if not (isinstance(kind, str) and kind.endswith("List") and "items" in document):
        yield _checked(document, _object_location(source, number, document), ())
        return
    items = document.get("items") or []
    if not isinstance(items, list):
        raise InputFormatError(f"items: expected a list, got {describe(items)}", location=location)
    item_kind = kind.removesuffix("List")
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputFormatError(
                f"expected a Kubernetes object, got {describe(item)}", location=location, path=("items", index)
            )
        if item_kind and "kind" not in item:
            item = {"kind": item_kind, "apiVersion": document.get("apiVersion"), **item}
        yield _checked(item, _object_location(source, number, item), ("items", index))


def _checked(obj: Mapping[object, object], location: Location, path: tuple[str | int, ...]) -> RawObject:
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            hint = ""
            if any(name in obj for name in ("nodes", "pod_groups", "pods")):
                hint = " (this looks like a snapshot in JSON form: load it with load_snapshot_json)"
            raise InputFormatError(
                f"not a Kubernetes object: {key} is missing or not a string{hint}", location=location, path=path
            )
    if not all(isinstance(key, str) for key in obj):
        raise InputFormatError("not a Kubernetes object: a key is not a string", location=location, path=path)
    return RawObject({str(key): value for key, value in obj.items()}, location, path)


# ---- dispatch ----


def _read_object(obj: RawObject, context: _Context) -> None:
    api_version = str(obj.raw("apiVersion"))
    kind = str(obj.raw("kind"))
    group = api_version.rpartition("/")[0]
    reader = _READERS.get((group, kind))
    if reader is None:
        message = f"kind {api_version}/{kind} is not used; skipped{_nearest_kind(group, kind)}"
        context.warnings.add(obj.location, message)
        return
    if context.check_fields:
        warn_unknown_fields(obj, _SCHEMAS[group, kind], context.warnings)
    meta = read_metadata(obj)
    check_object_name(meta.name, None if kind in _CLUSTER_SCOPED else meta.namespace, obj.location, obj.path)
    reader(obj, meta, context)


def _read_remembered(
    source: str, number: int, document: object, key: Hashable, context: _Context, memo: ReadMemo
) -> None:
    """`_read_object` on a one-object document, or what it added the last time it read this
    version of the object — then without walking the document again."""

    def first_read() -> ObjectRead:
        (obj,) = _objects(source, number, document)
        own = _Context(Inventory(), RecordedWarnings(), context.scheduler_names, context.check_fields)
        _read_object(obj, own)
        return ObjectRead.of(own.inventory, own.warnings)

    read = memo.read(key, first_read)
    read.add_to(context.inventory, context.warnings)
    if read.pod_count:
        _count_pods(lambda: next(_objects(source, number, document)), read.pod_count, context)


def _nearest_kind(group: str, kind: str) -> str:
    """`; did you mean scheduling.volcano.sh/v1beta1 Queue?` for a kind read in another group
    (`apiVersion: v1` on a Queue) or a near spelling of one read in this group (`Podgroup`)."""
    candidates = [key for key in _READERS if key[1] == kind]
    if not candidates:
        in_group = [known for known_group, known in _READERS if known_group == group]
        candidates = [(group, known) for known in difflib.get_close_matches(kind, in_group, n=1)]
    if not candidates:
        return ""
    known_group, known_kind = candidates[0]
    version = _SCHEMAS[known_group, known_kind].versions[-1]
    return f"; did you mean {f'{known_group}/' if known_group else ''}{version} {known_kind}?"


def _node(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.nodes.append(read_node(obj, meta))


def _numatopology(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.numa_topologies.append(read_numatopology(obj, meta))


def _hypernode(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.hypernodes.append(read_hypernode(obj, meta))


def _queue(obj: RawObject, meta: Metadata, context: _Context) -> None:
    record = read_queue(obj, meta, warnings=context.warnings)
    if record is not None:
        context.inventory.queues.append(record)


def _priority_class(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.priority_classes.append(read_priority_class(obj, meta))


def _volcano_pod_group(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.workloads.append(read_volcano_pod_group(obj, meta, warnings=context.warnings))


def _xk8s_pod_group(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.workloads.append(read_xk8s_pod_group(obj, meta, warnings=context.warnings))


def _kube_pod_group(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.workloads.append(read_kube_pod_group(obj, meta, warnings=context.warnings))


def _kube_workload(obj: RawObject, meta: Metadata, context: _Context) -> None:
    record = read_kube_workload(obj, meta, warnings=context.warnings)
    if isinstance(record, PodGroupTemplates):
        context.inventory.pod_group_templates.append(record)
    else:
        context.inventory.workloads.append(record)


def _pod(obj: RawObject, meta: Metadata, context: _Context) -> None:
    record = read_pod(obj, meta, scheduler_names=context.scheduler_names)
    if record is None:
        return
    if record.pending and record.template.unread_fields:
        context.warnings.add(obj.location, _not_read(record.template.unread_fields), like="scheduling fields not read")
    _count_pods(obj, 1, context)
    context.inventory.workloads.append(record)


def _volcano_job(obj: RawObject, meta: Metadata, context: _Context) -> None:
    record = read_volcano_job(obj, meta, scheduler_names=context.scheduler_names, warnings=context.warnings)
    if record is not None:
        _add_job(obj, record, context)


def _pytorch_job(obj: RawObject, meta: Metadata, context: _Context) -> None:
    record = read_pytorch_job(obj, meta, scheduler_names=context.scheduler_names, warnings=context.warnings)
    if record is not None:
        _add_job(obj, record, context)


def _leader_worker_set(obj: RawObject, meta: Metadata, context: _Context) -> None:
    record = read_leader_worker_set(obj, meta, scheduler_names=context.scheduler_names, warnings=context.warnings)
    if record is not None:
        _add_job(obj, record, context)


def _jobset(obj: RawObject, meta: Metadata, context: _Context) -> None:
    record = read_jobset(obj, meta, scheduler_names=context.scheduler_names, warnings=context.warnings)
    if record is not None:
        _add_job(obj, record, context)


def _add_job(obj: RawObject, record: JobRecord, context: _Context) -> None:
    unread = {field for pod in record.pods for field in pod.template.unread_fields}
    if unread:
        context.warnings.add(obj.location, _not_read(unread), like="scheduling fields not read")
    _count_pods(lambda: obj, len(record.pods), context)
    context.inventory.workloads.append(record)


def _device_class(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.dra.append(read_device_class(obj, meta, context.inventory.dra_unused))


def _resource_slice(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.dra.append(read_resource_slice(obj, meta, context.inventory.dra_unused))


def _resource_claim(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.dra.append(read_resource_claim(obj, meta, context.inventory.dra_unused))


def _resource_claim_template(obj: RawObject, meta: Metadata, context: _Context) -> None:
    context.inventory.dra.append(read_resource_claim_template(obj, meta, context.inventory.dra_unused))


def _count_pods(where: Callable[[], RawObject], count: int, context: _Context) -> None:
    """Stop early, before memory runs out, when the input holds more pods than a snapshot may
    (the error names the object `where` gives, built only then)."""
    context.inventory.pod_count += count
    if context.inventory.pod_count > _MAX_PODS:
        raise where().error(None, f"the input holds more than {_MAX_PODS} pods, the snapshot's limit")


_READERS: dict[tuple[str, str], Callable[[RawObject, Metadata, _Context], None]] = {
    ("", "Node"): _node,
    ("", "Pod"): _pod,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
    ("scheduling.k8s.io", "PodGroup"): _kube_pod_group,
    ("scheduling.k8s.io", "Workload"): _kube_workload,
    ("scheduling.volcano.sh", "Queue"): _queue,
    ("scheduling.volcano.sh", "PodGroup"): _volcano_pod_group,
    ("scheduling.x-k8s.io", "PodGroup"): _xk8s_pod_group,
    ("batch.volcano.sh", "Job"): _volcano_job,
    ("kubeflow.org", "PyTorchJob"): _pytorch_job,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _leader_worker_set,
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("topology.volcano.sh", "HyperNode"): _hypernode,
    ("nodeinfo.volcano.sh", "Numatopology"): _numatopology,
    ("resource.k8s.io", "DeviceClass"): _device_class,
    ("resource.k8s.io", "ResourceSlice"): _resource_slice,
    ("resource.k8s.io", "ResourceClaim"): _resource_claim,
    ("resource.k8s.io", "ResourceClaimTemplate"): _resource_claim_template,
}
_SCHEMAS: dict[tuple[str, str], KindSchema] = {(group, kind): kind_schema(group, kind) for group, kind in _READERS}
