"""The Slurm read that follows the change (:class:`rush.rjms.slurm_json.ParsedJobs`): a job
whose record is unchanged in every field ``parse_job`` reads is the last read's job.

Differential against ``parse_job`` per record, read after read, over random sequences of
queues built from the recorded answers of every Slurm and OpenAPI version: records changed in
fields parse_job reads and in fields it ignores, values flipped between 1, 1.0, true and "1"
(at the top level and inside v0.0.39+'s ``{set, infinite, number}``), fields added and
removed, job ids flipped or repeated, hostile values that make parse_job raise, jobs arriving
and leaving, the lever switched. Each read must give, job by job, an equal job with fields of
the same types (``repr``), or the same error. Also: the field list is what parse_job reads,
the kept map holds only the last read's jobs, and the real backend over a changing squeue
answer reads what a fresh backend reads."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rush.rjms.base import get_backend, with_fields
from rush.rjms.slurm_json import JOB_FIELDS, ParsedJobs, parse_job
from tests.slurm.read_checks import RECORDED, assert_same_read, outcome, recorded_jobs

TEMPLATES = recorded_jobs()
# Values a field may be flipped to: the same number as int, float, bool and string, nothing,
# and hostile ones parse_job refuses (negative, NaN, huge, wrong shapes).
FLIPS: list[Any] = [0, 1, 1.0, True, False, "1", None, -0.0, 0.0, -1, math.nan, 2**40, 2**64, [], {}, [1]]
NESTED = [
    {"set": True, "infinite": False, "number": 1},
    {"set": True, "infinite": False, "number": 1.0},
    {"set": 1, "infinite": 0, "number": 1},
    {"set": True, "infinite": 1, "number": 0},
    {"set": True, "infinite": True, "number": 0},
    {"set": False, "infinite": False, "number": 0},
    {"set": True, "number": "1"},
    {"number": True},
    {"infinite": False, "set": True, "number": 1},
]
STATES: list[Any] = ["PENDING", ["PENDING"], "RUNNING", ["RUNNING"], ["COMPLETED", "COMPLETING"], [], [1], 3]


class RecordingDict(dict):
    """A record that notes every field asked for; reading it whole is a failure."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return super().__contains__(key)

    def _whole(self, *_: Any) -> Any:
        raise AssertionError("parse_job read the whole record")

    keys = items = values = __iter__ = _whole


# The fields changed: what parse_job reads, written out here (not the module's list, which
# this test checks), and two it does not read.
CHANGED = (
    "job_id", "job_state", "start_time", "submit_time", "state_reason", "nice", "cpus",
    "time_limit", "user_name", "account", "partition", "name", "admin_comment", "restart_cnt",
    "priority", "node_count", "tres_req_str", "tasks", "tasks_per_node", "shared", "exclusive",
    "job_resources", "tres_per_node", "tres_per_job", "tres_per_task", "gres_detail",
    "end_time", "array_job_id",
)  # fmt: skip
# A text field's values that parse_job reads: the same GPU count written apart, tags, reasons.
TEXTS = [
    "gres/gpu:1",
    "gres/gpu:2",
    "gpu:1",
    "cpu=4,node=2",
    "cpu=4,node=1",
    "rush:idempotent=1",
    "JobHeldUser",
]


def same_value_as_another_type(value: Any) -> Any:
    """1 -> 1.0 -> True -> 1 (0 -> -0.0 -> False), inside number objects too: equal under ==."""
    if isinstance(value, dict):
        return {k: same_value_as_another_type(v) for k, v in value.items()}
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return -0.0 if value == 0 else float(value)
    if isinstance(value, float) and value in (0.0, 1.0):
        return bool(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def mutate(rng: np.random.Generator, record: dict[str, Any], ids: list[int]) -> dict[str, Any]:
    """The record with one random change (a copy; the read's records are never changed after)."""
    record = copy.deepcopy(record)
    kind = int(rng.integers(0, 14))
    field = str(rng.choice(CHANGED))
    if kind in (9, 11, 12, 13) and field in record:  # the same value as another type
        record[field] = same_value_as_another_type(record[field])
    elif kind == 10:
        record[field] = str(rng.choice(TEXTS))
    elif kind == 0:  # a flip at the top level
        record[field] = copy.deepcopy(FLIPS[int(rng.integers(0, len(FLIPS)))])
    elif kind == 1:  # a flip inside v0.0.39+'s number object
        record[field] = copy.deepcopy(NESTED[int(rng.integers(0, len(NESTED)))])
    elif kind == 2:  # a field removed
        record.pop(field, None)
    elif kind == 3:  # a field parse_job ignores: Slurm's scheduler writes these every pass
        record["last_sched_evaluation"] = int(rng.integers(0, 2**31))
        record["flags"] = ["BACKFILL_ATTEMPTED"] if rng.random() < 0.5 else []
    elif kind == 4:  # the job id flipped or another job's
        record["job_id"] = [True, 1.0, "1", ids[int(rng.integers(0, len(ids)))], 0][int(rng.integers(0, 5))]
    elif kind == 5:
        record["job_state"] = copy.deepcopy(STATES[int(rng.integers(0, len(STATES)))])
    elif kind == 6:  # the priority moves (the age factor), int or float
        record["priority"] = int(rng.integers(0, 10)) if rng.random() < 0.5 else float(rng.integers(0, 10))
    elif kind == 7:  # tags, reason, names: text changes and text type flips
        record[str(rng.choice(["admin_comment", "state_reason", "name", "user_name", "partition"]))] = [
            "rush:idempotent=1",
            "JobHeldUser",
            "",
            1,
            None,
        ][int(rng.integers(0, 5))]
    else:  # a field added that the record did not have, or an unknown field
        record[str(rng.choice(["tasks_per_node", "exclusive", "gres_detail", "x_unknown"]))] = copy.deepcopy(
            FLIPS[int(rng.integers(0, len(FLIPS)))]
        )
    return record


def fresh_record(rng: np.random.Generator, job_id: int) -> dict[str, Any]:
    record = {**copy.deepcopy(TEMPLATES[int(rng.integers(0, len(TEMPLATES)))]), "job_id": job_id}
    if rng.random() < 0.5:  # a nice the "nice" lever reads as the site factor
        record["nice"] = int(rng.integers(-3, 4)) % 2**32
    return record


@pytest.mark.parametrize("seed", range(40))
def test_cached_reads_equal_parse_job_read_after_read(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parsed = ParsedJobs()
    queue = [fresh_record(rng, k + 1) for k in range(int(rng.integers(1, 25)))]
    next_id = len(queue) + 1
    lever = "site_factor"
    for _ in range(16):
        ids = [r.get("job_id", 1) for r in queue]
        for k in range(len(queue)):
            if rng.random() < 0.25:
                queue[k] = mutate(rng, queue[k], ids)
        if rng.random() < 0.3 and queue:  # a job leaves
            queue.pop(int(rng.integers(0, len(queue))))
        if rng.random() < 0.3:  # a job arrives
            queue.append(fresh_record(rng, next_id))
            next_id += 1
        if rng.random() < 0.1:
            queue.append("not a record")  # type: ignore[arg-type]
        if rng.random() < 0.2:
            lever = "nice" if lever == "site_factor" else "site_factor"
        if rng.random() < 0.2:
            queue = [queue[i] for i in rng.permutation(len(queue))]
        records = copy.deepcopy(queue)
        assert_same_read(
            outcome(lambda records=records, lever=lever: parsed.parse(records, lever)),
            outcome(lambda queue=queue, lever=lever: [parse_job(r, lever) for r in copy.deepcopy(queue)]),
        )
        queue = [r for r in queue if isinstance(r, dict)]
        # Repaired now and then so that reads succeed (and keep jobs) as well as fail.
        if rng.random() < 0.5:
            repaired = []
            for r in queue:
                try:
                    parse_job(r, lever)
                    repaired.append(r)
                except (KeyError, TypeError, ValueError):
                    repaired.append(fresh_record(rng, next_id))
                    next_id += 1
            queue = repaired


def test_an_unchanged_record_gives_the_same_job() -> None:
    parsed = ParsedJobs()
    queue = [{**copy.deepcopy(r), "job_id": k + 1} for k, r in enumerate(TEMPLATES)]
    first = parsed.parse(copy.deepcopy(queue))
    again = copy.deepcopy(queue)
    for r in again:
        r["last_sched_evaluation"] = 123  # Slurm writes it every pass; parse_job does not read it
        r["flags"] = ["BACKFILL_ATTEMPTED"]
    assert all(a is b for a, b in zip(first, parsed.parse(again), strict=True))
    assert len(parsed) == len(queue)
    # Under the other lever the same records are other jobs (the site factor is the nice).
    niced = [{**r, "nice": 4} for r in again]
    parsed.parse(copy.deepcopy(niced))
    assert_same_read(
        outcome(lambda: parsed.parse(copy.deepcopy(niced), "nice")),
        outcome(lambda: [parse_job(r, "nice") for r in niced]),
    )


NEW = next(r for r in TEMPLATES if isinstance(r.get("priority"), dict) and "PENDING" in r["job_state"])
OLD = next(r for r in TEMPLATES if isinstance(r.get("priority"), int) and r["job_state"] == "PENDING")
# (base, field, value, the same value under == as another type): parse_job reads them apart.
FLIPPED = [
    (OLD, "priority", 0, -0.0),
    (OLD, "priority", 0, False),
    (OLD, "restart_cnt", 1, True),
    (OLD, "nice", 0, False),
    (OLD, "cpus", 1, True),
    (OLD, "exclusive", True, 1),
    (OLD, "job_id", 1, 1.0),
    (OLD, "job_id", 1, True),
    (NEW, "priority", {"set": True, "infinite": True, "number": 0}, {"set": True, "infinite": 1, "number": 0}),
    (NEW, "priority", {"set": False, "infinite": False, "number": 5}, {"set": 0, "infinite": False, "number": 5}),
    (NEW, "time_limit", {"set": True, "infinite": False, "number": 5}, {"set": True, "infinite": False, "number": 5.0}),
    (NEW, "time_limit", {"set": True, "infinite": False, "number": 1}, {"set": True, "infinite": False, "number": True}),
]  # fmt: skip


@pytest.mark.parametrize(("base", "field", "value", "flipped"), FLIPPED)
def test_the_same_value_as_another_type_is_a_changed_record(base, field, value, flipped) -> None:
    assert value == flipped  # what Python's == cannot tell apart
    parsed = ParsedJobs()
    record = {**copy.deepcopy(base), "job_id": 1, field: value}
    parsed.parse([copy.deepcopy(record)])
    again = {**record, field: flipped}
    assert_same_read(
        outcome(lambda: parsed.parse([copy.deepcopy(again)])), outcome(lambda: [parse_job(again)])
    )


def test_a_record_that_raises_is_never_served_from_the_kept_jobs() -> None:
    parsed = ParsedJobs()
    good = {**copy.deepcopy(TEMPLATES[0]), "job_id": 7}
    parsed.parse([good])
    for bad_value in (True, -1, math.nan, "1", [1]):
        bad = {**copy.deepcopy(good), "cpus": bad_value}
        with pytest.raises(ValueError):
            parse_job(copy.deepcopy(bad))
        with pytest.raises(ValueError):
            parsed.parse([bad])
        # A read that raises keeps the last good read: the good record is still reused.
        assert parsed.parse([copy.deepcopy(good)])[0] == parse_job(good)


def test_the_kept_jobs_are_only_the_last_reads() -> None:
    parsed = ParsedJobs()
    parsed.parse([{**copy.deepcopy(TEMPLATES[0]), "job_id": k} for k in range(1, 501)])
    assert len(parsed) == 500
    parsed.parse([{**copy.deepcopy(TEMPLATES[0]), "job_id": k} for k in (3, 4, 1000)])
    assert len(parsed) == 3  # jobs that left are dropped
    parsed.parse([])
    assert len(parsed) == 0


def test_job_fields_are_what_parse_job_reads() -> None:
    rng = np.random.default_rng(0)
    asked: set[str] = set()
    records = [RecordingDict(r) for r in TEMPLATES]
    records += [RecordingDict(mutate(rng, r, [1])) for r in TEMPLATES for _ in range(40)]
    for record in records:
        for lever in ("site_factor", "nice"):
            try:
                parse_job(record, lever)
            except (KeyError, TypeError, ValueError):
                pass
            asked |= record.asked
    assert asked <= set(JOB_FIELDS), asked - set(JOB_FIELDS)
    assert {"job_id", "job_state", "priority", "job_resources", "tres_req_str"} <= asked  # it recorded


@pytest.mark.parametrize("seed", range(10))
def test_site_factors_equal_with_fields(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parsed = ParsedJobs()
    queue = [fresh_record(rng, k + 1) for k in range(20)]
    factors: dict[int, Any] = {}
    for _ in range(8):
        for k in range(len(queue)):
            if rng.random() < 0.2:
                queue[k] = {**queue[k], "priority": int(rng.integers(0, 5))}
        jobs = parsed.parse(copy.deepcopy(queue))
        for job_id in range(1, 21):
            if rng.random() < 0.3:
                factors[job_id] = [0, 1, 1.0, True, -3, 2**31][int(rng.integers(0, 6))]
        made = parsed.with_site_factors(jobs, factors)
        want = [with_fields(j, site_factor=factors.get(j.job_id, 0)) for j in jobs]
        assert_same_read(("ok", made), ("ok", want))


def recorded_squeue(tmp_path: Path, answer: Path, factors: Path) -> Path:
    """A bin directory whose squeue prints ``answer``, sprio ``factors`` and scontrol the
    recorded 25.11 nodes."""
    directory = RECORDED / "25.11" / "commands"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, text in (("squeue", answer), ("scontrol", directory / "nodes.json"), ("sprio", factors)):
        (bin_dir / tool).write_text(f"#!/bin/sh\ncat '{text}'\n")
        (bin_dir / tool).chmod(0o755)
    return bin_dir


def test_the_backend_reads_what_a_fresh_backend_reads(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    answer, factors = tmp_path / "jobs.json", tmp_path / "sprio.txt"
    base = json.loads((RECORDED / "25.11" / "commands" / "jobs.json").read_text())
    bin_dir = recorded_squeue(tmp_path, answer, factors)
    backend = get_backend("slurm", priority_lever="site_factor", bin_dir=str(bin_dir))
    queue = copy.deepcopy(base["jobs"])
    answer.write_text(json.dumps({**base, "jobs": queue}))
    factors.write_text("2 5\n3 7\n")
    first = backend.read_state().jobs
    assert all(
        a is b for a, b in zip(backend.read_state().jobs, first, strict=True)
    )  # unchanged: the same jobs
    for _ in range(8):
        ids = [r.get("job_id", 1) for r in queue]
        queue = [mutate(rng, r, ids) if rng.random() < 0.3 else r for r in queue]
        answer.write_text(json.dumps({**base, "jobs": queue}))
        factors.write_text("".join(f"{r['job_id']} {int(rng.integers(0, 3))}\n" for r in queue[:3]))
        want = outcome(
            lambda: get_backend("slurm", priority_lever="site_factor", bin_dir=str(bin_dir)).read_state().jobs
        )
        assert_same_read(outcome(lambda: backend.read_state().jobs), want)
