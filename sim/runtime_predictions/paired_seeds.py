"""D15 and D16 (round 18, post hoc): SPF-CI against H13a ("SPF-CI ranked on predictions") paired
over seeds of random tie-breaks, the published job set; with ``--rule``, SPF-CI against another
ranking rule (round 19: H16, "SAF-CI ranked on predictions"; round 20: H17, "SPF-CI ranked where
confident"; round 21: H18, post hoc, "SPF-CI one step where confident").

For each trace, both schedulers once with ties by arrival (the committed rows, a check) and once
per seed, each seed's one random permutation of the jobs ordering every pair of equal ranking keys
in both (:func:`rush.core.runtime_predictions.random_tie_breaks`); the walk-forwards, classes,
kills and checks of ``rush_q.py``. Writes ``results/published/<out>.csv`` (the rows of the traces
run; the other traces' rows in that file stay) and ``<out>.md`` (per trace: the paired differences
H13a - SPF-CI, their mean, its 95 % t-interval, min, max, the wins out of the seeds, Wilcoxon's
signed-rank p and the exact sign test's, and D15's verdict rule). ``--out`` is ``paired_seeds``
(D15's, seeds 1-8) unless given; D16 (seeds 9-40) writes ``paired_seeds_d16``, H16 (seeds 9-40,
``--rule "SAF-CI ranked on predictions"``) ``paired_seeds_h16``, H17 (seeds 9-40, ``--rule "SPF-CI
ranked where confident"``) ``paired_seeds_h17``, H18 (seeds 9-40, ``--rule "SPF-CI one step where
confident"``) ``paired_seeds_h18``, H19 (round 25, seeds 9-40, ``--rule "SPF-CI backfilled on
Gaussier online"``) ``paired_seeds_h19``; ``--traces HPC2N`` (round 22, D22: a trace H18 was not shaped
on) needs HPC2N's rows in ``results/published/rush_q.csv`` first. A rule's runs with ties by
arrival must equal its committed single run (H13a's below; another rule's row of
``results/published/rush_q.csv``). ``--job-set full`` (round 28; default ``published``, whose runs
and files it leaves as they were) runs the full job set instead: the classifier's walk-forward of
the full set, the arrival runs checked against ``results/full/rush_q.csv`` (H13a's too), and the
files written to ``results/full/<out>``.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 15 \\
        python sim/runtime_predictions/paired_seeds.py --traces KTH-SP2 [--seeds 1-8] [--out NAME] [--rule NAME] \\
        [--job-set full]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

from rush.studies.arg_types import names

HERE = Path(__file__).parent
SPF_CI, H13A = "SPF-CI (classifier)", "SPF-CI ranked on predictions"
JOB_SETS = ("published", "full")  # each reads its own results/<job set>/rush_q.csv and writes there
COMMITTED = {  # results/published/rush_q.csv, ties by arrival
    ("KTH-SP2", SPF_CI): 64.69,
    ("CTC-SP2", SPF_CI): 70.35,
    ("SDSC-SP2", SPF_CI): 55.32,
    ("SDSC-BLUE", SPF_CI): 64.00,
    ("KTH-SP2", H13A): 57.69,
    ("CTC-SP2", H13A): 70.07,
    ("SDSC-SP2", H13A): 58.46,
    ("SDSC-BLUE", H13A): 64.62,
}
# The rules that can be paired with SPF-CI, and their labels in the table.
RULES = {
    H13A: "H13a",
    "SAF-CI ranked on predictions": "H16",
    "SPF-CI ranked where confident": "H17",
    "SPF-CI one step where confident": "H18",
    "SPF-CI backfilled on Gaussier online": "H19",
    "SPF-CI backfilled on EASY++ online": "H19 (EASY++ online)",
}


def _rule(text: str) -> str:
    """A ranking rule of :data:`RULES`; an ArgumentTypeError (exit 2) otherwise."""
    if text not in RULES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a paired rule: give one of {', '.join(map(repr, RULES))}"
        )
    return text


def _committed(trace: str, scheduler: str, job_set: str = "published") -> float:
    """The single run of record of ``scheduler`` on ``trace`` (ties by arrival) in ``job_set``."""
    if job_set == "published" and (trace, scheduler) in COMMITTED:
        return COMMITTED[trace, scheduler]
    with open(HERE / "results" / job_set / "rush_q.csv") as fh:
        for r in csv.DictReader(fh):
            if r["trace"] == trace and r["scheduler"] == scheduler:
                return float(r["improvement_over_easy_fcfs_pct"])
    raise SystemExit(
        f"{trace} {scheduler}: no single run of record in results/{job_set}/rush_q.csv: run rush_q.py first"
    )


def _seeds(text: str) -> tuple[int, ...]:
    """``1-8`` (or one seed, ``3``) as seeds; an ArgumentTypeError (exit 2) otherwise."""
    first, _, last = text.partition("-")
    try:
        seeds = tuple(range(int(first), int(last or first) + 1))
    except ValueError:
        seeds = ()
    if not seeds:
        raise argparse.ArgumentTypeError(f"{text!r} is not a range of seeds: give one such as 1-8")
    return seeds


def _out_name(text: str) -> str:
    """A file stem in ``results/published`` (letters, digits, ``_``, ``-``); ArgumentTypeError otherwise."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a file stem: give a name such as paired_seeds_d16 (no path, no suffix)"
        )
    return text


def run_trace(trace: str, seeds: tuple[int, ...], rule: str = H13A, job_set: str = "published") -> list[dict]:
    """SPF-CI and ``rule`` on ``trace`` (``job_set``), ties by arrival and by each seed."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    import rush_q

    from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET
    from rush.studies.runtime_predictions_quantiles import RowOptions, quantile_rows
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    workload = workload_from_trace(load_trace(trace))
    wf = rush_q.default_walkforward(trace, DEFAULT_FEATURE_SET)
    rows = np.flatnonzero((workload.runtime > 0) & (workload.runtime < workload.requested_time))
    rows = rows if job_set == "published" else np.arange(len(workload))
    cw = rush_q.classifier_walkforward(trace, job_set)
    reference = rush_q.fcfs_ci_false_small(trace, job_set, len(workload), rows, cw)
    fcfs_kills = int(np.nansum(reference))
    found = quantile_rows(
        trace,
        job_set,
        workload,
        wf,
        RowOptions(
            reference_false_small=reference, names=(SPF_CI, rule), classifier=cw, tie_seeds=(None, *seeds)
        ),
    )
    for r in found:
        r.setdefault("tie_seed", "arrival")
        r["fcfs_ci_kills"] = fcfs_kills
        if r["false_small_kills"] != fcfs_kills:
            raise SystemExit(f"{trace} {r['scheduler']} seed {r['tie_seed']}: {r['false_small_kills']} kills")
        if (
            r["tie_seed"] == "arrival"
            and abs(r["improvement_over_easy_fcfs_pct"] - _committed(trace, r["scheduler"], job_set)) > 0.006
        ):
            raise SystemExit(
                f"{trace} {r['scheduler']}: {r['improvement_over_easy_fcfs_pct']} is not the committed row"
            )
        print(
            {k: r[k] for k in ("trace", "scheduler", "tie_seed", "improvement_over_easy_fcfs_pct")},
            flush=True,
        )
    return found


def summary(rows: list[dict], traces: tuple[str, ...], rule: str = H13A) -> list[str]:
    """D15's table: per trace, the paired differences ``rule`` - SPF-CI over the seeds (H13a's
    unless given) and the verdict.

    The mean difference's 95 % interval is Student's t over the seeds (n - 1 degrees of freedom),
    D16's choice, fixed before its runs."""
    import numpy as np
    from scipy.stats import binomtest, t, wilcoxon

    label = RULES[rule]
    lines = [
        f"| trace | seeds | SPF-CI by arrival | {label} by arrival | SPF-CI over seeds: mean (min-max) "
        f"| {label} over seeds: mean (min-max) | {label} - SPF-CI: mean | 95 % t-interval | min | max "
        f"| {label} >= SPF-CI | "
        "Wilcoxon p | sign test p | kills (both; FCFS-CI's) | verdict (D15's rule) |",
        "|---|---:|---:|---:|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for trace in traces:
        of = [r for r in rows if r["trace"] == trace]
        if not of:
            continue
        pct = {(r["scheduler"], str(r["tie_seed"])): float(r["improvement_over_easy_fcfs_pct"]) for r in of}
        seeds = sorted({str(r["tie_seed"]) for r in of} - {"arrival"}, key=int)
        spf = np.array([pct[SPF_CI, s] for s in seeds])
        ranked = np.array([pct[rule, s] for s in seeds])
        diff = ranked - spf
        wins = int((diff >= 0).sum())
        p_w = wilcoxon(ranked, spf).pvalue if np.any(diff != 0) else 1.0
        nonzero = diff[diff != 0]
        p_s = binomtest(int((nonzero > 0).sum()), len(nonzero)).pvalue if len(nonzero) else 1.0
        held = diff.mean() >= 0 and wins > len(seeds) / 2
        if len(diff) > 1:
            half = t.ppf(0.975, len(diff) - 1) * diff.std(ddof=1) / np.sqrt(len(diff))
            interval = f"{diff.mean() - half:+.2f} to {diff.mean() + half:+.2f}"
        else:
            interval = "-"
        lines.append(
            f"| {trace} | {len(seeds)} | {pct[SPF_CI, 'arrival']:.2f} | {pct[rule, 'arrival']:.2f} "
            f"| {spf.mean():.2f} ({spf.min():.2f}-{spf.max():.2f}) | {ranked.mean():.2f} ({ranked.min():.2f}-{ranked.max():.2f}) "
            f"| {diff.mean():+.2f} | {interval} | {diff.min():+.2f} | {diff.max():+.2f} | {wins} of {len(seeds)} "
            f"| {p_w:.3f} | {p_s:.3f} | {int(of[0]['fcfs_ci_kills']):,} "
            f"| {'at or above' if held else 'below'} |"
        )
    return lines


def main() -> None:
    # Table 6.6's four, the default; HPC2N on request: round 22's confirmation of H18 on a trace
    # it was not shaped on (D22).
    table_traces = ("KTH-SP2", "CTC-SP2", "SDSC-SP2", "SDSC-BLUE")
    traces = (*table_traces, "HPC2N")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=names(traces), default=",".join(table_traces))
    parser.add_argument("--seeds", default="1-8", type=_seeds, help="a range of tie-break seeds, e.g. 1-8")
    parser.add_argument(
        "--out",
        default="paired_seeds",
        type=_out_name,
        help="file stem in results/<job set> (D16: paired_seeds_d16)",
    )
    parser.add_argument(
        "--rule", default=H13A, type=_rule, help=f"the rule paired with SPF-CI: one of {', '.join(RULES)}"
    )
    parser.add_argument(
        "--job-set",
        default="published",
        choices=JOB_SETS,
        help="the job set run and the results/<job set>/ written (round 28: full)",
    )
    args = parser.parse_args()
    seeds = args.seeds
    run = args.traces
    # The published set's call is the one earlier rounds made (their tests stand in for it).
    extra = {} if args.job_set == "published" else {"job_set": args.job_set}
    rows = [r for t in run for r in run_trace(t, seeds, args.rule, **extra)]
    out = HERE / "results" / args.job_set
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{args.out}.csv"
    kept = []
    if path.exists():
        with open(path) as fh:
            kept = [r for r in csv.DictReader(fh) if r["trace"] not in run]
    columns = list(rows[0])
    rows = sorted(kept + rows, key=lambda r: traces.index(r["trace"]))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    (out / f"{args.out}.md").write_text("\n".join(summary(rows, traces, args.rule)) + "\n")
    print("\n".join(summary(rows, traces, args.rule)))


if __name__ == "__main__":
    main()
