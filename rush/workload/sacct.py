"""Slurm accounting import: ``sacct --json`` and ``sacct --parsable2`` into the job model.

Supported: Slurm 22.05+ ``--json`` (``jobs[]`` with ``time.submission/start/end/elapsed``,
``time.limit`` in minutes as a number or, from 23.02, ``{"set", "infinite", "number"}``,
``required.CPUs``, ``tres.allocated`` entries of type ``cpu``/``node``, ``user``,
``account``, ``partition``, ``name``, ``state.current`` as a string or a list), and
``--parsable2`` (``|``-separated with a header line; times ``2023-01-02T03:04:05``,
durations ``[D-]HH:MM:SS``/``MM:SS``, ``UNLIMITED``/``Partition_Limit``).

Job steps (``123.batch``, ``123.0``) are skipped. The mapping into SWF fields: submit
relative to the earliest submit (``UnixStartTime`` = that submit), wait = start - submit,
runtime = elapsed, allocated/requested CPUs, requested time in seconds, status 1 completed
/ 0 failed / 5 cancelled, and user, group (account), queue (partition) and application
(job name) integer-coded with their strings in ``Trace.labels``.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rush.errors import TraceFormatError
from rush.workload.model import Trace

STATUS = {
    "COMPLETED": 1,
    "FAILED": 0,
    "TIMEOUT": 0,
    "NODE_FAIL": 0,
    "OUT_OF_MEMORY": 0,
    "CANCELLED": 5,
    "PREEMPTED": 5,
}


class _Coder:
    """Strings to stable small integers (first seen, first numbered)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def __call__(self, value: str | None) -> int:
        if not value:
            return -1
        return self.codes.setdefault(value, len(self.codes))

    def labels(self) -> dict[int, str]:
        return {v: k for k, v in self.codes.items()}


def _number(value) -> float | None:
    """A Slurm JSON number, possibly wrapped as {"set": .., "infinite": .., "number": ..}."""
    if isinstance(value, dict):
        if value.get("infinite"):
            return None
        if not value.get("set", True):
            return None
        value = value.get("number")
    if value is None:
        return None
    return float(value)


def _state(value) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value or "").split(" ")[0].upper()


def _duration(text: str) -> float | None:
    """``[D-]HH:MM:SS``, ``HH:MM:SS``, ``MM:SS`` or ``MM`` (Slurm's formats) in seconds."""
    text = text.strip()
    if not text or text.upper() in ("UNLIMITED", "PARTITION_LIMIT", "INVALID", "NONE"):
        return None
    days = 0
    if "-" in text:
        day_text, text = text.split("-", 1)
        days = int(day_text)
    parts = [float(p) for p in text.split(":")]
    if len(parts) == 3:
        seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    elif len(parts) == 2:
        seconds = parts[0] * 60 + parts[1]
    else:
        seconds = parts[0] * 60  # a bare number is minutes (sbatch -t convention)
    return days * 86400 + seconds


def _timestamp(text: str) -> float | None:
    text = text.strip()
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    if text.isdigit():
        return float(text)
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _rows_from_json(doc: dict, where: str) -> list[dict]:
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise TraceFormatError(
            "not sacct --json output (no top-level 'jobs' list)",
            where=where,
            fix="produce it with: sacct --json ...",
        )
    rows = []
    for k, job in enumerate(doc["jobs"]):
        try:
            t = job["time"]
            alloc = {
                e.get("type"): e.get("count")
                for e in job.get("tres", {}).get("allocated", [])
                if isinstance(e, dict)
            }
            limit = _number(t.get("limit"))
            rows.append(
                {
                    "job_id": str(job["job_id"]),
                    "submit": _number(t.get("submission")),
                    "start": _number(t.get("start")),
                    "end": _number(t.get("end")),
                    "elapsed": _number(t.get("elapsed")),
                    "limit": None if limit is None else limit * 60.0,
                    "alloc_cpus": _number(alloc.get("cpu")),
                    "req_cpus": _number(job.get("required", {}).get("CPUs")),
                    "user": job.get("user"),
                    "account": job.get("account"),
                    "partition": job.get("partition"),
                    "name": job.get("name"),
                    "state": _state(job.get("state", {}).get("current")),
                }
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceFormatError(
                f"job entry {k} is malformed ({exc!r})", where=f"{where}: jobs[{k}]"
            ) from exc
    return rows


def _rows_from_parsable(text: str, where: str) -> list[dict]:
    reader = csv.reader(io.StringIO(text), delimiter="|")
    header = next(reader, None)
    needed = {"JobID", "Submit", "Start", "End"}
    if not header or not needed <= set(header):
        raise TraceFormatError(
            f"sacct --parsable2 output needs the columns {sorted(needed)}",
            where=where,
            fix="sacct --parsable2 --format=JobID,Submit,Start,End,Elapsed,Timelimit,AllocCPUS,ReqCPUS,User,Account,Partition,JobName,State",
        )
    rows = []
    for lineno, fields in enumerate(reader, start=2):
        if not fields or all(not f for f in fields):
            continue
        if len(fields) != len(header):
            raise TraceFormatError(
                f"has {len(fields)} fields, the header {len(header)}", where=f"{where}:{lineno}"
            )
        rec = dict(zip(header, fields, strict=True))
        try:
            start, end = _timestamp(rec["Start"]), _timestamp(rec["End"])
            elapsed = _duration(rec["Elapsed"]) if "Elapsed" in rec else None
            rows.append(
                {
                    "job_id": rec["JobID"],
                    "submit": _timestamp(rec["Submit"]),
                    "start": start,
                    "end": end,
                    "elapsed": elapsed if elapsed is not None else (end - start if start and end else None),
                    "limit": _duration(rec.get("Timelimit", "")),
                    "alloc_cpus": float(rec["AllocCPUS"]) if rec.get("AllocCPUS") else None,
                    "req_cpus": float(rec["ReqCPUS"]) if rec.get("ReqCPUS") else None,
                    "user": rec.get("User"),
                    "account": rec.get("Account"),
                    "partition": rec.get("Partition"),
                    "name": rec.get("JobName"),
                    "state": _state(rec.get("State", "")),
                }
            )
        except ValueError as exc:
            raise TraceFormatError(f"bad value ({exc})", where=f"{where}:{lineno}") from exc
    return rows


def read_sacct(path: str | Path) -> Trace:
    """Read ``sacct --json`` or ``--parsable2`` output (detected from the content)."""
    path = Path(path)
    text = path.read_text(errors="replace")
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(f"invalid JSON: {exc.msg}", where=f"{path}:{exc.lineno}") from exc
        rows = _rows_from_json(doc, str(path))
    else:
        rows = _rows_from_parsable(text, str(path))
    # Steps are not jobs; jobs that never started have nothing to replay.
    rows = [r for r in rows if "." not in r["job_id"] and r["submit"] is not None]
    return _to_trace(rows, path.stem)


def _to_trace(rows: list[dict], name: str) -> Trace:
    users, accounts, partitions, names = _Coder(), _Coder(), _Coder(), _Coder()
    n = len(rows)
    origin = min((r["submit"] for r in rows), default=0.0)
    cols = {
        k: np.full(n, -1, dtype=np.int64)
        for k in (
            "job_id",
            "submit",
            "wait",
            "runtime",
            "alloc_procs",
            "req_procs",
            "req_time",
            "status",
            "user",
            "group",
            "app",
            "queue",
        )
    }
    for k, r in enumerate(rows):
        base_id = r["job_id"].split("_")[0]
        cols["job_id"][k] = int(base_id) if base_id.isdigit() else k + 1
        cols["submit"][k] = int(r["submit"] - origin)
        if r["start"] is not None and r["start"] > 0:
            cols["wait"][k] = int(r["start"] - r["submit"])
            cols["runtime"][k] = int(r["elapsed"]) if r["elapsed"] is not None else -1
        cols["alloc_procs"][k] = int(r["alloc_cpus"]) if r["alloc_cpus"] else -1
        cols["req_procs"][k] = int(r["req_cpus"]) if r["req_cpus"] else -1
        cols["req_time"][k] = int(r["limit"]) if r["limit"] is not None else -1
        cols["status"][k] = STATUS.get(r["state"], -1)
        cols["user"][k] = users(r["user"])
        cols["group"][k] = accounts(r["account"])
        cols["queue"][k] = partitions(r["partition"])
        cols["app"][k] = names(r["name"])
    trace = Trace.from_columns(n, **cols)
    trace.name = name
    trace.header["UnixStartTime"] = str(int(origin))
    trace.header["Note"] = "converted from Slurm accounting (sacct) by rush"
    trace.labels = {
        "user": users.labels(),
        "group": accounts.labels(),
        "queue": partitions.labels(),
        "app": names.labels(),
    }
    return trace
