"""The CP-SAT engine: every hard rule in one model over node profiles and packing patterns,
solved tier by tier (`engine`), built in steps — units (`units`), data (`data`: functions over one `build_context`, with
`patterns`, `devices`, `topology`, `victims`, `interpod`), variables (`variables`),
constraints (`constraints`), objective (`objective`) — warm-started from greedy (`hint`)
and read back (`extract`). `solver.place` reaches it through the `solver.engines`
protocol. What a search is given and gives back is re-exported here; the search itself,
`engine.solve_cpsat`, is imported where it runs (`solver.engines.Engines.model_search`):
OR-Tools (with pandas) and SciPy are slow to import, which every command and cycle that
never searches would otherwise pay (docs/results.md, "Import times")."""

from solver.cpsat.config import CpsatConfig, CpsatResult, ModelInvalid, StageReport

__all__ = ["CpsatConfig", "CpsatResult", "ModelInvalid", "StageReport"]

