"""Rule U (rush.core.runtime_user_levels): L2's queue length read at a per-user level from the
user's recent PITs, completed jobs only; bad history never gives NaN or a negative length."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.runtime_user_levels import (
    BASE_LEVEL,
    USER_LEVEL_CEILING,
    USER_LEVEL_FLOOR,
    USER_LEVEL_JOBS,
    USER_LEVEL_PRIOR_JOBS,
    level_pit,
    user_level,
    user_level_lengths,
    user_levels_walkforward,
)

LEVELS = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
ROW = np.array([10.0, 20.0, 40.0, 80.0, 160.0])


def test_no_pit_is_l2_itself():
    assert user_level([]) == BASE_LEVEL


def test_the_level_is_the_pits_upper_quartile_weighted_against_the_base():
    pits = [0.9] * USER_LEVEL_JOBS
    n = USER_LEVEL_JOBS
    assert user_level(pits) == pytest.approx(
        (n * 0.9 + USER_LEVEL_PRIOR_JOBS * BASE_LEVEL) / (n + USER_LEVEL_PRIOR_JOBS)
    )
    assert user_level([0.1] * n) == USER_LEVEL_FLOOR  # (8 * 0.1 + 4 * 0.75) / 12 < 0.5
    assert user_level([1.0] * 1000) == pytest.approx(
        (n + USER_LEVEL_PRIOR_JOBS * BASE_LEVEL) / (n + USER_LEVEL_PRIOR_JOBS)
    )


def test_only_the_last_pits_count():
    assert user_level([0.0] * 50 + [0.9] * USER_LEVEL_JOBS) == user_level([0.9] * USER_LEVEL_JOBS)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -0.1, 1.5, "x", None])
def test_unusable_pits_are_dropped(bad):
    assert user_level([bad]) == BASE_LEVEL
    assert user_level([bad, 0.9]) == user_level([0.9])


def test_the_level_stays_within_its_bounds():
    for pits in ([0.0] * 100, [1.0] * 100, [0.99] * 3):
        assert USER_LEVEL_FLOOR <= user_level(pits) <= USER_LEVEL_CEILING


def test_walkforward_uses_only_jobs_ended_before_the_moment_and_of_the_same_user():
    user = np.array([1, 1, 2, 1])
    at = np.array([0.0, 10.0, 20.0, 30.0])
    end = np.array([25.0, np.inf, 26.0, 40.0])
    pit = np.array([0.95, 0.95, 0.95, 0.95])
    out = user_levels_walkforward(user, at, end, pit)
    # job 0 ended at 25: not seen at 0, 10 or 20; user 2's job (ended 26) is not user 1's
    assert out.tolist() == [BASE_LEVEL, BASE_LEVEL, BASE_LEVEL, user_level([0.95])]


def test_walkforward_refuses_arrays_of_different_lengths():
    with pytest.raises(ValueError):
        user_levels_walkforward(np.array([1, 2]), np.zeros(2), np.zeros(1), np.zeros(2))


def test_the_base_level_gives_l2_length_exactly():
    q = np.array([ROW, ROW[::-1]])  # a crossing row too: L2 reads the raw column
    got = user_level_lengths(
        q, LEVELS, np.array([BASE_LEVEL] * 2), np.array([50.0, 0.0]), np.array([1000.0] * 2)
    )
    assert got.tolist() == [80.0, 20.0]


def test_a_higher_level_reads_further_into_the_tail_never_past_the_request():
    got = user_level_lengths(
        np.array([ROW] * 3),
        LEVELS,
        np.array([0.95, 0.9, 0.95]),
        np.zeros(3),
        np.array([1000.0, 1000.0, 100.0]),
    )
    assert 160.0 < got[0] < 1000.0
    assert got[1] == pytest.approx(160.0)
    assert got[2] == 100.0


def test_a_lower_level_is_floored_by_the_estimate():
    got = user_level_lengths(np.array([ROW]), LEVELS, np.array([0.5]), np.array([60.0]), np.array([1000.0]))
    assert got.tolist() == [60.0]
    got = user_level_lengths(np.array([ROW]), LEVELS, np.array([0.5]), np.array([0.0]), np.array([1000.0]))
    assert got[0] == pytest.approx(40.0)


@pytest.mark.parametrize(
    ("row", "level", "estimate", "limit"),
    [
        ([10.0, 20.0, math.nan, 80.0, 160.0], 0.9, math.nan, 1000.0),
        ([-1.0, 2.0, 3.0, 4.0, 5.0], 0.9, math.nan, -5.0),
        ([math.nan] * 5, math.nan, math.nan, 1000.0),
        ([10.0, 20.0, 40.0, 80.0, 160.0], math.inf, -7.0, math.nan),
        ([math.inf] * 5, 0.9, math.nan, 3600.0),
    ],
)
def test_bad_input_never_gives_a_nan_or_negative_length(row, level, estimate, limit):
    got = user_level_lengths(
        np.array([row]), LEVELS, np.array([level]), np.array([estimate]), np.array([limit])
    )
    assert np.isfinite(got).all() and (got >= 0).all()


def test_lengths_refuse_misshapen_input():
    with pytest.raises(ValueError):
        user_level_lengths(np.array([ROW]), LEVELS[:3], np.array([0.8]), np.zeros(1), np.ones(1))


def test_the_pit_under_u_is_the_inverse_of_its_level_map():
    assert level_pit(np.array([0.9]), np.array([0.9]))[0] == pytest.approx(BASE_LEVEL)
    assert level_pit(np.array([0.45]), np.array([0.9]))[0] == pytest.approx(0.375)
    assert level_pit(np.array([0.95]), np.array([0.9]))[0] == pytest.approx(0.875)
    assert level_pit(np.array([0.3]), np.array([BASE_LEVEL]))[0] == pytest.approx(0.3)
    assert math.isnan(level_pit(np.array([math.nan]), np.array([0.9]))[0])


def test_an_estimate_past_the_request_is_cut_to_the_request():
    got = user_level_lengths(np.array([ROW]), LEVELS, np.array([0.9]), np.array([5000.0]), np.array([1000.0]))
    assert got.tolist() == [1000.0]
