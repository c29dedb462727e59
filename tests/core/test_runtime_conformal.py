"""Rule C (rush.core.runtime_conformal; round 16): PITs of completed jobs, the global level map
from the last of them, the quantiles at the mapped levels; bad input never gives NaN, a negative
or a value past the request; no future data in the walk-forward."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.runtime_conformal import (
    CONFORMAL_JOBS,
    CONFORMAL_PRIOR_JOBS,
    LEVEL_CEILING,
    LEVEL_FLOOR,
    conformal_levels,
    conformal_levels_walkforward,
    pit_value,
    recalibrated_quantiles,
    recalibrated_seconds,
)
from rush.core.snapshot import RuntimeQuantiles

LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
SECONDS = (10.0, 20.0, 50.0, 100.0, 200.0)
HOUR = 3600.0


def test_the_pit_is_the_level_at_which_the_runtime_falls():
    for level, seconds in zip(LEVELS, SECONDS, strict=True):
        assert pit_value(LEVELS, SECONDS, seconds, HOUR) == pytest.approx(level)
    assert 0.5 < pit_value(LEVELS, SECONDS, 70.0, HOUR) < 0.75  # between the knots
    assert pit_value(LEVELS, SECONDS, HOUR, HOUR) == pytest.approx(1.0)  # at the request
    assert 0.9 < pit_value(LEVELS, SECONDS, 1000.0, HOUR) < 1.0  # towards the request


@pytest.mark.parametrize(
    ("runtime", "expected"),
    [(0.0, 0.0), (1e12, 1.0), (HOUR * 5, 1.0)],  # zero: the bottom; past the request: the top
)
def test_a_zero_or_absurd_runtime_is_clipped_not_refused(runtime, expected):
    assert pit_value(LEVELS, SECONDS, runtime, HOUR) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("seconds", "runtime", "limit"),
    [
        (SECONDS, math.nan, HOUR),
        (SECONDS, math.inf, HOUR),
        (SECONDS, -5.0, HOUR),
        ((10.0, math.nan, 50.0, 100.0, 200.0), 60.0, HOUR),
        ((10.0, -20.0, 50.0, 100.0, 200.0), 60.0, HOUR),
        ((10.0, 20.0, 50.0), 60.0, HOUR),  # lengths differ
        (SECONDS, 60.0, 0.0),
        (SECONDS, 60.0, -HOUR),
        (SECONDS, 60.0, math.nan),
        (SECONDS, 60.0, math.inf),
    ],
)
def test_unusable_input_gives_no_pit(seconds, runtime, limit):
    assert math.isnan(pit_value(LEVELS, seconds, runtime, limit))


def test_no_pit_keeps_the_models_levels_and_one_pit_moves_them_by_its_weight():
    assert conformal_levels([], LEVELS) == pytest.approx(LEVELS)
    assert conformal_levels([math.nan, math.inf, -0.2, 1.5], LEVELS) == pytest.approx(LEVELS)
    one = conformal_levels([0.9], LEVELS)
    w = 1 / (1 + CONFORMAL_PRIOR_JOBS)
    assert one == pytest.approx([min(w * 0.9 + (1 - w) * t, LEVEL_CEILING) for t in LEVELS])


def test_late_completions_raise_the_levels_within_the_bounds_and_in_order():
    up = conformal_levels([0.99] * CONFORMAL_JOBS, LEVELS)
    assert np.all(up > np.asarray(LEVELS) - 1e-12)
    assert np.all((up >= LEVEL_FLOOR) & (up <= LEVEL_CEILING))
    assert np.all(np.diff(up) >= 0)
    down = conformal_levels([0.0] * CONFORMAL_JOBS, LEVELS)
    assert np.all(down <= np.asarray(LEVELS)) and np.all(down >= LEVEL_FLOOR)


def test_only_the_last_jobs_count():
    recent = [0.9] * CONFORMAL_JOBS
    assert conformal_levels([0.0] * 500 + recent, LEVELS) == pytest.approx(conformal_levels(recent, LEVELS))


def test_the_identity_map_keeps_the_quantiles():
    q = RuntimeQuantiles(LEVELS, SECONDS)
    assert recalibrated_quantiles(q, LEVELS, HOUR) == q


def test_a_higher_map_reads_higher_quantiles_never_past_the_request():
    q = RuntimeQuantiles(LEVELS, SECONDS)
    up = recalibrated_quantiles(q, conformal_levels([0.99] * CONFORMAL_JOBS, LEVELS), HOUR)
    assert all(b > a for a, b in zip(SECONDS, up.seconds, strict=True))
    assert max(up.seconds) <= HOUR
    small_request = recalibrated_quantiles(q, conformal_levels([0.99] * CONFORMAL_JOBS, LEVELS), 150.0)
    assert max(small_request.seconds) <= 150.0
    # the map's level lands on the knot it names: level 0.75 read at 0.9 is q0.9
    at = recalibrated_quantiles(q, (0.1, 0.25, 0.5, 0.9, 0.9), HOUR)
    assert at.seconds[3] == pytest.approx(200.0)


@pytest.mark.parametrize(
    ("seconds", "mapped", "limit"),
    [
        ((10.0, math.nan, 50.0, 100.0, 200.0), (0.5,) * 5, HOUR),
        ((10.0, -1.0, 50.0, 100.0, 200.0), (0.5,) * 5, HOUR),
        (SECONDS, (0.5, math.nan, 0.5, 0.5, 0.5), HOUR),
        (SECONDS, (0.5, 0.5), HOUR),
    ],
)
def test_unusable_quantiles_or_maps_are_left_as_they_are(seconds, mapped, limit):
    q = RuntimeQuantiles(LEVELS, seconds)
    assert recalibrated_quantiles(q, mapped, limit) is q


@pytest.mark.parametrize("limit", [math.nan, math.inf, 0.0, -HOUR, 1e15])
def test_any_request_gives_finite_non_negative_quantiles(limit):
    q = RuntimeQuantiles(LEVELS, SECONDS)
    out = recalibrated_quantiles(q, conformal_levels([0.99] * CONFORMAL_JOBS, LEVELS), limit)
    assert all(math.isfinite(s) and s >= 0 for s in out.seconds)
    top = limit if math.isfinite(limit) and limit > 0 else max(SECONDS)
    assert max(out.seconds) <= top


def test_zero_quantiles_stay_zero_and_huge_ones_stay_under_the_request():
    zero = recalibrated_seconds(np.zeros((1, 5)), np.array(LEVELS), np.full((1, 5), 0.9), np.array([HOUR]))
    assert np.all(zero == 0.0)
    huge = recalibrated_seconds(
        np.array([[1e9] * 5]), np.array(LEVELS), np.full((1, 5), 0.9), np.array([HOUR])
    )
    assert np.all(huge <= HOUR) and np.all(np.isfinite(huge))


def test_the_walkforward_reads_only_jobs_that_had_ended():
    at = np.array([0.0, 10.0, 20.0, 30.0])
    end = np.array([5.0, 15.0, np.inf, 25.0])
    pit = np.array([0.9, 0.9, 0.9, 0.1])
    maps = conformal_levels_walkforward(at, end, pit, np.array(LEVELS))
    assert maps[0] == pytest.approx(LEVELS)  # nothing had ended at 0
    assert maps[1] == pytest.approx(conformal_levels([0.9], LEVELS))
    assert maps[2] == pytest.approx(conformal_levels([0.9, 0.9], LEVELS))
    assert maps[3] == pytest.approx(conformal_levels([0.9, 0.9, 0.1], LEVELS))  # the never-ended job: no PIT
    # No future data: a later job's PIT does not move an earlier map.
    changed = pit.copy()
    changed[3] = 0.99
    again = conformal_levels_walkforward(at, end, changed, np.array(LEVELS))
    assert again[:3] == pytest.approx(maps[:3])
    # A job ending exactly at a moment counts from then.
    assert conformal_levels_walkforward(np.array([5.0]), end[:1], pit[:1], np.array(LEVELS))[
        0
    ] == pytest.approx(conformal_levels([0.9], LEVELS))


def test_the_walkforward_drops_bad_pits_and_ends_and_checks_lengths():
    at = np.array([100.0])
    maps = conformal_levels_walkforward(
        np.repeat(at, 1), np.array([1.0]), np.array([math.nan]), np.array(LEVELS)
    )
    assert maps[0] == pytest.approx(LEVELS)
    maps = conformal_levels_walkforward(
        np.array([100.0, 100.0]), np.array([np.nan, 1.0]), np.array([0.9, 2.0]), np.array([*LEVELS])
    )
    assert np.all(maps == np.asarray(LEVELS))
    with pytest.raises(ValueError, match="one length"):
        conformal_levels_walkforward(at, np.array([1.0, 2.0]), np.array([0.5]), np.array(LEVELS))
