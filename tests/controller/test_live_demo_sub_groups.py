"""`batchplace demo --live` runs the two sub-group examples on the local control plane with
the real controller and gets the hand-computed answer: the LeaderWorkerSets' serving groups
(as the LWS controller creates their pods) each inside one rack, prefill in rack-b and
rack-c, decode in rack-a and rack-d; the Volcano Job's four 2-pod shards (its PodGroup's
`subGroupPolicy` as Volcano's job controller writes it) each inside one leaf of spine-b."""

from __future__ import annotations

import io

from rich.console import Console

from batchplace.live_demo import SCENARIOS, run_live_demo

EXAMPLES = ("lws-disaggregated-serving.yaml", "subgroup-training.yaml")


def test_the_sub_group_examples_come_out_as_expected_live() -> None:
    assert set(EXAMPLES) <= {scenario.file for scenario in SCENARIOS}
    output = io.StringIO()
    verdicts = run_live_demo(Console(file=output, width=200), only=EXAMPLES)
    assert [verdict.scenario for verdict in verdicts] == list(EXAMPLES)
    for verdict in verdicts:
        assert verdict.ok, f"{verdict.scenario}: expected {verdict.expected}; got {verdict.got}\n{output.getvalue()[-4000:]}"
