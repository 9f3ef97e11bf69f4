"""Structured logs: one JSON object per line, for the service and for uvicorn.

    {"ts": "2025-01-01T12:00:00.123Z", "level": "INFO", "logger": "batchplace.service.access",
     "msg": "POST /v1/placements 200", "method": "POST", "route": "/v1/placements",
     "status": 200, "duration_ms": 12.3, "request_id": "4f1c…"}

Only the fields listed in `_FIELDS` are copied from a record's `extra`, so nothing a caller
attaches by accident (a header, a body, the token) reaches the output. No code of the
service logs headers; the token lives only in `ServiceSettings.token` (a `SecretStr`).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

__all__ = ["JsonLinesFormatter", "uvicorn_log_config"]

_FIELDS = ("method", "route", "status", "duration_ms", "request_id", "client", "engine", "reason", "detail")


class JsonLinesFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for field in _FIELDS:
            value = record.__dict__.get(field)
            if value is not None:
                line[field] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def uvicorn_log_config(level: str = "info") -> dict[str, Any]:
    """A `logging.config.dictConfig` for `uvicorn.run(log_config=…)`: JSON lines on stderr
    for uvicorn and batchplace; uvicorn's own access log is off (the service writes its own)."""
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonLinesFormatter"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn.error": {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            "batchplace": {"handlers": ["stderr"], "level": level, "propagate": False},
        },
    }
