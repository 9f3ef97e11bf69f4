"""`ServiceSettings`: every limit of the HTTP service in one frozen value.

Input: `batchplace serve` flags, or environment variables `BATCHPLACE_SERVICE_*` (what each
uvicorn worker process reads, `from_env`), or a test's keyword arguments. Output: the value
`service.app.create_app` keeps on `app.state.settings` and every dependency reads.

The bearer token is never in the environment: `BATCHPLACE_SERVICE_TOKEN_FILE` names a file
that each worker reads. It is held as a `SecretStr`, so `repr()` and logs show `**********`.

Not promised: hot reload — settings are read once, when the app is built.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from models.typical_shapes import TypicalShape
from solver.isolation import DEFAULT_MEMORY_LIMIT_BYTES
from solver.place import MIN_MEMORY_LIMIT_BYTES

__all__ = ["ServiceSettings", "SettingsError", "ENV_PREFIX", "read_token_file"]

ENV_PREFIX = "BATCHPLACE_SERVICE_"
MIB = 2**20


class SettingsError(ValueError):
    """A setting cannot be used (bad number, unreadable token file): fix the flag and restart."""


class ServiceSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_body_bytes: int = Field(
        16 * MIB, ge=1024, description="request bodies past this get 413 (a 1,000-node snapshot is ~1.2 MiB)"
    )
    max_time_limit_s: float = Field(
        30.0, gt=0, le=3600, description="a request's time_limit_s is capped to this (never refused for it)"
    )
    default_time_limit_s: float = Field(5.0, gt=0, le=3600, description="time_limit_s when a request names none")
    solver_slots: int = Field(2, ge=1, le=256, description="solves running at once (threads of the solver pool)")
    solver_queue: int = Field(
        8, ge=0, le=10_000, description="requests that may wait for a slot; one more gets 429 with Retry-After"
    )
    retry_after_s: int = Field(1, ge=1, le=3600, description="the Retry-After a 429 carries")
    solver_memory_bytes: int | None = Field(
        DEFAULT_MEMORY_LIMIT_BYTES, ge=MIN_MEMORY_LIMIT_BYTES,
        description="what one CP-SAT search may allocate; past it that answer is greedy's (FALLBACK); None: no ceiling",
    )
    partition_parts: int = Field(
        1, ge=1, le=256, description="solve each request in this many parts (serve --partition-parts); 1: whole"
    )
    ray_address: str | None = Field(
        None, description="the parts of a partitioned solve run on this Ray cluster (serve --ray-address); "
        "None: processes of this machine"
    )
    typical_shapes: tuple[TypicalShape, ...] = Field(
        (), description="the pod shapes the packing keeps room for when a request names none (serve --typical-shapes); "
        "empty: each snapshot's pending pods"
    )
    token: SecretStr | None = Field(None, description="bearer token for /v1/*; None: no auth")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "ServiceSettings":
        """Settings from `BATCHPLACE_SERVICE_<FIELD>` variables; the token from `…_TOKEN_FILE`."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for name in cls.model_fields:
            if name == "token":
                continue
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None and raw != "":
                values[name] = json.loads(raw) if name == "typical_shapes" else None if raw.lower() == "none" else raw
        token_file = env.get(ENV_PREFIX + "TOKEN_FILE")
        if token_file:
            values["token"] = read_token_file(Path(token_file))
        try:
            return cls.model_validate(values)
        except (ValidationError, json.JSONDecodeError) as error:
            if isinstance(error, json.JSONDecodeError):
                raise SettingsError(f"{ENV_PREFIX}TYPICAL_SHAPES: not JSON ({error})") from None
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise SettingsError(f"{ENV_PREFIX}{field.upper()}: {first['msg']}") from None

    def to_env(self, *, token_file: Path | None) -> dict[str, str]:
        """The variables `from_env` reads back, for uvicorn's worker processes (never the token)."""
        env = {
            ENV_PREFIX + name.upper(): "none" if getattr(self, name) is None else str(getattr(self, name))
            for name in type(self).model_fields
            if name not in ("token", "typical_shapes")
        }
        env[ENV_PREFIX + "TYPICAL_SHAPES"] = json.dumps([shape.model_dump() for shape in self.typical_shapes])
        if token_file is not None:
            env[ENV_PREFIX + "TOKEN_FILE"] = str(token_file)
        return env

    def time_limit_for(self, requested_s: float | None) -> float:
        """The time limit a solve gets: the request's, else the default, capped at `max_time_limit_s`."""
        wanted = self.default_time_limit_s if requested_s is None or not math.isfinite(requested_s) else requested_s
        return min(wanted, self.max_time_limit_s)


def read_token_file(path: Path) -> SecretStr:
    """The token in `path`, whitespace stripped; an empty or unreadable file is a `SettingsError`."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"token file {path}: cannot read it ({error.__class__.__name__})") from None
    if not text:
        raise SettingsError(f"token file {path} is empty")
    return SecretStr(text)
