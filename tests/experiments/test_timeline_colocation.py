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


def test_gpu_lending_serves_more_fractional_gpu_hours_and_never_starves_online_gpus() -> None:
    """The model replicas share devices (600 of 1000 milli each) and use 20–70 % of that:
    lending their unused part lets more 300-milli fine-tuning jobs run beside them."""
    on, lending = (run_colocation(ColocationConfig(colocation=True, gpu_lending=g, hours=6, gpu_nodes=2, cpu_nodes=2)) for g in (False, True))
    assert lending.fractional_gpu_hours > on.fractional_gpu_hours
    assert lending.gpu_hours > on.gpu_hours
    assert lending.online_short_gpu_hours == 0 and max(lending.online_waits_h) == 0
    assert "| on + GPU lending |" in colocation_markdown([on, lending])
