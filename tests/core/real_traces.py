"""Real traces from the mirror (RUSH_TRACE_MIRROR) as workloads, for tests that need them."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pytest

from rush.workload.model import Workload, workload_from_trace

MIRROR = Path(os.environ.get("RUSH_TRACE_MIRROR", Path(__file__).parents[3] / "shared" / "traces"))


TRACES = {
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "CTC-SP2": "CTC-SP2-1996-3.1-cln.swf.gz",
}


@cache
def real_workload(name: str) -> Workload:
    path = MIRROR / TRACES[name]
    if not path.exists():
        pytest.skip(f"trace {path} not available: set RUSH_TRACE_MIRROR to the traces directory")
    from rush.workload.swf import read_swf

    return workload_from_trace(read_swf(path))
