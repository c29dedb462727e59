"""rush explain's priority terms: the same key the pass orders by, split into its terms."""

from __future__ import annotations

import pytest

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.priority_terms import JobInputs, priority_terms
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, Snapshot

JOBS = (
    PendingJob(1, 100.0, 8, 3600.0, fairshare=0.2),
    PendingJob(2, 200.0, 2, 600.0, fairshare=0.9),
    PendingJob(3, 50.0, 32, 7200.0),
)


@pytest.mark.parametrize(
    "policy", ["FCFS", "SPF", "WFP3", "F1", "LINEAR:q=1,p=0.01,wait=-0.5,r=0.001,fairshare=-1000"]
)
@pytest.mark.parametrize("quantum", [0.0, 60.0])
def test_the_terms_give_the_key_the_pass_used(policy: str, quantum: float) -> None:
    config = CoreConfig(policy=parse_policy(policy), threshold=None, wait_quantum=quantum)
    snapshot = Snapshot(now=5000.0, total_procs=8, free_procs=0, pending=JOBS, time_origin=10.0)
    decided = schedule(snapshot, config)
    for job in JOBS:
        inputs = JobInputs(job.submit, job.procs, job.requested_time, fairshare=job.fairshare)
        terms = priority_terms(config, inputs, snapshot.now, snapshot.time_origin)
        assert terms.key == pytest.approx(decided.priority_key[job.job_id], rel=1e-12)
        assert terms.group == decided.priority_group[job.job_id]
        if policy.startswith("LINEAR"):
            assert sum(t.contribution for t in terms.terms) == pytest.approx(terms.key, rel=1e-12)
            assert {t.name for t in terms.terms} == {"q", "p", "wait", "r", "fairshare"}


def test_a_starved_job_says_so() -> None:
    config = CoreConfig(policy=parse_policy("SPF"), threshold=1000.0)
    terms = priority_terms(config, JobInputs(0.0, 4, 100.0), now=5000.0, time_origin=0.0)
    assert terms.group == 0
    assert "starved" in terms.group_reason and "1000" in terms.group_reason
