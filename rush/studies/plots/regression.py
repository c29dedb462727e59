"""Plots of the regression-heuristics study (``rush experiment regression``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rush.studies.plots import pyplot


def plot_study(folder: Path, result: dict, fits: dict) -> None:
    """spread.png (when the spread part ran), vif.png and evaluation.png (when sources were evaluated)."""
    plt = pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    if result["spread"]:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for seed in sorted({s["pair_seed"] for s in result["spread"]}):
            pts = [s for s in result["spread"] if s["pair_seed"] == seed]
            ax.loglog([s["trials"] for s in pts], [s["score_sd"] for s in pts], "o-", label=f"pair {seed}")
        ax.set_xlabel("trials per pair")
        ax.set_ylabel("SD of the normalised score")
        ax.set_title("Score spread vs trials")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(folder / "spread.png", dpi=120)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for k, f in enumerate(fits.values()):
        v = f.vif[1:]
        v = np.where(np.isinf(v), 1e12, v)
        ax.scatter(np.full(len(v), k) + np.linspace(-0.2, 0.2, len(v)), v, s=12)
    ax.axhline(5, color="k", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xticks(range(len(fits)), list(fits))
    ax.set_ylabel("VIF per term")
    ax.set_title("Multicollinearity of the templates (dashed: VIF = 5)")
    fig.tight_layout()
    fig.savefig(folder / "vif.png", dpi=120)
    plt.close(fig)
    sources = sorted({s["source"] for s in result["summary"]})
    if sources:
        policies = list(dict.fromkeys(s["policy"] for s in result["summary"]))
        fig, axes = plt.subplots(len(sources), 2, figsize=(10, 2.8 * len(sources)), squeeze=False)
        for i, source in enumerate(sources):
            for j, backfill in enumerate(("none", "easy")):
                ax = axes[i][j]
                vals = {
                    s["policy"]: s["gmean_ratio_to_fcfs"]
                    for s in result["summary"]
                    if s["source"] == source and s["backfill"] == backfill
                }
                ax.bar(range(len(policies)), [vals.get(p) or np.nan for p in policies])
                ax.set_xticks(range(len(policies)), policies, rotation=45, fontsize=7)
                ax.axhline(1.0, color="k", lw=0.8)
                ax.set_yscale("log")
                ax.set_title(f"{source}, backfilling {backfill}", fontsize=9)
                ax.set_ylabel("mean BSLD / FCFS (gmean)", fontsize=8)
        fig.tight_layout()
        fig.savefig(folder / "evaluation.png", dpi=120)
        plt.close(fig)
