"""Resampling and the Lublin generator: deterministic under a seed, documented statistics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammainc
from scipy.stats import spearmanr

from rush.errors import RushError
from rush.workload import lublin
from rush.workload.lublin import REQUEST_LIMITS, lublin_generate
from rush.workload.model import Trace
from rush.workload.resample import WEEK, resample_weekly, user_weekly_slices
from rush.workload.swf import read_swf
from tests.workload.helpers import MIRROR, same_jobs

# ---------------------------------------------------------------- Lublin–Feitelson


def test_lublin_deterministic_under_seed():
    for types in ("batch", "both"):
        assert same_jobs(lublin_generate(2000, 128, 5, types), lublin_generate(2000, 128, 5, types))
        assert not same_jobs(lublin_generate(2000, 128, 5, types), lublin_generate(2000, 128, 6, types))


def test_gamma_cdf_matches_the_regularised_incomplete_gamma():
    for p in (lublin.BATCH_PARAMETERS, lublin.INTERACTIVE_PARAMETERS, lublin.WHOLE_PARAMETERS):
        for x in (0.5, 5.0, 11.5, 30.0, 58.5):
            assert lublin.gamma_cdf(x, p.anum, p.bnum) == pytest.approx(
                gammainc(p.anum, x / p.bnum), abs=1e-12
            )
        weights = lublin.bucket_weights(p)
        assert weights.shape == (48,) and weights.mean() == pytest.approx(1.0) and (weights > 0).all()


def _hours(trace: Trace) -> np.ndarray:
    return (trace["submit"] % 86400) // 3600


@pytest.fixture(scope="module")
def batch_10k() -> Trace:
    return lublin_generate(10_000, 256, seed=1)


def test_lublin_batch_statistics(batch_10k):
    trace = batch_10k
    q = trace["alloc_procs"]
    p = trace["runtime"].astype(float)
    p_serial = lublin.BATCH_PARAMETERS.serial_prob
    p_pow2 = lublin.BATCH_PARAMETERS.pow2_prob
    # Serial share: the published batch probability (binomial sd ~0.005 at 10k jobs).
    assert abs((q == 1).mean() - p_serial) < 0.02
    # Power-of-two share: at least the published probability (other draws may round to 2^k too).
    pow2 = (q > 1) & ((q & (q - 1)) == 0)
    assert pow2.mean() >= p_pow2 - 0.02 and pow2.mean() < p_pow2 + 0.06
    assert q.max() <= 256 and q.min() >= 1 and (q == 256).any()
    # log(runtime) hyper-gamma: batch components have means a1*b1 = 5.4 and a2*b2 = 10.0.
    log_p = np.log(np.maximum(p, 1))
    assert 5.4 < log_p.mean() < 10.0 and p.max() <= np.exp(12)
    # Runtime grows with size (pa < 0).
    assert spearmanr(q, p).statistic > 0.05
    # Daily cycle: more arrivals in the working day than at night.
    hours = _hours(trace)
    assert ((hours >= 8) & (hours < 18)).mean() > 2 * (hours < 6).mean()
    assert (np.diff(trace["submit"]) >= 0).all() and trace["submit"][0] >= 0
    assert (trace["queue"] == lublin.BATCH).all()


def test_lublin_requested_time_model(batch_10k):
    req, p = batch_10k["req_time"], batch_10k["runtime"]
    assert (req >= p).all()
    assert set(np.unique(req).tolist()) <= set(REQUEST_LIMITS.astype(int).tolist())
    # About 10% ask for the maximum on purpose (others reach it because they are long).
    assert 0.09 < (req == REQUEST_LIMITS[-1]).mean() < 0.3
    # Below the maximum: the limit just above runtime × m, m <= 10, so at most the limit above 10 × runtime.
    below_max = req < REQUEST_LIMITS[-1]
    above = np.searchsorted(REQUEST_LIMITS, 10 * np.maximum(p[below_max], 1))
    bound = REQUEST_LIMITS[np.minimum(above, len(REQUEST_LIMITS) - 1)]
    assert (req[below_max] <= bound).all()
    # Users overestimate: the median factor is well above 1.
    assert np.median(req[below_max] / np.maximum(p[below_max], 1)) > 2


def test_lublin_interactive_and_both():
    inter = lublin_generate(5000, 256, seed=2, job_types="interactive")
    both = lublin_generate(5000, 256, seed=2, job_types="both")
    batch = lublin_generate(5000, 256, seed=2)
    # Interactive jobs are shorter and smaller (their size range stops 1.5 below log2(256)).
    assert np.median(inter["runtime"]) < np.median(batch["runtime"])
    assert inter["alloc_procs"].max() <= round(2**6.5) and (inter["queue"] == lublin.INTERACTIVE).all()
    assert abs((inter["alloc_procs"] == 1).mean() - lublin.INTERACTIVE_PARAMETERS.serial_prob) < 0.025
    # Both streams interleave; interactive jobs arrive more often in the published model.
    share = (both["queue"] == lublin.BATCH).mean()
    assert 0.05 < share < 0.5
    assert (np.diff(both["submit"]) >= 0).all()


def test_whole_sample_parameters_resemble_the_reference_generator_output():
    """The mirror's Lublin-256-10k came from the authors' generator in its typeless mode."""
    path = MIRROR / "Lublin-256-10k.swf.gz"
    if not path.exists():
        pytest.skip("no trace mirror")
    ref = read_swf(path)
    ours = lublin_generate(10_000, 256, seed=3, job_types="whole")
    for trace in (ref, ours):
        trace.columns["log_runtime"] = np.log(np.maximum(trace["runtime"], 1))
    q_ref, q_ours = ref["alloc_procs"], ours["alloc_procs"]
    assert abs((q_ref == 1).mean() - (q_ours == 1).mean()) < 0.03
    assert abs(np.log2(q_ref).mean() - np.log2(q_ours).mean()) < 0.15
    assert abs(ref.columns["log_runtime"].mean() - ours.columns["log_runtime"].mean()) < 0.2
    ia_ref, ia_ours = np.diff(ref["submit"]), np.diff(ours["submit"])
    assert abs(np.median(ia_ref) - np.median(ia_ours)) < 0.15 * np.median(ia_ref)


def test_lublin_small_machine_and_bad_arguments():
    small = lublin_generate(2000, 24, seed=4)
    assert small["alloc_procs"].max() <= 24 and small.max_procs == 24
    assert len(lublin_generate(0, 16)) == 0
    with pytest.raises(RushError, match="unknown job types"):
        lublin_generate(10, 16, job_types="weekend")
    with pytest.raises(RushError, match="bad synthetic workload size"):
        lublin_generate(10, 0)


# ---------------------------------------------------------------- weekly resampling


def _users_trace(seed: int = 3) -> Trace:
    rng = np.random.default_rng(seed)
    trace = lublin_generate(3000, 64, seed=seed, job_types="both")
    trace.columns["user"] = rng.integers(0, 12, len(trace))
    return trace


def test_resample_deterministic_sorted_renumbered():
    trace = _users_trace()
    a, b = resample_weekly(trace, 6, seed=9), resample_weekly(trace, 6, seed=9)
    assert same_jobs(a, b)
    assert not same_jobs(a, resample_weekly(trace, 6, seed=10))
    assert (np.diff(a["submit"]) >= 0).all()
    assert a["job_id"].tolist() == list(range(1, len(a) + 1))
    assert a["submit"].min() >= 0 and a["submit"].max() < 6 * WEEK
    assert (a["wait"] == -1).all()


def test_resample_keeps_user_job_properties():
    trace = _users_trace()
    new = resample_weekly(trace, 5, seed=1)
    original = set(zip(trace["user"], trace["runtime"], trace["alloc_procs"], trace["req_time"], strict=True))
    for row in zip(new["user"], new["runtime"], new["alloc_procs"], new["req_time"], strict=True):
        assert row in original


def test_resample_keeps_offsets_within_the_week():
    trace = _users_trace()
    new = resample_weekly(trace, 4, seed=2)
    offsets = set(((trace["submit"] - trace["submit"].min()) % WEEK).tolist())
    assert set((new["submit"] % WEEK).tolist()) <= offsets


def test_resample_jobs_per_user_match_expectation():
    trace = _users_trace()
    slices = user_weekly_slices(trace)
    weeks = 200
    new = resample_weekly(trace, weeks, seed=4)
    for user, user_slices in slices.items():
        sizes = np.array([len(s) for s in user_slices])
        expected = weeks * sizes.mean()  # weeks × the user's mean jobs per week of its span
        got = int((new["user"] == user).sum())
        # A sum of `weeks` independent draws: within 5 standard deviations.
        assert abs(got - expected) <= 5 * sizes.std() * np.sqrt(weeks) + 1, (user, got, expected)


def test_inactive_weeks_inside_a_users_span_count():
    # User 0 submits one job in week 0 and one in week 3: 2 of 4 weekly slices are non-empty.
    submit = np.array([0, 3 * WEEK + 100, 10, 20])
    user = np.array([0, 0, 1, 1])
    trace = Trace.from_columns(
        4, job_id=np.arange(1, 5), submit=submit, user=user, runtime=np.array([5, 6, 7, 8])
    )
    slices = user_weekly_slices(trace)
    assert [len(s) for s in slices[0]] == [1, 0, 0, 1] and [len(s) for s in slices[1]] == [2]
    new = resample_weekly(trace, 400, seed=0)
    assert abs((new["user"] == 0).sum() - 400 * 0.5) < 5 * np.sqrt(400 * 0.25)
    assert (new["user"] == 1).sum() == 2 * 400


def test_resample_a_real_trace_header_and_labels():
    path = MIRROR / "KTH-SP2-1996-2.1-cln.swf.gz"
    if not path.exists():
        pytest.skip("no trace mirror")
    trace = read_swf(path)
    new = resample_weekly(trace, 8, seed=1)
    assert new.max_procs == trace.max_procs == 100
    assert new.unix_start_time == trace.unix_start_time + int(trace["submit"].min())
    assert set(np.unique(new["user"])) <= set(np.unique(trace["user"]))
    assert new.header["MaxJobs"] == str(len(new))
    weeks_in_log = (trace["submit"].max() - trace["submit"].min()) / WEEK
    # Every user is drawn each week, so 8 weeks hold at least a few weeks' worth of jobs.
    assert len(new) > 2 * len(trace) / weeks_in_log


def test_resample_bad_weeks_and_empty_trace():
    with pytest.raises(RushError, match="weeks must be positive"):
        resample_weekly(_users_trace(), 0, seed=1)
    empty = Trace.from_columns(0)
    assert len(resample_weekly(empty, 3, seed=1)) == 0
