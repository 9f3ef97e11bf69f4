"""Reading the small YAML or JSON files a command takes beside the cluster's manifests —
typical shapes (`models.typical_shapes`), node templates (`models.node_templates`): the
file's parsed content, or an `InputFormatError` naming the file when it cannot be read or
does not parse. What the content must be is the caller's to check.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from models.errors import InputFormatError, Location

__all__ = ["read_option_file"]


def read_option_file(path: Path, *, what: str) -> object:
    """`path` parsed as JSON when it ends in `.json`, else as YAML; `what` names its content
    in the error ("cannot read node templates: No such file or directory")."""
    location = Location(source=str(path))
    try:
        text = path.read_text()
    except OSError as error:
        raise InputFormatError(f"cannot read {what}: {error.strerror or error}", location=location) from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise InputFormatError(f"not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {error}", location=location) from None
