"""The colocation timeline: more offline GPU and CPU hours with colocation, online pods never kept waiting."""

from __future__ import annotations

from experiments.timeline_colocation import ColocationConfig, colocation_markdown, online_share, run_colocation


def test_colocation_serves_more_offline_hours_and_online_pods_never_wait() -> None:
    off, on = (run_colocation(ColocationConfig(colocation=c, hours=6, gpu_nodes=2, cpu_nodes=2)) for c in (False, True))
    assert on.gpu_hours > off.gpu_hours and on.cpu_hours > off.cpu_hours
    assert max(on.online_waits_h) == 0  # online pods never wait for offline ones (without colocation they wait for preemption)
    assert max(off.online_waits_h) >= max(on.online_waits_h)
    assert "| on |" in colocation_markdown([off, on])


def test_the_online_share_is_diurnal() -> None:
    assert round(online_share(4 * 3600), 2) == 0.2 and round(online_share(16 * 3600), 2) == 0.7
