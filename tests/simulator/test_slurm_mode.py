"""The Slurm mode against recorded live replays (sim/slurm_mode/results: Slurm 25.11, 10 nodes
of 10 CPUs, the slurm.conf of each run committed beside its report), and its loop's rules.

The replays were recorded by sim/slurm_mode/run_live.py; this test re-simulates the jobs as
Slurm saw them with the slurm.conf's settings alone: every run closer than the simulator's EASY
on processor counts with at most 1 % of pairs inverted, and the stock runs within issue 30's
targets (mean |Δwait| <= 3 s, >= 90 % of jobs within 5 s). The live test of the same prediction is
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
    if stock:
        # A stock configuration: issue 30's targets, which EASY misses.
        assert diff["mean_abs"] <= 3.0, diff
        assert diff["within_5s"] >= 0.90, diff
        assert easy["mean_abs"] > 3.0 or easy["within_5s"] < 0.90 or easy_order["inversions"] > 0, easy


def _three_jobs(submit: list[float], runtime: list[float], procs: list[int], limit: list[float]) -> Workload:
    """Jobs 1-3 of one user on a machine of 4 CPUs."""
    return Workload(
        job_id=np.array([1, 2, 3]),
        submit=np.array(submit),
        runtime=np.array(runtime),
        procs=np.array(procs),
        requested_time=np.array(limit),
        user=np.array([1, 1, 1]),
        machine_procs=4,
    )


def _on_two_nodes(jobs: Workload):  # noqa: ANN202 - the Slurm mode's result
    """The Slurm mode on two nodes of 2 CPUs, a backfill cycle every second."""
    from rush.core.slurm_backfill import SlurmScheduler

    slurm = SlurmScheduler(nodes=2, cpus_per_node=2, bf_interval=1, bf_resolution=1)
    return simulate_slurm(jobs, slurm, clock=SlurmClock(offset=1000.0))


def test_ticks_and_whole_node_reservations_on_a_small_case() -> None:
    """Two nodes of 2 CPUs. Job 1 (3 CPUs, 2.5 s) runs; job 2 (4 CPUs) waits for it; job 3
    (1 CPU, limit 60 s) could run beside job 1 on its idle CPU, but job 2's reservation holds
    both whole nodes from job 1's limit on, and job 3's limit overlaps it: it waits for job 2."""
    result = _on_two_nodes(_three_jobs([0.0, 0.0, 0.0], [2.5, 1.0, 1.0], [3, 4, 1], [60.0, 60.0, 60.0]))
    # Job 1 ends at 2.5; its CPUs return at the next tick (3); job 2 then runs 3-4, and job 3
    # starts when job 2's CPUs return (5).
    assert result.start.tolist() == [0.0, 3.0, 5.0]
    assert result.backfilled.tolist() == [False, False, False]


def test_backfill_starts_a_job_in_the_second_it_was_submitted() -> None:
    """backfill.c's agent runs the cycle of the second in which a job arrived (its
    ``_more_work`` compares whole-second stamps), so a short job behind a waiting one is
    backfilled in its submit's second, as the recorded replays show (42 such starts in six
    runs): not at the next tick. Two nodes of 2 CPUs: job 1 (2 CPUs) runs; job 2 (4 CPUs) waits
    for it; job 3 (1 CPU, limit 5 s) ends before job 2's reservation and fits on node 2."""
    jobs = _three_jobs([0.0, 5.0, 5.0], [30.0, 1.0, 1.0], [2, 4, 1], [60.0, 60.0, 5.0])
    result = _on_two_nodes(jobs)
    assert result.start.tolist() == [0.0, 31.0, 5.0]  # job 1 ends at 30: CPUs back at 31
    assert result.backfilled.tolist() == [False, False, True]
    # A submit between ticks waits for the next one (bf_interval 1 s): job 3 at 5.5 starts at 6.
    jobs.submit = np.array([0.0, 5.0, 5.5])
    assert _on_two_nodes(jobs).start.tolist() == [0.0, 31.0, 6.0]


def test_the_backfill_tick_is_the_interval_tick_at_or_after_a_change() -> None:
    from rush.core.slurm_backfill import backfill_tick

    assert backfill_tick(5.0, 1.0) == 5.0
    assert backfill_tick(5.3, 1.0) == 6.0
    assert backfill_tick(31.0, 30.0) == 60.0
    assert backfill_tick(60.0, 30.0) == 60.0
    # Float noise on a tick counts as on it, never before the change.
    assert backfill_tick(60.0 - 1e-9, 30.0) == 60.0
    assert backfill_tick(60.0 + 1e-9, 30.0) == 60.0 + 1e-9
    # One cycle per tick: a change on a tick whose cycle has run waits for the next tick.
    assert backfill_tick(60.0, 30.0, last_cycle=60.0) == 90.0
    assert backfill_tick(61.0, 30.0, last_cycle=60.0) == 90.0
    assert backfill_tick(90.0, 30.0, last_cycle=60.0) == 90.0


def test_will_run_skips_running_jobs_off_the_usable_nodes() -> None:
    """cons_tres's ``_future_run_test`` skips a running job with no usable node and aligns
    its 30 s barrier on the first job it removes. Node 1 is held by a reservation; a job on it
    ends first (at 5), one on node 3 at 50, one on node 2 at 70. Aligned on node 1's job the
    first batch would end at 60 and put the 10-CPU job on node 3 at 50; aligned on node 3's job
    the batch reaches 90, both nodes come free together and the job goes on node 2 (lowest
    first) at 70."""
    from rush.core.slurm_backfill import RunningJob, will_run

    capacity = np.full(3, 10, dtype=np.int64)
    running = [
        RunningJob(1, np.array([10, 0, 0]), 5.0),
        RunningJob(2, np.array([0, 0, 10]), 50.0),
        RunningJob(3, np.array([0, 10, 0]), 70.0),
    ]
    found = will_run(0.0, np.array([False, True, True]), capacity, running, 10)
    assert found is not None
    start, alloc = found
    assert start == 70.0
    assert alloc.tolist() == [0, 10, 0]
    # With node 1 usable too the first batch is aligned on its job: it starts there at 5.
    start, alloc = will_run(0.0, np.array([True, True, True]), capacity, running, 10)
    assert (start, alloc.tolist()) == (5.0, [10, 0, 0])
