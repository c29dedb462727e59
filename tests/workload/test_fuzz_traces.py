"""Fuzzed traces (a derandomized hypothesis profile, tests/hostile_mutations.py): an SWF file, a
sacct --json and a --parsable2 file with damaged bytes, and the --json document with hostile
leaves, read the way every command reads them (load_trace, then the workload). Each gives a
workload of finite values with no negative runtime, or a RushError; never another exception."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rush.errors import RushError
from rush.workload.catalogue import load_trace
from rush.workload.model import workload_from_trace
from tests.hostile_mutations import FUZZ, byte_mutate, mutate
from tests.workload.sacct_samples import JOBS_2205, PARSABLE

SWF = b"; Version: 2.2\n; MaxProcs: 8\n" + b"".join(
    f"{i} {i * 10} 5 {100 + i} 4 -1 -1 4 200 -1 1 {i % 3} 1 -1 1 -1 -1 -1\n".encode() for i in range(1, 8)
)
SAMPLES = {"t.swf": SWF, "acct.json": json.dumps(JOBS_2205).encode(), "acct.txt": PARSABLE.encode()}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")  # one file rewritten per example


def read(scratch: Path, name: str, data: bytes) -> None:
    path = scratch / name
    path.write_bytes(data)
    try:
        w = workload_from_trace(load_trace(str(path)))
    except RushError as err:
        assert str(path) in str(err) or "TRACE" in str(err), str(err)  # names the place
        return
    assert all(math.isfinite(v) for v in (*w.submit, *w.runtime)) and (w.runtime >= 0).all()
    assert 0 < w.machine_procs < 2**31


@FUZZ
@given(st.data())
def test_fuzzed_trace_bytes(scratch, data):
    name = data.draw(st.sampled_from(sorted(SAMPLES)))
    read(scratch, name, byte_mutate(SAMPLES[name], data))


@FUZZ
@given(st.data())
def test_fuzzed_sacct_json_document(scratch, data):
    doc = copy.deepcopy(JOBS_2205)
    for _ in range(data.draw(st.integers(0, 1))):  # the job id, whose type and size vary most
        doc["jobs"][0]["job_id"] = data.draw(st.sampled_from([2**64, "²", -1, "7.batch", 2**63 - 1]))
    doc = mutate(doc, data, 3)
    read(scratch, "doc.json", json.dumps(doc).encode())
