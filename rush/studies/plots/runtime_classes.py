"""Plots of the runtime-class experiment (``sim/runtime_classes/run.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rush.studies.plots import pyplot


def plot(rows: list[dict], out: Path) -> None:
    """cumulative_bsld_<trace>.png: one panel per base policy (EASY-FCFS, EASY-SPF), one line per variant."""
    plt = pyplot()
    for trace in sorted({r["trace"] for r in rows}):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
        for ax, policy in zip(axes, ("FCFS", "SPF"), strict=True):
            for r in rows:
                if r["trace"] == trace and r["policy"] == policy:
                    times, values = r["cumulative"]
                    ax.plot(np.asarray(times) / 86400, values, label=r["variant"])
            ax.set_title(f"{trace}: EASY-{policy}")
            ax.set_xlabel("days since first submit")
            ax.set_yscale("log")
        axes[0].set_ylabel("cumulative mean bounded slowdown")
        axes[1].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"cumulative_bsld_{trace}.png", dpi=90)
        plt.close(fig)
