"""Figures of the variability study, like the paper's Fig. 4-6 (Nichols et al., IPDPS'22).

:func:`plot_study` reads the rows and the summary of
:func:`rush.studies.contention_report.summarise` and writes, per variant (no suffix for
"paper", ``-<variant>`` for the sensitivity runs), into ``out/plots``:

* ``fig4_variation_runs.png``: runs with variation per trial, per application and policy, one
  panel per scenario; the top row against the campaign's thresholds, the bottom row against
  the within-experiment thresholds;
* ``fig5_runtimes.png``: runtime distributions per application (one panel each, scenarios
  along x), FCFS+EASY and RUSH side by side, the maximum marked;
* ``fig6_makespan.png``: makespan per scenario and policy, bars the mean, dots the trials;
* ``skip_limit.png``: RUSH with skip limits 10, 30 and unlimited beside FCFS+EASY and the
  present-state oracle: runs with variation, makespan change and limit hits.

Diagnostics (oracles) are hatched and labelled "(diagnostic)".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rush.studies.contention_report import (
    BASELINE,
    PAPER_VARIANT,
    PRESENT_ORACLE,
    is_diagnostic,
    is_skip_limit_policy,
    label,
    limit_text,
)
from rush.studies.plots import pyplot

KNOWN_COLORS = {
    "FCFS+EASY": "tab:blue",
    "RUSH": "tab:orange",
    "RUSH-30": "tab:red",
    "RUSH-UNLIMITED": "tab:brown",
    "PRESENT-ORACLE": "tab:gray",
    "NOISE-ORACLE": "silver",
}
SCENARIO_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
DPI = 130


def _colors(policies: Sequence[str]) -> dict[str, str]:
    spare = iter(c for c in (f"C{k}" for k in range(10)) if c not in KNOWN_COLORS.values())
    free = [f"tab:{c}" for c in ("green", "purple", "pink", "olive", "cyan")]
    out = {}
    for p in policies:
        out[p] = KNOWN_COLORS.get(p) or (free.pop(0) if free else next(spare, "black"))
    return out


def _style(p: str) -> dict[str, Any]:
    # Oracles are bounds, not results: hatched, so nobody reads them as a scheduler.
    return {"hatch": "//", "edgecolor": "black", "linewidth": 0.5} if is_diagnostic(p) else {}


def _policies(by_scenario: dict[str, dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    for by_policy in by_scenario.values():
        seen += [p for p in by_policy if p not in seen]
    # The summary already orders policies within a scenario; keep the first scenario's order.
    return seen


def _suffix(variant: str) -> str:
    return "" if variant == PAPER_VARIANT else f"-{variant}"


def _save(fig: Any, path: Path, written: list[Path]) -> None:
    fig.savefig(path, dpi=DPI)
    pyplot().close(fig)
    written.append(path)


def _fig4(by_scenario: dict[str, dict[str, Any]], variant: str, path: Path, written: list[Path]) -> None:
    plt = pyplot()
    scenarios = list(by_scenario)
    policies = _policies(by_scenario)
    colors = _colors(policies)
    fig, axes = plt.subplots(
        2,
        len(scenarios),
        figsize=(3.4 * len(scenarios) + 1, 6.6),
        squeeze=False,
        layout="constrained",
        sharey="row",
    )
    for col, s in enumerate(scenarios):
        by_policy = by_scenario[s]
        apps = sorted({a for e in by_policy.values() for a in e["apps"]}, key=str.lower)
        here = [p for p in policies if p in by_policy]
        width = 0.8 / max(1, len(here))
        x = np.arange(len(apps))
        for row, key in enumerate(("runs_with_variation", "runs_with_variation_within")):
            ax = axes[row][col]
            for k, p in enumerate(here):
                values = [by_policy[p]["apps"].get(a, {}).get(key, 0.0) for a in apps]
                offset = (k - (len(here) - 1) / 2) * width
                ax.bar(x + offset, values, width, color=colors[p], label=label(p), **_style(p))
            ax.set_xticks(x, apps, rotation=40, ha="right")
            ax.grid(axis="y", alpha=0.3)
            if row == 0:
                ax.set_title(s)
        axes[0][0].set_ylabel("runs with variation / trial\n(campaign thresholds)")
        axes[1][0].set_ylabel("runs with variation / trial\n(within-experiment thresholds)")
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6), frameon=False)
    fig.suptitle(f"Runs with variation per application (mean per trial), variant {variant!r}")
    _save(fig, path, written)


def _runtimes(rows: Sequence[dict], variant: str) -> dict[tuple[str, str, str], list[float]]:
    out: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["variant"] == variant and r["policy"] in (BASELINE, "RUSH"):
            out[(r["app"], r["scenario"], r["policy"])].append(float(r["runtime"]))
    return out


def _fig5(
    rows: Sequence[dict],
    by_scenario: dict[str, dict[str, Any]],
    variant: str,
    path: Path,
    written: list[Path],
) -> bool:
    runtimes = _runtimes(rows, variant)
    if not runtimes:
        return False
    plt = pyplot()
    scenarios = list(by_scenario)
    apps = sorted({a for a, _, _ in runtimes}, key=str.lower)
    compared = [p for p in (BASELINE, "RUSH") if any(k[2] == p for k in runtimes)]
    colors = _colors(compared)
    ncols = min(4, len(apps))
    nrows = -(-len(apps) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(3.3 * ncols + 0.5, 3.0 * nrows + 0.8), squeeze=False, layout="constrained"
    )
    width = 0.8 / len(compared)
    for ax, app in zip(axes.flat, apps, strict=False):
        for k, p in enumerate(compared):
            offset = (k - (len(compared) - 1) / 2) * width
            at = [i for i, s in enumerate(scenarios) if runtimes.get((app, s, p))]
            data = [runtimes[(app, scenarios[i], p)] for i in at]
            if not data:
                continue
            pos = np.array(at) + offset
            parts = ax.boxplot(
                data,
                positions=pos,
                widths=width * 0.85,
                patch_artist=True,
                showfliers=True,
                flierprops={"markersize": 2, "markeredgecolor": "0.5"},
                medianprops={"color": "black"},
            )
            for box in parts["boxes"]:
                box.set_facecolor(colors[p])
            ax.plot(pos, [max(d) for d in data], "v", color="black", markersize=5)
        ax.set_xticks(range(len(scenarios)), scenarios)
        ax.set_title(app)
        ax.set_ylabel("runtime (s)")
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(apps) :]:
        ax.set_visible(False)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=colors[p], label=p) for p in compared]
    handles.append(Line2D([], [], marker="v", color="black", linestyle="none", label="maximum runtime"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False)
    fig.suptitle(
        f"Runtime distributions per application, variant {variant!r} (boxes: quartiles, whiskers 1.5 IQR)"
    )
    _save(fig, path, written)
    return True


def _fig6(
    by_scenario: dict[str, dict[str, Any]],
    paired: dict[str, dict[str, Any]],
    variant: str,
    path: Path,
    written: list[Path],
) -> None:
    plt = pyplot()
    scenarios = list(by_scenario)
    policies = _policies(by_scenario)
    colors = _colors(policies)
    fig, ax = plt.subplots(
        figsize=(min(14.0, 0.4 * len(scenarios) * len(policies) + 4), 4.2), layout="constrained"
    )
    width = 0.8 / len(policies)
    x = np.arange(len(scenarios))
    for k, p in enumerate(policies):
        offset = (k - (len(policies) - 1) / 2) * width
        at = [i for i, s in enumerate(scenarios) if p in by_scenario[s]]
        means = [by_scenario[scenarios[i]][p]["makespan_mean"] / 60.0 for i in at]
        ax.bar(x[at] + offset, means, width, color=colors[p], label=label(p), alpha=0.85, **_style(p))
        for i in at:
            spans = np.array(by_scenario[scenarios[i]][p]["makespans"]) / 60.0
            ax.plot(np.full(len(spans), x[i] + offset), spans, ".", color="black", markersize=4)
            change = paired.get(scenarios[i], {}).get(p, {}).get("makespan_change_pct", {}).get("mean")
            if change is not None:  # the paper's question: what does skipping cost in makespan?
                ax.annotate(
                    f"{change:+.1f}%",
                    (x[i] + offset, spans.max()),
                    xytext=(0, 3),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    rotation=90,
                    fontsize=7,
                )
    ax.plot([], [], ".", color="black", label="one trial")
    ax.margins(y=0.15)
    ax.set_xticks(x, scenarios)
    ax.set_ylabel("makespan (min)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(
        f"Makespan per experiment, variant {variant!r} (bar: mean over trials; text: change vs FCFS+EASY)"
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    _save(fig, path, written)


def _ladder_value(by_policy: dict[str, Any], pairs: dict[str, Any], p: str, key: str) -> float | None:
    """One point of the skip-limit plot: the policy's metric, None where it did not run."""
    if p not in by_policy:
        return None
    if key == "makespan_change_pct":
        return 0.0 if p == BASELINE else (pairs[p][key]["mean"] if p in pairs else None)
    return by_policy[p][key]


def _skip_limit(
    by_scenario: dict[str, dict[str, Any]],
    paired: dict[str, dict[str, Any]],
    variant: str,
    path: Path,
    written: list[Path],
) -> bool:
    # x: FCFS+EASY (no skipping), the RUSH limits in growing order, then the oracle's bound.
    ladder: list[str] = []
    for by_policy in by_scenario.values():
        ladder += [p for p in by_policy if is_skip_limit_policy(p) and p not in ladder]
    if not ladder:
        return False
    plt = pyplot()

    def limit_of(p: str) -> str:
        for by_policy in by_scenario.values():
            if p in by_policy and isinstance(by_policy[p]["skip_limit"], int):
                return limit_text(by_policy[p]["skip_limit"])
        return p

    steps = [BASELINE, *ladder]
    ticks = ["none\n(FCFS+EASY)", *[limit_of(p) for p in ladder], "oracle\n(diagnostic)"]
    oracle_at = len(steps)
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 4.0), layout="constrained")
    panels = (
        ("runs_with_variation", "runs with variation / trial\n(campaign thresholds)"),
        ("makespan_change_pct", "Δmakespan vs FCFS+EASY (%)"),
        ("starts_at_limit_per_trial", "starts at the skip limit / trial"),
    )
    for k, s in enumerate(by_scenario):
        color = SCENARIO_COLORS[k % len(SCENARIO_COLORS)]
        by_policy, pairs = by_scenario[s], paired.get(s, {})
        for ax, (key, _) in zip(axes, panels, strict=True):
            values = [_ladder_value(by_policy, pairs, p, key) for p in steps]
            xs = [i for i, y in enumerate(values) if y is not None]
            ax.plot(xs, [values[i] for i in xs], "o-", color=color, label=s)
            bound = _ladder_value(by_policy, pairs, PRESENT_ORACLE, key)
            if bound is not None:
                ax.plot([oracle_at], [bound], "*", color=color, markersize=11)
    for ax, (_, ylabel) in zip(axes, panels, strict=True):
        ax.set_xticks(range(len(ticks)), ticks, fontsize=8)
        ax.set_xlabel("RUSH's skip limit")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[1].axhline(0.0, color="black", linewidth=0.8)
    axes[-1].plot([], [], "*", color="black", markersize=11, label=f"{PRESENT_ORACLE}\n(diagnostic)")
    axes[-1].legend(title="scenario", loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.suptitle(f"Skip-limit sensitivity, variant {variant!r} (means over trials)")
    _save(fig, path, written)
    return True


def plot_study(out: Path, rows: Sequence[dict], summary: dict) -> list[Path]:
    """The study's figures into ``out/plots`` (see the module docstring); the paths written."""
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for variant, by_scenario in summary["experiments"].items():
        tail = _suffix(variant)
        _fig4(by_scenario, variant, plots / f"fig4_variation_runs{tail}.png", written)
        _fig5(rows, by_scenario, variant, plots / f"fig5_runtimes{tail}.png", written)
        _fig6(
            by_scenario,
            summary["paired"].get(variant, {}),
            variant,
            plots / f"fig6_makespan{tail}.png",
            written,
        )
        _skip_limit(
            by_scenario, summary["paired"].get(variant, {}), variant, plots / f"skip_limit{tail}.png", written
        )
    return written
