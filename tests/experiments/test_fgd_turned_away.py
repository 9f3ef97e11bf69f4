"""Where the GPU not placed goes: pods turned away by shape, and whether CPU/memory or the
GPU model kept them off idle devices (`TurnedAway`, `ClusterState.gpus_free_for`)."""

from __future__ import annotations

import csv
from pathlib import Path

from experiments.cluster_state import ClusterState
from experiments.fgd import FgdConfig, TurnedAway, pod_shape, run_fgd
from experiments.fgd_report import turned_away_table, write_turned_away_csv
from experiments.trace_openb import GPU_MODELS
from tests.experiments._openb_builders import make_nodes, make_pods, occupy, pod


def test_idle_devices_are_found_on_its_model_on_other_models_or_nowhere() -> None:
    state = ClusterState(make_nodes((8000, 2, "V100M16"), (8000, 2, "T4")))
    occupy(state, 0, cpu_milli=8000)  # V100 node: devices idle, CPU gone
    occupy(state, 1, devices={0: 1000, 1: 700})  # T4 node: one device with 300 m left
    v100, t4 = 1 << GPU_MODELS.index("V100M16"), 1 << GPU_MODELS.index("T4")
    assert state.gpus_free_for(pod(1000, 1, 1000)) == "its model"  # the V100 node's idle devices
    assert state.gpus_free_for(pod(1000, 2, 1000, spec=v100)) == "its model"
    assert state.gpus_free_for(pod(1000, 1, 300, spec=t4)) == "its model"  # 300 m left on a T4 device
    assert state.gpus_free_for(pod(1000, 1, 400, spec=t4)) == "other models"  # only the V100 node has 400 m
    assert state.gpus_free_for(pod(1000, 1, 400)) == "its model"  # the V100's whole devices
    occupy(state, 0, devices={0: 1000, 1: 1000})
    assert state.gpus_free_for(pod(1000, 1, 1000)) == "nowhere"
    assert state.gpus_free_for(pod(1000, 1, 300)) == "its model"  # 300 m left on a T4 device
    assert state.gpus_free_for(pod(1000, 1, 300, spec=v100)) == "other models"
    assert state.gpus_free_for(pod(1000)) == "nowhere"  # asks no GPU


def test_pod_shapes_name_the_request_kind_and_a_model_limit() -> None:
    assert pod_shape(pod(4000)) == "no GPU"
    assert pod_shape(pod(4000, 1, 460, spec=32)) == "share < 500 m, one model"
    assert pod_shape(pod(4000, 1, 500)) == "share ≥ 500 m"
    assert pod_shape(pod(4000, 1, 1000)) == "1 GPU"
    assert pod_shape(pod(4000, 8, 1000)) == "8 GPUs"


def test_a_run_accounts_for_every_pod_and_milli_it_turned_away(tmp_path: Path) -> None:
    # CPU runs out before the GPUs do: the 1-GPU pods turned away leave idle devices behind.
    nodes = make_nodes((16000, 4, "V100M16"), (16000, 4, "T4"), (32000, 8, "V100M16"))
    pods = make_pods((6000, 1, 1000), (2000, 1, 500), (4000, 2, 1000), (3000, 0, 0), (1000, 1, 250))
    run = run_fgd(FgdConfig(policy="fgd", seed=42), nodes=nodes, pods=pods)
    away = run.turned_away
    assert sum(a.pods for a in away.values()) == run.pods - run.placed > 0
    # the protocol has no departures: what arrived and was not allocated was turned away
    assert sum(a.gpu_milli for a in away.values()) == int(run.arrived_milli[-1] - run.allocated_milli[-1])
    assert all(a.gpu_milli_cpu_blocked + a.gpu_milli_model_blocked <= a.gpu_milli for a in away.values())
    assert away["1 GPU"].gpu_milli_cpu_blocked > 0  # idle devices on nodes whose CPU ran out

    write_turned_away_csv([run], tmp_path / "turned_away.csv")
    rows = list(csv.DictReader((tmp_path / "turned_away.csv").open()))
    assert {row["shape"] for row in rows} == set(away)
    assert sum(int(row["pods"]) for row in rows) == run.pods - run.placed


def test_the_table_averages_over_seeds_counting_a_shape_missing_from_a_seed_as_zero() -> None:
    nodes = make_nodes((16000, 4, "V100M16"))
    pods = make_pods((6000, 1, 1000))
    first, second = (run_fgd(FgdConfig(policy="fgd", seed=seed), nodes=nodes, pods=pods) for seed in (42, 43))
    first.turned_away.clear()
    first.turned_away["1 GPU"] = TurnedAway(pods=4, gpu_milli=4000, gpu_milli_cpu_blocked=2000)
    second.turned_away.clear()
    second.turned_away["2 GPUs"] = TurnedAway(pods=1, gpu_milli=2000)
    table = turned_away_table([first, second]).splitlines()
    assert len(table) == 4
    assert "| 1 GPU | 2.0 | 2.0 | 50.00 | 1.0 | 0.0 |" in table[2]  # (4 + 0) / 2 pods, 2 GPUs of 4
    assert "| 2 GPUs | 0.5 | 1.0 | 25.00 | 0.0 | 0.0 |" in table[3]
    assert turned_away_table([]) == ""
