"""An unlimited request (inf, Slurm's UNLIMITED time limit) gets an orderable priority key under
every policy: never NaN, which the pass's merge sort cannot order (a NaN key is neither before
nor after any other, so the job's rank depended on where the read listed it), and the same key
in ``rush explain``'s terms as in the pass."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.names import POLICY_CODES
from rush.core.policies import parse_policy, priority_key
from rush.core.priority_terms import JobInputs, priority_terms
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, Snapshot

LINEARS = [
    "LINEAR:r=1,fairshare=-1000000",  # the Slurm fair-share setting: every other weight 0
    "LINEAR:q=1,p=0.01,wait=-0.5,r=0.001,fairshare=-1000",
    "LINEAR:p=1,area=-1",  # inf - inf between weighted terms
    "LINEAR:expansion=-1",
    "LINEAR:rho=2,wait=-1",
]
POLICIES = [name for name in POLICY_CODES if name not in ("LINEAR", "LEARNED", "RJMS")] + LINEARS


def queue(reverse: bool) -> tuple[PendingJob, ...]:
    jobs = (
        PendingJob(1, 100.0, 8, 3600.0, fairshare=0.2),
        PendingJob(2, 100.0, 2, math.inf, fairshare=0.9),
        PendingJob(3, 50.0, 32, 7200.0, fairshare=0.5),
        PendingJob(4, 100.0, 4, math.inf, fairshare=0.1),
        PendingJob(5, 60.0, 1, 60.0),
    )
    return jobs[::-1] if reverse else jobs


@pytest.mark.parametrize("policy", POLICIES)
def test_unlimited_requests_are_ordered_the_same_whatever_the_read_order(policy: str) -> None:
    config = CoreConfig(policy=parse_policy(policy), threshold=None)
    decided = [
        schedule(
            Snapshot(now=5000.0, total_procs=8, free_procs=0, pending=queue(reverse), time_origin=10.0),
            config,
        )
        for reverse in (False, True)
    ]
    for d in decided:
        assert not any(math.isnan(k) for k in d.priority_key.values()), d.priority_key
    assert decided[0].order == decided[1].order
    assert decided[0].priority == decided[1].priority
    for job in queue(False):
        inputs = JobInputs(job.submit, job.procs, job.requested_time, fairshare=job.fairshare)
        terms = priority_terms(config, inputs, 5000.0, 10.0)
        assert not math.isnan(terms.key)
        assert terms.key == pytest.approx(decided[0].priority_key[job.job_id], rel=1e-12)
        assert not any(math.isnan(value) for value in terms.inputs.values())
        assert not any(math.isnan(t.value) or math.isnan(t.contribution) for t in terms.terms)


def test_finite_linear_keys_are_the_weighted_sum_bit_for_bit() -> None:
    """Leaving unweighted terms out changes no finite key: x + 0.0 * y is x."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        weights = rng.normal(size=8) * (rng.random(8) < 0.5)
        q, estimate = float(rng.integers(1, 512)), float(rng.uniform(0.0, 1e6))
        submit, now, origin = float(rng.uniform(0, 1e7)), float(rng.uniform(0, 2e7)), 0.0
        p, w, r = max(estimate, 1.0), max(now - submit, 0.0), max(submit - origin, 1.0)
        summed = (
            weights[0] * q
            + weights[1] * estimate
            + weights[2] * w
            + weights[3] * (estimate / q)
            + weights[4] * ((w + p) / p)
            + weights[5] * (estimate * q)
            + weights[6] * r
        )
        assert priority_key(POLICY_CODES["LINEAR"], weights, now, origin, submit, int(q), estimate) == summed


@pytest.mark.parametrize(("name", "sign"), [("SEXP", 1.0), ("LEXP", -1.0)])
def test_the_expansion_of_an_unlimited_request_is_one(name: str, sign: float) -> None:
    weights = np.zeros(8)
    assert priority_key(POLICY_CODES[name], weights, 5000.0, 0.0, 100.0, 4, math.inf) == sign
