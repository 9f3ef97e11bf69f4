"""The error responses every `/v1` route documents (bodies as `service.errors` builds them)."""

from __future__ import annotations

from typing import Any

_PROBLEM_EXAMPLE = {
    "detail": [
        {
            "loc": ["body", "pod_groups", 0, "tasks", 0, "requests", "gpu"],
            "pointer": "/pod_groups/0/tasks/0/requests/gpu",
            "msg": "Input should be greater than or equal to 0",
            "type": "snapshot_field",
        }
    ]
}

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"description": "no bearer token, or the wrong one (only when the server has a token)"},
    413: {"description": "the body is larger than the server's max_body_bytes"},
    415: {"description": "Content-Type is neither JSON nor YAML"},
    422: {
        "description": "a field is wrong: `loc`, a JSON `pointer` into the body, and `msg` say which and why",
        "content": {"application/json": {"example": _PROBLEM_EXAMPLE}},
    },
    429: {"description": "every solver slot is busy: retry after the Retry-After header's seconds"},
}
