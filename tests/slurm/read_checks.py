"""Differential checks of a kept Slurm read (``ParsedJobs``) against a fresh ``parse_job``,
shared by the kept-read tests: a read's outcome, and two outcomes compared job by job."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from rush.rjms.base import RJMSJob

RECORDED = Path(__file__).resolve().parent / "recorded"
NAMES = [f.name for f in fields(RJMSJob)]


def recorded_jobs() -> list[dict[str, Any]]:
    """Every job record of every recorded answer (22.05 and 25.11, commands and each OpenAPI version)."""
    found = []
    for path in sorted(RECORDED.glob("*/*/jobs.json")):
        found += json.loads(path.read_text())["jobs"]
    return found


def outcome(read: Any) -> tuple:
    """What a read gives: ("ok", jobs) or ("error", its class, its message)."""
    try:
        return ("ok", read())
    except Exception as exc:  # noqa: BLE001 - the errors are what is compared
        return ("error", type(exc), str(exc))


def assert_same_read(got: tuple, want: tuple) -> None:
    """The same error, or job by job equal jobs whose fields have the same types and reprs."""
    assert got[0] == want[0], (got, want)
    if got[0] == "error":
        assert got[1:] == want[1:]
        return
    assert len(got[1]) == len(want[1])
    for made, wanted in zip(got[1], want[1], strict=True):
        assert made == wanted and type(made) is type(wanted)
        assert [type(getattr(made, n)) for n in NAMES] == [type(getattr(wanted, n)) for n in NAMES]
        assert repr(made) == repr(wanted)
