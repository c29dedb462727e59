"""Plots of the variability (contention) study (``rush experiment variability``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rush.contention.experiment import POLICIES
from rush.contention.model import APP_NAMES
from rush.studies.plots import pyplot


def plot_study(out: Path, rows: list[dict], table: dict) -> None:
    """variation_runs.png, runtimes.png, makespans.png and waits.png, one panel or bar group per scenario."""
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    scenarios = list(table)
    colors = {
        "FCFS+EASY": "tab:blue",
        "RUSH": "tab:orange",
        "RUSH-L": "tab:green",
        "NOISE-ORACLE": "tab:gray",
        "TOPOLOGY": "tab:purple",
        "RUSH-V": "tab:red",
        "NOISE-ORACLE-V": "tab:brown",
    }
    width = 0.8 / len(POLICIES)

    def offset(k: int) -> float:
        return (k - (len(POLICIES) - 1) / 2) * width

    # Runs with variation per application and policy (mean per trial), one panel per scenario.
    fig, axes = plt.subplots(1, len(scenarios), figsize=(4.2 * len(scenarios), 3.6), squeeze=False)
    for ax, s in zip(axes[0], scenarios, strict=True):
        apps = [a for a in APP_NAMES if a in table[s]["FCFS+EASY"]["apps"]]
        x = np.arange(len(apps))
        for k, p in enumerate(POLICIES):
            if p in table[s]:
                v = [table[s][p]["apps"][a]["runs_with_variation"] for a in apps]
                ax.bar(x + offset(k), v, width, label=p, color=colors[p])
        ax.set_xticks(x, apps, rotation=45, ha="right")
        ax.set_title(s)
        ax.set_ylabel("runs with variation per trial")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(out / "variation_runs.png", dpi=120)
    plt.close(fig)
    # Runtime distributions (slowdown) per application and policy.
    fig, axes = plt.subplots(len(scenarios), 1, figsize=(9, 3.0 * len(scenarios)), squeeze=False)
    for ax, s in zip(axes[:, 0], scenarios, strict=True):
        apps = [a for a in APP_NAMES if a in table[s]["FCFS+EASY"]["apps"]]
        data, pos, col = [], [], []
        for i, a in enumerate(apps):
            for k, p in enumerate(POLICIES):
                data.append(
                    [r["runtime"] for r in rows if r["scenario"] == s and r["policy"] == p and r["app"] == a]
                )
                pos.append(i + offset(k))
                col.append(colors[p])
        parts = ax.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True, showfliers=True)
        for patch, c in zip(parts["boxes"], col, strict=True):
            patch.set_facecolor(c)
        ax.set_xticks(range(len(apps)), apps)
        ax.set_ylabel("runtime (s)")
        ax.set_title(f"{s}: runtimes (FCFS+EASY blue, RUSH orange, RUSH-L green, NOISE-ORACLE grey)")
    fig.tight_layout()
    fig.savefig(out / "runtimes.png", dpi=120)
    plt.close(fig)
    # Makespans and mean waits per scenario and policy (each trial a dot, bar = mean).
    for metric, name, ylabel in (
        ("makespan", "makespans.png", "makespan (s)"),
        ("wait", "waits.png", "mean wait (s)"),
    ):
        fig, ax = plt.subplots(figsize=(1.6 * len(scenarios) + 2, 3.6))
        x = np.arange(len(scenarios))
        for k, p in enumerate(POLICIES):
            per_trial = []
            for s in scenarios:
                sel = [r for r in rows if r["scenario"] == s and r["policy"] == p]
                trials = sorted({r["trial"] for r in sel})
                if metric == "makespan":
                    per_trial.append([max(r["end"] for r in sel if r["trial"] == t) for t in trials])
                else:
                    per_trial.append([np.mean([r["wait"] for r in sel if r["trial"] == t]) for t in trials])
            ax.bar(x + offset(k), [np.mean(v) for v in per_trial], width, label=p, color=colors[p], alpha=0.7)
            for i, v in enumerate(per_trial):
                ax.plot(np.full(len(v), x[i] + offset(k)), v, "k.", ms=4)
        ax.set_xticks(x, scenarios)
        ax.set_ylabel(ylabel)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / name, dpi=120)
        plt.close(fig)
