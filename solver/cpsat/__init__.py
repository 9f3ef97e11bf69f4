"""The CP-SAT engine: every hard rule in one model over node profiles and packing patterns,
solved tier by tier (`engine`), built in steps — units (`units`), data (`data`: functions over one `build_context`, with
`patterns`, `devices`, `topology`, `victims`, `interpod`), variables (`variables`),
constraints (`constraints`), objective (`objective`) — warm-started from greedy (`hint`)
and read back (`extract`). `solver.place` reaches it through the `solver.engines`
protocol; the public names are re-exported here."""

from solver.cpsat.engine import (
    CpsatConfig,
    CpsatResult,
    ModelInvalid,
    StageReport,
    solve_cpsat,
)

__all__ = ["CpsatConfig", "CpsatResult", "ModelInvalid", "StageReport", "solve_cpsat"]
