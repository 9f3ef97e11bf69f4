"""`solver.rules.RULES`: the explicit list the checker runs, in its order."""

from __future__ import annotations

from types import ModuleType

import pytest

import solver.rules
from solver.rules import RULES

EXPECTED_ORDER = ["binding", "gated", "capacity", "eligibility", "usage", "colocation", "reservation", "node_affinity", "nodeports", "dra", "pod_affinity", "topology_spread", "gang", "quota", "topology", "numa", "dependency", "preemption"]


def test_rules_run_in_the_documented_order() -> None:
    assert [rule.NAME for rule in RULES] == EXPECTED_ORDER


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.NAME)
def test_each_rule_module_has_a_name_a_check_and_a_docstring(rule: ModuleType) -> None:
    assert isinstance(rule, ModuleType)
    assert rule.__name__.rsplit(".", 1)[-1] == rule.NAME
    assert callable(rule.check)
    assert rule.__doc__ and "xample" in rule.__doc__, "the docstring states the rule with a worked example"


def test_every_rule_module_in_the_package_is_registered() -> None:
    import pkgutil

    modules = {info.name for info in pkgutil.iter_modules(solver.rules.__path__) if not info.name.startswith("_")}
    assert modules == set(EXPECTED_ORDER)
