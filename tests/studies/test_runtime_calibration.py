"""The queue's predicted means calibrated walk-forward per bin of the mean (issue 29, round 8, H7)."""

from __future__ import annotations

import numpy as np

from rush.studies.runtime_calibration import WEEK, binned_mean_factors, calibrated_means, mean_bins


def _two_shapes(n: int = 2000, seed: int = 4):
    """Jobs predicted ~100 s that run half that, jobs predicted ~10,000 s that run twice that,
    submitted over 8 weeks, each ending at its submit plus its runtime."""
    rng = np.random.default_rng(seed)
    short = rng.random(n) < 0.5
    mean = np.where(short, 100.0, 10_000.0) * rng.uniform(0.95, 1.05, n)
    runtime = np.where(short, 0.5, 2.0) * mean
    submit = np.sort(rng.uniform(0, 8 * WEEK, n))
    return mean, runtime, submit, submit + runtime, short


def test_each_bin_gets_its_own_ratio_once_enough_of_its_jobs_have_ended():
    mean, runtime, submit, end, short = _two_shapes()
    factor = binned_mean_factors(mean, np.ones(len(mean), bool), submit, end, runtime)
    later = submit >= 2 * WEEK  # by then each bin has far more than 100 finished jobs
    assert np.allclose(factor[later & short], 0.5)
    assert np.allclose(factor[later & ~short], 2.0)
    # The first week has nothing finished before it: the means stand.
    assert np.all(factor[submit < WEEK] == 1.0)


def test_no_future_runtime_enters_a_factor():
    mean, runtime, submit, end, _ = _two_shapes()
    known = np.ones(len(mean), bool)
    first = binned_mean_factors(mean, known, submit, end, runtime)
    cut = submit[0] + 4 * WEEK
    changed = runtime.copy()
    changed[end >= cut] *= 7.0  # another future: everything that ends after the cut
    second = binned_mean_factors(mean, known, submit, end, changed)
    before = submit < cut
    assert np.array_equal(first[before], second[before])
    assert not np.array_equal(first[~before], second[~before])


def test_a_bin_with_few_finished_jobs_and_unknown_jobs_keep_the_mean():
    mean, runtime, submit, end, short = _two_shapes()
    known = short.copy()  # the long jobs never count (no prediction, never ran)
    factor = binned_mean_factors(mean, known, submit, end, runtime, min_jobs=100)
    assert np.all(factor[~short] == 1.0)
    few = binned_mean_factors(mean, np.ones(len(mean), bool), submit, end, runtime, min_jobs=10**6)
    assert np.all(few == 1.0)
    # NaN ends or runtimes never enter a sum.
    broken = runtime.copy()
    broken[::5] = np.nan
    assert np.all(np.isfinite(binned_mean_factors(mean, np.ones(len(mean), bool), submit, end, broken)))


def test_calibrated_means_never_exceed_the_request_and_bins_double():
    assert np.array_equal(mean_bins(np.array([0.2, 1.0, 3.0, 4.0, 1023.0, 1024.0])), [0, 0, 1, 2, 9, 10])
    out = calibrated_means(np.array([100.0, 1000.0]), np.array([150.0, 5000.0]), np.array([2.0, 2.0]))
    assert np.array_equal(out, [150.0, 2000.0])


def test_a_window_counts_only_the_most_recently_finished_jobs():
    mean, runtime, submit, end, short = _two_shapes(4000)
    known = np.ones(len(mean), bool)
    # The long jobs run 2x their mean for 4 weeks, then 1x: over all the past the factor drifts
    # slowly towards 1, over a window of recent jobs it is 1 soon after.
    changed = np.where(~short & (end >= 4 * WEEK), mean, runtime)
    everything = binned_mean_factors(mean, known, submit, end, changed)
    window = binned_mean_factors(mean, known, submit, end, changed, window=400)
    late = ~short & (submit >= 7 * WEEK)
    assert np.all(everything[late] > 1.2)
    assert np.allclose(window[late], 1.0)
    # A window longer than the past is the whole past.
    assert np.array_equal(binned_mean_factors(mean, known, submit, end, changed, window=10**6), everything)


def test_each_periods_factors_are_the_deployed_models_bands_on_the_rows_before_it():
    """The study calls the deployed rule (rush.models.runtime_mean_bands): a period's factors
    are fit_mean_bands on the (window of) jobs that ended before the period began."""
    from rush.models.runtime_mean_bands import fit_mean_bands
    from rush.studies.runtime_calibration import period_bands

    mean, runtime, submit, end, _ = _two_shapes(3000)
    known = np.ones(len(mean), bool)
    factor = binned_mean_factors(mean, known, submit, end, runtime, window=500)
    periods = period_bands(mean, known, submit, end, runtime, window=500)
    assert sum(len(jobs) for jobs, _ in periods) == len(mean)
    for jobs, bands in periods:
        period_start = submit[0] + np.floor((submit[jobs[0]] - submit[0]) / WEEK) * WEEK
        before = np.flatnonzero(end < period_start)
        rows = before[np.argsort(end[before], kind="stable")][-500:]
        assert bands == fit_mean_bands(mean[rows], runtime[rows])
        assert np.array_equal(factor[jobs], bands.factor(mean[jobs]))
