"""Required node affinity: a pod goes only to a node that one of its task's
`required_node_affinity` terms selects (kube-scheduler's NodeAffinity filter).

The meaning, as Kubernetes has it (`NodeSelectorTerm` in the core API):
  - terms are ORed: the node must match at least one;
  - within a term, every `matchExpressions` and `matchFields` requirement must hold (ANDed);
  - a term with no requirements matches no node;
  - `In`: the label is present with one of the values; `NotIn`: absent, or not one of them;
    `Exists` / `DoesNotExist`: the key is present / absent; `Gt` / `Lt`: present, an
    integer, and above / below the one value (a label that is not an integer never matches);
  - `matchFields` compare the node's name (`metadata.name`), the one field Kubernetes allows.
No terms at all means no requirement. The pod's `nodeSelector` still applies on top
(rule `eligibility`): both must hold, as in Kubernetes.

Worked example: a task requiring `gpu In [h100]` OR `metadata.name In [a100-0]`, nodes
`a100-0` (gpu=a100), `a100-1` (gpu=a100), `h100-0` (gpu=h100): it may go to `a100-0` (second
term) and `h100-0` (first); a pod of it bound to `a100-1` is one violation.

Preferred node affinity is not a rule but a preference, scored here beside the filter as
kube-scheduler's NodeAffinity plugin does both: `preference_missed(node, preferred)` is the
weight of the preferred terms `node` does not match — 0 on a node that matches them all.
Example: preferences `gpu In [h100]` weight 80 and `zone In [a]` weight 20: an h100 node
in zone b misses 20, an a100 node in zone a misses 80. The objective's locality tier sums
it over bound pods (`solver.objective`, which says why that tier), greedy tries nodes that
miss least first. kube-scheduler normalises the sum to 0–100 per pod across the nodes;
batchplace keeps the raw weights, so a pod that states more weight weighs more.

`matches(node, terms)` is the predicate; engines reach it through
`solver.rules.eligibility.ineligibility_reason`, which folds it into the eligibility classes
every engine reads (`solver.problem`), so greedy, CP-SAT, the LP bound, the reasons and
what-if all see it. `check` judges each pod bound this cycle; running pods are not judged
(a label changed under them is `IgnoredDuringExecution`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.node_affinity import (
    NodeFieldRequirement,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    parse_label_integer,
)
from models.snapshot import Node, Snapshot, Task
from solver.after import After
from solver.violation import Violation

__all__ = [
    "NAME",
    "REASON",
    "matches",
    "term_matches",
    "preference_missed",
    "terms_of",
    "describe_terms",
    "keys_read",
    "names_read",
    "check",
]

NAME = "node_affinity"

REASON = "node affinity mismatch"


def _label_matches(labels: Mapping[str, str], requirement: NodeSelectorRequirement) -> bool:
    """One `matchExpressions` entry: `gpu In [h100]` on `{gpu: h100}` → True; `Gt [7]` on `{gen: x}` → False."""
    value = labels.get(requirement.key)
    operator = requirement.operator
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator == "NotIn":
        return value is None or value not in requirement.values
    if value is None:
        return False
    if operator == "In":
        return value in requirement.values
    number = parse_label_integer(value)
    if number is None:
        return False
    bound = parse_label_integer(requirement.values[0])
    assert bound is not None, "validated by NodeSelectorRequirement"
    return number > bound if operator == "Gt" else number < bound


def _field_matches(node_name: str, requirement: NodeFieldRequirement) -> bool:
    inside = node_name in requirement.values
    return inside if requirement.operator == "In" else not inside


def term_matches(node: Node, term: NodeSelectorTerm) -> bool:
    """Every requirement of `term` holds on `node`; an empty term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    return all(_label_matches(node.labels, r) for r in term.match_expressions) and all(
        _field_matches(node.name, r) for r in term.match_fields
    )


def matches(node: Node, terms: Sequence[NodeSelectorTerm]) -> bool:
    """True when `terms` is empty (no requirement) or some term matches `node`."""
    return not terms or any(term_matches(node, term) for term in terms)


def preference_missed(node: Node, preferred: Sequence[PreferredSchedulingTerm]) -> int:
    """The weight of the preferred terms `node` does not match (an empty term matches none)."""
    return sum(term.weight for term in preferred if not term_matches(node, term.preference))


def terms_of(task: Task) -> tuple[NodeSelectorTerm, ...]:
    """Every term of the task, required and preferred: what a node's class must tell apart."""
    return (*task.required_node_affinity, *(term.preference for term in task.preferred_node_affinity))


def keys_read(terms: Sequence[NodeSelectorTerm]) -> set[str]:
    """The label keys `matches` reads: a node's values for them decide the answer."""
    return {r.key for term in terms for r in term.match_expressions}


def names_read(terms: Sequence[NodeSelectorTerm]) -> set[str]:
    """The node names `matchFields` compare against: a node named in none of them gets
    the same answer from every field requirement, whatever its name."""
    return {name for term in terms for r in term.match_fields for name in r.values}


def _describe_requirement(requirement: NodeSelectorRequirement | NodeFieldRequirement) -> str:
    if requirement.operator in ("Exists", "DoesNotExist"):
        return f"{requirement.key} {requirement.operator}"
    return f"{requirement.key} {requirement.operator} [{', '.join(requirement.values)}]"


def describe_terms(terms: Sequence[NodeSelectorTerm]) -> str:
    """People's form: "gpu In [h100] or metadata.name In [a100-0]" (ANDs as "and")."""
    return " or ".join(
        " and ".join(_describe_requirement(r) for r in (*term.match_expressions, *term.match_fields)) or "(empty term)"
        for term in terms
    )


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Each pod bound this cycle goes to a node its task's required node affinity selects."""
    return [
        Violation(
            rule=NAME,
            subject=bound.pod.key,
            message=(
                f"pod {bound.pod.key} is bound to node {bound.node.name} (labels "
                f"{dict(sorted(bound.node.labels.items()))}), which its required node affinity "
                f"{describe_terms(bound.task.required_node_affinity)} excludes ({REASON})"
            ),
        )
        for bound in after.bound
        if not matches(bound.node, bound.task.required_node_affinity)
    ]
