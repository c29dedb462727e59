"""Shared test data for the workload tests: the trace mirror and small hand-made SWF text."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

from rush.workload.model import SWF_FIELDS, Trace

MIRROR = Path(os.environ.get("RUSH_TRACE_MIRROR", Path(__file__).parents[3] / "shared" / "traces"))

# Header with a continuation line and a repeated key, three jobs (one float field).
GOOD = """; Version: 2.2
; Computer: test machine
; MaxProcs: 8
; UnixStartTime: 1000
; Queue: 0 batch
; Queue: 1 debug
; Note: first line
;       continued here
1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1
2 10 0 50 8 12.5 -1 8 60 -1 1 2 1 -1 1 -1 -1 -1
3 20 1 30 0 -1 -1 2 -1 -1 0 2 1 -1 1 -1 -1 -1
"""
GOOD_LINES = GOOD.count("\n")  # the next line written after GOOD has number GOOD_LINES + 1


def manifest() -> dict[str, dict[str, str]]:
    """Rows of the mirror's MANIFEST.tsv by file name (skips the test without a mirror)."""
    path = MIRROR / "MANIFEST.tsv"
    if not path.exists():
        pytest.skip(f"no trace mirror at {MIRROR}: set RUSH_TRACE_MIRROR")
    with open(path) as fh:
        return {row["file"]: row for row in csv.DictReader(fh, delimiter="\t")}


def same_jobs(a: Trace, b: Trace) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(a[f], b[f]) and a[f].dtype == b[f].dtype for f in SWF_FIELDS
    )
