"""The Slurm mode against recorded live replays (sim/slurm_mode/results: Slurm 25.11, 10 nodes
of 10 CPUs, the slurm.conf of each run committed beside its report), and its loop's rules.

The replays were recorded by sim/slurm_mode/run_live.py; this test re-simulates the jobs as
Slurm saw them with the slurm.conf's settings alone: every run closer than the simulator's EASY
on processor counts with at most 1 % of pairs inverted, and the stock runs within issue 30's
targets (mean |Δwait| <= 3 s, >= 90 % of jobs within 5 s) but the one named short of them. The live test of the same prediction is
tests/slurm/test_replay_fidelity.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.rjms.slurm_conf import read_slurm_conf
from rush.simulator.slurm_mode import SlurmClock, simulate_slurm
from rush.studies.replay_slurm import slurm_mode_report
from rush.studies.replay_window import Observed, Window, scale_window
from rush.workload.model import Workload
from tests.core.real_traces import real_workload

RESULTS = Path(__file__).resolve().parents[2] / "sim" / "slurm_mode" / "results"
RECORDED = sorted(p.stem for p in RESULTS.glob("*.json"))
# The recorded stock run the mode does not bring within issue 30's targets (the busiest).
SHORT_OF_TARGETS = {"stock-2800"}


def as_seen(report: dict, trace: Workload) -> tuple[Workload, list[Observed]]:
    window = report["window"]
    scaled = scale_window(trace, Window(window["start"], window["count"]), window["speedup"], window["cpus"])
    rows = {row["job_id"]: row for row in report["per_job"]}
    jobs = scaled.subset(np.array([k for k in range(len(scaled)) if int(scaled.job_id[k]) in rows]))
    jobs.submit = np.array([max(0.0, rows[int(j)]["real_submit"]) for j in jobs.job_id])
    jobs = jobs.subset(np.lexsort((jobs.job_id, jobs.submit)))
    observed = [
        Observed(int(j), rows[int(j)]["real_submit"], rows[int(j)]["real_start"], rows[int(j)]["real_end"])
        for j in jobs.job_id
    ]
    return jobs, observed


@pytest.mark.parametrize("name", RECORDED)
def test_the_slurm_mode_predicts_the_recorded_replay(name: str) -> None:
    report = json.loads((RESULTS / f"{name}.json").read_text())
    scheduler = read_slurm_conf(RESULTS / f"{name}.slurm.conf").scheduler
    jobs, observed = as_seen(report, real_workload("KTH-SP2"))
    mode = slurm_mode_report(
        jobs, observed, scheduler, CoreConfig.from_names("FCFS", "easy"), report["clock_offset"]
    )
    diff, order = mode["start_difference"], mode["start_order"]
    easy, easy_order = report["start_difference"], report["start_order"]
    assert mode["jobs"] == len(observed) >= 100
    # Every run: the order within issue 30's bound, and closer than EASY on processor counts
    # (the replay's own comparison, recorded).
    assert order["inversions"] <= 0.01 * order["pairs"], order
    assert diff["mean_abs"] < easy["mean_abs"] and diff["within_5s"] >= easy["within_5s"] - 0.01, (diff, easy)
    stock = scheduler.bf_job_part_count_reserve == 0 and scheduler.cpus_per_node > 1
    if name in SHORT_OF_TARGETS:
        # Measured 3.1 s, 88 %, 56 pairs against EASY's 14.3 s, 41 %, 366 (docs/admin-slurm.md
        # "The Slurm mode": where the mode backfills later than Slurm).
        assert diff["mean_abs"] <= 0.5 * easy["mean_abs"], (diff, easy)
    elif stock:
        # A stock configuration: issue 30's targets, which EASY misses.
        assert diff["mean_abs"] <= 3.0, diff
        assert diff["within_5s"] >= 0.90, diff
        assert easy["mean_abs"] > 3.0 or easy["within_5s"] < 0.90 or easy_order["inversions"] > 0, easy


def test_ticks_and_whole_node_reservations_on_a_small_case() -> None:
    """Two nodes of 2 CPUs. Job 1 (3 CPUs, 2.5 s) runs; job 2 (4 CPUs) waits for it; job 3
    (1 CPU, limit 60 s) could run beside job 1 on its idle CPU, but job 2's reservation holds
    both whole nodes from job 1's limit on, and job 3's limit overlaps it: it waits for job 2."""
    jobs = Workload(
        job_id=np.array([1, 2, 3]),
        submit=np.array([0.0, 0.0, 0.0]),
        runtime=np.array([2.5, 1.0, 1.0]),
        procs=np.array([3, 4, 1]),
        requested_time=np.array([60.0, 60.0, 60.0]),
        user=np.array([1, 1, 1]),
        machine_procs=4,
    )
    from rush.core.slurm_backfill import SlurmScheduler

    slurm = SlurmScheduler(nodes=2, cpus_per_node=2, bf_interval=1, bf_resolution=1)
    result = simulate_slurm(jobs, slurm, clock=SlurmClock(offset=1000.0))
    # Job 1 ends at 2.5; its CPUs return at the next tick (3); job 2 then runs 3-4, and job 3
    # starts when job 2's CPUs return (5).
    assert result.start.tolist() == [0.0, 3.0, 5.0]
    assert result.backfilled.tolist() == [False, False, False]
