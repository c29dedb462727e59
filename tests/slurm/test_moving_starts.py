"""Backfill's moving start estimates in the kept Slurm read (round 28, r31move):
:class:`rush.rjms.slurm_json.ParsedJobs` keys a record without ``start_time`` and applies it
to the kept job (``with_start``, or the inline path for an int start of a job not running).

Differential against ``parse_job`` per record, read after read, over queues of the recorded
answers (22.05 and 25.11, commands and every OpenAPI version) in which starts move as
slurmctld moves them (ints, floats, v0.0.39+ number objects, 0, null, absent, Slurm's markers)
and as nothing should send them (negative, NaN, text, booleans, beyond any time), jobs change
state between pending, running and finished, and finished jobs are listed and dropped as
MinJobAge does. Each read must give, job by job, an equal job whose fields have the same types
and ``repr``, or the same error; a pending job whose estimate moved is the kept object, a
running job whose start moved is not."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest

from rush.rjms.base import RJMSJob
from rush.rjms.slurm_json import ParsedJobs, parse_job
from tests.slurm.read_checks import RECORDED, assert_same_read, outcome

TEMPLATES = [r for p in sorted(RECORDED.glob("*/*/jobs.json")) for r in json.loads(p.read_text())["jobs"]]
# Starts slurmctld writes (an estimate, unset, Slurm's NO_VAL and INFINITE markers) ...
GOOD_STARTS: list[Any] = [
    0,
    1_795_390_151,
    1_795_390_152,
    1_795_390_151.0,
    None,
    0xFFFFFFFE,
    0xFFFFFFFFFFFFFFFE,
    {"set": True, "infinite": False, "number": 1_795_390_200},
    {"set": True, "infinite": False, "number": 1_795_390_201},
    {"set": True, "infinite": False, "number": 0},
    {"set": False, "infinite": False, "number": 0},
    {"set": True, "infinite": True, "number": 0},
]
# ... and what parse_job refuses.
BAD_STARTS: list[Any] = [-1, math.nan, "1795390151", True, 2**41, [], {"set": True, "number": -5}]
STATES = ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "COMPLETING"]


def with_state(record: dict[str, Any], state: str) -> dict[str, Any]:
    """The record in ``state``, written as its version writes states (a name or a list)."""
    return {**record, "job_state": [state] if isinstance(record["job_state"], list) else state}


def moved(rng: np.random.Generator, record: dict[str, Any], bad: float) -> dict[str, Any]:
    """The record with a new start: one slurmctld writes, or (with probability ``bad``) a
    hostile one, or the field gone."""
    record = copy.deepcopy(record)
    roll = rng.random()
    if roll < bad:
        record["start_time"] = copy.deepcopy(BAD_STARTS[int(rng.integers(0, len(BAD_STARTS)))])
    elif roll < bad + 0.05:
        record.pop("start_time", None)
    elif roll < bad + 0.5:  # an estimate moved by seconds to hours, in the record's own shape
        start = record.get("start_time")
        shift = int(rng.integers(1, 7200))
        if isinstance(start, dict) and isinstance(start.get("number"), int):
            record["start_time"] = {**start, "number": start["number"] + shift}
        else:
            record["start_time"] = 1_795_390_000 + shift
    else:
        record["start_time"] = copy.deepcopy(GOOD_STARTS[int(rng.integers(0, len(GOOD_STARTS)))])
    return record


@pytest.mark.parametrize("seed", range(30))
def test_moving_starts_read_as_parse_job_reads_them(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parsed = ParsedJobs()
    queue = [
        {**copy.deepcopy(TEMPLATES[int(rng.integers(0, len(TEMPLATES)))]), "job_id": k + 1}
        for k in range(int(rng.integers(4, 30)))
    ]
    next_id = len(queue) + 1
    bad = 0.0 if seed % 3 == 0 else 0.05  # a third of the runs with no hostile value at all
    reads_ok = 0
    for _ in range(14):
        queue = [moved(rng, r, bad) if rng.random() < 0.5 else r for r in queue]
        for k in range(len(queue)):
            if rng.random() < 0.1:  # started, ended, requeued
                queue[k] = with_state(queue[k], STATES[int(rng.integers(0, len(STATES)))])
        finished = [k for k, r in enumerate(queue) if str(r["job_state"]).strip("[]'") in STATES[2:5]]
        if finished and rng.random() < 0.4:  # MinJobAge passed: purged
            queue.pop(finished[int(rng.integers(0, len(finished)))])
        if rng.random() < 0.4:  # a job ended since the last read: listed as finished
            template = TEMPLATES[int(rng.integers(0, len(TEMPLATES)))]
            queue.append(with_state({**copy.deepcopy(template), "job_id": next_id}, STATES[2 + next_id % 3]))
            next_id += 1
        got = outcome(lambda queue=queue: parsed.parse(copy.deepcopy(queue)))
        assert_same_read(got, outcome(lambda queue=queue: [parse_job(r) for r in copy.deepcopy(queue)]))
        reads_ok += got[0] == "ok"
        # Records parse_job refuses replaced, so that later reads succeed and keep jobs.
        for k, record in enumerate(queue):
            if outcome(lambda record=record: parse_job(record))[0] == "error":
                queue[k] = {
                    **copy.deepcopy(TEMPLATES[int(rng.integers(0, len(TEMPLATES)))]),
                    "job_id": next_id,
                }
                next_id += 1
    assert reads_ok >= 4  # the reads keep jobs, not only fail (5 to 14 of 14 in these seeds)


def kept_queue() -> tuple[ParsedJobs, list[dict[str, Any]], list[RJMSJob]]:
    """Every recorded record pending and running, read twice (the second read keeps)."""
    queue = [
        {**copy.deepcopy(with_state(r, state)), "job_id": 2 * k + (state == "RUNNING") + 1}
        for k, r in enumerate(TEMPLATES)
        for state in ("PENDING", "RUNNING")
    ]
    parsed = ParsedJobs()
    parsed.parse(copy.deepcopy(queue))
    return parsed, queue, parsed.parse(copy.deepcopy(queue))


@pytest.mark.parametrize(
    "start", GOOD_STARTS[1:] + [1_795_399_999, {"set": True, "infinite": False, "number": 7}]
)
def test_a_pending_job_whose_estimate_moved_is_the_kept_job(start: Any) -> None:
    parsed, queue, kept = kept_queue()
    again = [{**r, "start_time": copy.deepcopy(start)} for r in queue]
    jobs = parsed.parse(copy.deepcopy(again))
    assert_same_read(("ok", jobs), ("ok", [parse_job(r) for r in again]))
    for job, last in zip(jobs, kept, strict=True):
        if job.state == "PENDING":
            assert job is last
        elif job.start != last.start:  # a running job's start is its own: a new job
            assert job is not last


def test_a_running_job_with_the_same_start_is_the_kept_job() -> None:
    parsed, queue, kept = kept_queue()
    again = copy.deepcopy(queue)  # new float objects for the same start
    assert all(a is b for a, b in zip(parsed.parse(again), kept, strict=True))
    moved_once = [{**r, "start_time": 1_795_390_999} for r in queue]
    jobs = parsed.parse(copy.deepcopy(moved_once))
    running = [(j, k) for j, k in zip(jobs, kept, strict=True) if j.state == "RUNNING"]
    assert running and all(j is not k and j.start == 1_795_390_999.0 for j, k in running)
    # ... and the moved job is kept from then on.
    assert all(a is b for a, b in zip(parsed.parse(copy.deepcopy(moved_once)), jobs, strict=True))


@pytest.mark.parametrize("start", BAD_STARTS)
@pytest.mark.parametrize("state", ["PENDING", "RUNNING", "COMPLETED"])
def test_a_hostile_start_on_a_kept_job_raises_as_parse_job_does(start: Any, state: str) -> None:
    record = with_state({**copy.deepcopy(TEMPLATES[0]), "job_id": 5}, state)
    parsed = ParsedJobs()
    parsed.parse([copy.deepcopy(record)])
    kept = parsed.parse([copy.deepcopy(record)])
    bad = {**record, "start_time": copy.deepcopy(start)}
    want = outcome(lambda: [parse_job(copy.deepcopy(bad))])
    assert want[0] == "error"
    assert_same_read(outcome(lambda: parsed.parse([copy.deepcopy(bad)])), want)
    # A read that raised kept the last good read: the good record is the kept job again.
    assert parsed.parse([copy.deepcopy(record)])[0] is kept[0]
