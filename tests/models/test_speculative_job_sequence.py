"""One rule set for speculative sequences (rush/models/speculative/job_sequence.py).

Which runs are samples and which are censored, the Kaplan–Meier law they give, the rounding to
the RJMS's granularity and the minimum history. The study-vs-daemon agreement on one history is
in tests/daemon/test_speculative_same_rules.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.errors import ConfigError
from rush.models.speculative.job_sequence import (
    MIN_HISTORY,
    SLURM_GRANULARITY,
    PastRun,
    job_sequence,
    kaplan_meier_law,
    past_run,
    round_up,
    swf_state,
)
from rush.models.speculative.strategy import discrete_estimator


@pytest.mark.parametrize(
    ("state", "length", "expected"),
    [
        ("COMPLETED", 30.0, PastRun(30.0, False)),
        ("FAILED", 12.0, PastRun(12.0, False)),  # it held its allocation that long, by itself
        ("OUT_OF_MEMORY", 12.0, PastRun(12.0, False)),
        ("TIMEOUT", 60.0, PastRun(60.0, True)),
        ("DEADLINE", 60.0, PastRun(60.0, True)),
        ("CANCELLED", 5.0, PastRun(5.0, True)),
        ("CANCELED", 5.0, PastRun(5.0, True)),  # Flux's spelling
        ("PREEMPTED", 5.0, PastRun(5.0, True)),
        ("NODE_FAIL", 5.0, PastRun(5.0, True)),
        ("BOOT_FAIL", 5.0, None),
        ("", 5.0, None),
        ("COMPLETED", 0.0, None),
        ("COMPLETED", float("nan"), None),
        ("TIMEOUT", -3.0, None),
    ],
)
def test_which_runs_are_samples(state, length, expected):
    assert past_run(state, length) == expected


@pytest.mark.parametrize(
    ("status", "runtime", "requested", "state"),
    [
        (1, 100.0, 60.0, "COMPLETED"),  # completed past its limit: the RJMS let it
        (0, 60.0, 60.0, "TIMEOUT"),  # failed at its walltime: a timeout
        (0, 70.0, 60.0, "TIMEOUT"),
        (0, 30.0, 60.0, "FAILED"),
        (5, 30.0, 60.0, "CANCELLED"),
        (-1, 60.0, 60.0, "TIMEOUT"),
        (-1, 30.0, 60.0, "COMPLETED"),
    ],
)
def test_swf_status_read_as_an_rjms_state(status, runtime, requested, state):
    assert swf_state(status, runtime, requested) == state


def test_kaplan_meier_redistributes_censored_runs_to_longer_ones():
    # Observed 100, 250, 500; censored at 300 and 320. KM: S(100) = 4/5, S(250) = 3/5,
    # then both censored runs leave one at risk, S(500) = 0: mass 0.2, 0.2, 0.6.
    runs = [
        PastRun(100, False),
        PastRun(250, False),
        PastRun(500, False),
        PastRun(300, True),
        PastRun(320, True),
    ]
    values, probs = kaplan_meier_law(runs, 1000.0)
    assert values.tolist() == [100.0, 250.0, 500.0]
    assert probs == pytest.approx([0.2, 0.2, 0.6])
    # Dropping the censored runs (1/3 each) or counting them as ended at the cut both put less
    # mass on long runs: Kaplan-Meier's mean is the largest of the three.
    km_mean = float(np.dot(values, probs))
    assert km_mean > np.mean([100, 250, 500]) > 0
    assert km_mean > np.mean([100, 250, 500, 300, 320])


def test_kaplan_meier_mass_beyond_the_last_observation_goes_to_the_walltime():
    runs = [PastRun(100, False), PastRun(200, False), PastRun(400, True)]
    values, probs = kaplan_meier_law(runs, 1000.0)
    assert values.tolist() == [100.0, 200.0, 1000.0]
    assert probs == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    # All censored below the walltime: nothing but the walltime is known to suffice.
    values, probs = kaplan_meier_law([PastRun(50, True), PastRun(60, True)], 1000.0)
    assert values.tolist() == [1000.0] and probs.tolist() == [1.0]


def test_runs_at_or_beyond_the_walltime_are_observations_at_it():
    runs = [PastRun(100, False), PastRun(1500, False), PastRun(1200, True)]
    values, probs = kaplan_meier_law(runs, 1000.0)
    assert values.tolist() == [100.0, 1000.0] and probs == pytest.approx([1 / 3, 2 / 3])


def test_without_censoring_the_estimators_see_the_lengths_as_before():
    lengths = [100.0, 250.0, 500.0, 320.0, 90.0]
    runs = [PastRun(x, False) for x in lengths]
    got = job_sequence(runs, 1000.0, "discrete", granularity=0.0)
    assert got.reservations == discrete_estimator(lengths, 1000.0).reservations


def test_censored_runs_move_the_sequence_up():
    observed = [PastRun(x, False) for x in (100.0, 110.0, 120.0, 900.0)]
    cut = [PastRun(130.0, True)] * 20  # twenty runs cut at 130 s: they needed more
    dropped = job_sequence(observed, 1000.0, "discrete", granularity=0.0, min_history=1)
    at_cut = job_sequence(
        observed + [PastRun(130.0, False)] * 20, 1000.0, "discrete", granularity=0.0, min_history=1
    )
    kept = job_sequence(observed + cut, 1000.0, "discrete", granularity=0.0, min_history=1)
    assert dropped.reservations == (120.0, 900.0, 1000.0)  # 3 of 4 runs end by 120 s
    assert at_cut.reservations == (130.0, 900.0, 1000.0)  # as if the cut runs had ended there
    # Kaplan-Meier gives the cut runs' mass to 900 s: P(X > 120) = 21/24, and a first
    # reservation of 120 s (120 + 21/24 * 900 = 907.5) costs more than 900 s alone.
    assert kept.reservations == (900.0, 1000.0) and "20 censored" in kept.note
    for estimator in ("continuous", "mean-doubling"):
        got = job_sequence(observed + cut, 1000.0, estimator, granularity=0.0, min_history=1)
        assert got.reservations[-1] == 1000.0 and "censored" in got.note


@pytest.mark.parametrize(
    ("sequence", "granularity", "walltime", "held"),
    [
        ((40.0, 95.0, 180.0), 60.0, 180.0, (60.0, 120.0, 180.0)),
        ((40.0, 50.0, 180.0), 60.0, 180.0, (60.0, 180.0)),  # both round to 1 min: once
        ((3.2, 4.0, 60.0), 1.0, 60.0, (4.0, 60.0)),
        ((100.0, 200.0), 60.0, 150.0, (120.0, 150.0)),  # never above the walltime
        ((120.0,), 60.0, 600.0, (120.0, 600.0)),  # an exact minute stays
        ((3.2,), 0.0, 60.0, (3.2, 60.0)),  # no granularity: as estimated
        ((1e-9, 30.0, 1140.0), 60.0, 7200.0, (60.0, 1140.0, 7200.0)),  # never 0 (Slurm: no limit)
        ((1e-9,), 60.0, 30.0, (30.0,)),  # a walltime under one unit stays the walltime
    ],
)
def test_round_up(sequence, granularity, walltime, held):
    assert round_up(sequence, granularity, walltime) == held


def test_sequence_is_rounded_to_the_granularity_and_ends_at_the_walltime():
    # The discrete estimate is (125, 620, 1000): Slurm holds whole minutes, rounded up so that
    # no run is cut before its reservation; the walltime (not a whole minute here) stays.
    runs = [PastRun(x, False) for x in (61.0, 125.0, 250.0, 600.0, 620.0)]
    assert job_sequence(runs, 1000.0, "discrete", SLURM_GRANULARITY).reservations == (180.0, 660.0, 1000.0)
    assert job_sequence(runs, 1000.0, "discrete", 1.0).reservations == (125.0, 620.0, 1000.0)


def test_minimum_history_and_the_walltime_estimator():
    runs = [PastRun(100.0, False)] * (MIN_HISTORY - 1)
    short = job_sequence(runs, 1000.0, "discrete", SLURM_GRANULARITY)
    assert short.reservations == () and f"< min_samples {MIN_HISTORY}" in short.note
    enough = job_sequence(runs + [PastRun(200.0, True)], 1000.0, "discrete", SLURM_GRANULARITY)
    assert enough.reservations  # a censored run counts towards the history
    assert job_sequence(runs * 3, 1000.0, "walltime", SLURM_GRANULARITY).reservations == ()


@pytest.mark.parametrize("walltime", [0.0, -5.0, float("nan"), float("inf")])
def test_a_job_without_a_finite_walltime_is_refused(walltime):
    with pytest.raises(ConfigError, match="walltime") as err:
        job_sequence([PastRun(10.0, False)] * 5, walltime, "discrete", SLURM_GRANULARITY)
    assert err.value.fix
