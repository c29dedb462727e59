"""Fuzzed Slurm answers (a derandomized hypothesis profile, tests/hostile_mutations.py): the
recorded 22.05 and 25.11 job and node records with hostile leaves, and damaged sprio, sshare
and jobcomp text. Each gives jobs with finite, non-negative numbers or the error the backend
turns into an RJMSError (KeyError, TypeError, ValueError), never another exception."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rush.errors import RJMSError
from rush.rjms import slurm_json
from rush.rjms.site_factor import parse_sprio, parse_sshare
from rush.rjms.slurm import parse_jobcomp
from tests.hostile_mutations import FUZZ, HOSTILE_LEAVES, byte_mutate, finite_and_not_negative, mutate

RECORDED = Path(__file__).parents[1] / "slurm" / "recorded"
JOBS = [job for f in sorted(RECORDED.glob("*/*/jobs.json")) for job in json.loads(f.read_text())["jobs"]]
NODES = [json.loads(f.read_text())["nodes"] for f in sorted(RECORDED.glob("*/*/nodes.json"))]
FUZZ_RECORDS = settings(FUZZ, max_examples=600)  # a record has ~150 leaves to choose from
READ_ERRORS = (KeyError, TypeError, ValueError)  # what SlurmBackend turns into an RJMSError
JOBCOMP = (
    "JobId=5 UserId=a(1) GroupId=a(1) Name=job JobState=COMPLETED Partition=debug TimeLimit=1 "
    "StartTime=2024-01-01T00:00:00 EndTime=2024-01-01T00:01:00 NodeList=n1 NodeCnt=1 ProcCnt=4 "
    "SubmitTime=2024-01-01T00:00:00 ExitCode=0:0\n"
)


@FUZZ_RECORDS
@given(st.data())
def test_fuzzed_job_records(data):
    record = mutate(data.draw(st.sampled_from(JOBS)), data, 2)
    for _ in range(data.draw(st.integers(0, 2))):  # and the fields parse_job reads, most often
        record[data.draw(st.sampled_from(slurm_json.JOB_FIELDS))] = copy.deepcopy(data.draw(HOSTILE_LEAVES))
    try:
        job = slurm_json.parse_job(record)
    except READ_ERRORS:
        return
    assert finite_and_not_negative(job.submit, job.procs) and job.requested_time >= 0
    assert job.start is None or finite_and_not_negative(job.start)


@FUZZ_RECORDS
@given(st.data())
def test_fuzzed_node_records(data):
    records = mutate(data.draw(st.sampled_from(NODES)), data, 4)
    try:
        total, free, _ = slurm_json.parse_nodes(records)
    except READ_ERRORS:
        return
    assert 0 <= free <= total


@FUZZ
@given(st.data())
def test_fuzzed_command_text(data):
    parse_jobcomp(byte_mutate(JOBCOMP.encode() * 2, data).decode("utf-8", "replace"))
    factors = parse_sprio(byte_mutate(b"12 100\n13 -5\n", data).decode("utf-8", "replace"))
    assert all(type(k) is int and type(v) is int for k, v in factors.items())
    try:
        shares = parse_sshare(
            byte_mutate(b"acct|||0.5\n acct|alice||0.25\n", data).decode("utf-8", "replace")
        )
    except RJMSError:
        return
    assert all(0 <= v <= 1 for v in shares.values())
