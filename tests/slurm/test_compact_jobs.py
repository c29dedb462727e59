"""The Slurm read's jobs as compact as the Flux module's (issue 31 item 3, r31build): one string
object per job state name, and the site-factor step (:func:`rush.rjms.slurm_json.with_site_factor`,
through :meth:`ParsedJobs.with_site_factors`) keeping each job's values in the object instead
of a materialised ``__dict__``.

Differential against the read as it was (``parse_job`` per record, then ``with_fields`` with the
site factor), read after read over the recorded answers of every Slurm and OpenAPI version with
priorities and factors changing, factors given as another type of the same number (0.0, False,
-0.0: a changed field, never the job's own int 0) and state names as strings and as lists: each
job equal, each field of the same type and ``repr``, each value but the site factor the same
object; then the layout (CPython keeps a constructed object's values inline; ``__dict__`` makes
a dict of them, which ``gc.get_referents`` shows) and the state names' identity."""

from __future__ import annotations

import copy
import gc
import json
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rush.rjms.base import RJMSJob, with_fields
from rush.rjms.slurm_json import FINAL_STATES, ParsedJobs, job_state, parse_job, with_site_factor

RECORDED = Path(__file__).resolve().parent / "recorded"
NAMES = [f.name for f in fields(RJMSJob)]
# Factors rush sets (ints), and the same numbers as other types (a changed field: the job's own
# int 0 must not stand for them).
FACTORS: list[Any] = [0, 0, 0, 1, -3, 2**31, 0.0, -0.0, False, True, 1.0]


def templates() -> list[dict[str, Any]]:
    """Every job record of every recorded answer that parse_job reads (22.05 and 25.11)."""
    found = []
    for path in sorted(RECORDED.glob("*/*/jobs.json")):
        for record in json.loads(path.read_text())["jobs"]:
            try:
                parse_job(record)
            except (KeyError, TypeError, ValueError):
                continue
            found.append(record)
    return found


TEMPLATES = templates()


def inline(job: RJMSJob) -> bool:
    """Whether the job's values are held in the object (no materialised ``__dict__``): its
    ``tags`` dict is then one of the objects it refers to directly."""
    return any(r is job.tags for r in gc.get_referents(job))


def queue(rng: np.random.Generator, size: int) -> list[dict[str, Any]]:
    records = []
    for k in range(size):
        record = copy.deepcopy(TEMPLATES[int(rng.integers(0, len(TEMPLATES)))])
        record["job_id"] = k + 1
        records.append(record)
    return records


def test_the_layout_probe_tells_the_two_apart() -> None:
    job = RJMSJob(1, "PENDING", 0.0, 1, 60.0, tags={"idempotent": "1"})
    assert inline(job)
    made = with_fields(job, site_factor=2)
    assert not inline(made) and not inline(job)  # with_fields materialises both


@pytest.mark.parametrize("seed", range(12))
def test_the_read_equals_with_fields_and_keeps_values_inline(seed: int) -> None:
    assert len(TEMPLATES) >= 10
    rng = np.random.default_rng(seed)
    records = queue(rng, 40)
    parsed = ParsedJobs()
    factors: dict[int, Any] = {}
    for _ in range(6):
        for record in records:
            if rng.random() < 0.2:
                record["priority"] = int(rng.integers(0, 10**6))
        for job_id in range(1, len(records) + 1):
            if rng.random() < 0.3:
                factors[job_id] = FACTORS[int(rng.integers(0, len(FACTORS)))]
        answer = json.loads(json.dumps({"jobs": records}))["jobs"]  # new strings, as a read makes
        jobs = [j for j in parsed.parse(answer) if j.state not in FINAL_STATES]
        made = parsed.with_site_factors(jobs, factors)
        want = [
            with_fields(parse_job(r), site_factor=factors.get(r["job_id"], 0))
            for r in copy.deepcopy(answer)
            if job_state(r["job_state"]) not in FINAL_STATES
        ]
        assert len(made) == len(want)
        for got, reference, job in zip(made, want, jobs, strict=True):
            assert got == reference and type(got) is RJMSJob
            assert [type(getattr(got, n)) for n in NAMES] == [type(getattr(reference, n)) for n in NAMES]
            assert repr(got) == repr(reference)
            # The other values are the parsed job's own objects (nothing made anew).
            assert all(getattr(got, n) is getattr(job, n) for n in NAMES if n != "site_factor")
            assert inline(got), f"job {got.job_id}: its values sit in a __dict__"
            assert got.state is sys.intern(got.state)


def test_a_job_whose_factor_is_its_own_is_given_back() -> None:
    job = parse_job(copy.deepcopy(TEMPLATES[0]))
    assert with_site_factor(job, 0) is job
    for factor in (0.0, False, 1, -1):
        made = with_site_factor(job, factor)
        assert made is not job and made.site_factor is factor and inline(made)
        assert made == with_fields(job, site_factor=factor)


@pytest.mark.parametrize(
    "written",
    ["PENDING", ["PENDING"], "RUNNING", ["RUNNING"], ["COMPLETED", "COMPLETING"], ["CANCELLED"], "TIMEOUT"],
)
def test_a_state_name_is_one_object(written: Any) -> None:
    read = json.loads(json.dumps(written))  # a new string, as json.loads makes per record
    again = json.loads(json.dumps(written))
    state = job_state(read)
    assert state == job_state(again) and state is job_state(again)
    assert state is sys.intern(state)
    assert job_state(json.loads('"NO_SUCH_STATE"')) == "NO_SUCH_STATE"  # unknown: as read
