"""The study's information-free jitter of online predictions (rush.core.runtime_predictions.
jittered_prediction, sim/runtime_predictions round 26): off, it returns the prediction bit for bit;
on, each job's factor depends on the seed and the job's index only (not on the order the jobs are
met in), stays within 1 +- PREDICTION_JITTER and passes the core's guard."""

from __future__ import annotations

import numpy as np

from rush.core import runtime_predictions as rp


def test_jitter_off_returns_each_prediction_bit_for_bit() -> None:
    rng = np.random.default_rng(26)
    predictions = np.concatenate([[1.0, 0.5, 1e-300, 3600.0, 7200.0], rng.uniform(1.0, 7200.0, 500)])
    for j, p in enumerate(predictions):
        # the request below some predictions: off, not even the guard's cap applies
        out = rp.jittered_prediction(p, 3600.0, rp.JITTER_OFF, j)
        assert np.float64(out).view(np.int64) == np.float64(p).view(np.int64)


def test_a_jobs_draw_depends_on_the_seed_and_its_index_only() -> None:
    n = 2000
    forward = [rp.jitter_draw(7, j) for j in range(n)]
    backward = [rp.jitter_draw(7, j) for j in reversed(range(n))][::-1]
    assert forward == backward  # a counter hash: the order the loop meets jobs in changes nothing
    assert forward == [rp.jitter_draw(7, j) for j in range(n)]  # the same again
    other = [rp.jitter_draw(8, j) for j in range(n)]
    assert sum(a != b for a, b in zip(forward, other, strict=True)) == n  # another seed, other draws
    assert len(set(forward)) == n  # no two jobs share a draw here


def test_draws_are_uniform_and_carry_no_order() -> None:
    draws = np.array([rp.jitter_draw(3, j) for j in range(20_000)])
    assert draws.min() >= 0.0 and draws.max() < 1.0
    assert abs(draws.mean() - 0.5) < 0.01
    counts = np.histogram(draws, bins=10, range=(0.0, 1.0))[0]
    assert counts.min() > 1800 and counts.max() < 2200  # each tenth about 2,000
    assert abs(np.corrcoef(draws, np.arange(len(draws)))[0, 1]) < 0.03  # no drift with the index
    assert abs(np.corrcoef(draws[:-1], draws[1:])[0, 1]) < 0.03  # neighbours independent


def test_jitter_stays_within_its_bound_and_the_guard() -> None:
    rng = np.random.default_rng(29)
    predictions = rng.uniform(1.0, 10_000.0, 5000)
    requests = predictions * rng.uniform(1.0, 3.0, 5000)
    moved = np.array(
        [
            rp.jittered_prediction(p, q, 5, j)
            for j, (p, q) in enumerate(zip(predictions, requests, strict=True))
        ]
    )
    ratio = moved / predictions - 1.0
    capped = moved == requests
    bound = rp.PREDICTION_JITTER * (1 + 1e-9)
    assert np.all(np.abs(ratio[~capped]) <= bound) and np.all(ratio[capped] <= bound)
    assert np.all(moved <= requests) and np.all(moved >= rp.MIN_PREDICTION)
    assert (ratio < -bound / 2).sum() > 1000 and (ratio > bound / 2).sum() > 1000  # both ways, widely
    assert np.all(moved[(ratio != 0)] != predictions[(ratio != 0)])
    # at the request a prediction can only go down; at the 1 s floor only up
    at_request = [rp.jittered_prediction(100.0, 100.0, 5, j) for j in range(200)]
    assert max(at_request) == 100.0 and min(at_request) < 100.0
    at_floor = [rp.jittered_prediction(1.0, 100.0, 5, j) for j in range(200)]
    assert min(at_floor) == 1.0 and max(at_floor) > 1.0
