"""Replay mode's trace side: window cutting, scaling to the test cluster, fidelity report."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.daemon.replay_window import Observed, Window, fidelity_report, scale_window
from rush.errors import RushError
from rush.sim.engine import simulate
from tests.core.helpers import workload


def test_window_parse():
    assert Window.parse("10:50") == Window(10, 50)
    for bad in ("10", "a:b", "-1:5", "3:0"):
        with pytest.raises(RushError, match="--window"):
            Window.parse(bad)


def test_scaling_divides_times_rounds_limits_to_minutes_and_maps_procs():
    w = workload(128, [(1000, 128, 6000, 7200), (1600, 1, 600, 650), (2000, 64, 0, 60)])
    scaled = scale_window(w, Window(0, 3), speedup=100, cpus=64)
    assert scaled.submit.tolist() == [0, 6, 10]
    assert scaled.runtime.tolist() == [60, 6, 0]
    # 72 s -> 2 minutes; 6.5 s and 0.6 s -> 1 minute (Slurm's granularity).
    assert scaled.requested_time.tolist() == [120, 60, 60]
    assert scaled.procs.tolist() == [64, 1, 32]
    assert scaled.machine_procs == 64


def test_window_past_the_end_is_an_error():
    w = workload(8, [(0, 1, 1, 1)])
    with pytest.raises(RushError, match="trace has 1 jobs"):
        scale_window(w, Window(5, 2), 10, 8)


def test_fidelity_report_compares_waits():
    w = workload(4, [(0, 4, 10, 10), (1, 4, 10, 10), (2, 2, 5, 5)])
    sim = simulate(w, CoreConfig())
    # Slurm saw the submits 1 s late and started the second job 3 s later than simulated.
    observed = [
        Observed(1, 1.0, 1.0, 11.0),
        Observed(2, 2.0, sim.start[1] + 1 + 3, sim.start[1] + 1 + 13),
        Observed(3, 3.0, sim.start[2] + 1, sim.start[2] + 6),
    ]
    report = fidelity_report(sim, observed)
    diffs = [row["difference"] for row in report["per_job"]]
    assert diffs == [0.0, 3.0, 0.0]
    assert report["start_difference"]["max_abs"] == 3.0
    assert report["submit_latency"] == pytest.approx(1.0)
    assert set(report["metrics"]) >= {"mean_wait", "utilization", "makespan"}
    with pytest.raises(RushError, match="no outcome"):
        fidelity_report(sim, observed[:2])
    assert np.isfinite(report["metrics"]["mean_wait"]["slurm"])
