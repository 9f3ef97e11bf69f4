"""PNG plots for the trace experiments (matplotlib, Agg backend, small files).

- `plot_fgd_curves`: GPU allocation ratio vs arrived GPU demand per policy, like the FGD
  paper's Fig. 7a (with the dashed y = x line of "everything that arrived fits" and, when
  computed, the dotted offline bound of `experiments.offline_bound`), and
  fragmented GPU (% of capacity) vs arrived demand (Fig. 9a's measure).
- `plot_timeline`: GPU utilization over time per policy, and queueing-delay CDFs.
Input: summaries / timeline results; output: the files written. Nothing is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from experiments.fgd import BINS, LEFTOVER_BUCKETS  # noqa: E402
from experiments.fgd_report import IdleMeans  # noqa: E402
from experiments.policies import policy_label  # noqa: E402

__all__ = ["plot_fgd_curves", "plot_timeline_series", "plot_queueing_cdf", "plot_delay_by_size"]


def plot_fgd_curves(summaries: Sequence, out_dir: Path, *, trace: str = "default", suffix: str = "") -> list[Path]:
    """Two PNGs for one trace: allocation and fragmentation vs arrived demand; the allocation
    plot also draws the offline bound when the summaries carry one."""
    chosen = [s for s in summaries if s.trace == trace]
    bounds = {s.bound_mean for s in chosen if getattr(s, "bound_mean", None) is not None}
    bound = max(bounds) if bounds else None  # one value unless groups ran on different seeds
    written = []
    for metric, ylabel, name in (
        ("alloc_curve", "GPU allocated (% of capacity)", f"fgd_alloc_{trace}{suffix}.png"),
        ("frag_curve", "fragmented GPU (% of capacity)", f"fgd_frag_{trace}{suffix}.png"),
    ):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1.4, 1]})
        colors = plt.get_cmap("tab20").colors
        policies = list(dict.fromkeys(s.policy for s in chosen))
        for ax, lo in zip(axes, (0, 100)):
            for s in chosen:
                label = policy_label(s.policy) + (f" (k={s.batch_size})" if s.batch_size != 1 else "")
                curve = getattr(s, metric)
                style = {1: "-", 8: "--"}.get(s.batch_size, ":")
                color = colors[(2 * policies.index(s.policy)) % 20 if len(policies) <= 10 else policies.index(s.policy) % 20]
                ax.plot(BINS[lo:], curve[lo:], style, color=color, label=label, linewidth=1.2)
            if metric == "alloc_curve":
                ax.plot(BINS[lo:], np.minimum(BINS[lo:], 100), "k--", linewidth=0.8, label="arrived")
                if bound is not None:
                    # Every pod arrived by 130 % arrived by any bin ≥ 100 too, and no pod leaves: the
                    # bound at 130 % caps those bins (below 100 % "arrived" is the tighter cap).
                    high = BINS >= max(lo, 100)
                    ax.plot(BINS[high], np.full(int(high.sum()), bound), ":", color="tab:red", linewidth=1.5,
                            label=f"offline bound, all pods known ({bound:.2f} %)")
            ax.set_xlabel("arrived GPU demand (% of capacity)")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
        axes[1].set_title("zoom: 100–130 %", fontsize=9)
        if metric == "alloc_curve":
            axes[1].set_ylim(85, 100.5)
        axes[0].legend(fontsize=7, loc="upper left")
        fig.suptitle(f"openb {trace} trace, FGD protocol, mean of {chosen[0].seeds if chosen else 0} seeds", fontsize=10)
        fig.tight_layout()
        path = out_dir / name
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    return written


def plot_fgd_idle(means: Mapping[tuple[str, str, int], IdleMeans], out_dir: Path, *, trace: str = "default") -> Path | None:
    """One PNG for one trace: where the GPU idle after the last arrival is, per policy and
    k, as stacked bars (% of capacity): whole devices, then leftovers on partly used devices
    from the smallest (`experiments.fgd_report.idle_means`). None when no run of the trace."""
    rows = [(policy, k, idle) for (name, policy, k), idle in means.items() if name == trace]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(rows) + 1.8))
    parts = [("whole devices", [idle.whole_pct for _, _, idle in rows])]
    parts += [(f"left {name}", [idle.leftover_pct[b] for _, _, idle in rows]) for b, (name, _, _) in enumerate(LEFTOVER_BUCKETS)]
    labels = [policy_label(policy) + (f" (k={k})" if k != 1 else "") for policy, k, _ in rows]
    at = np.arange(len(rows))
    start = np.zeros(len(rows))
    for (name, values), color in zip(parts, ("tab:gray", "tab:red", "tab:orange", "tab:olive")):
        ax.barh(at, values, left=start, color=color, label=name, height=0.6)
        start += values
    for y, (_, _, idle) in zip(at, rows):
        ax.text(idle.idle_pct + 0.05, y, f"{idle.idle_pct:.2f} %", va="center", fontsize=8)
    ax.set_yticks(at, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(idle.idle_pct for _, _, idle in rows) * 1.15)
    ax.set_xlabel("GPU idle after the last arrival (% of capacity)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=len(parts))
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"openb {trace} trace at 130 % arrived demand: where the idle GPU is", fontsize=10)
    fig.tight_layout()
    path = out_dir / f"fgd_idle_{trace}.png"
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_timeline_series(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    path: Path,
    *,
    title: str,
    ylabel: str = "GPU allocated (%)",
    ylim: tuple[float, float] | None = (0, 105),
) -> Path:
    """`series`: policy → (times in hours, a percent over time: GPUs allocated, GPUs reserved, …)."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for policy, (hours, percent) in series.items():
        ax.plot(hours, percent, label=policy_label(policy), linewidth=1.0)
    ax.set_xlabel("time (h)")
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_queueing_cdf(delays: Mapping[str, Mapping[str, np.ndarray]], path: Path, *, title: str) -> Path:
    """`delays`: policy → queue → queueing delays in seconds; one panel per queue."""
    queues = sorted({q for per_queue in delays.values() for q in per_queue})
    fig, axes = plt.subplots(1, max(1, len(queues)), figsize=(3.2 * max(1, len(queues)), 3), squeeze=False)
    for ax, queue in zip(axes[0], queues):
        for policy, per_queue in delays.items():
            values = np.sort(np.asarray(per_queue.get(queue, []), dtype=float)) / 60.0
            if values.size:
                ax.step(values, np.arange(1, values.size + 1) / values.size, where="post", label=policy_label(policy))
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlabel("queueing delay (min)")
        ax.set_title(queue, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("CDF of started jobs")
    axes[0][0].legend(fontsize=6)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_delay_by_size(delays: Mapping[str, Mapping[int, np.ndarray]], path: Path, *, title: str) -> Path:
    """`delays`: policy → training job GPUs → queueing delays (s), seeds pooled; p99 per size."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for policy, by_size in delays.items():
        sizes = [size for size, values in sorted(by_size.items()) if len(values)]
        ax.plot(sizes, [np.percentile(by_size[size], 99) / 60.0 for size in sizes], marker="o", label=policy_label(policy))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("training job size (GPUs)")
    ax.set_ylabel("queueing delay p99 (min)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path




def plot_wait_classes(runs: Mapping[str, Sequence[Mapping]], path: Path, *, title: str, queue: str = "training") -> Path:
    """`runs`: policy → its jobs' delay rows (`experiments.timeline_delay.delay_rows`, seeds
    pooled); one bar per policy, the mean wait of `queue`'s jobs split by wait class."""
    from experiments.timeline_delay import WAIT_CLASSES

    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.45 * len(runs)))
    labels = [policy_label(policy) for policy in runs]
    left = np.zeros(len(runs))
    colors = plt.get_cmap("tab10")
    for k, name in enumerate(WAIT_CLASSES):
        minutes = np.array([np.mean([float(row[f"{name}_s"]) for row in rows if row["queue"] == queue] or [0.0]) / 60.0
                            for rows in runs.values()])  # fmt: skip
        ax.barh(labels, minutes, left=left, color=colors(k), label=name.replace("_", " "))
        left += minutes
    ax.invert_yaxis()
    ax.set_xlabel(f"mean wait of a {queue} job (min)")
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.4, -0.3), frameon=False)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
