"""Plots of the speculative-reservation study (``rush experiment speculative``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rush.studies.plots import pyplot


def plot_study(summary: dict, plots: Path) -> None:
    """ratio_vs_n.png (one panel per law: mean ratio, p90 dashed) and trace.png."""
    plt = pyplot()
    plots.mkdir(parents=True, exist_ok=True)
    names = summary["protocol"]["distributions"]
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    colours = {"discrete": "C0", "continuous": "C1", "mean-doubling": "C2", "upper-bound": "C3"}
    for ax, name in zip(axes.flat, names, strict=False):
        top = 1.05
        for estimator, colour in colours.items():
            pts = [r for r in summary["ratios"] if r["distribution"] == name and r["estimator"] == estimator]
            if not pts:
                continue
            n = [max(r["n"], 1) for r in pts]
            label = estimator
            if estimator == "upper-bound":
                label = f"upper bound ({pts[0]['mean_ratio']:.2f})"  # often off the scale
            ax.plot(n, [r["mean_ratio"] for r in pts], "o-", color=colour, label=label, ms=3)
            ax.plot(n, [r["p90_ratio"] for r in pts], "--", color=colour, lw=0.8)
            if estimator != "upper-bound":
                top = max(top, max(r["p90_ratio"] for r in pts))
        ax.axhline(1.05, color="grey", lw=0.6, ls=":")
        ax.set_xscale("log")
        ax.set_ylim(0.98, min(top + 0.02, 1.8))
        ax.set_title(name)
        ax.set_xlabel("past runs n")
        ax.set_ylabel("E(S)/E(S*)")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle("estimated strategy cost / full-knowledge optimum (mean; dashed: 90th percentile)")
    fig.tight_layout()
    fig.savefig(plots / "ratio_vs_n.png", dpi=110)
    plt.close(fig)
    if summary["trace"]:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.2))
        labels = [r["estimator"] for r in summary["trace"]]
        a1.bar(labels, [r["mean_bsld"] for r in summary["trace"]], color="C0")
        a1.set_ylabel("mean bounded slowdown")
        x = np.arange(len(labels))
        a2.bar(x - 0.2, [r["utilization"] for r in summary["trace"]], 0.4, label="useful")
        a2.bar(x + 0.2, [r["occupied_utilization"] for r in summary["trace"]], 0.4, label="incl. wasted")
        a2.set_xticks(x, labels)
        a2.set_ylabel("utilisation")
        a2.legend(fontsize=7)
        fig.suptitle(f"{summary['protocol']['trace']['trace']}: FCFS+EASY, speculative reservations")
        fig.tight_layout()
        fig.savefig(plots / "trace.png", dpi=110)
        plt.close(fig)
