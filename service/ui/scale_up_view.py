"""The Scale-up page: node templates pasted into a form, and the plan for the page's
snapshot (`solver.scale_up.plan_scale_up`, on the decision the other pages show) — the
nodes to buy, the waiting PodGroups they start, those that still wait and why.

Input errors (not YAML, a bad template, a HyperNode the snapshot lacks) are the sentence
the loader writes, naming the template and field; never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from models.errors import InputFormatError, Location, SnapshotError
from models.node_templates import read_node_templates
from models.scale_up_plan import ScaleUpPlan
from service.ui.analysis import UI_SOLVE_CONFIG, Analysis
from solver.scale_up import plan_scale_up

__all__ = ["ScaleUpView", "TEMPLATES_EXAMPLE", "build_scale_up_view"]

SOURCE = "templates"
TEMPLATES_EXAMPLE = """templates:
  - name: p5-48xlarge
    labels: {node.kubernetes.io/instance-type: p5.48xlarge}
    allocatable: {cpu: 191500, memory: 2147483648000, gpu: 8000, pods: 110}
    price_per_hour: 98.32
    max_count: 8
"""


@dataclass(frozen=True)
class ScaleUpView:
    plan: ScaleUpPlan | None
    error: str | None
    """The one sentence saying what is wrong with the templates, when they cannot be used."""


def build_scale_up_view(analysis: Analysis, templates_text: str) -> ScaleUpView:
    """The plan for the templates in `templates_text` (YAML or JSON), or the error."""
    try:
        try:
            data = yaml.safe_load(templates_text)
        except yaml.YAMLError as error:
            raise InputFormatError(f"not valid YAML: {error}", location=Location(source=SOURCE)) from None
        templates = read_node_templates(data, source=SOURCE)
        plan = plan_scale_up(analysis.snapshot, templates, config=UI_SOLVE_CONFIG, decision=analysis.decision, source=SOURCE)
    except SnapshotError as error:
        return ScaleUpView(plan=None, error=str(error))
    return ScaleUpView(plan=plan, error=None)
