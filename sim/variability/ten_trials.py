"""Pooled trials of sim/variability/README.md ("Ten trials"): per scenario and policy, means per trial.

    python sim/variability/ten_trials.py RUNS.csv.gz [RUNS.csv.gz ...] [--variant paper]

Each file is a study's `results/runs.csv.gz`; a (variant, scenario, trial, policy) found in two files
is taken from the first. Columns: runs with variation (campaign bar), removed against FCFS+EASY
with a paired 95 % t-interval over the trials (Student t on the per-trial differences,
n - 1 degrees of freedom), the share of the present-state oracle's removal (ratio of the mean
removals) with a 95 % percentile interval from a paired bootstrap over trials (10 000 resamples,
seed 0; resamples where the oracle removes nothing are dropped), the margin over the issue's
target (removed minus half the oracle's removal, per trial; t-interval as above), Δmakespan (last end minus first
submit, mean of the per-trial changes), flagged starts (every job started while flagged: at the
limit, released by an idle machine, or moved to quiet leaves by RUSH-MOVE) and starts at the skip
limit (flagged with their skips at the limit, the paper's "threshold"; RUSH-MOVE's moves are not
counted). Then the per-trial removal of every learned policy, FCFS+EASY's runs with variation per
application, and their causes and avoidability over the pooled trials (the study's attribution,
rush.studies.contention_avoidable.causes). Prints markdown.
"""

from __future__ import annotations

import argparse
import csv
import gzip
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from rush.studies.arg_types import existing_file
from rush.studies.contention_avoidable import BASELINE, CAUSE_NAMES, causes

BOOTSTRAP = 10_000
ORDER = [
    "FCFS+EASY",
    "CLAIRVOYANT-ORACLE",
    "PRESENT-ORACLE",
    "RUSH",
    "RUSH-SIZE",
    "RUSH-MOVE",
    "TOPOLOGY",  # diagnostic: FCFS+EASY with RUSH-MOVE's topology packing for every job, no predictor
    "POD-PACKING",  # diagnostic: RUSH-MOVE's rules, every job flagged, every leaf quiet (topology-4000/)
    "RUSH-PLACEBO",  # diagnostic: RUSH's rules, questions flagged at random at RUSH's rate (placebo/)
    "RUSH-JOB-PLACEBO",  # diagnostic: the same, matched per job (first question, later ones; placebo/)
    "RUSH-PRESENT-LABEL",  # round six: RUSH with the model trained on the present-state oracle's answer
    "PRESENT-LABEL-PLACEBO",  # diagnostic: the same at RUSH-PRESENT-LABEL's rate (placebo/)
    "PRESENT-LABEL-JOB-PLACEBO",  # diagnostic: matched per job to RUSH-PRESENT-LABEL (placebo/)
    "RUSH-MOVE-PRESENT-LABEL",  # round seven: RUSH-MOVE with that model
    "RUSH-30",
    "RUSH-UNLIMITED",
    "NOISE-ORACLE",
]
SCENARIOS = ["ADAA", "ADPA", "PDPA", "WS", "SS"]


@dataclass
class Trial:
    """One (scenario, trial, policy): its runs with variation, makespan and flagged starts."""

    variation: int = 0
    first_submit: float = float("inf")
    last_end: float = 0.0
    flagged_starts: int = 0
    limit_hits: int = 0  # starts at the skip limit

    @property
    def makespan(self) -> float:
        return self.last_end - self.first_submit


@dataclass
class Pool:
    """Trials keyed by (scenario, policy) then trial number."""

    cells: dict[tuple[str, str], dict[int, Trial]] = field(default_factory=lambda: defaultdict(dict))
    apps: dict[tuple[str, str, int], dict[str, int]] = field(default_factory=dict)
    baseline_rows: list[dict[str, str]] = field(default_factory=list)  # FCFS+EASY's jobs, one file per trial

    def add_file(self, path: str, variant: str) -> None:
        fresh: dict[tuple[str, str, int], Trial] = defaultdict(Trial)
        fresh_apps: dict[tuple[str, str, int], dict[str, int]] = {}
        with gzip.open(path, "rt") as fh:
            for r in csv.DictReader(fh):
                if r["variant"] != variant:
                    continue
                key = (r["scenario"], r["policy"], int(r["trial"]))
                if key[2] in self.cells[key[:2]]:
                    continue  # an earlier file has this trial
                if key[1] == BASELINE:
                    self.baseline_rows.append(r)
                t = fresh[key]
                t.variation += r["variation"] == "True"
                per_app = fresh_apps.setdefault(key, defaultdict(int))
                per_app[r["app"]] += r["variation"] == "True"
                t.first_submit = min(t.first_submit, float(r["submit"]))
                t.last_end = max(t.last_end, float(r["end"]))
                limit = int(r["skip_limit"])
                t.flagged_starts += r["limit_hit"] == "True"
                t.limit_hits += r["limit_hit"] == "True" and 0 < limit <= int(r["skips"])
        for (s, p, n), t in fresh.items():
            self.cells[(s, p)][n] = t
        self.apps.update(fresh_apps)


def t_interval(d: np.ndarray) -> tuple[float, float]:
    if len(d) < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return d.mean() - half, d.mean() + half


def resamples(n: int) -> np.ndarray:
    """The paired bootstrap's resamples of n trials (BOOTSTRAP rows of trial indices, seed 0)."""
    return np.random.default_rng(0).integers(0, n, size=(BOOTSTRAP, n))


def mean_interval(d: np.ndarray) -> tuple[float, float]:
    """95 % percentile interval of the mean of paired per-trial differences ``d``."""
    lo, hi = np.percentile(d[resamples(len(d))].mean(axis=1), [2.5, 97.5])
    return lo, hi


def share_interval(removed: np.ndarray, removed_present: np.ndarray) -> tuple[float, float]:
    idx = resamples(len(removed))
    num = removed[idx].mean(axis=1)
    den = removed_present[idx].mean(axis=1)
    ok = den > 0
    lo, hi = np.percentile(num[ok] / den[ok], [2.5, 97.5])
    return lo, hi


def trial_ranges(trials: list[int]) -> str:
    """Sorted trial numbers as runs of consecutive ones: 4000–4009, 5000–5004."""
    runs: list[list[int]] = []
    for t in trials:
        if runs and t == runs[-1][-1] + 1:
            runs[-1].append(t)
        else:
            runs.append([t])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def rows(pool: Pool, scenario: str) -> list[str]:
    base = pool.cells.get((scenario, "FCFS+EASY"), {})
    present = pool.cells.get((scenario, "PRESENT-ORACLE"), {})
    out = []
    for policy in ORDER:
        cell = pool.cells.get((scenario, policy), {})
        trials = sorted(t for t in cell if t in base)
        if not trials:
            continue
        v = np.array([cell[t].variation for t in trials], float)
        b = np.array([base[t].variation for t in trials], float)
        span = np.mean([cell[t].makespan / base[t].makespan - 1 for t in trials])
        hits = np.mean([cell[t].limit_hits for t in trials])
        flagged = np.mean([cell[t].flagged_starts for t in trials])
        label = trial_ranges(trials)
        if policy == "FCFS+EASY":
            out.append(
                f"| {scenario} | {policy} | {label} ({len(trials)}) | {v.mean():.1f} | — | — | — | — "
                f"| {flagged:.1f} | {hits:.1f} |"
            )
            continue
        d = b - v
        lo, hi = t_interval(d)
        share = margin = "—"
        if policy != "PRESENT-ORACLE" and all(t in present for t in trials):
            dp = b - np.array([present[t].variation for t in trials], float)
            if dp.mean() > 0:
                slo, shi = share_interval(d, dp)
                share = f"{d.mean() / dp.mean():.0%} [{slo:.0%}, {shi:.0%}]"
                mlo, mhi = t_interval(d - dp / 2)
                margin = f"{(d - dp / 2).mean():+.1f} [{mlo:+.1f}, {mhi:+.1f}]"
            else:
                share = "n/a (oracle removes nothing)"
        out.append(
            f"| {scenario} | {policy} | {label} ({len(trials)}) | {v.mean():.1f} | {d.mean():+.1f} "
            f"[{lo:+.1f}, {hi:+.1f}] | {share} | {margin} | {span:+.2%} | {flagged:.1f} | {hits:.1f} |"
        )
    return out


def per_trial(pool: Pool, scenario: str) -> list[str]:
    base = pool.cells.get((scenario, "FCFS+EASY"), {})
    out = []
    for policy in ORDER[1:]:
        cell = pool.cells.get((scenario, policy), {})
        trials = sorted(t for t in cell if t in base)
        if trials:
            removed = ", ".join(f"{base[t].variation - cell[t].variation:+d}" for t in trials)
            out.append(f"| {scenario} | {policy} | {trial_ranges(trials)} | {removed} |")
    return out


def per_app(pool: Pool, scenario: str) -> list[str]:
    """Runs with variation per application and trial, the paper's Fig. 5 (ADAA)."""
    base = pool.cells.get((scenario, "FCFS+EASY"), {})
    apps = sorted({a for (s, _, _), counts in pool.apps.items() if s == scenario for a in counts})
    out = []
    for policy in ORDER:
        trials = sorted(t for t in pool.cells.get((scenario, policy), {}) if t in base)
        if trials:
            means = [np.mean([pool.apps[(scenario, policy, t)].get(a, 0) for t in trials]) for a in apps]
            out.append(
                f"| {scenario} | {policy} | {len(trials)} | " + " | ".join(f"{m:.1f}" for m in means) + " |"
            )
    if out:
        out[:0] = [
            f"| scenario | policy | trials | {' | '.join(apps)} |",
            "|---|---|---|" + "---|" * len(apps),
        ]
    return out


def cause_rows(pool: Pool) -> list[str]:
    """FCFS+EASY's runs with variation per trial by main cause, and avoidable by a delay, pooled."""
    pooled = causes(pool.baseline_rows)
    out = [
        "| scenario | trials | runs with variation | "
        + " | ".join(f"main cause: {c}" for c in CAUSE_NAMES)
        + " | avoidable by a delay |",
        "|---|---|---|" + "---|" * (len(CAUSE_NAMES) + 1),
    ]
    for by_scenario in pooled.values():
        for s in SCENARIOS:
            d = by_scenario.get(s)
            if d is None:
                continue
            n = d["runs_with_variation"]
            share = [d["by_cause"].get(c, 0.0) for c in CAUSE_NAMES] + [d["avoidable_by_delay"]]
            cells = " | ".join(f"{x:.1f} ({x / n:.0%})" if n else f"{x:.1f}" for x in share)
            out.append(f"| {s} | {d['trials']} | {n:.1f} | {cells} |")
    return out


def main() -> None:
    from rush.contention.experiment import VARIANTS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=existing_file)
    ap.add_argument("--variant", default="paper", choices=tuple(VARIANTS))
    args = ap.parse_args()
    pool = Pool()
    for path in args.runs:
        pool.add_file(path, args.variant)
    print(
        "| scenario | policy | trials | runs with variation | removed vs FCFS+EASY [95 % t] | "
        "share of PRESENT-ORACLE's removal [95 % bootstrap] | removed − ½ PRESENT-ORACLE's [95 % t] | Δmakespan "
        "| flagged starts / trial | starts at the skip limit / trial |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in SCENARIOS:
        for line in rows(pool, s):
            print(line)
    print()
    print("| scenario | policy | trials | removed per trial (FCFS+EASY − policy) |")
    print("|---|---|---|---|")
    for s in SCENARIOS:
        for line in per_trial(pool, s):
            print(line)
    print()
    for line in per_app(pool, "ADAA"):
        print(line)
    print()
    for line in cause_rows(pool):
        print(line)


if __name__ == "__main__":
    main()
