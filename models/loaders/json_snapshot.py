"""The Snapshot's own JSON form: exactly `Snapshot.model_dump(mode="json")`.

Input: JSON text (str or bytes) or an already-parsed object, e.g. the body the HTTP service
receives, or what `batchplace snapshot FILE...` printed. Output: a validated `Snapshot`.
Errors: `InputFormatError` when the text is not JSON or not a JSON object; `FieldError`
with pydantic's `loc` as the field path otherwise (`pods[3].requests.cpu: Input should be
greater than or equal to 0`). Unknown keys are errors, since every model forbids extras.

Not promised: any other JSON dialect (Kubernetes objects in JSON are YAML, read them with
`models.loaders.kube_yaml`).
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from models.errors import FieldError, InputFormatError, Location
from models.snapshot import Snapshot

from .raw import describe, pydantic_message

__all__ = ["load_snapshot_json", "snapshot_to_json"]


def load_snapshot_json(text_or_obj: str | bytes | dict[str, object], *, source: str = "<input>") -> Snapshot:
    location = Location(source)
    data: object = text_or_obj
    if isinstance(text_or_obj, str | bytes):
        try:
            data = json.loads(text_or_obj)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise InputFormatError(f"not valid JSON: {error}", location=location) from None
        except RecursionError:
            raise InputFormatError("JSON nested too deeply", location=location) from None
    if not isinstance(data, dict):
        raise InputFormatError(f"expected a JSON object (a snapshot), got {describe(data)}", location=location)
    _check_shapes_before_validators_assume(data, location)
    try:
        return Snapshot.model_validate(data)
    except ValidationError as error:
        path, message = pydantic_message(error)
        raise FieldError(message, location=location, path=path) from None


def _check_shapes_before_validators_assume(data: dict[str, object], location: Location) -> None:
    """`Snapshot._add_default_queue` and `Node._default_gpus` (mode="before") read `queues[i]`,
    `queues[i].name` and `nodes[i].allocatable.gpu` before pydantic checks their types, so a
    wrong shape there would escape as AttributeError/TypeError. Check those few shapes first,
    in pydantic's words. (A huge GPU count builds no devices: `_default_gpus` stops at
    `MAX_GPUS_PER_NODE`, and the allocatable's ceiling refuses it.)
    (Reported for models/snapshot.py; harmless once fixed there.)"""
    queues = data.get("queues")
    if queues is not None and not isinstance(queues, list | tuple):
        raise FieldError("Input should be a valid tuple", location=location, path=("queues",))
    for index, queue in enumerate(queues or ()):
        if queue is not None and not isinstance(queue, dict):
            message = "Input should be a valid dictionary or instance of Queue"
            raise FieldError(message, location=location, path=("queues", index))
        name = (queue or {}).get("name")
        if name is not None and not isinstance(name, str):
            raise FieldError("Input should be a valid string", location=location, path=("queues", index, "name"))
    nodes = data.get("nodes")
    for index, node in enumerate(nodes if isinstance(nodes, list | tuple) else ()):
        allocatable = node.get("allocatable") if isinstance(node, dict) else None
        if allocatable is not None and not isinstance(allocatable, dict):
            message = "Input should be a valid dictionary"
            raise FieldError(message, location=location, path=("nodes", index, "allocatable"))


def snapshot_to_json(snapshot: Snapshot) -> str:
    """What `batchplace snapshot FILE...` prints: the JSON form, indented by 2."""
    return json.dumps(snapshot.model_dump(mode="json"), indent=2)
