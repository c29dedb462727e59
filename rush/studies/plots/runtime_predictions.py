"""Plots of the runtime-prediction study (``sim/runtime_predictions/run.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rush.studies.plots import pyplot


def scatter(trace: str, job_set: str, predictions: dict, out: Path, sample: int = 20_000) -> None:
    """predicted_vs_real_<trace>.png: predicted against real runtime (log-log), one panel
    per predictor, with the requests for reference; a fixed random sample of jobs."""
    plt = pyplot()
    names = list(predictions)
    fig, axes = plt.subplots(1, len(names) + 1, figsize=(5 * (len(names) + 1), 4.6), sharex=True, sharey=True)
    rng = np.random.default_rng(0)
    first = predictions[names[0]]
    n = len(first.runtime)
    rows = rng.choice(n, size=min(sample, n), replace=False)
    real = np.maximum(np.minimum(first.runtime, first.requested_time), 1.0)[rows]
    panels = [(f"{name}", predictions[name].predicted[rows]) for name in names]
    panels.append(("request (EASY)", np.maximum(first.requested_time[rows], 1.0)))
    for ax, (title, values) in zip(axes, panels, strict=True):
        ax.scatter(real, np.maximum(values, 1.0), s=2, alpha=0.15, rasterized=True)
        lim = [1, max(real.max(), values.max()) * 1.5]
        ax.plot(lim, lim, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        under = float(np.mean(values < real))
        ax.set_title(f"{trace} ({job_set}): {title}\nunderpredicted {under:.0%}", fontsize=9)
        ax.set_xlabel("real runtime [s]")
    axes[0].set_ylabel("predicted runtime [s]")
    fig.tight_layout()
    fig.savefig(out / f"predicted_vs_real_{trace}.png", dpi=80)
    plt.close(fig)


def cumulative(trace: str, job_set: str, rows: list[dict], out: Path) -> None:
    """cumulative_bsld_<trace>.png: cumulative mean bounded slowdown of the main schedulers."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in rows:
        if any(v in r["scheduler"] for v in ("fcfs-backfill", "correct-to-request", "no-correction")):
            continue  # the predictors' variants: in the tables only
        times, values = r["cumulative"]
        ax.plot(np.asarray(times) / 86400, values, label=r["scheduler"])
    ax.set_title(f"{trace} ({job_set})")
    ax.set_xlabel("days since first submit")
    ax.set_ylabel("cumulative mean bounded slowdown")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / f"cumulative_bsld_{trace}.png", dpi=80)
    plt.close(fig)
