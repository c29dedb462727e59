"""Replay mode's trace side: window cutting, scaling to the test cluster, fidelity report."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.errors import RushError
from rush.simulator.engine import simulate
from rush.studies.replay_window import Observed, Window, fidelity_report, order_inversions, scale_window
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


def test_flux_limits_round_to_seconds_not_minutes():
    w = workload(128, [(1000, 128, 6000, 7200), (1600, 1, 600, 650), (2000, 64, 0, 60)])
    scaled = scale_window(w, Window(0, 3), speedup=100, cpus=64, limit_granularity=1.0)
    assert scaled.requested_time.tolist() == [72, 7, 1]  # 72 s, 6.5 s up to 7 s, 0.6 s up to 1 s
    assert scaled.runtime.tolist() == [60, 6, 0]


def brute_inversions(sim, real, tolerance):
    n = len(sim)
    return sorted(
        (i, j) for i in range(n) for j in range(n) if sim[i] < sim[j] - tolerance and real[i] > real[j]
    )


def test_order_inversions_match_the_pairwise_definition():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(0, 25))
        # Coarse values: many ties on both sides, and gaps equal to the tolerance.
        sim = rng.integers(0, 8, n) / 2.0
        real = rng.integers(0, 8, n) / 2.0
        tolerance = float(rng.choice([0.0, 0.5, 1.0]))
        expected = brute_inversions(sim, real, tolerance)
        count, examples = order_inversions(sim, real, tolerance)
        assert count == len(expected)
        assert set(examples) <= set(expected) and len(examples) == min(len(expected), 10)


def test_order_inversions_scale_and_ties():
    n = 20000
    sim = np.arange(n, dtype=float)
    assert order_inversions(sim, sim + 0.3)[0] == 0
    assert order_inversions(sim, -sim)[0] == n * (n - 1) // 2  # fully reversed, O(n log n)
    # Starts within the tolerance may come in either order; one beyond it may not.
    assert order_inversions(np.array([0.0, 0.4]), np.array([1.0, 0.0]), 0.5)[0] == 0
    assert order_inversions(np.array([0.0, 0.6]), np.array([1.0, 0.0]), 0.5) == (1, [(0, 1)])
    assert order_inversions(np.array([0.0, 0.0]), np.array([1.0, 0.0]))[0] == 0  # simulated together


def test_fidelity_report_names_the_rjms_and_the_start_order():
    w = workload(4, [(0, 4, 10, 10), (1, 4, 10, 10), (2, 4, 5, 5)])
    sim = simulate(w, CoreConfig())
    # The RJMS ran the third job before the second: one inversion, beyond 1 s of granularity.
    observed = [
        Observed(1, 0.0, sim.start[0], sim.end[0]),
        Observed(2, 1.0, sim.start[2], sim.start[2] + 10),
        Observed(3, 2.0, sim.start[1], sim.start[1] + 5),
    ]
    report = fidelity_report(sim, observed, rjms="flux", granularity=1.0)
    assert set(report["metrics"]["mean_wait"]) == {"simulator", "flux"}
    order = report["start_order"]
    # Kendall's tau-b: 2 concordant, 1 discordant of 3 pairs.
    assert order.pop("kendall_tau") == pytest.approx(1 / 3)
    assert order == {"same": False, "tolerance": 1.0, "inversions": 1, "pairs": 3, "examples": [[2, 3]]}
    assert report["start_difference"]["granularity"] == 1.0
    assert report["start_difference"]["within_granularity"] == pytest.approx(1 / 3)
    first = report["start_difference"]["first_beyond_granularity"]
    assert first == {"job_id": 2, "sim_start": sim.start[1], "difference": 10.0}
    assert (
        report["per_job"][1]["real_start"] == sim.start[2]
        and report["per_job"][1]["sim_start"] == sim.start[1]
    )
