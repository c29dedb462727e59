"""Metrics on small results whose every number is computed by hand in the comments."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rush.errors import RushError
from rush.simulator.metrics import (
    bounded_slowdown,
    compute_metrics,
    cumulative_bounded_slowdown,
    per_class,
    pp_bounded_slowdown,
    utilization_profile,
)
from rush.simulator.result import SimResult
from rush.simulator.runs import jsonable


def make(machine: int, jobs: list[tuple[float, float, float, int]], **extra) -> SimResult:
    """Jobs as (submit, start, end, procs)."""
    n = len(jobs)
    arr = np.array(jobs, dtype=np.float64).reshape(n, 4)
    run = arr[:, 2] - arr[:, 1]
    fields = dict(
        job_id=np.arange(1, n + 1),
        submit=arr[:, 0],
        start=arr[:, 1],
        end=arr[:, 2],
        procs=arr[:, 3].astype(np.int64),
        requested_time=np.maximum(run, 1.0) * 2,
        runtime=run,
        backfilled=np.zeros(n, dtype=bool),
        killed=np.zeros(n, dtype=bool),
        machine_procs=machine,
    )
    return SimResult(**(fields | extra))


# Case A, machine of 4 processors:
#   job 1: submit 0,  start 0,   end 100, q 2 -> wait 0,  p 100, r 100, bsld 1,            ppbsld 1
#   job 2: submit 10, start 100, end 105, q 4 -> wait 90, p 5,   r 95,  bsld 95/10 = 9.5,  ppbsld 95/40
#   job 3: submit 20, start 20,  end 60,  q 1 -> wait 0,  p 40,  r 40,  bsld 1,            ppbsld 1
CASE_A = [(0, 0, 100, 2), (10, 100, 105, 4), (20, 20, 60, 1)]


def test_hand_case_means_and_ratios() -> None:
    m = compute_metrics(make(4, CASE_A))
    assert m["jobs"] == 3 and m["unstarted"] == 0
    assert m["mean_wait"] == pytest.approx(30.0)
    assert m["max_wait"] == pytest.approx(90.0)
    assert m["mean_bounded_slowdown"] == pytest.approx((1 + 9.5 + 1) / 3)
    assert m["max_bounded_slowdown"] == pytest.approx(9.5)
    assert m["mean_pp_bounded_slowdown"] == pytest.approx((1 + 95 / 40 + 1) / 3)
    assert m["mean_response_time"] == pytest.approx((100 + 95 + 40) / 3)
    # area = 2*100 + 4*5 + 1*40 = 260 over 4 procs * (105 - 0) s
    assert m["utilization"] == pytest.approx(260 / 420)
    # AWRT = (200*100 + 20*95 + 40*40) / 260
    assert m["awrt"] == pytest.approx(23500 / 260)
    assert m["makespan"] == pytest.approx(105.0)


def test_hand_case_window_clipping() -> None:
    # Submit span 20 s -> window [3, 17); only job 1 ([0, 100), q 2) overlaps it, for 14 s.
    m = compute_metrics(make(4, CASE_A))
    assert m["utilization_window"] == pytest.approx(2 * 14 / (4 * 14))


def test_tau_bounds_short_jobs() -> None:
    result = make(4, CASE_A)
    # Job 2 ran 5 s: tau = 10 bounds it at 95/10; tau = 1 gives 95/5; ppbsld divides by q = 4.
    assert bounded_slowdown(result, tau=10.0)[1] == pytest.approx(9.5)
    assert bounded_slowdown(result, tau=1.0)[1] == pytest.approx(19.0)
    assert pp_bounded_slowdown(result, tau=1.0)[1] == pytest.approx(95 / 20)
    m = compute_metrics(result, tau=1.0)
    assert m["mean_bounded_slowdown"] == pytest.approx((1 + 19 + 1) / 3)
    assert m["tau"] == 1.0
    # A job that waited nothing and ran shorter than tau is still at the floor of 1.
    assert bounded_slowdown(make(1, [(0, 0, 2, 1)]))[0] == 1.0


def test_percentiles_use_linear_interpolation() -> None:
    m = compute_metrics(make(4, CASE_A))
    # waits sorted [0, 0, 90]: p50 = 0, p90 at rank 1.8 -> 0.8 * 90, p99 at 1.98 -> 0.98 * 90
    assert m["wait_p50"] == 0.0
    assert m["wait_p90"] == pytest.approx(72.0)
    assert m["wait_p99"] == pytest.approx(88.2)
    # bsld sorted [1, 1, 9.5]: p90 = 1 + 0.8 * 8.5
    assert m["bounded_slowdown_p90"] == pytest.approx(7.8)


def test_throughput_std_of_normalized_completions() -> None:
    # Submits span [0, 100] -> window [15, 85); 10 s bins -> 7 bins.
    jobs = [
        (0, 0, 20, 1),  # ends in bin 0
        (0, 0, 22, 1),  # bin 0
        (5, 5, 30, 1),  # bin 1
        (10, 10, 85, 1),  # ends at the window's end: outside [15, 85)
        (100, 100, 110, 1),  # after the window
        (50, 90, 95, 1),  # after the window
    ]
    m = compute_metrics(make(10, jobs), throughput_bin=10.0)
    # counts [2, 1, 0, 0, 0, 0, 0] / mean 3/7 -> mean of squares 35/9, minus 1 -> sqrt(26)/3
    assert m["throughput_std"] == pytest.approx(math.sqrt(26) / 3)
    # clipped areas: 5 + 7 + 15 + 70 = 97 processor-seconds of 10 * 70
    assert m["utilization_window"] == pytest.approx(97 / 700)
    # Fewer than two whole bins in the window: undefined.
    assert math.isnan(compute_metrics(make(10, jobs), throughput_bin=50.0)["throughput_std"])


def test_counts_drops_and_requeues() -> None:
    result = make(
        4,
        CASE_A,
        backfilled=np.array([False, True, True]),
        killed=np.array([True, False, False]),
        requeues=np.array([0, 2, 1]),
        wasted_area=np.array([0.0, 50.0, 7.5]),
        skips=np.array([1, 0, 3]),
        info={"dropped": {"runtime<0": 2, "procs<=0": 1}},
    )
    m = compute_metrics(result)
    assert (m["backfilled"], m["killed"], m["requeues"], m["skips"]) == (2, 1, 3, 4)
    assert m["wasted_area"] == pytest.approx(57.5)
    assert m["dropped"] == 3
    assert m["dropped_by_reason"] == {"runtime<0": 2, "procs<=0": 1}


def test_unstarted_jobs_are_counted_not_measured() -> None:
    # The simulator marks a job that never started with start = end = -1.
    with_unstarted = make(4, CASE_A + [(30, -1, -1, 2)])
    m = compute_metrics(with_unstarted)
    reference = compute_metrics(make(4, CASE_A))
    assert m["jobs"] == 3 and m["unstarted"] == 1
    for key in ("mean_wait", "mean_bounded_slowdown", "utilization", "awrt", "makespan"):
        assert m[key] == pytest.approx(reference[key])
    assert np.isnan(bounded_slowdown(with_unstarted)[3])


def test_cumulative_bounded_slowdown_by_period() -> None:
    times, values = cumulative_bounded_slowdown(make(4, CASE_A), period=10.0)
    # submitted before 10: job 1; before 20: jobs 1, 2; before 30: all three
    np.testing.assert_allclose(times, [10.0, 20.0, 30.0])
    np.testing.assert_allclose(values, [1.0, (1 + 9.5) / 2, 11.5 / 3])
    # Weekly in the metrics dict: the whole 20 s trace is in the first week.
    assert compute_metrics(make(4, CASE_A))["weekly_cumulative_bounded_slowdown"] == pytest.approx([11.5 / 3])


def test_per_class_breakdown() -> None:
    result = make(4, CASE_A, attributes={"size": np.array(["small", "large", "small"])})
    classes = per_class(result, "size")
    assert sorted(classes) == ["large", "small"]
    small, large = classes["small"], classes["large"]
    assert (small["jobs"], large["jobs"]) == (2, 1)
    assert small["mean_bounded_slowdown"] == pytest.approx(1.0)
    assert large["mean_bounded_slowdown"] == pytest.approx(9.5)
    assert large["mean_wait"] == pytest.approx(90.0)
    # Utilization shares use the whole run's frame (4 procs * 105 s) and add up.
    assert small["utilization"] == pytest.approx(240 / 420)
    assert large["utilization"] == pytest.approx(20 / 420)
    assert small["utilization"] + large["utilization"] == pytest.approx(
        compute_metrics(result)["utilization"]
    )
    # Makespan of a class starts at its own first submit.
    assert large["makespan"] == pytest.approx(95.0)
    # Same through compute_metrics(by=array), labels from the array's values.
    by = compute_metrics(result, by=np.array([0, 1, 0]))["by_class"]
    assert by["1"]["mean_bounded_slowdown"] == pytest.approx(9.5)


def test_per_class_rejects_bad_attributes() -> None:
    result = make(4, CASE_A)
    with pytest.raises(RushError, match="no per-job attribute"):
        per_class(result, "size")
    with pytest.raises(RushError, match="shape"):
        per_class(result, np.array([0, 1]))
    with pytest.raises(RushError, match="tau"):
        compute_metrics(result, tau=0.0)


def test_empty_result() -> None:
    empty = make(16, [])
    m = compute_metrics(empty, by=np.zeros(0))
    assert m["jobs"] == 0 and m["backfilled"] == 0 and m["dropped"] == 0 and m["wasted_area"] == 0.0
    for key in (
        "mean_wait",
        "mean_bounded_slowdown",
        "utilization",
        "utilization_window",
        "awrt",
        "makespan",
    ):
        assert math.isnan(m[key]), key
    assert m["weekly_cumulative_bounded_slowdown"] == [] and m["by_class"] == {}
    # NaN becomes null so the dict is valid JSON.
    assert json.loads(json.dumps(jsonable(m), allow_nan=False))["mean_wait"] is None
    times, values = utilization_profile(empty, 3600.0)
    assert len(times) == len(values) == 0


def test_utilization_profile_hand_case() -> None:
    starts, util = utilization_profile(make(4, CASE_A), 50.0)
    np.testing.assert_allclose(starts, [0.0, 50.0, 100.0])
    # [0,50): 2*50 + 1*30; [50,100): 2*50 + 1*10; [100,150): 4*5 -- each over 4 * 50
    np.testing.assert_allclose(util, [130 / 200, 110 / 200, 20 / 200])


@st.composite
def schedules(draw):
    n = draw(st.integers(1, 40))
    machine = draw(st.integers(1, 64))
    submit = np.array(draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n)), dtype=float)
    wait = np.array(draw(st.lists(st.integers(0, 5_000), min_size=n, max_size=n)), dtype=float)
    run = np.array(draw(st.lists(st.integers(0, 20_000), min_size=n, max_size=n)), dtype=float)
    procs = np.array(draw(st.lists(st.integers(1, machine), min_size=n, max_size=n)))
    classes = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    jobs = [(s, s + w, s + w + r, q) for s, w, r, q in zip(submit, wait, run, procs, strict=True)]
    return make(machine, jobs), classes


@settings(max_examples=60, deadline=None)
@given(schedules())
def test_consistency_properties(case) -> None:
    result, classes = case
    m = compute_metrics(result, by=classes)
    bsld = bounded_slowdown(result)
    assert np.all(bsld >= 1.0) and np.all(pp_bounded_slowdown(result) <= bsld + 1e-12)
    assert m["mean_bounded_slowdown"] == pytest.approx(bsld.mean())
    # The profile integrates to the total area, and the class shares add up to the whole.
    area = float(np.sum(result.procs * (result.end - result.start)))
    _, util = utilization_profile(result, 500.0)
    assert util.sum() * 500.0 * result.machine_procs == pytest.approx(area, abs=1e-6)
    if area > 0:
        total = sum(c["utilization"] for c in m["by_class"].values())
        assert total == pytest.approx(m["utilization"])
    assert sum(c["jobs"] for c in m["by_class"].values()) == m["jobs"] == len(result)
    # The last cumulative value is the overall mean.
    assert m["weekly_cumulative_bounded_slowdown"][-1] == pytest.approx(m["mean_bounded_slowdown"])


# ---------------------------------------------------------------- hostile time spans
# Per-period arrays once followed the time span: two jobs 2**53 s apart asked for terabytes.
FAR = [(0, 0, 100, 1), (2.0**53, 2.0**53, 2.0**53 + 100, 1)]


@pytest.mark.parametrize(
    "jobs",
    [FAR, [(-1e15, -1e15, -1e15 + 10, 1), (0, 0, 10, 1)], [(0, 0, 10, 1), (1e12, 1e12, 1e12 + 5, 1)]],
    ids=["2^53-apart", "negative-submit", "30000-years"],
)
def test_huge_spans_are_refused_not_allocated(jobs) -> None:
    result = make(2, jobs)
    with pytest.raises(RushError, match="periods of 604800 s for 2 jobs") as err:
        compute_metrics(result)
    assert "submit times" in str(err.value) and "fix:" in str(err.value)
    with pytest.raises(RushError, match="utilization"):
        utilization_profile(result, 3600.0)


def test_throughput_std_counts_empty_bins_without_storing_them() -> None:
    # Completions in 2 of 10**8 one-second bins inside the window: the normalized series is
    # 10**8 / 2 at those bins and 0 elsewhere, so its population std is sqrt(10**8 / 2 - 1).
    s = 1e8 / 0.7  # window [0.15 s, 0.85 s] of the submission span s holds 10**8 seconds
    jobs = [
        (0, 0, 1, 1),
        (0.3 * s, 0.3 * s, 0.3 * s + 1, 1),
        (0.5 * s, 0.5 * s, 0.5 * s + 1, 1),
        (s, s, s + 1, 1),
    ]
    metrics = compute_metrics(make(1, jobs), throughput_bin=1.0, window=(0.15, 0.85))
    assert metrics["throughput_std"] == pytest.approx(math.sqrt(1e8 / 2 - 1), rel=1e-6)


def test_long_real_spans_still_work() -> None:
    # 30 years of weekly entries for 2 jobs is well inside the bound.
    thirty_years = 30 * 365 * 86400.0
    metrics = compute_metrics(make(1, [(0, 0, 10, 1), (thirty_years, thirty_years, thirty_years + 10, 1)]))
    assert len(metrics["weekly_cumulative_bounded_slowdown"]) == int(thirty_years // (7 * 86400)) + 1
