"""`sla-waiting-time`: read as Volcano's `sla` plugin reads it — a Go duration on a vcjob or
PodGroup (and here on a Queue, as its PodGroups' default); a bad value is ignored with a
warning naming the annotation, never an error that stops the load."""

from __future__ import annotations

import pytest

from models.duration import DurationError, parse_go_duration
from tests.models._kube_builders import load, pod_group, queue, snapshot, task, vcjob, xk8s_pod_group

SLA = "sla-waiting-time"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30m", 1800.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("90s", 90.0), ("1h2m3s4ms", 3723.004)],
    ids=["minutes", "hours and minutes", "a fraction of an hour", "seconds", "Volcano's example"],
)
def test_go_durations_read_in_seconds(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["banana", "", "5", "-5m", "0", "1y"], ids=["a word", "empty", "no unit", "negative", "zero", "unknown unit"])
def test_what_is_not_a_positive_go_duration_is_a_duration_error(text: str) -> None:
    with pytest.raises(DurationError):
        parse_go_duration(text)


def test_a_vcjob_a_pod_group_and_a_queue_carry_their_waiting_time() -> None:
    loaded = snapshot(
        queue("q", weight=1) | {"metadata": {"name": "q", "annotations": {SLA: "2h"}}},
        vcjob("job", task("w"), annotations={SLA: "30m"}, queue="q", schedulerName="batchplace"),
        pod_group("pg", annotations={SLA: "45m"}, minMember=1),
        xk8s_pod_group("plain", annotations={SLA: "10m"}, minMember=1),
    )
    waits = {group.name: group.sla_waiting_s for group in loaded.pod_groups}
    assert waits == {"job": 1800.0, "pg": 2700.0, "plain": 600.0}
    assert loaded.queue_by_name["q"].sla_waiting_s == 7200.0


@pytest.mark.parametrize("text", ["banana", "-10m"], ids=["not a duration", "negative"])
def test_a_bad_waiting_time_is_ignored_with_a_warning_naming_the_annotation(text: str) -> None:
    result = load(pod_group("pg", annotations={SLA: text}, minMember=1))
    assert result.snapshot.pod_groups[0].sla_waiting_s is None
    assert any(f"metadata.annotations.{SLA}" in line and "(ignored)" in line for line in result.warnings)
