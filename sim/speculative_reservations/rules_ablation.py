"""What the one speculative rule set (issue 19) changed in the trace replay, one rule at a time.

The replay of ``rush experiment speculative`` (FCFS + EASY, first 5000 jobs, history 20) under
four rule sets, from the study's old rules to the shared ones of
``rush/models/speculative/job_sequence.py``:

1. ``before``: every run a sample at its length (clipped at the job's walltime), reservations
   as estimated (no rounding), 2 runs of history (the study's rules until issue 19);
2. ``+censoring``: runs stopped by a limit or a person are right-censored (Kaplan–Meier);
3. ``+minutes``: each reservation rounded up to whole minutes (Slurm's granularity);
4. ``after``: and at least 5 runs of history (the daemon's default): the study's rules now.

Writes ``results/rules_ablation.csv`` beside this file (one row per trace, rule set and
estimator; the plain walltime run does not depend on the rules and is in ``trace.csv``).

    RUSH_TRACE_MIRROR=../shared/traces .venv/bin/python sim/speculative_reservations/rules_ablation.py
"""

from __future__ import annotations

import argparse
import csv
import functools
import tempfile
from pathlib import Path

from rush.studies.arg_types import count, trace_specs
from rush.studies.speculative import load_slice, trace_task
from rush.studies.sweep import SweepOptions, run_sweep

RULES = {
    "before": {"every_run_observed": True, "granularity": 0.0, "min_history": 2},
    "+censoring": {"every_run_observed": False, "granularity": 0.0, "min_history": 2},
    "+minutes": {"every_run_observed": False, "granularity": 60.0, "min_history": 2},
    "after": {"every_run_observed": False, "granularity": 60.0, "min_history": 5},
}
ESTIMATORS = ("mean-doubling", "discrete", "continuous")
COLUMNS = (
    "trace",
    "rules",
    "estimator",
    "mean_bsld",
    "mean_wait",
    "utilization",
    "occupied_utilization",
    "wasted_fraction",
    "reservation_kills",
    "opted_in",
    "opted_in_with_censored",
)


def _cluster(text: str) -> str:
    """An argparse type: a cluster that rush.studies.sweep takes (checked before any trace)."""
    from rush.errors import ConfigError
    from rush.studies.sweep.clusters import check_cluster

    try:
        check_cluster(SweepOptions(cluster=text))
    except ConfigError as error:
        raise argparse.ArgumentTypeError(f"{error.message}; {error.fix}") from None
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2,CTC-SP2")
    parser.add_argument("--jobs", type=count(1), default=5000)
    parser.add_argument("--cluster", type=_cluster, default="local:2", help="rush.studies.sweep cluster")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent
    rows: list[dict] = []
    for trace in args.traces:
        cells = [
            {"trace": trace, "jobs": args.jobs, "estimator": e, "history": 20, "rules": name, **rule}
            for name, rule in RULES.items()
            for e in ESTIMATORS
        ]
        loader = functools.partial(load_slice, trace, args.jobs)
        options = SweepOptions(
            # A fresh directory: rush.studies.sweep reuses finished cells of the same key.
            out=Path(tempfile.mkdtemp(prefix=f"rush-rules-ablation-{trace}-")),
            cluster=args.cluster,
            resources={"workload": loader},
        )
        got = run_sweep(trace_task, cells, options)
        failed = [r for r in got if r.get("error_type")]
        if failed:
            raise SystemExit(f"{len(failed)} cells failed: {failed[:2]}")
        rows += [{k: r[k] for k in COLUMNS} for r in got]
    out = here / "results" / "rules_ablation.csv"
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} rows in {out}")


if __name__ == "__main__":
    main()
