"""Reasons are values: every function of `solver.reasons` returns a `Reason` carrying its
rule, code and numbers, and its sentence is rendered from exactly those — so the code acting
on a reason (the controller's conditions, what-if's blocking rules) reads fields, and the
people reading it get the same words as before.
"""

from __future__ import annotations

import inspect
import pickle
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.placement import PodGroupOutcome
from models.reason import UNREAD, Reason
from solver import reasons
from solver.rules import RULES

RULE_NAMES = frozenset(rule.NAME for rule in RULES)

NOT_REASONS = {
    # the functions of solver.reasons that render no reason: quantities, messages, a clause, readers
    reasons.format_quantity,
    reasons.nodes_would_help,
    reasons.format_resources,
    reasons.backfill_clause,
    reasons.waiting_task,
    reasons.gang_message,
    reasons.gang_assigned_message,
}


def test_every_function_of_the_module_is_a_declared_reason_or_named_here() -> None:
    exported = [getattr(reasons, name) for name in reasons.__all__]
    functions = [f for f in exported if callable(f) and not isinstance(f, type)]
    makers = [f for f in functions if isinstance(f, reasons.Says)]
    assert set(makers) == set(reasons.REASON_MAKERS)
    assert set(functions) - set(makers) == NOT_REASONS
    assert len(reasons.REASON_MAKERS) == len(set(reasons.REASON_MAKERS)) > 20  # the walk finds them


def test_every_reason_is_under_a_rule_or_a_declared_source_that_is_no_rule() -> None:
    assert not RULE_NAMES & set(reasons.NOT_RULES), "a rule is not a source outside the rules"
    for maker in reasons.REASON_MAKERS:
        assert maker.rules and set(maker.rules) <= RULE_NAMES | set(reasons.NOT_RULES), maker.__name__


def test_each_rule_and_code_names_one_function() -> None:
    pairs = [(rule, maker.code) for maker in reasons.REASON_MAKERS for rule in maker.rules]
    assert len(pairs) == len(set(pairs))


def _strategy(hint: Any) -> st.SearchStrategy[Any]:
    """What a reason function is called with: names, non-negative counts and amounts, seconds."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(st.none() if arg is type(None) else _strategy(arg) for arg in args))
    if origin is Mapping:
        return st.dictionaries(st.text(max_size=10), st.integers(0, 10**6), max_size=4)
    if origin is Sequence:
        return st.lists(st.text(max_size=10), max_size=3)
    return {str: st.text(max_size=12), int: st.integers(0, 10**7), float: st.floats(0, 10**6)}[hint]


def _arguments(maker: reasons.Says) -> st.SearchStrategy[dict[str, Any]]:  # type: ignore[type-arg]
    hints = typing.get_type_hints(maker.render)
    fields = {
        name: st.sampled_from(maker.rules) if name == "rule" else _strategy(hints[name])
        for name in inspect.signature(maker.render).parameters
    }
    return st.fixed_dictionaries(fields)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(reasons.REASON_MAKERS).flatmap(lambda maker: st.tuples(st.just(maker), _arguments(maker))))
def test_a_reason_carries_its_rule_code_and_numbers_and_its_sentence_is_rendered_from_them(
    made: tuple[reasons.Says, dict[str, Any]],  # type: ignore[type-arg]
) -> None:
    maker, arguments = made
    reason = maker(**arguments)
    assert type(reason) is Reason
    assert reason == maker.render(**arguments)  # the sentence, word for word what the function renders
    assert reason.code == maker.code and reason.rule in maker.rules
    assert reason.rule == arguments.get("rule", maker.rules[0])
    assert reason.startswith(f"{reason.rule}: "), reason  # people read the rule first
    given_numbers = {name: value for name, value in arguments.items() if name != "rule"}
    assert {name: _plain(value) for name, value in reason.numbers.items()} == {
        name: _plain(value) for name, value in given_numbers.items()
    }
    rule_argument = {"rule": reason.rule} if "rule" in arguments else {}
    assert maker.render(**rule_argument, **reason.numbers) == reason  # the numbers are all it says
    assert Reason.read(str(reason)).rule == reason.rule  # what survives a trip through JSON
    again = pickle.loads(pickle.dumps(reason))
    assert (again, again.rule, again.code, dict(again.numbers)) == (reason, reason.rule, reason.code, dict(reason.numbers))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return value


def test_a_reason_is_frozen() -> None:
    reason = reasons.quota_exceeded("ml", resource="gpu", capability=64000, in_use=60000, needs=8000)
    with pytest.raises(AttributeError):
        reason.rule = "gang"  # type: ignore[misc]
    with pytest.raises(TypeError):
        reason.numbers["needs"] = 1  # type: ignore[index]


def test_the_quota_reason_says_its_numbers_in_fields_and_words() -> None:
    reason = reasons.quota_exceeded("ml", resource="gpu", capability=64000, in_use=60000, needs=8000)
    assert reason == "quota: queue ml capability 64 gpu, 60 in use, job needs 8"
    assert (reason.rule, reason.code) == ("quota", "exceeded")
    assert dict(reason.numbers) == {"queue": "ml", "resource": "gpu", "capability": 64000, "in_use": 60000, "needs": 8000}


def test_an_inter_pod_reason_refuses_a_rule_it_does_not_speak_for() -> None:
    with pytest.raises(ValueError, match="quota"):
        reasons.inter_pod_fit_error("quota", "web", nodes=1, fitting=0, counts={})


def test_a_decision_keeps_the_reasons_it_is_given_and_reads_plain_sentences_back() -> None:
    made = reasons.gang_shortfall(placed=3, minimum=20, needs={"cpu": 80000}, free={"cpu": 12000})
    outcome = PodGroupOutcome(
        name="default/job", queue="default", placed=0, min_member=20, state="pending", reasons=(made, "quota: queue q …")
    )  # type: ignore[arg-type]
    kept, read = outcome.reasons
    assert kept is made
    assert (read.rule, read.code, dict(read.numbers)) == ("quota", UNREAD, {})
    back = PodGroupOutcome.model_validate_json(outcome.model_dump_json())
    assert back.reasons == outcome.reasons and [r.rule for r in back.reasons] == ["gang", "quota"]
    assert outcome.model_dump_json().count('"gang: 3 of min 20 pods fit (needs 80 cpu, 12 cpu free)"') == 1


def test_a_waiting_task_is_read_from_the_dependency_reason_fields() -> None:
    assert reasons.waiting_task(reasons.dependency_waits("task-b", dependency="task-a", running=0, total=1)) == (
        "task-b",
        "task-a",
    )
    assert reasons.waiting_task(reasons.dependency_starting(dependency="task-a", running=0, total=1)) is None
    assert reasons.waiting_task(reasons.unplaced(pending=1)) is None


def test_every_reason_says_whether_a_node_could_lift_it() -> None:
    assert all(isinstance(made.nodes_help, bool) for made in reasons.REASON_MAKERS)
    lifted = {(rule, made.code) for made in reasons.REASON_MAKERS for rule in made.rules if made.nodes_help}
    # what an autoscaler may buy nodes for: room, labels, topology; never policy
    assert {("capacity", "no_fit"), ("eligibility", "no_node"), ("topology", "no_domain"), ("gang", "shortfall")} <= lifted
    assert ("reservation", "holding") in lifted  # an overdue gang starts on a bought node instead of waiting for a drain
    assert not lifted & {
        ("quota", "exceeded"),
        ("queue", "closed"),
        ("queue", "missing"),
        ("dependency", "waits"),
        ("gated", "waiting"),
        ("gang", "too_few_pods"),
        ("unplaced", "fits_after"),
    }


def test_nodes_would_help_a_group_only_when_every_reason_is_one_a_node_lifts() -> None:
    short = reasons.gang_shortfall(placed=6, minimum=20, needs={"cpu": 80000}, free={"cpu": 24000})
    capped = reasons.quota_exceeded("ml", resource="gpu", capability=64000, in_use=60000, needs=8000)
    assert reasons.nodes_would_help([short])
    assert not reasons.nodes_would_help([short, capped])  # the quota holds it whatever the nodes
    assert not reasons.nodes_would_help([capped])
    assert not reasons.nodes_would_help([])
    assert not reasons.nodes_would_help([str(short)])  # read back from JSON: its code is lost, no guess


def test_nodes_would_help_a_group_whose_task_waits_on_one_nodes_would_start() -> None:
    """t1 waits for t0, and t0 fits no node: a node starts t0, so the group; t1's wait alone
    (t0 starting) is no node's to lift, nor is it beside a quota."""
    waits = reasons.dependency_waits("t1", dependency="t0", running=0, total=1)
    no_node = reasons.eligibility_none("t0", nodes=1, counts={"node unschedulable": 1})
    capped = reasons.quota_exceeded("ml", resource="gpu", capability=64000, in_use=60000, needs=8000)
    assert reasons.nodes_would_help([no_node, waits])
    assert not reasons.nodes_would_help([waits])
    assert not reasons.nodes_would_help([capped, waits])
