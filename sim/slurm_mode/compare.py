"""The Slurm mode against recorded live replays: results/*.json -> results.md.

    RUSH_TRACE_MIRROR=../shared/traces python sim/slurm_mode/compare.py [NAME ...]

For each replay written by run_live.py, rebuild the jobs as Slurm saw them (the scaled window,
each job's recorded submit time), simulate them with the EASY simulator (the replay's own
comparison, as recorded) and with the Slurm mode read from the run's slurm.conf on the
replay's clock (and, for the tick rule's share, with finished jobs' CPUs back at once instead of
at slurmctld's next one-second tick), and compare each with Slurm's recorded starts: mean |Δwait|, share within 5 s,
start-order inversions (5 s tolerance), mean waits. Nothing is tuned per run: the Slurm mode
is the slurm.conf's settings and nothing else.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from rush.core.config import CoreConfig  # noqa: E402
from rush.rjms.slurm_conf import read_slurm_conf  # noqa: E402
from rush.studies.replay_slurm import slurm_mode_report  # noqa: E402
from rush.studies.replay_window import Observed, Window, scale_window  # noqa: E402
from rush.studies.script_args import run_main  # noqa: E402
from rush.workload.catalogue import load_trace  # noqa: E402
from rush.workload.model import workload_from_trace  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def as_seen(report: dict, trace) -> tuple:
    window = report["window"]
    scaled = scale_window(trace, Window(window["start"], window["count"]), window["speedup"], window["cpus"])
    rows = {row["job_id"]: row for row in report["per_job"]}
    keep = [k for k in range(len(scaled)) if int(scaled.job_id[k]) in rows]
    jobs = scaled.subset(np.array(keep))
    jobs.submit = np.array([max(0.0, rows[int(j)]["real_submit"]) for j in jobs.job_id])
    order = np.lexsort((jobs.job_id, jobs.submit))
    jobs = jobs.subset(order)
    observed = [
        Observed(int(j), rows[int(j)]["real_submit"], rows[int(j)]["real_start"], rows[int(j)]["real_end"])
        for j in jobs.job_id
    ]
    return jobs, observed


def line(name: str, label: str, report: dict) -> str:
    diff, order, metrics = report["start_difference"], report["start_order"], report["metrics"]
    wait = metrics["mean_wait"]
    return (
        f"| {name} | {label} | {diff['mean_abs']:.1f} | {diff['p90_abs']:.1f} | {diff['within_5s'] * 100:.0f} % "
        f"| {order['inversions']} / {order['pairs']} | {wait['simulator']:.1f} | {wait['slurm']:.1f} |"
    )


def main(names: list[str]) -> None:
    trace = workload_from_trace(load_trace("KTH-SP2"))
    rows = [
        "| run | simulator | mean abs dwait (s) | p90 (s) | within 5 s | inverted pairs | mean wait sim (s) | "
        "mean wait Slurm (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(RESULTS.glob("*.json")):
        if names and path.stem not in names:
            continue
        report = json.loads(path.read_text())
        conf = read_slurm_conf(path.with_suffix(".slurm.conf"))
        jobs, observed = as_seen(report, trace)
        mode = slurm_mode_report(jobs, observed, conf.scheduler, CoreConfig.from_names("FCFS", "easy"),
                                 report["clock_offset"])  # fmt: skip
        # The tick rule's share: the same mode with the CPUs back at once (a microsecond tick).
        at_once = slurm_mode_report(jobs, observed, replace(conf.scheduler, tick=1e-6),
                                    CoreConfig.from_names("FCFS", "easy"), report["clock_offset"])  # fmt: skip
        rows.append(line(path.stem, "EASY (cores)", report))
        rows.append(line(path.stem, "Slurm mode, CPUs back at once", at_once))
        rows.append(line(path.stem, "**Slurm mode**", mode))
        print(*rows[-3:], sep="\n")
    (Path(__file__).resolve().parent / "results.md").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
