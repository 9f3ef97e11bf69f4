"""Random steps of a greedy cycle on a `CycleState`, for property tests of what the engine
keeps up to date across them (the fragmentation memo, the per-domain sums, the fit masks)."""

from __future__ import annotations

from hypothesis import strategies as st

from solver.greedy.state import CycleState


class CycleSteps:
    """Binds a random pending pod on a random node, evicts a random running pod, marks a
    checkpoint or rolls back to the last one — or, with `extra`, returns a step of the
    caller's own for it to take."""

    def __init__(self, state: CycleState):
        problem = state.problem
        self.state = state
        self.pending = [p for p in range(len(problem.pod_keys)) if problem.pod_node[p] < 0 and problem.pod_task_row[p] >= 0]
        self.running = [p for p in range(len(problem.pod_keys)) if problem.pod_node[p] >= 0 and problem.pod_group[p] >= 0]
        self.marks: list[int] = []

    def take(self, data: st.DataObject, *extra: str) -> str:
        state, problem = self.state, self.state.problem
        step = data.draw(st.sampled_from(["bind", "evict", "checkpoint", "rollback", *extra]))
        if step == "bind" and self.pending:
            pod = data.draw(st.sampled_from(self.pending))
            if pod not in state.binds:
                state.bind(pod, state.shape(int(problem.pod_task_row[pod])), data.draw(st.integers(0, problem.node_count - 1)))
        elif step == "evict" and self.running:
            pod = data.draw(st.sampled_from(self.running))
            if pod not in state.evictions:
                state.evict(pod, reason="test", for_group=int(problem.pod_group[pod]))
        elif step == "checkpoint":
            self.marks.append(state.checkpoint())
        elif step == "rollback" and self.marks:
            state.rollback(self.marks.pop())
        return step
