"""The fair-share step keyed by association (issue 31 item 3, r31fsassoc):
:meth:`rush.rjms.slurm_json.ParsedJobs.with_fairshare` (:class:`KeptFairshares`).

Differential, read after read, against two references run beside it: the plain step
(``with_fields(job, fairshare=fairshare_of(...))`` per pending job, other jobs unchanged) for
every value, its type and ``repr``, and r31fair's step (``fairshare_of`` per pending job, then
:class:`KeptValues`) for which jobs are given back as last read's objects. The reads change as a
site's do: associations' factors change (new objects each read, -0.0 after 0.0, an int and a
float of one number, NaN), new associations and partition rows appear and go, jobs are kept,
re-made equal, move account, user or partition, change state, leave and arrive, and some reads
lack a pending job's association (the same ``RJMSError`` as the plain step, nothing kept). Also:
one lookup per association a read, not per job.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from rush.errors import RJMSError
from rush.rjms.base import RJMSJob, with_fields
from rush.rjms.site_factor import fairshare_of
from rush.rjms.slurm_json import KeptValues, ParsedJobs

ACCOUNTS = ["a0", "a1", "a2"]
USERS = ["u0", "u1", "u2", "u3"]
PARTITIONS = ["batch", "gpu", "big"]
# What a table could hold, as a new object each read; "nan" only through the step's own table.
FACTORS = ["0.0", "-0.0", "0.25", "0.5", "1.0", "1", "nan"]


def number(text: str) -> Any:
    """A new number object each read (float(text) as parse_sshare makes; an int of one number)."""
    return int(text) if text.isdigit() else float(text)


def plain(jobs: list[RJMSJob], factors: dict) -> list[RJMSJob]:
    """The step without keeping anything: ``with_fields`` per pending job (on copies: it
    materialises its input's ``__dict__``)."""
    return [
        with_fields(replace(j), fairshare=fairshare_of(j.job_id, j.account, j.user, j.partition, factors))
        if j.state == "PENDING"
        else j
        for j in jobs
    ]


class R31Fair:
    """r31fair's step (a1e0f94): every pending job's factor looked up, then :class:`KeptValues`."""

    def __init__(self) -> None:
        self.keeper = KeptValues("fairshare")

    def apply(self, jobs: list[RJMSJob], factors: dict) -> list[RJMSJob]:
        values = [
            fairshare_of(j.job_id, j.account, j.user, j.partition, factors)
            if j.state == "PENDING"
            else j.fairshare
            for j in jobs
        ]
        return self.keeper.apply(jobs, values)


def new_job(rng: np.random.Generator, job_id: int) -> RJMSJob:
    state = "PENDING" if rng.random() < 0.8 else "RUNNING"
    return RJMSJob(
        job_id,
        state,
        float(rng.integers(0, 10**6)),
        int(rng.integers(1, 64)),
        60.0 * int(rng.integers(1, 100)),
        start=None if state == "PENDING" else 5.0,
        user=str(rng.choice(USERS)),
        account=str(rng.choice(ACCOUNTS)),
        partition=str(rng.choice(PARTITIONS)),
        tags={"app": "x"},
        fairshare=None if rng.random() < 0.7 else 0.5,
    )


def moved(rng: np.random.Generator, job: RJMSJob) -> RJMSJob:
    """The job changed as a read can change it (a new object)."""
    roll = rng.random()
    if roll < 0.25:
        return replace(job, account=str(rng.choice(ACCOUNTS)))
    if roll < 0.45:
        return replace(job, partition=str(rng.choice(PARTITIONS)))
    if roll < 0.6:
        return replace(job, user=str(rng.choice(USERS)))
    if roll < 0.8:
        return replace(job, state="RUNNING" if job.state == "PENDING" else "PENDING")
    return replace(job)  # re-made equal


def next_jobs(rng: np.random.Generator, jobs: list[RJMSJob], serial: list[int]) -> list[RJMSJob]:
    out = []
    for job in jobs:
        roll = rng.random()
        if roll < 0.08:
            continue  # left
        out.append(job if roll < 0.7 else moved(rng, job))
    for _ in range(int(rng.integers(0, 5))):
        serial[0] += 1
        out.append(new_job(rng, serial[0]))
    order = rng.permutation(len(out)) if rng.random() < 0.3 else range(len(out))
    return [out[k] for k in order]


def next_table(rng: np.random.Generator, table: dict[tuple[str, str, str], str]) -> None:
    """A few associations' factors changed, a partition row or a new association added or gone."""
    keys = sorted(table)
    for k in rng.choice(len(keys), size=min(2, len(keys)), replace=False):
        table[keys[int(k)]] = str(rng.choice(FACTORS))
    roll = rng.random()
    key = (str(rng.choice(ACCOUNTS)), str(rng.choice(USERS)), str(rng.choice(["", *PARTITIONS])))
    if roll < 0.3:
        table[key] = str(rng.choice(FACTORS))
    elif roll < 0.5 and key[2] and key in table:
        del table[key]  # a partition row gone: the job falls back to its account/user row


def read_table(rng: np.random.Generator, table: dict[tuple[str, str, str], str]) -> dict:
    """This read's table (new objects); now and then without one association a job may need."""
    factors = {key: number(text) for key, text in table.items()}
    if rng.random() < 0.15:
        gone = sorted(k for k in factors if not k[2])
        del factors[gone[int(rng.integers(0, len(gone)))]]
    return factors


def first_table(rng: np.random.Generator) -> dict[tuple[str, str, str], str]:
    table = {(a, u, ""): str(rng.choice(FACTORS)) for a in ACCOUNTS for u in USERS}
    table[("a0", "u0", "gpu")] = "0.75"
    return table


def same_job(got: RJMSJob, want: RJMSJob) -> bool:
    """Equal, of one type, the same field types and ``repr`` (NaN: ``repr`` only, it equals nothing)."""
    names = [n for n in got.__dataclass_fields__ if n != "fairshare"]
    return (
        type(got) is type(want)
        and all(getattr(got, n) == getattr(want, n) for n in names)
        and type(got.fairshare) is type(want.fairshare)
        and repr(got) == repr(want)
    )


@pytest.mark.parametrize("seed", range(24))
def test_the_step_equals_the_plain_step_and_keeps_as_r31fair_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    serial = [0]
    jobs = []
    for _ in range(30):
        serial[0] += 1
        jobs.append(new_job(rng, serial[0]))
    table = first_table(rng)
    parsed, oracle = ParsedJobs(), R31Fair()
    last: dict[int, tuple[RJMSJob, RJMSJob]] = {}  # job id -> (step's made, r31fair's made)
    counts = {"kept": 0, "made": 0, "raised": 0}
    for _ in range(14):
        jobs = next_jobs(rng, jobs, serial)
        next_table(rng, table)
        factors = read_table(rng, table)
        try:
            want = plain(jobs, factors)
        except RJMSError as error:
            with pytest.raises(RJMSError) as raised:
                parsed.with_fairshare(jobs, factors)
            assert str(raised.value) == str(error)
            with pytest.raises(RJMSError):
                oracle.apply(jobs, factors)
            counts["raised"] += 1
            continue
        got = parsed.with_fairshare(jobs, factors)
        theirs = oracle.apply(jobs, factors)
        assert len(got) == len(want) == len(jobs)
        for job, g, w, t in zip(jobs, got, want, theirs, strict=True):
            assert same_job(g, w), f"job {job.job_id}: {g!r} != {w!r}"
            assert (g is job) == (t is job), f"job {job.job_id}: given back itself in one step only"
            before = last.get(job.job_id)
            if before is not None:
                assert (g is before[0]) == (t is before[1]), f"job {job.job_id}: kept in one step only"
                counts["kept" if g is before[0] else "made"] += 1
        last = {j.job_id: (g, t) for j, g, t in zip(jobs, got, theirs, strict=True)}
    assert counts["kept"] > 50 and counts["made"] > 10, counts  # both ways exercised


class CountedTable(dict):
    """sshare's table, counting the lookups made in it."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.lookups = 0

    def __contains__(self, key: object) -> bool:
        self.lookups += 1
        return super().__contains__(key)


def test_one_lookup_per_association_and_none_for_unchanged_ones() -> None:
    jobs = [
        RJMSJob(k, "PENDING", 0.0, 1, 60.0, user=f"u{k % 3}", account="a", partition="batch")
        for k in range(300)
    ]
    rows = {("a", f"u{u}", ""): 0.5 for u in range(3)}
    parsed = ParsedJobs()
    table = CountedTable(rows)
    first = parsed.with_fairshare(jobs, table)
    assert table.lookups == 6  # three keys, each its partition row then its account/user row
    table = CountedTable({**rows, ("a", "u1", ""): 0.25})
    second = parsed.with_fairshare(jobs, table)
    assert table.lookups == 6  # each kept job's key checked once, not once per job
    assert all((s is f) == (j.user != "u1") for j, f, s in zip(jobs, first, second, strict=True))
    assert all(s.fairshare == (0.25 if j.user == "u1" else 0.5) for j, s in zip(jobs, second, strict=True))


def test_a_kept_jobs_association_gone_raises_for_the_first_such_job() -> None:
    jobs = [
        RJMSJob(k, "PENDING", 0.0, 1, 60.0, user=u, account="a") for k, u in ((1, "x"), (2, "y"), (3, "y"))
    ]
    parsed = ParsedJobs()
    first = parsed.with_fairshare(jobs, {("a", "x", ""): 0.5, ("a", "y", ""): 0.5})
    with pytest.raises(RJMSError, match="job 2: sshare lists no association for account 'a' user 'y'"):
        parsed.with_fairshare(jobs, {("a", "x", ""): 0.75})
    # Nothing of the failed read kept: x's factor is the first read's again, so its job is too.
    again = parsed.with_fairshare(jobs, {("a", "x", ""): float("0.5"), ("a", "y", ""): 0.5})
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_a_repeated_job_id_each_object_kept_as_itself() -> None:
    """Kept by the object given, not by its id: two records of one job id (a hostile answer)
    each get their own job back, equal to the plain step's."""
    one = RJMSJob(7, "PENDING", 0.0, 1, 60.0, user="u", account="a", partition="p")
    other = RJMSJob(7, "PENDING", 1.0, 2, 60.0, user="v", account="a")
    factors = {("a", "u", ""): 0.5, ("a", "v", ""): 0.25}
    parsed = ParsedJobs()
    first = parsed.with_fairshare([one, other, one], factors)
    second = parsed.with_fairshare([other, one], dict(factors))
    assert [same_job(g, w) for g, w in zip(first, plain([one, other, one], factors), strict=True)] == [
        True
    ] * 3
    assert second[0] is first[1] and second[1] is first[0] and first[2] is first[0]
