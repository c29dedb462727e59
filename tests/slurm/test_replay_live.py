"""Replay mode on the real Slurm: a trace window as sleep jobs, then the fidelity report."""

from __future__ import annotations

import json

from rush.core.config import CoreConfig
from rush.rjms.base import get_backend
from rush.studies.replay import ReplayOptions, replay
from rush.studies.replay_window import Window
from tests.core.real_traces import real_workload


def test_replay_50_kth_jobs(slurm, tmp_path):
    workload = real_workload("KTH-SP2")
    backend = get_backend("slurm", **slurm.options())
    report = replay(
        backend,
        workload,
        Window(0, 50),
        speedup=5000,
        config=CoreConfig.from_names("FCFS", "easy"),
        options=ReplayOptions(timeout=600),
    )
    (tmp_path / "fidelity.json").write_text(json.dumps(report, indent=1))
    assert report["jobs"] == 50 and report["unfinished"] == 0
    assert report["window"]["cpus"] == slurm.cpus
    assert len(report["per_job"]) == 50
    assert set(report["metrics"]) >= {"mean_wait", "mean_bounded_slowdown", "utilization"}
    for pair in report["metrics"].values():
        assert pair["simulator"] is not None and pair["slurm"] is not None
    # Every submitted job finished and was compared, one row per window job.
    assert len(report["rjms_job_ids"]) == 50
    assert sorted(r["job_id"] for r in report["per_job"]) == sorted(int(k) for k in report["rjms_job_ids"])
    # Slurm's waits agree with the simulator's. Measured at speedup 5000 on this test cluster:
    # all 50 within 5 s, mean |diff| 0.52 s, max 2 s (Slurm schedules each second,
    # bf_interval=1). A regression in the replay pipeline (time base, scaling, procs mapping,
    # accounting) moves waits by whole job runtimes. This window barely queues, so it does
    # not test ordering: on busy KTH windows (2800:50 at 500x, 1200:50 at 2000x) this single
    # 64-CPU node measured mean |diff| 33 s and 8 s, makespan 2x and 1.3x the simulator's:
    # Slurm's backfill reserves whole nodes and reserves for every job it tests. Busy windows
    # are bounded on one-CPU nodes with Slurm's backfill set to EASY in
    # tests/slurm/test_replay_fidelity.py (docs/admin-slurm.md, "Replay").
    # Within one whole-suite session (after the daemon's live tests) the same window measured
    # mean |diff| 3.4 s, median 4.0 s, max 5.0 s: every job about 4 s later than simulated,
    # a systematic Slurm scheduling latency whose cause is not found yet (alone: 0.3-0.5 s).
    # A later whole-suite run (both Slurms' live tests before it) measured 22.05 at median 4.0 s,
    # p90 6.0 s, max 7.0 s: 84 % within 5 s; alone: mean 1.1 s (22.05), 0.5 s (25.11), all within
    # 5 s. (batch_sched_delay=0, tried as the cause, left a begin-time job unscheduled for 60 s on
    # 25.11 in a whole-suite run, so it is not set.) The bounds below hold for all of these; a
    # pipeline regression moves waits by whole job runtimes and breaks them.
    diff = report["start_difference"]
    print(json.dumps({k: report[k] for k in ("start_difference", "metrics", "submit_latency")}, indent=1))
    assert diff["within_5s"] >= 0.8, diff
    assert diff["mean_abs"] <= 5.0, diff
    assert diff["max_abs"] <= 10.0, diff
    # One node of 64 CPUs and Slurm's default backfill: the replay names both differences.
    found = " ".join(report["scheduler_differences"]["settings"])
    assert "whole nodes" in found and "bf_job_part_count_reserve=1" in found, found
    # Waits are compared, not raw starts: the replay driver's submit latency is separate.
    assert abs(report["submit_latency"]) < 5.0
