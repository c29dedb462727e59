"""How much variation was avoidable, and the ladder clairvoyant >= present-state >= RUSH.

Input: the study's job rows. FCFS+EASY's runs with variation carry their attribution
(:mod:`rush.contention.avoidable`: ``cause``, ``decisive``, ``avoidable``). Output:

* ``causes[variant][scenario]``: per trial, FCFS+EASY's runs with variation by main cause, by
  decisive cause, and how many a delay within the budget would have avoided;
* ``ladder[variant][scenario]``: runs with variation removed per trial against FCFS+EASY by the
  clairvoyant-delay oracle (the bound of any delaying policy), the present-state oracle and
  RUSH, each with its share of the clairvoyant's removal.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

BASELINE = "FCFS+EASY"
CLAIRVOYANT = "CLAIRVOYANT-ORACLE"
PRESENT = "PRESENT-ORACLE"
RUNGS: tuple[str, ...] = (CLAIRVOYANT, PRESENT, "RUSH", "RUSH-SIZE", "RUSH-MOVE")
CAUSE_NAMES: tuple[str, ...] = ("noise", "others", "own", "io", "jitter")


def _truthy(v: Any) -> bool:
    return v is True or str(v).lower() == "true"


def causes(rows: Sequence[dict]) -> dict[str, dict[str, dict[str, Any]]]:
    """variant -> scenario -> FCFS+EASY's runs with variation per trial, by cause and avoidability."""
    grouped: dict[tuple[str, str], list[dict]] = defaultdict(list)
    trials: dict[tuple[str, str], set] = defaultdict(set)
    for r in rows:
        if r["policy"] != BASELINE:
            continue
        key = (r["variant"], r["scenario"])
        trials[key].add(r["trial"])
        if _truthy(r["variation"]):
            grouped[key].append(r)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key in sorted(trials):
        n = len(trials[key])
        varied = grouped.get(key, [])
        main = Counter(str(r.get("cause") or "unattributed") for r in varied)
        decisive = Counter(str(r.get("decisive") or "unattributed") for r in varied)
        avoidable = sum(_truthy(r.get("avoidable")) for r in varied)
        by_app: dict[str, list[dict]] = defaultdict(list)
        for r in varied:
            by_app[r["app"]].append(r)
        out.setdefault(key[0], {})[key[1]] = {
            "trials": n,
            "runs_with_variation": len(varied) / n,
            "by_cause": {c: main[c] / n for c in sorted(main)},
            "by_decisive": {c: decisive[c] / n for c in sorted(decisive)},
            "avoidable_by_delay": avoidable / n,
            "apps": {
                a: {
                    "runs_with_variation": len(v) / n,
                    "avoidable_by_delay": sum(_truthy(r.get("avoidable")) for r in v) / n,
                }
                for a, v in sorted(by_app.items(), key=lambda kv: kv[0].lower())
            },
        }
    return out


def ladder(summary: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """variant -> scenario -> rung -> removed per trial (mean) and share of the clairvoyant's."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for v, by_s in summary["paired"].items():
        for s, by_p in by_s.items():
            base = summary["experiments"][v][s].get(BASELINE)
            if base is None:
                continue
            top = by_p.get(CLAIRVOYANT, {}).get("removed", {}).get("mean")
            present = by_p.get(PRESENT, {}).get("removed", {}).get("mean")
            rungs: dict[str, Any] = {BASELINE: {"runs_with_variation": base["runs_with_variation"]}}
            for p in RUNGS:
                if p not in by_p:
                    continue
                removed = by_p[p]["removed"]["mean"]
                rungs[p] = {
                    "runs_with_variation": summary["experiments"][v][s][p]["runs_with_variation"],
                    "removed": removed,
                    "removed_per_trial": by_p[p]["removed"]["per_trial"],
                    "share_of_clairvoyant": removed / top if top and top > 0 else None,
                    # The target: RUSH's removal against the present-state oracle's.
                    "share_of_present": removed / present if present and present > 0 else None,
                    "makespan_change_pct": by_p[p]["makespan_change_pct"]["mean"],
                    "starts_at_limit_per_trial": summary["experiments"][v][s][p]["starts_at_limit_per_trial"],
                }
            ordered = [rungs[p]["removed"] for p in (CLAIRVOYANT, PRESENT, "RUSH") if p in rungs]
            rungs["ordered"] = bool(all(a >= b for a, b in zip(ordered, ordered[1:], strict=False)))
            out.setdefault(v, {})[s] = rungs
    return out


def _n(x: float | None, digits: int = 1, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def markdown(c: dict[str, Any], lad: dict[str, Any]) -> str:
    """The two tables of tables.md's avoidability section."""
    lines = [
        "## How much was avoidable (FCFS+EASY's runs with variation, per trial)",
        "",
        "Main cause: the one whose removal lowers the run's slowdown most (jitter: above the bar with",
        "every contention removed). Avoidable by delay: a start on the same nodes 30..300 s later, the",
        "other jobs as they ran, stays under the bar.",
        "",
        "| variant | scenario | with variation | " + " | ".join(CAUSE_NAMES) + " | avoidable by delay |",
        "|" + "---|" * (4 + len(CAUSE_NAMES)),
    ]
    for v, by_s in c.items():
        for s, d in by_s.items():
            cells = [_n(d["by_cause"].get(k, 0.0)) for k in CAUSE_NAMES]
            lines.append(
                f"| {v} | {s} | {_n(d['runs_with_variation'])} | "
                + " | ".join(cells)
                + f" | {_n(d['avoidable_by_delay'])} |"
            )
    lines += [
        "",
        "## The ladder: runs with variation removed per trial against FCFS+EASY",
        "",
        "| variant | scenario | FCFS+EASY | "
        + " | ".join(f"{p} removed (share of clairvoyant)" for p in RUNGS)
        + " | clairvoyant ≥ present ≥ RUSH |",
        "|" + "---|" * (4 + len(RUNGS)),
    ]
    for v, by_s in lad.items():
        for s, rungs in by_s.items():
            cells = []
            for p in RUNGS:
                r = rungs.get(p)
                if r is None:
                    cells.append("—")
                    continue
                share = r["share_of_clairvoyant"]
                cells.append(
                    f"{_n(r['removed'], signed=True)} ({'—' if share is None else f'{100 * share:.0f} %'})"
                )
            lines.append(
                f"| {v} | {s} | {_n(rungs[BASELINE]['runs_with_variation'])} | "
                + " | ".join(cells)
                + f" | {'yes' if rungs['ordered'] else 'no'} |"
            )
    return "\n".join(lines) + "\n"


def plot_ladder(lad: dict[str, Any], path_for: Any) -> list[Any]:
    """One bar chart per variant: removed per trial by each rung, per scenario."""
    from rush.studies.plots import pyplot

    plt = pyplot()
    written = []
    for v, by_s in lad.items():
        scenarios = list(by_s)
        rungs = [p for p in RUNGS if any(p in by_s[s] for s in scenarios)]
        if not scenarios or not rungs:
            continue
        fig, ax = plt.subplots(figsize=(8, 4))
        width = 0.8 / len(rungs)
        x = np.arange(len(scenarios))
        for k, p in enumerate(rungs):
            values = [by_s[s][p]["removed"] if p in by_s[s] else np.nan for s in scenarios]
            ax.bar(x + k * width - 0.4 + width / 2, values, width, label=p)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xticks(x, scenarios)
        ax.set_ylabel("runs with variation removed per trial\n(vs FCFS+EASY, campaign thresholds)")
        ax.set_title(f"The avoidability ladder ({v}): clairvoyant ≥ present-state ≥ RUSH")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = path_for(v)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
