"""Slurm accounting import: ``sacct --json`` and ``sacct --parsable2`` into the job model.

Supported:

* ``--json`` from Slurm 22.05 on (data_parser/openapi ``dbv0.0.38``: ``jobs[]`` with
  ``job_id``, ``time.submission/start/end/elapsed`` as Unix seconds, ``time.limit`` in
  *minutes*, ``required.CPUs``, ``tres.allocated`` = ``[{type: "cpu"|"node", count}]``,
  ``user``, ``account``, ``partition``, ``name``, ``state.current`` as a string), and the
  later changes: numbers wrapped as ``{"set", "infinite", "number"}`` (23.02+) and
  ``state.current`` as a list of flags (23.11+).
* ``--parsable2``: ``|``-separated with a header line, e.g.
  ``sacct -a -X --parsable2 --format=JobIDRaw,JobID,Submit,Start,End,Elapsed,Timelimit,AllocCPUS,ReqCPUS,NCPUS,AllocNodes,User,Account,Partition,JobName,State``;
  times ``2023-01-02T03:04:05`` in the local time of the host that ran sacct (``TZ``): read in
  the ``timezone`` given to :func:`read_sacct` (an IANA name, also written to the header's
  ``TimeZoneString``), else in this host's local zone, daylight saving included; or
  ``Unknown``/``None``; durations ``[D-]HH:MM:SS``, ``MM:SS``, ``UNLIMITED``,
  ``Partition_Limit``.

Mapping into the 18 SWF fields: job steps (``123.batch``, ``123.0``) are skipped and
counted in ``Trace.skipped["job_steps"]``; submit is relative to the earliest submit
(header ``UnixStartTime`` = that submit); wait = start - submit; runtime = elapsed;
allocated processors = allocated CPUs, requested processors = requested CPUs (else
``NCPUS``/allocated); requested time in seconds (``-1`` when unlimited); status 1
completed, 0 failed (also timeout, node failure, out of memory), 5 cancelled (also
preempted), -1 otherwise (pending, running). User, group (account), queue (partition) and
application (job name) are integer-coded, their strings in ``Trace.labels``. Job ids stay
when they are unique integers (``JobIDRaw`` is preferred for array tasks); otherwise the
jobs are renumbered 1..n and ``Trace.labels["job_id"]`` keeps Slurm's ids.

Node level (:mod:`rush.workload.sacct_nodes`): nodes, GPUs and exclusivity per job go to
``Trace.node_columns`` (with the partition's code; ``Trace.labels["queue"]`` names it);
``SubmitLine`` may hold ``|`` when it is the last column.
"""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from rush.errors import TraceFormatError
from rush.workload.model import Trace
from rush.workload.sacct_nodes import json_node_fields, node_columns, parsable_node_fields
from rush.workload.trace_file import read_trace_bytes

STATUS = {
    "COMPLETED": 1,
    "FAILED": 0,
    "TIMEOUT": 0,
    "NODE_FAIL": 0,
    "OUT_OF_MEMORY": 0,
    "BOOT_FAIL": 0,
    "DEADLINE": 0,
    "CANCELLED": 5,
    "PREEMPTED": 5,
}
PARSABLE_FORMAT = (
    "JobIDRaw,JobID,Submit,Start,End,Elapsed,Timelimit,AllocCPUS,ReqCPUS,NCPUS,AllocNodes,"
    "User,Account,Partition,JobName,State,NNodes,AllocTRES,ReqTRES,SubmitLine"
)
PARSABLE_FIX = f"produce it with: sacct -a -X --parsable2 --format={PARSABLE_FORMAT}"
JSON_FIX = "produce it with: sacct -a --json (Slurm 22.05 or later)"


class _Coder:
    """Strings to stable small integers (first seen, first numbered)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def __call__(self, value: str | None) -> int:
        if not value:
            return -1
        return self.codes.setdefault(str(value), len(self.codes))

    def labels(self) -> dict[int, str]:
        return {v: k for k, v in self.codes.items()}


# Largest magnitude accepted for a time, duration or count: float64 is exact up to 2**53, and
# every value ends up in an int64 SWF column. NaN, inf and 1e30 are errors, not wrapped ints.
MAX_VALUE = 2.0**53
NUMERIC_KEYS = ("submit", "start", "end", "elapsed", "limit", "alloc_cpus", "req_cpus")


def _number(value: Any) -> float | None:
    """A Slurm JSON number, possibly wrapped as {"set": .., "infinite": .., "number": ..}."""
    if isinstance(value, dict):
        if value.get("infinite") or not value.get("set", True):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    return float(value)


def _check_values(row: dict, where: str, fix: str) -> dict:
    """``row`` if its numbers are finite and within ±2**53, else a TraceFormatError at ``where``."""
    for key in NUMERIC_KEYS:
        value = row[key]
        if value is not None and not (math.isfinite(value) and abs(value) <= MAX_VALUE):
            raise TraceFormatError(
                f"job {row['job_id'][:40]!r}: {key} = {value!r} is not a finite number within ±2**53",
                where=where,
                fix=fix,
            )
    return row


def _state(value: Any) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value or "").split(" ")[0].upper()  # "CANCELLED by 1000" -> "CANCELLED"


def _duration(text: str) -> float | None:
    """``[D-]HH:MM:SS``, ``HH:MM:SS``, ``MM:SS`` or ``MM`` (Slurm's formats) in seconds."""
    text = text.strip()
    if not text or text.upper() in ("UNLIMITED", "PARTITION_LIMIT", "INVALID", "NONE", "UNKNOWN"):
        return None
    days = 0
    if "-" in text:
        day_text, text = text.split("-", 1)
        days = int(day_text)
    parts = [float(p) for p in text.split(":")]
    if len(parts) == 3:
        seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    elif len(parts) == 2:
        # "D-HH:MM" after a day part, else "MM:SS".
        seconds = parts[0] * 3600 + parts[1] * 60 if days else parts[0] * 60 + parts[1]
    elif len(parts) == 1:
        seconds = parts[0] * 3600 if days else parts[0] * 60  # "D-HH" / bare minutes
    else:
        raise ValueError(f"not a Slurm duration: {text!r}")
    return days * 86400 + seconds


def _timestamp(text: str, zone: tzinfo | None = None) -> float | None:
    """Unix seconds of a sacct time; a naive one is in ``zone``, else the host's local time."""
    text = text.strip()
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    if text.isdigit():
        return float(text)
    when = datetime.fromisoformat(text)
    if when.tzinfo is None and zone is not None:
        when = when.replace(tzinfo=zone)
    return when.timestamp()  # naive: local time, as sacct printed it


def _rows_from_json(doc: Any, where: str) -> list[dict]:
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise TraceFormatError(
            "not sacct --json output (no top-level 'jobs' list)", where=where, fix=JSON_FIX
        )
    rows = []
    for k, job in enumerate(doc["jobs"]):
        try:
            t = job["time"]
            alloc = {
                e.get("type"): e.get("count")
                for e in (job.get("tres") or {}).get("allocated") or []
                if isinstance(e, dict)
            }
            limit = _number(t.get("limit"))  # minutes
            row = {
                "job_id": str(job["job_id"]),
                "submit": _number(t.get("submission")),
                "start": _number(t.get("start")),
                "end": _number(t.get("end")),
                "elapsed": _number(t.get("elapsed")),
                "limit": None if limit is None else limit * 60.0,
                "alloc_cpus": _number(alloc.get("cpu")),
                "req_cpus": _number((job.get("required") or {}).get("CPUs")),
                "user": job.get("user"),
                "account": job.get("account"),
                "partition": job.get("partition"),
                "name": job.get("name"),
                "state": _state((job.get("state") or {}).get("current")),
                **json_node_fields(job),
            }
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise TraceFormatError(
                f"job entry {k} is malformed ({exc!r})",
                where=f"{where}: jobs[{k}]",
                fix=f"each job needs job_id and time.submission/start/end; {JSON_FIX}",
            ) from exc
        rows.append(_check_values(row, f"{where}: jobs[{k}]", JSON_FIX))
    return rows


def _int_or_none(text: str | None) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


def _rows_from_parsable(text: str, where: str, zone: tzinfo | None = None) -> list[dict]:
    reader = csv.reader(io.StringIO(text), delimiter="|", quoting=csv.QUOTE_NONE)
    try:
        return _parse_rows(reader, where, zone)
    except csv.Error as exc:  # a NUL byte, a field over csv's size limit: not sacct text
        raise TraceFormatError(
            f"not readable as sacct --parsable2 text ({exc})",
            where=f"{where}:{reader.line_num}",
            fix="is it a binary file? " + PARSABLE_FIX,
        ) from exc


def _parse_rows(reader: Any, where: str, zone: tzinfo | None = None) -> list[dict]:
    header = next(reader, None)
    needed = {"JobID", "Submit", "Start", "End"}
    if not header or not (needed - {"JobID"}) <= set(header) or not {"JobID", "JobIDRaw"} & set(header):
        raise TraceFormatError(
            f"sacct --parsable2 output needs a header line with the columns {sorted(needed)}",
            where=f"{where}:1",
            fix=PARSABLE_FIX,
        )
    rows = []
    for fields in reader:
        lineno = reader.line_num
        if not fields or all(not f.strip() for f in fields):
            continue
        if len(fields) > len(header) and header[-1] == "SubmitLine":  # a '|' in the command line
            fields = [*fields[: len(header) - 1], "|".join(fields[len(header) - 1 :])]
        if len(fields) != len(header):
            raise TraceFormatError(
                f"has {len(fields)} fields, the header {len(header)}",
                where=f"{where}:{lineno}",
                fix="is a job name or comment containing '|'? " + PARSABLE_FIX,
            )
        rec = dict(zip(header, fields, strict=True))
        try:
            start, end = _timestamp(rec["Start"], zone), _timestamp(rec["End"], zone)
            elapsed = _duration(rec["Elapsed"]) if "Elapsed" in rec else None
            if elapsed is None and start is not None and end is not None:
                elapsed = end - start
            alloc = _int_or_none(rec.get("AllocCPUS"))
            requested = _int_or_none(rec.get("ReqCPUS")) or _int_or_none(rec.get("NCPUS")) or alloc
            row = {
                "job_id": rec.get("JobIDRaw") or rec["JobID"],
                "display_id": rec.get("JobID") or rec["JobIDRaw"],
                "submit": _timestamp(rec["Submit"], zone),
                "start": start,
                "end": end,
                "elapsed": elapsed,
                "limit": _duration(rec.get("Timelimit", "")),
                "alloc_cpus": alloc,
                "req_cpus": requested,
                "user": rec.get("User"),
                "account": rec.get("Account"),
                "partition": rec.get("Partition"),
                "name": rec.get("JobName"),
                "state": _state(rec.get("State", "")),
                **parsable_node_fields(rec),
            }
        except (ValueError, OverflowError) as exc:
            raise TraceFormatError(
                f"bad value ({exc})",
                where=f"{where}:{lineno}",
                fix="times as 2023-01-02T03:04:05, durations as [D-]HH:MM:SS, counts (NNodes, gres/gpu=N) "
                "as whole numbers; " + PARSABLE_FIX,
            ) from exc
        rows.append(_check_values(row, f"{where}:{lineno}", PARSABLE_FIX))
    return rows


def _is_step(job_id: str) -> bool:
    return "." in job_id


def _zone(name: str | None) -> tzinfo | None:
    if name is None:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise TraceFormatError(
            f"unknown time zone {name!r}", where="--timezone", fix="an IANA name such as Europe/Oslo or UTC"
        ) from exc


def read_sacct(path: str | Path, timezone: str | None = None) -> Trace:
    """Read ``sacct --json`` or ``--parsable2`` output (detected from the content).

    ``timezone``: the zone of ``--parsable2``'s wall-clock times (default: this host's).
    """
    path = Path(path)
    raw = read_trace_bytes(path, "accounting", fix="give readable sacct output (plain or gzip)")
    text = raw.decode("utf-8", errors="replace")
    if text.lstrip().startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(
                f"invalid JSON: {exc.msg}",
                where=f"{path}:{exc.lineno}",
                fix="the file is cut or not JSON; " + JSON_FIX,
            ) from exc
        except RecursionError as exc:  # [[[[...]]]] nested deeper than Python's stack
            raise TraceFormatError(
                "the JSON is nested too deeply to be sacct output", where=str(path), fix=JSON_FIX
            ) from exc
        rows = _rows_from_json(doc, str(path))
    else:
        rows = _rows_from_parsable(text, str(path), _zone(timezone))
    skipped: dict[str, int] = {}
    steps = sum(_is_step(r["job_id"]) for r in rows)
    jobs = [r for r in rows if not _is_step(r["job_id"])]
    never = sum(r["submit"] is None for r in jobs)
    jobs = [r for r in jobs if r["submit"] is not None]
    if steps:
        skipped["job_steps"] = steps
    if never:
        skipped["no_submit_time"] = never
    stem = path.name.removesuffix(".gz")
    trace = _to_trace(jobs, stem.rsplit(".", 1)[0] if "." in stem else stem)
    trace.skipped = skipped
    trace.source = str(path)
    if timezone is not None:
        trace.header["TimeZoneString"] = timezone
    return trace


def _job_ids(rows: list[dict]) -> tuple[np.ndarray, dict[int, str] | None]:
    """Slurm's ids if they are unique integers of int64, else 1..n plus the original ids as labels."""
    raw = [r["job_id"] for r in rows]
    # isascii: str.isdigit also accepts "²", which int() refuses; the length bounds int()'s work.
    in_int64 = all(i.isascii() and i.isdigit() and len(i) < 40 and int(i) < 2**63 for i in raw)
    if in_int64 and len(set(raw)) == len(raw):
        return np.array([int(i) for i in raw], dtype=np.int64), None
    ids = np.arange(1, len(rows) + 1, dtype=np.int64)
    return ids, {k + 1: r.get("display_id", r["job_id"]) for k, r in enumerate(rows)}


def _to_trace(rows: list[dict], name: str) -> Trace:
    rows = sorted(rows, key=lambda r: r["submit"])  # SWF is in submit order
    users, accounts, partitions, names = _Coder(), _Coder(), _Coder(), _Coder()
    n = len(rows)
    origin = min((r["submit"] for r in rows), default=0.0)
    cols = {
        k: np.full(n, -1, dtype=np.int64)
        for k in ("submit", "wait", "runtime", "alloc_procs", "req_procs", "req_time", "status")
    }
    cols.update({k: np.full(n, -1, dtype=np.int64) for k in ("user", "group", "app", "queue")})
    cols["job_id"], id_labels = _job_ids(rows)
    for k, r in enumerate(rows):
        cols["submit"][k] = int(r["submit"] - origin)
        # Slurm writes start = 0 (JSON) or Unknown (text) for jobs that never started.
        if r["start"]:
            cols["wait"][k] = max(0, int(r["start"] - r["submit"]))
            if r["elapsed"] is not None:
                cols["runtime"][k] = int(r["elapsed"])
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
    trace.node_columns = node_columns(rows, cols["queue"].copy())
    trace.header.update(
        {
            "Version": "2.2",
            "Note": "converted from Slurm accounting (sacct) by rush",
            "MaxJobs": str(n),
            "MaxRecords": str(n),
            "UnixStartTime": str(int(origin)),
        }
    )
    trace.labels = {
        "user": users.labels(),
        "group": accounts.labels(),
        "queue": partitions.labels(),
        "app": names.labels(),
    }
    if id_labels is not None:
        trace.labels["job_id"] = id_labels
    return trace
