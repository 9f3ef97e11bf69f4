"""Where the idle GPU is after the last arrival: whole devices and leftovers on partly used
devices by size (`IdleGpus`), and the table and CSV that report it."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

from experiments.cluster_state import ClusterState
from experiments.fgd import FgdConfig, IdleGpus, run_fgd
from experiments.fgd_report import idle_means, idle_table, write_idle_csv
from tests.experiments._openb_builders import make_nodes, make_pods, occupy


def test_idle_gpu_is_split_into_whole_devices_and_leftovers_by_size() -> None:
    state = ClusterState(make_nodes((16000, 4, "V100M16"), (16000, 2, "T4")))
    occupy(state, 0, devices={0: 810, 1: 810, 2: 470})  # leaves 190, 190, 530 and one idle device
    occupy(state, 1, devices={0: 1000, 1: 940})  # leaves 60
    idle = IdleGpus.of(state)
    assert idle.whole_devices == 1
    assert idle.leftover_milli == (190 + 190 + 60, 0, 530)
    assert idle.common_leftovers[0] == (190, 2)
    assert {milli for milli, _ in idle.common_leftovers} == {190, 60, 530}
    assert idle.total_milli == 1000 + 190 + 190 + 60 + 530
    assert idle.total_milli == int(state.gpu_capacity_milli - state.allocated_gpu_milli)


def test_a_run_s_idle_gpu_is_its_capacity_less_what_it_allocated(tmp_path: Path) -> None:
    nodes = make_nodes((16000, 4, "V100M16"), (16000, 4, "T4"), (32000, 8, "V100M16"))
    pods = make_pods((6000, 1, 1000), (2000, 1, 810), (4000, 2, 1000), (3000, 0, 0), (1000, 1, 470))
    run = run_fgd(FgdConfig(policy="fgd", seed=42), nodes=nodes, pods=pods)
    assert run.idle_at_end is not None
    assert run.idle_at_end.total_milli == run.capacity_milli - int(run.allocated_milli[-1]) > 0

    write_idle_csv([run], tmp_path / "idle.csv")
    (row,) = csv.DictReader((tmp_path / "idle.csv").open())
    assert int(row["idle_milli"]) == run.idle_at_end.total_milli
    assert int(row["whole_devices"]) == run.idle_at_end.whole_devices


def test_the_idle_table_averages_over_seeds_as_percent_of_capacity() -> None:
    nodes = make_nodes((16000, 4, "V100M16"))
    pods = make_pods((6000, 1, 1000))
    first, second = (run_fgd(FgdConfig(policy="fgd", seed=seed), nodes=nodes, pods=pods) for seed in (42, 43))
    first = replace(first, idle_at_end=IdleGpus(whole_devices=1, leftover_milli=(200, 0, 0), common_leftovers=((100, 2),)))
    second = replace(second, idle_at_end=IdleGpus(whole_devices=0, leftover_milli=(0, 400, 0), common_leftovers=()))
    (header, _, row) = idle_table(idle_means([first, second])).splitlines()
    assert "whole devices %" in header and "left < 200 m %" in header
    # capacity 4,000 m; idle (1,200 + 400) / 2 = 800 m = 20 %; whole 500 m = 12.5 %
    assert row.endswith("| 20.00 | 12.50 | 2.50 | 5.00 | 0.00 | 100 m on 2 devices |")
    assert idle_table(idle_means([])) == ""
