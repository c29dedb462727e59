"""The granularity at which a shown estimated start moves (rush.core.start_estimates.shown_starts):
held while within max(60 s, 5 % of the wait ahead) of the shown one with the same basis and
predecessor, the pass's own value otherwise."""

from __future__ import annotations

import math

import numpy as np

from rush.core.start_estimates import REPUBLISH_SECONDS, estimate_moved, shown_starts

NOW = 1_000.0


def _one(shown: float, new: float, same: bool = True) -> float:
    return float(shown_starts(np.array([shown]), np.array([new]), np.array([same]), NOW)[0])


def test_a_move_within_a_minute_is_held_and_one_beyond_is_shown() -> None:
    assert _one(1_100.0, 1_101.0) == 1_100.0
    assert _one(1_100.0, 1_100.0 + REPUBLISH_SECONDS) == 1_100.0
    assert _one(1_100.0, 1_100.0 + REPUBLISH_SECONDS + 1.0) == 1_161.0
    assert _one(1_100.0, 1_100.0 - REPUBLISH_SECONDS - 1.0) == 1_100.0 - REPUBLISH_SECONDS - 1.0


def test_a_far_estimate_is_held_within_its_share_of_the_wait() -> None:
    shown = NOW + 100_000.0  # 5 %: 5 000 s
    assert _one(shown, shown + 4_999.0) == shown
    assert _one(shown, shown + 5_001.0) == shown + 5_001.0


def test_a_changed_basis_or_predecessor_shows_the_passs_value() -> None:
    assert _one(1_100.0, 1_101.0, same=False) == 1_101.0


def test_coming_into_or_out_of_sight_shows_the_passs_value() -> None:
    assert math.isnan(_one(1_100.0, math.nan))
    assert _one(1_100.0, math.inf) == math.inf
    assert _one(math.nan, 1_101.0) == 1_101.0


def test_held_values_are_always_within_the_granularity_of_the_pass() -> None:
    rng = np.random.default_rng(5)
    shown = NOW + rng.uniform(-100.0, 50_000.0, 2_000)
    new = shown + rng.normal(0.0, 800.0, 2_000)
    got = shown_starts(shown, new, rng.random(2_000) < 0.9, NOW)
    held = got != new
    assert held.any() and (~held).any()
    for s, n in zip(shown[held], new[held], strict=True):
        assert abs(n - s) <= estimate_moved(s, NOW)
    assert np.array_equal(got[held], shown[held])
