"""The Slurm read's fair-share step keeping jobs (issue 31 item 3, r31fair):
:meth:`rush.rjms.slurm_json.ParsedJobs.with_fairshare` and :class:`KeptValues`.

Differential against the step as it was (``with_fields(job, fairshare=fairshare_of(...))`` per
pending job, other jobs unchanged), read after read: jobs kept (the same objects, as
``ParsedJobs`` gives unchanged records), re-made equal, changed, leaving and arriving;
associations' factors changing, re-read as new float objects, -0.0 after 0.0 and back, an int
and a float of one number. Each job equal to the reference, of the same field types and
``repr``, every value but the factor the input job's own object, values inline (no
``__dict__``), and the last read's job given back while its input and factor are unchanged;
a job made anew otherwise. Also: a failing read keeps nothing, and :func:`same_value`'s rule.
"""

from __future__ import annotations

import gc
import math
from dataclasses import fields, replace
from typing import Any

import numpy as np
import pytest

from rush.errors import RJMSError
from rush.rjms.base import RJMSJob, with_fields
from rush.rjms.site_factor import fairshare_of
from rush.rjms.slurm_json import KeptValues, ParsedJobs, same_value, with_job_value

NAMES = [f.name for f in fields(RJMSJob)]
USERS = [f"u{k}" for k in range(6)]
# What sshare could give, as new objects each read (float(text)), and an int of one number.
FACTORS = ["0.0", "-0.0", "0.25", "0.5", "1.0", "1"]


def inline(job: RJMSJob) -> bool:
    """Whether the job's values are held in the object (no materialised ``__dict__``)."""
    return any(r is job.tags for r in gc.get_referents(job))


def reference(jobs: list[RJMSJob], factors: dict) -> list[RJMSJob]:
    """The step before r31fair (``rush.rjms.slurm.with_fairshare`` at 8ea6bd8)."""
    return [
        with_fields(j, fairshare=fairshare_of(j.job_id, j.account, j.user, j.partition, factors))
        if j.state == "PENDING"
        else j
        for j in jobs
    ]


def read_factor(text: str) -> Any:
    """A new number object each read, as parse_sshare's ``float(text)`` makes."""
    return int(text) if text.isdigit() else float(text + "0")


def new_job(rng: np.random.Generator, job_id: int) -> RJMSJob:
    state = "PENDING" if rng.random() < 0.8 else "RUNNING"
    return RJMSJob(
        job_id,
        state,
        float(rng.integers(0, 10**6)),
        int(rng.integers(1, 64)),
        60.0 * int(rng.integers(1, 100)),
        start=None if state == "PENDING" else 5.0,
        user=USERS[int(rng.integers(0, len(USERS)))],
        account="acct",
        partition="batch" if rng.random() < 0.5 else "gpu",
        tags={"app": "x"},
        site_factor=int(rng.integers(0, 3)),
        fairshare=None if rng.random() < 0.7 else 0.5,  # a running job's own factor is kept as it is
    )


def check(made: list[RJMSJob], jobs: list[RJMSJob], factors: dict) -> None:
    assert all(inline(got) for got in made), "a job's values sit in a __dict__"
    # On copies (the same value objects): with_fields materialises its input job's __dict__ too,
    # and the inputs are read again next time.
    want = reference([replace(j) for j in jobs], factors)
    assert len(made) == len(want)
    for got, ref, job in zip(made, want, jobs, strict=True):
        assert got == ref and type(got) is RJMSJob
        assert [type(getattr(got, n)) for n in NAMES] == [type(getattr(ref, n)) for n in NAMES]
        assert repr(got) == repr(ref)
        assert all(getattr(got, n) is getattr(job, n) for n in NAMES if n != "fairshare")
        if job.state != "PENDING":
            assert got is job  # left as it is
    assert all(inline(job) for job in jobs)  # the step did not materialise its inputs either


@pytest.mark.parametrize("seed", range(16))
def test_the_step_equals_with_fields_and_keeps_unchanged_jobs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    jobs = [new_job(rng, k) for k in range(1, 41)]
    shares = {u: FACTORS[int(rng.integers(0, len(FACTORS)))] for u in USERS}
    parsed = ParsedJobs()
    last: dict[int, tuple[RJMSJob, str, RJMSJob]] = {}
    kept_seen = 0
    for _ in range(8):
        roll = rng.random(len(jobs))
        jobs = [
            j
            if r < 0.6
            else replace(j)
            if r < 0.75
            else replace(j, site_factor=j.site_factor + 1)
            if r < 0.9
            else None
            for j, r in zip(jobs, roll, strict=True)
        ]  # kept, re-made equal, changed, left
        jobs = [j for j in jobs if j is not None]
        jobs += [new_job(rng, 100 + int(rng.integers(0, 10**6))) for _ in range(int(rng.integers(0, 6)))]
        for user in rng.choice(USERS, size=2, replace=False):
            shares[str(user)] = FACTORS[int(rng.integers(0, len(FACTORS)))]
        # sshare's table as parse_sshare makes it: new objects each read, some partition rows.
        factors = {("acct", u, ""): read_factor(t) for u, t in shares.items()}
        factors[("acct", "u0", "gpu")] = read_factor("0.75")
        made = parsed.with_fairshare(jobs, factors)
        check(made, jobs, factors)
        for job, got in zip(jobs, made, strict=True):
            text = shares[job.user] if (job.user, job.partition) != ("u0", "gpu") else "0.75"
            before = last.get(job.job_id)
            if job.state == "PENDING" and before is not None and before[0] is job and before[1] == text:
                assert got is before[2], f"job {job.job_id}: remade with its input and factor unchanged"
                kept_seen += 1
            elif job.state == "PENDING" and before is not None and before[1] != text:
                assert got is not before[2]
            last[job.job_id] = (job, text, got)
    assert kept_seen > 20  # the runs kept jobs, not only made them


def test_a_factor_of_another_sign_or_type_makes_a_new_job() -> None:
    job = RJMSJob(1, "PENDING", 0.0, 1, 60.0, user="u", account="a", tags={"x": "1"})
    parsed = ParsedJobs()
    seen = []
    for value in ("0.0", "0.0", "-0.0", "-0.0", "0.0", "1", "1.0", "1.0", "1"):
        factors = {("a", "u", ""): int(value) if value.isdigit() else float(value + "0")}
        (got,) = parsed.with_fairshare([job], factors)
        assert repr(got) == repr(with_fields(job, fairshare=factors[("a", "u", "")]))
        assert type(got.fairshare) is type(factors[("a", "u", "")]) and inline(got)
        seen.append(got)
    same = [seen[k] is seen[k - 1] for k in range(1, len(seen))]
    assert same == [True, False, True, False, False, False, True, False]


def test_a_failing_read_keeps_the_last_reads_jobs() -> None:
    jobs = [RJMSJob(k, "PENDING", 0.0, 1, 60.0, user="u", account="a") for k in (1, 2)]
    parsed = ParsedJobs()
    first = parsed.with_fairshare(jobs, {("a", "u", ""): 0.5})
    with pytest.raises(RJMSError, match="job 1: sshare lists no association"):
        parsed.with_fairshare(jobs, {("b", "u", ""): 0.5})
    again = parsed.with_fairshare(jobs, {("a", "u", ""): float("0.50")})
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_the_site_factor_step_shares_the_keeper() -> None:
    jobs = [RJMSJob(k, "PENDING", 0.0, 1, 60.0) for k in (1, 2, 3)]
    parsed = ParsedJobs()
    first = parsed.with_site_factors(jobs, {2: 5})
    assert first[0] is jobs[0] and first[1] == with_fields(jobs[1], site_factor=5) and inline(first[1])
    second = parsed.with_site_factors(jobs, {2: 5, 3: 1})
    assert second[:2] == first[:2] and second[1] is first[1] and second[2].site_factor == 1


def test_same_value() -> None:
    assert same_value(0.25, float("0.250")) and same_value(7, int("7")) and same_value(None, None)
    assert not same_value(0.0, -0.0) and not same_value(-0.0, 0.0) and same_value(-0.0, float("-0.00"))
    assert not same_value(1, 1.0) and not same_value(1.0, 1) and not same_value(True, 1)
    nan = math.nan
    assert not same_value(nan, float("nan")) and same_value(nan, nan)  # only itself
    assert not same_value("a", "b") and not same_value([1], [1])


def test_keeper_by_field_and_subclasses() -> None:
    keeper = KeptValues("priority")
    jobs = [RJMSJob(1, "PENDING", 0.0, 1, 60.0, priority=2.0)]
    (got,) = keeper.apply(jobs, [2.0])
    assert got is jobs[0]  # its own value already
    (got,) = keeper.apply(jobs, [3.0])
    assert got == with_fields(jobs[0], priority=3.0) and inline(got)

    class Checked(RJMSJob):
        pass

    sub = Checked(1, "PENDING", 0.0, 1, 60.0)
    made = with_job_value(sub, "fairshare", 0.5)
    assert type(made) is Checked and made.fairshare == 0.5
