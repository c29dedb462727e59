"""Plots of the runtime-quantile study (``sim/runtime_predictions/estimates/run.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rush.studies.plots import pyplot


def plot_predicted_vs_real(trace: str, wf, out: Path) -> None:
    """predicted_vs_real_<trace>.png: predicted median against real runtime (log-log density),
    beside the request against the real runtime."""
    plt = pyplot()
    ok = np.isfinite(wf.proba_small)
    real = np.maximum(wf.runtime[ok], 1.0)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    for ax, (label, guess) in zip(
        axes, (("predicted median", wf.quantile(0.5)[ok]), ("request", wf.requested_time[ok])), strict=True
    ):
        ax.hexbin(np.log10(real), np.log10(np.maximum(guess, 1.0)), gridsize=60, bins="log", mincnt=1)
        top = np.log10(max(real.max(), 10.0))
        ax.plot([0, top], [0, top], color="black", lw=0.8)
        ax.set_xlabel("log10 real runtime (s)")
        ax.set_title(f"{trace}: {label}")
    axes[0].set_ylabel("log10 predicted runtime (s)")
    fig.tight_layout()
    fig.savefig(out / f"predicted_vs_real_{trace}.png", dpi=80)
    plt.close(fig)


def plot_estimate_errors(trace: str, rows: list[dict], out: Path) -> None:
    """estimate_error_<trace>.png: mean absolute error of the start estimate at submit, by
    wait class, per estimator."""
    plt = pyplot()
    rows = [r for r in rows if r["moment"] == "submit" and r["wait_class"] not in ("all", "waited")]
    classes = list(dict.fromkeys(r["wait_class"] for r in rows))
    estimators = list(dict.fromkeys(r["estimator"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / max(len(estimators), 1)
    for k, name in enumerate(estimators):
        values = [
            next((r["mae_min"] or 0.0 for r in rows if r["estimator"] == name and r["wait_class"] == c), 0.0)
            for c in classes
        ]
        ax.bar(np.arange(len(classes)) + k * width, values, width, label=name)
    ax.set_xticks(np.arange(len(classes)) + width * (len(estimators) - 1) / 2, classes)
    ax.set_xlabel("wait class")
    ax.set_ylabel("mean absolute error at submit (min)")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_title(f"{trace}: start estimate error (EASY-FCFS on limits)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / f"estimate_error_{trace}.png", dpi=80)
    plt.close(fig)


def plot_online_iterates(
    rows: list[dict], spf_ci: dict[str, tuple[float, float]], out: Path, name: str
) -> None:
    """<name>.png: per trace, each scheduler's improvement over EASY-FCFS by iteration of the
    online chain (iteration 1: the log history), beside SPF-CI (``spf_ci``: trace -> (ours,
    the thesis's))."""
    plt = pyplot()
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    fig, axes = plt.subplots(1, len(traces), figsize=(3.6 * len(traces), 3.8), squeeze=False)
    for ax, trace in zip(axes[0], traces, strict=True):
        for scheduler in dict.fromkeys(r["scheduler"] for r in rows if r["trace"] == trace):
            runs = sorted(
                (r for r in rows if (r["trace"], r["scheduler"]) == (trace, scheduler)),
                key=lambda r: r["iteration"],
            )
            x = [r["iteration"] for r in runs]
            y = [r["improvement_over_easy_fcfs_pct"] for r in runs]
            (line,) = ax.plot(x, y, marker="o", ms=3, label=scheduler)
            ax.plot(x[:1], y[:1], marker="s", ms=7, color=line.get_color(), ls="none")
        ours, thesis = spf_ci[trace]
        ax.axhline(ours, color="black", lw=0.8, ls="--", label="SPF-CI (ours)")
        ax.axhline(thesis, color="grey", lw=0.8, ls=":", label="SPF-CI (thesis)")
        ax.set_title(trace)
        ax.set_xlabel("iteration (1: log history)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("improvement over EASY-FCFS (%)")
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=80)
    plt.close(fig)
