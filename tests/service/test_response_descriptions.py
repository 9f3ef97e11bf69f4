"""Every field of the what-if and placement responses says in `/docs` what it means (and its
units): the OpenAPI schema is walked from each route's 200 response through every `$ref`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from service.app import create_app
from service.settings import ServiceSettings

ROUTES = ["/v1/what-if", "/v1/fleet/what-if", "/v1/placements", "/v1/fleet/placements"]
OPENAPI = create_app(ServiceSettings()).openapi()
SCHEMAS: dict[str, Any] = OPENAPI["components"]["schemas"]


def _refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        if "$ref" in node:
            yield str(node["$ref"]).rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def reachable_schemas(route: str) -> list[str]:
    """The component schemas the route's 200 response names, directly or through others."""
    response = OPENAPI["paths"][route]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    seen: list[str] = []
    waiting = list(_refs(response))
    while waiting:
        name = waiting.pop()
        if name not in seen:
            seen.append(name)
            waiting += _refs(SCHEMAS[name])
    return sorted(seen)


def undescribed(names: list[str]) -> list[str]:
    return [
        f"{name}.{field}"
        for name in names
        for field, schema in SCHEMAS[name].get("properties", {}).items()
        if not str(schema.get("description", "")).strip()
    ]


@pytest.mark.parametrize("route", ROUTES)
def test_every_field_of_the_response_has_a_description(route: str) -> None:
    names = reachable_schemas(route)
    assert len(names) >= 5  # the walk reached past the top model, into the rows
    assert undescribed(names) == []


def test_the_walk_reaches_the_verdicts_and_the_advice() -> None:
    """So the assertion above covers them: a walk that stopped early would pass on nothing."""
    assert {"WhatIfResponse", "JobVerdict", "DrainedNode", "PlacementResponse", "Bind", "Eviction", "PodGroupOutcome",
            "QueueShare", "Fallback", "RebalanceAdvice", "Move", "MovedUsage", "NodeProjection",
            "UncooledNode"} <= set(reachable_schemas("/v1/what-if"))
    assert {"FleetWhatIfResponse", "FleetJobVerdict", "ClusterVerdict", "FleetPlacementResponse",
            "ClusterPlacement", "JobDispatchOut"} <= set(reachable_schemas("/v1/fleet/what-if"))


def test_gpu_fields_name_their_unit() -> None:
    verdict = SCHEMAS["JobVerdict"]["properties"]
    assert all("device" in verdict[field]["description"] for field in verdict if field.startswith("gpus_"))
