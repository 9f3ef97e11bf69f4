"""schemathesis against the OpenAPI schema (ASGI, in process): whatever it sends — valid
snapshots, broken ones, wrong types, odd media types — the answer is never a 5xx, and
every 200 matches its documented schema. Bounded: a few dozen examples per operation."""

from __future__ import annotations

import warnings

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")

import schemathesis  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import response_schema_conformance  # noqa: E402

from service.app import create_app  # noqa: E402
from service.live import FixedSnapshot  # noqa: E402
from service.settings import ServiceSettings  # noqa: E402
from tests.service.service_helpers import example_snapshot  # noqa: E402

# A live snapshot, so a what-if that posts none is solved (and its changes fuzzed) too.
LIVE = FixedSnapshot(example_snapshot("gpu-topology.yaml"))
APP = create_app(ServiceSettings(max_time_limit_s=1.0, solver_slots=2, solver_queue=64), live_snapshot=LIVE)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_input_gets_a_server_error(case: schemathesis.Case) -> None:
    response = case.call()
    case.validate_response(response, checks=(not_a_server_error, response_schema_conformance))
