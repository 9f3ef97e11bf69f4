"""The Balance page: hot nodes, and the moves batchplace advises to cool them.

Input: an `Analysis` (snapshot + this cycle's decision). Output: a frozen `BalanceView`
— `solver.rebalance`'s advice on the cluster as this cycle leaves it (the decision's binds
running, its evictions gone: what `POST /v1/what-if` with `rebalance: true` and no other
change answers), with rows the template walks: each judged node's usage before and after
per resource against its thresholds, each move, each hot node left hot with its reason.

Advice only, like the API's: the page evicts nothing, and says so. Within the dashboard's
time limit (`BALANCE_CONFIG`, 2 s, as the Analysis's solve). CPU-bound: built in the
solver pool, once per analysis (`service.ui.routes` keeps it).
"""

from __future__ import annotations

from dataclasses import dataclass

from models.rebalance import Move, NodeProjection, RebalanceAdvice, UncooledNode
from service.ui.analysis import Analysis
from solver.rebalance import RebalanceConfig, cycle_snapshot, plan_rebalance

__all__ = ["BALANCE_CONFIG", "UsageBar", "NodeBalanceRow", "BalanceView", "build_balance_view"]

BALANCE_CONFIG = RebalanceConfig(time_limit_s=2.0)


@dataclass(frozen=True)
class UsageBar:
    """One resource of one node: percents before and after, and its threshold (None: not judged)."""

    resource: str
    before: float
    after: float
    threshold: float | None

    @property
    def over_before(self) -> bool:
        return self.threshold is not None and self.before > self.threshold

    @property
    def over_after(self) -> bool:
        return self.threshold is not None and self.after > self.threshold

    @staticmethod
    def width(percent: float) -> float:
        """Bar width in percent of the cell: 0–100 % of allocatable, clamped."""
        return max(0.0, min(100.0, percent))


@dataclass(frozen=True)
class NodeBalanceRow:
    node: str
    verdict: str
    bars: tuple[UsageBar, ...]
    moves_out: int
    moves_in: int


@dataclass(frozen=True)
class BalanceView:
    advice: RebalanceAdvice
    rows: tuple[NodeBalanceRow, ...]
    moves: tuple[Move, ...]
    uncooled: tuple[UncooledNode, ...]

    @property
    def answered_by(self) -> str:
        advice = self.advice
        if advice.engine == "none":
            return "nothing to plan (no pod on a hot node may move)"
        engine = "CP-SAT" if advice.engine == "cpsat" else advice.engine
        detail = advice.status + (f": {advice.fallback.cause}" if advice.fallback is not None else "")
        return f"{engine} ({detail})"


def _row(projection: NodeProjection) -> NodeBalanceRow:
    bars = tuple(
        UsageBar(resource=r, before=before, after=projection.after.get(r, before), threshold=projection.thresholds.get(r))
        for r, before in projection.before.items()
    )
    return NodeBalanceRow(
        node=projection.node,
        verdict=projection.verdict,
        bars=bars,
        moves_out=projection.moves_out,
        moves_in=projection.moves_in,
    )


def build_balance_view(analysis: Analysis) -> BalanceView:
    """The advice on the cluster as `analysis`'s cycle leaves it, as rows."""
    cycle = cycle_snapshot(analysis.snapshot, analysis.decision.placement)
    advice = plan_rebalance(cycle, BALANCE_CONFIG)
    return BalanceView(
        advice=advice,
        rows=tuple(_row(projection) for projection in advice.nodes),
        moves=advice.moves,
        uncooled=advice.uncooled,
    )
