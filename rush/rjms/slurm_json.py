"""The one place that reads Slurm's JSON: every shape from 22.05 to 25.11 into rush's job model.

Slurm's answers (``squeue --json``, ``scontrol show nodes --json``, ``sinfo --json`` and
slurmrestd's ``GET jobs``/``GET nodes``) share their records across versions, but the shapes
of the values changed with the data_parser versions (v0.0.38 in 22.05 .. v0.0.44 in 25.11):

==================  ===========================  ===============================================
value               v0.0.38 (22.05)              v0.0.39+ (23.02 .. 25.11, 26.05)
==================  ===========================  ===============================================
times, counts       ``1700000000``, ``4``        ``{"set": true, "infinite": false, "number": 4}``
unlimited limit     ``null`` (or NO_VAL)         ``{"set": false, "infinite": true, "number": 0}``
job state           ``"COMPLETING"``             ``["COMPLETED", "COMPLETING"]`` (v0.0.40+)
node state          ``"mixed"`` + ``state_flags`` ``["MIXED", "DRAIN"]``
exit code           ``768`` (a wait status)       ``{"status": [...], "return_code": {...},
                                                  "signal": {"id": {...}, "name": ""}}``
``sinfo --json``    ``{"nodes": [...]}``          ``{"sinfo": [...]}`` (per partition and state;
                                                  nodes come from ``scontrol show nodes --json``)
==================  ===========================  ===============================================

Nothing here asks which version wrote an answer: each value is read by its shape, and every
shape maps to the same :class:`RJMSJob` / node totals. A job state list is folded into the one
name Slurm itself prints (``job_state_string``: a flag such as COMPLETING or REQUEUED before
the base state), so the rest of rush sees the same names on every version. A node is free
only when no element of its state (nor of 22.05's ``state_flags``) is a state that offers no
CPUs. Every field is checked: a wrong type, a negative or non-finite count or time, an absurd
list is garbage (a broken proxy, a corrupt answer), never a job; the read fails as a whole.
"""

from __future__ import annotations

import marshal
import math
import operator
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields
from typing import Any

from rush.core.resources import Node, NodeState, Request
from rush.errors import RJMSError
from rush.rjms import site_factor as site_factor_values
from rush.rjms.base import RJMSJob, with_fields

# Slurm's "no value" / "infinite" markers for 32- and 64-bit fields (NO_VAL, INFINITE).
NO_VAL = 0xFFFFFFFE
NO_VAL_MARKERS = frozenset({NO_VAL, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF})
MAX_TIME = 2.0**40  # unix seconds; far beyond any real timestamp
MAX_COUNT = 2**32
# A state list names one base state and a few flags; more is not a state (bounded work).
MAX_STATE_NAMES = 64
MAX_NAME = 256

FINAL_STATES = frozenset(
    {
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "REVOKED",
    }
)
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "SIGNALING", "STAGE_OUT"})
# Slurm's job_state_string(): these flags name the state before the base state does, in this
# order. A v0.0.40+ state list ["COMPLETED", "COMPLETING"] is "COMPLETING", as 22.05 printed it.
JOB_FLAG_PRECEDENCE = (
    "COMPLETING",
    "STAGE_OUT",
    "CONFIGURING",
    "EXPEDITING",
    "RESIZING",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "SPECIAL_EXIT",
    "STOPPED",
    "REVOKED",
    "RESV_DEL_HOLD",
    "SIGNALING",
)
# Each job state name Slurm writes, as one string object: ``json.loads`` makes a new string per
# record, and the snapshot builder compares every job's state several times a cycle (one object
# per name passes on identity; 10 000 strings elsewhere in memory were read, issue 31 r31build).
_STATE_NAMES = {
    name: name
    for name in (
        *FINAL_STATES,
        *RUNNING_STATES,
        *JOB_FLAG_PRECEDENCE,
        "PENDING",
        "LAUNCH_FAILED",
        "UPDATE_DB",
        "RECONFIG_FAIL",
        "POWER_UP_NODE",
    )
}
# Nodes with any of these states or flags offer no CPUs to new jobs (lower case: 22.05 wrote
# the base state in lower case and flags in upper case; v0.0.40+ writes both upper case).
# Not PLANNED: 25.11 flags a node its backfill plans a pending job on; its idle CPUs are
# still idle, and which job gets them is the core's decision.
UNUSABLE_NODE = frozenset(
    {"down", "drain", "drained", "draining", "fail", "failing", "future", "unknown", "maint", "reboot_issued"}
    | {"not_responding", "powered_down", "powering_down", "power_down", "powering_up", "invalid"}
    | {"maintenance", "error", "power_drain", "invalid_reg", "dynamic_future", "inactive"}
)


def short(value: Any) -> str:
    """A value for an error message: never the whole of a huge answer."""
    text = repr(value) if not isinstance(value, list | dict) or len(value) < 8 else f"<{len(value)} items>"
    return text if len(text) <= 40 else text[:37] + "..."


def parse_tags(admin_comment: str) -> dict[str, str]:
    """``rush:k=v;k=v`` (as plugins/slurm/job_submit_rush.lua writes AdminComment) -> {k: v};
    anything else (another tool's comment) -> {}."""
    if not admin_comment or not admin_comment.startswith("rush:"):
        return {}
    tags = {}
    for item in admin_comment[5:].split(";"):
        key, _, value = item.partition("=")
        if key.strip():
            tags[key.strip()] = value.strip() or "1"
    return tags


# -- values -----------------------------------------------------------------------------------
def number(value: Any, field: str = "value") -> float | None:
    """A time or count: a plain number (v0.0.38) or ``{set, infinite, number}`` (v0.0.39+).

    ``None`` when unset (``null``, ``set: false``); ``inf`` when infinite or one of Slurm's
    NO_VAL/INFINITE markers.
    """
    if isinstance(value, dict):
        if value.get("infinite") is True:
            return math.inf
        if value.get("set", True) is False:
            return None
        value = value.get("number")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{field} is {short(value)}, not a number")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # a JSON integer beyond a float's range (Python reads any length)
        finite = False
    if not finite or value < 0:
        raise ValueError(f"{field} is {short(value)}, not a finite number >= 0")
    # Slurm's markers are exact values (NO_VAL, INFINITE and their 64-bit forms).
    return math.inf if value in NO_VAL_MARKERS else float(value)


def count(value: Any, field: str) -> int:
    """A count (CPUs, restarts); 0 when unset."""
    found = number(value, field)
    if found is None:
        return 0
    if found >= MAX_COUNT or found != int(found):
        raise ValueError(f"{field} is {short(value)}, not a count")
    return int(found)


def unix_time(value: Any, field: str) -> float | None:
    """Unix seconds; ``None`` when unset, 0 or Slurm's NO_VAL."""
    found = number(value, field)
    if found is None or found == 0 or found == math.inf:
        return None
    if found >= MAX_TIME:
        raise ValueError(f"{field} is {short(value)}, not a unix time")
    return found


def minutes_limit(value: Any, field: str = "time_limit") -> float:
    """A time limit in minutes as seconds; ``inf`` when unlimited (null, infinite, NO_VAL, 0)."""
    found = number(value, field)
    return found * 60.0 if found else math.inf


def text(record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{field} is {short(value)}, not a string")
    return value


def state_names(value: Any, field: str) -> list[str]:
    """A state as a list of names: ``"RUNNING"`` (v0.0.38) or ``["RUNNING", ...]`` (v0.0.40+)."""
    if isinstance(value, str):
        return [value] if value else []
    if not isinstance(value, list):
        raise ValueError(f"{field} is {short(value)}, not a state name")
    if len(value) > MAX_STATE_NAMES:
        raise ValueError(f"{field} has {len(value)} names, not a state")
    if not all(isinstance(name, str) and 0 < len(name) <= MAX_NAME for name in value):
        raise ValueError(f"{field} is {short(value)}, not a list of state names")
    return list(value)


def job_state(value: Any) -> str:
    """One state name as Slurm prints it (flags before the base state); "" when empty."""
    names = state_names(value, "job_state")
    if len(names) <= 1:
        return _STATE_NAMES.get(names[0], names[0]) if names else ""
    present = set(names)
    for flag in JOB_FLAG_PRECEDENCE:
        if flag in present:
            return flag
    return _STATE_NAMES.get(names[0], names[0])  # the base state comes first in v0.0.40+


def nice(value: Any) -> int:
    """Slurm prints a job's nice as a 32-bit unsigned number (-5 is 4294967291) or signed."""
    if isinstance(value, dict):
        value = value.get("number") if value.get("set", True) is not False else None
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**32:
        raise ValueError(f"nice is {short(value)}, not a 32-bit integer")
    return value - 2**32 if value >= 2**31 else value


def job_priority(value: Any) -> float:
    """Slurm's job priority (multifactor, or set by an admin): the RJMS policy's key.

    0 when unset (and for a held job, which Slurm gives priority 0); Slurm's INFINITE and
    NO_VAL markers read as the top of its 32-bit range, so the key stays finite (the core
    refuses a non-finite one) and such a job still sorts first.
    """
    found = number(value, "priority")
    if found is None:
        return 0.0
    if found == math.inf:
        return float(MAX_COUNT - 1)
    if found >= MAX_COUNT:
        raise ValueError(f"priority is {short(value)}, beyond Slurm's 32-bit priorities")
    return found


def exit_code(value: Any) -> str:
    """``"return_code:signal"`` as sacct and jobcomp write it; "" when unknown.

    v0.0.38 gives the wait status (768 is exit 3), v0.0.39+ an object with ``return_code``
    and ``signal.id``.
    """
    if value is None:
        return ""
    if isinstance(value, dict):
        code = number(value.get("return_code"), "exit_code.return_code")
        sig = value.get("signal")
        signal = number(sig.get("id"), "exit_code.signal.id") if isinstance(sig, dict) else None
        if sig is not None and not isinstance(sig, dict):
            raise ValueError(f"exit_code.signal is {short(sig)}, not an object")
        if code is None and signal is None:
            return ""
        code_i = 0 if code is None or code == math.inf else int(code)
        signal_i = 0 if signal is None or signal == math.inf else int(signal)
        return f"{code_i}:{signal_i}"
    status = number(value, "exit_code")
    if status is None or status == math.inf or status >= MAX_COUNT:
        return ""
    status_i = int(status)
    return f"{(status_i >> 8) & 0xFF}:{status_i & 0x7F}"


# -- whole answers ------------------------------------------------------------------------------
def records(data: Any, key: str) -> list[dict[str, Any]]:
    """The list of records under ``key`` (``jobs`` or ``nodes``); ValueError if there is none."""
    found = data.get(key) if isinstance(data, dict) else None
    if not isinstance(found, list) or not all(isinstance(r, dict) for r in found):
        hint = ""
        if key == "nodes" and isinstance(data, dict) and "sinfo" in data:
            hint = " (sinfo --json of Slurm 23.02+ groups nodes by partition and state)"
        raise ValueError(f"the answer has no list of {key}{hint}")
    return found


def parse_job(record: dict[str, Any], lever: str = "site_factor") -> RJMSJob:
    """One job record of ``squeue --json`` / ``GET /slurm/v0.0.3x|4x/jobs``.

    With the ``nice`` priority lever the job's site factor is its negated nice (the value
    rush set); with ``site_factor`` it is filled from sprio by the caller.
    """
    if not isinstance(record, dict):
        raise ValueError(f"a job record is {short(record)}, not an object")
    job_id = record["job_id"]
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 0 < job_id < MAX_COUNT:
        raise ValueError(f"job_id is {short(job_id)}, not a positive integer")
    state = job_state(record["job_state"])
    if not state:
        raise ValueError(f"job {job_id} has an empty job_state")
    start = unix_time(record.get("start_time"), "start_time")
    submit = unix_time(record["submit_time"], "submit_time")
    if submit is None:
        raise ValueError(f"job {job_id} has no submit_time")
    reason = text(record, "state_reason")
    niceness = nice(record.get("nice"))  # checked whatever the lever: garbage is never a job
    cpus = max(count(record.get("cpus"), "cpus"), 1)
    request = parse_request(record, cpus)
    allocation = parse_allocation(record, request.gpus_per_node) if state in RUNNING_STATES else ()
    return RJMSJob(
        job_id=job_id,
        state=state,
        submit=submit,
        procs=cpus,
        requested_time=minutes_limit(record.get("time_limit")),
        start=start if state in RUNNING_STATES else None,
        user=text(record, "user_name"),
        account=text(record, "account"),
        partition=text(record, "partition"),
        name=text(record, "name"),
        tags=parse_tags(text(record, "admin_comment")),
        held=state == "PENDING" and reason.startswith("JobHeld"),
        reason=reason,
        restarts=count(record.get("restart_cnt"), "restart_cnt"),
        site_factor=-niceness if lever == "nice" else 0,
        priority=job_priority(record.get("priority")),
        request=request,
        allocation=allocation,
    )


# The fields of a job record parse_job reads (itself and through parse_request, is_exclusive,
# job_gpus, parse_allocation): a job's parse depends on these values and the lever, nothing else
# (tests/slurm/test_parsed_jobs.py records what parse_job asks for and checks it is listed).
JOB_FIELDS = (
    "job_id", "job_state", "start_time", "submit_time", "state_reason", "nice", "cpus",
    "time_limit", "user_name", "account", "partition", "name", "admin_comment", "restart_cnt",
    "priority", "node_count", "tres_req_str", "tasks", "tasks_per_node", "shared", "exclusive",
    "job_resources", "tres_per_node", "tres_per_job", "tres_per_task", "gres_detail",
)  # fmt: skip
# The fields a record's key holds: JOB_FIELDS but ``start_time``, which backfill rewrites on
# every pending job it tests (its expected start) while parse_job keeps it for running jobs
# only; :func:`with_start` applies it to a kept job (round 28, r31move).
KEY_FIELDS = tuple(f for f in JOB_FIELDS if f != "start_time")
# An absent field in a record's key: JSON has no Ellipsis, so absent and null differ.
_ABSENT = (...,) * len(KEY_FIELDS)


def record_key(record: dict[str, Any]) -> bytes | None:
    """The values of a record's :data:`KEY_FIELDS`, exactly: marshal (version 2) writes each
    value's type, dict key order and float bits (1, 1.0, true and "1" differ, so do 0.0 and
    -0.0) and ``marshal.loads`` gives them back, so equal keys are strictly equal values.
    ``None`` for a value marshal refuses (a subclass, a nesting too deep): not kept."""
    try:
        return marshal.dumps(tuple(map(record.get, KEY_FIELDS, _ABSENT)), 2)
    except ValueError:
        return None


def with_start(job: RJMSJob, record: dict[str, Any]) -> RJMSJob:
    """``parse_job(record)`` for a record whose :data:`KEY_FIELDS` are those ``job`` was
    parsed from: ``record``'s start_time checked and read as parse_job does (raising alike),
    the job's start if it runs, none otherwise; ``job`` itself when that is its start already
    (a pending job whatever backfill's estimate), else the job with that start."""
    start = unix_time(record.get("start_time"), "start_time")
    if job.state not in RUNNING_STATES:
        start = None
    return job if same_value(job.start, start) else with_job_value(job, "start", start)


class ParsedJobs:
    """:func:`parse_job` over a backend's reads, reusing the last read's job where a record's
    :func:`record_key` is byte-equal to that job's record's (its start_time applied by
    :func:`with_start`): a read costs its changed records.

    Kept between reads: per job id, the last successful read's key (or that record itself, for
    a job first seen then: its key is made when it is next compared, so a first read makes no
    key), its job and the lever it was parsed under; a read that raises keeps the last read's.
    A first read keeps only its lists; the next read makes the map from them. Only an exact
    ``dict`` with an exact ``int`` job id is looked up; anything else is parsed (and refused)
    as always. A record that makes ``parse_job`` raise is never kept.
    """

    def __init__(self) -> None:
        self._lever = ""
        # The last read's entries by job id, or (a first read's) its records and jobs.
        self._kept: dict[int, tuple[Any, RJMSJob]] | tuple[list[Any], list[RJMSJob]] = {}
        self._site_factors = KeptValues("site_factor")
        self._fairshares = KeptValues("fairshare")

    def __len__(self) -> int:
        """How many jobs are kept (the last successful read's)."""
        return len(self._entries())

    def _entries(self) -> dict[int, tuple[Any, RJMSJob]]:
        """The last read's (record or key, job) by job id (made here from a first read's lists)."""
        if isinstance(self._kept, tuple):
            records, jobs = self._kept
            self._kept = {
                j.job_id: (r, j)
                for r, j in zip(records, jobs, strict=True)
                if type(r) is dict and type(j.job_id) is int
            }
        return self._kept

    def parse(self, records: Iterable[dict[str, Any]], lever: str = "site_factor") -> list[RJMSJob]:
        """Each record's job, as ``parse_job(record, lever)`` gives it; raises as it does."""
        kept = self._entries() if lever == self._lever else {}
        if not kept:  # nothing to compare with (a first read): each parsed, the lists kept
            records = list(records)
            jobs = [parse_job(record, lever) for record in records]
            self._kept, self._lever = (records, jobs), lever
            return jobs
        fresh: dict[int, tuple[Any, RJMSJob]] = {}
        jobs = []
        for record in records:
            job_id = record.get("job_id") if type(record) is dict else None
            if type(job_id) is not int:
                jobs.append(parse_job(record, lever))
                continue
            last = kept.get(job_id)
            if last is None:
                job = parse_job(record, lever)
                fresh[job_id] = (record, job)  # keyed when next compared
                jobs.append(job)
                continue
            key = record_key(record)
            last_key = record_key(last[0]) if type(last[0]) is dict else last[0]
            if key is None or key != last_key:
                job = parse_job(record, lever)
            else:
                job, start = last[1], record.get("start_time")
                # An int time (or 0) never raises, and a job not running has no start: the kept
                # job as it is, without with_start's call (most of a queue, every read).
                if type(start) is not int or not 0 <= start < MAX_TIME or job.state in RUNNING_STATES:
                    job = with_start(job, record)
            fresh[job_id] = (key, job)
            jobs.append(job)
        self._kept, self._lever = fresh, lever
        return jobs

    def with_site_factors(self, jobs: Sequence[RJMSJob], factors: dict[int, int]) -> list[RJMSJob]:
        """Each job with its site factor (0 when ``factors`` has none), equal to what
        ``with_fields`` makes (:func:`with_job_value`): the last read's job with factor where
        the job is the same object and the factor its factor (:class:`KeptValues`)."""
        return self._site_factors.apply(jobs, [factors.get(j.job_id, 0) for j in jobs])

    def with_fairshare(
        self, jobs: Sequence[RJMSJob], factors: site_factor_values.Associations
    ) -> list[RJMSJob]:
        """Pending jobs with their association's fair-share factor (:func:`site_factor.fairshare_of`,
        raising as it does, before anything is kept), others unchanged; each equal to
        ``with_fields(job, fairshare=factor)``, the last read's where the job is the same object
        and the factor its factor (sshare's factors are new floats each read: :func:`same_value`)."""
        fairshare_of = site_factor_values.fairshare_of
        values = [
            fairshare_of(j.job_id, j.account, j.user, j.partition, factors)
            if j.state == "PENDING"
            else j.fairshare
            for j in jobs
        ]
        return self._fairshares.apply(jobs, values)


class KeptValues:
    """One field of each job set to a value read beside the jobs (sprio's site factor, sshare's
    fair-share factor), each job made by :func:`with_job_value`, reusing the last read's made
    job where the job given is the same object as then and its value :func:`same_value`'s the
    one kept: an unchanged job stays one object from read to read (the snapshot builder's
    ``is``), and a read costs its changed jobs. A first read keeps its lists; the next makes
    the map by job id from them."""

    def __init__(self, name: str) -> None:
        self.name = name
        # Per job id: (the job given, its value, the job made); or a first read's three lists.
        self._kept: dict[int, tuple[RJMSJob, Any, RJMSJob]] | tuple[Sequence, Sequence, list] = {}

    def apply(self, jobs: Sequence[RJMSJob], values: Sequence[Any]) -> list[RJMSJob]:
        """Each ``jobs[k]`` with the field set to ``values[k]``, equal to ``with_fields``'."""
        name, kept = self.name, self._kept
        if isinstance(kept, tuple):  # a first read's lists
            kept = {m.job_id: (j, v, m) for j, v, m in zip(*kept, strict=True)}
        if not kept:  # a first read: the lists kept
            out = [with_job_value(j, name, v) for j, v in zip(jobs, values, strict=True)]
            self._kept = (jobs, values, out)
            return out
        fresh: dict[int, tuple[RJMSJob, Any, RJMSJob]] = {}
        out = []
        for job, value in zip(jobs, values, strict=True):
            job_id = job.job_id
            last = kept.get(job_id)
            if last is not None and last[0] is job and same_value(last[1], value):
                made = last[2]
            else:
                made = with_job_value(job, name, value)
            fresh[job_id] = (job, value, made)
            out.append(made)
        self._kept = fresh
        return out


# A job's field values in field order (the constructor's positional order), and where each
# field is among them.
_JOB_VALUES = operator.attrgetter(*(f.name for f in fields(RJMSJob)))
_FIELD_AT = {f.name: k for k, f in enumerate(fields(RJMSJob))}


def same_value(kept: Any, value: Any) -> bool:
    """Whether ``kept`` may stand for ``value`` in a job: the same object; equal ints (one
    value however held); equal floats of the same sign (one IEEE-754 double: sshare's factors
    are new objects each read; -0.0 equals 0.0 and prints apart; NaN equals nothing)."""
    if kept is value:
        return True
    kind = type(kept)
    if kind is not type(value) or kept != value:
        return False
    return kind is int or (
        kind is float and (kept != 0.0 or math.copysign(1.0, kept) == math.copysign(1.0, value))
    )


def with_job_value(job: RJMSJob, name: str, value: Any) -> RJMSJob:
    """A job equal to ``with_fields(job, **{name: value})`` (each other value the same object)
    whose values stay in the object, as the constructor keeps them: ``with_fields``
    materialises a ``__dict__`` on both jobs, a second object to reach at every read of a field,
    and the snapshot builder reads a few fields of every job several times a cycle. ``job``
    itself where ``value`` is its own already (:func:`same_value`: a site factor of 0 for most
    of a queue); otherwise a new job made by the constructor (about 3 us, against
    ``with_fields``' 1.7)."""
    if type(job) is not RJMSJob:  # a subclass: replace's own way
        return with_fields(job, **{name: value})
    if same_value(getattr(job, name), value):
        return job
    values = list(_JOB_VALUES(job))
    values[_FIELD_AT[name]] = value
    return RJMSJob(*values)


def with_site_factor(job: RJMSJob, factor: Any) -> RJMSJob:
    """:func:`with_job_value` of the site factor."""
    return with_job_value(job, "site_factor", factor)


def finished_record(record: dict[str, Any], source: str) -> dict[str, Any] | None:
    """A finished job's accounting record (as :meth:`SlurmBackend.accounting` returns them);
    ``None`` for a job that has not finished."""
    state = job_state(record["job_state"])
    if state not in FINAL_STATES:
        return None
    job_id = record["job_id"]
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 0 < job_id < MAX_COUNT:
        raise ValueError(f"job_id is {short(job_id)}, not a positive integer")
    return {
        "job_id": job_id,
        "state": state,
        "submit": unix_time(record["submit_time"], "submit_time"),
        "start": unix_time(record.get("start_time"), "start_time"),
        "end": unix_time(record.get("end_time"), "end_time"),
        "procs": max(count(record.get("cpus"), "cpus"), 1),
        "restarts": count(record.get("restart_cnt"), "restart_cnt"),
        "exit_code": exit_code(record.get("exit_code")),
        "source": source,
    }


def node_states(node: dict[str, Any]) -> set[str]:
    """Every state and flag of a node, lower case: ``state`` (a name or a list) and 22.05's
    ``state_flags``."""
    flags = node.get("state_flags") or []
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise ValueError(f"state_flags is {short(flags)}, not a list of names")
    if len(flags) > MAX_STATE_NAMES:
        raise ValueError(f"state_flags has {len(flags)} names, not a list of flags")
    return {s.lower() for s in state_names(node.get("state", ""), "state")} | {f.lower() for f in flags}


def parse_nodes(records: list[dict[str, Any]], partitions: Sequence[str] = ()) -> tuple[int, int, set[str]]:
    """(total CPUs, free CPUs, partition names) over the nodes of ``partitions`` (all if empty)."""
    total = free = 0
    names: set[str] = set()
    wanted = set(partitions)
    for node in records:
        if not isinstance(node, dict):
            raise ValueError(f"a node record is {short(node)}, not an object")
        node_partitions = node.get("partitions") or []
        if not isinstance(node_partitions, list) or not all(isinstance(p, str) for p in node_partitions):
            raise ValueError(f"partitions is {short(node_partitions)}, not a list of names")
        if "cpus" not in node:
            raise KeyError("cpus")
        cpus = count(node["cpus"], "cpus")
        alloc = count(node.get("alloc_cpus"), "alloc_cpus")
        states = node_states(node)
        if wanted and not set(node_partitions) & wanted:
            continue
        names |= set(node_partitions)
        total += cpus
        if not states & UNUSABLE_NODE:
            free += max(cpus - alloc, 0)
    return total, free, names


# -- nodes, requests and allocations (issue 20) --------------------------------------------------
# A host list or a job's allocation longer than this is not a cluster (bounded work).
MAX_NODES = 1_000_000
# Node state (rush.core.resources.NodeState) from Slurm's states and flags, lower case.
DRAINED_STATES = frozenset({"drain", "drained", "draining"})
DOWN_STATES = frozenset({"down", "fail", "failing", "not_responding"})
# Sharing values that mean whole nodes: v0.0.39+ ``shared: ["none"]``, 22.05's ``shared: "none"``,
# v0.0.41's ``exclusive: ["true"]``.
EXCLUSIVE_VALUES = frozenset({"none", "exclusive", "true"})
_HOSTLIST_PART = re.compile(r"([^\[\],]*)\[([^\]]*)\]")


def hostlist(value: str, field: str = "hostlist", limit: int = MAX_NODES) -> list[str]:
    """Slurm's host list (``n[1-4,7],gpu[01-02]``, ``rack[1-2]-n[1-2]``) as names, in order;
    more than ``limit`` names is refused (a hostile list must not blow up)."""
    if not isinstance(value, str):
        raise ValueError(f"{field} is {short(value)}, not a host list")
    names: list[str] = []
    for item in _split_top(value.strip()):
        expanded = [""]
        rest = item
        while rest:
            match = _HOSTLIST_PART.match(rest)
            if match is None:
                if "[" in rest or "]" in rest:
                    raise ValueError(f"{field} has a malformed range in {short(item)}")
                expanded = [e + rest for e in expanded]
                break
            prefix, ranges = match.groups()
            suffixes = _ranges(ranges, field, limit)
            if len(expanded) * len(suffixes) > limit:
                raise ValueError(f"{field} names more than {limit} hosts")
            expanded = [e + prefix + s for e in expanded for s in suffixes]
            rest = rest[match.end() :]
        names += [e for e in expanded if e]
        if len(names) > limit:
            raise ValueError(f"{field} names more than {limit} hosts")
    return names


def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def _ranges(ranges: str, field: str, limit: int) -> list[str]:
    """``1-4,07`` -> ["1", "2", "3", "4", "07"] (zero padding kept, as Slurm writes it)."""
    out: list[str] = []
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ValueError(f"{field} has a malformed range [{short(ranges)}]")
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError(f"{field} has a reversed range [{short(ranges)}]")
        if last - first + len(out) >= limit:
            raise ValueError(f"{field} has a range [{short(ranges)}] of more than {limit} hosts")
        out += [str(n).zfill(len(low)) for n in range(first, last + 1)]
    return out


def gres_gpus(value: Any, field: str = "gres") -> int:
    """GPUs in a GRES or TRES string: ``gpu:2``, ``gpu:a100:2(S:0-1)``, ``gpu:1(IDX:0)``,
    ``gres/gpu:2``, ``gres/gpu=1``, ``gres:gpu:2`` (0 when none; a name without count is 1)."""
    if value is None or value == "" or value == "N/A":
        return 0
    if not isinstance(value, str) or len(value) > 64 * MAX_NAME:
        raise ValueError(f"{field} is {short(value)}, not a GRES string")
    total = 0
    for item in _split_top(value):
        item = item.split("(", 1)[0].strip()
        for prefix in ("gres/", "gres:"):
            item = item.removeprefix(prefix)
        name, _, rest = item.replace("=", ":").partition(":")
        if name != "gpu":
            continue
        tail = rest.rsplit(":", 1)[-1] if rest else ""
        found = int(tail) if tail.isdigit() else 1
        if found >= MAX_COUNT:
            raise ValueError(f"{field} counts {short(value)} GPUs")
        total += found
    return min(total, MAX_COUNT - 1)


def tres_value(value: Any, key: str, field: str) -> int | None:
    """One count of a TRES string (``cpu=4,mem=2G,node=2`` -> node: 2); None when absent."""
    if not value:
        return None
    if not isinstance(value, str) or len(value) > 64 * MAX_NAME:
        raise ValueError(f"{field} is {short(value)}, not a TRES string")
    for item in value.split(","):
        name, _, number_text = item.partition("=")
        if name == key and number_text.isdigit():
            found = int(number_text)
            if found >= MAX_COUNT:
                raise ValueError(f"{field} has {key}={short(number_text)}, not a count")
            return found
    return None


def is_exclusive(record: dict[str, Any]) -> bool:
    """Whole nodes: ``--exclusive`` (``shared``/``exclusive`` as each version writes it) or a
    running job's ``job_resources.nodes.whole``."""
    for key in ("shared", "exclusive"):
        value = record.get(key)
        if value is True:
            return True
        values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        if any(isinstance(v, str) and v.lower() in EXCLUSIVE_VALUES for v in values[:MAX_STATE_NAMES]):
            return True
    resources = record.get("job_resources")
    nodes = resources.get("nodes") if isinstance(resources, dict) else None
    return isinstance(nodes, dict) and nodes.get("whole") is True


def job_gpus(record: dict[str, Any], nodes: int, tasks: int) -> int:
    """GPUs per node a job asks for: ``tres_per_node`` (``--gres``, ``--gpus-per-node``), else
    ``tres_per_job`` (``--gpus``) or ``tres_per_task`` spread over its nodes (rounded up)."""
    per_node = gres_gpus(text(record, "tres_per_node"), "tres_per_node")
    if per_node:
        return per_node
    per_job = gres_gpus(text(record, "tres_per_job"), "tres_per_job")
    per_job += gres_gpus(text(record, "tres_per_task"), "tres_per_task") * max(tasks, 1)
    return -(-per_job // max(nodes, 1)) if per_job else 0


def parse_request(record: dict[str, Any], cpus: int) -> Request:
    """What a job asks for (docs/reference/resources.md, "Slurm"): whole nodes when it asked
    for more than one node (``tres_req_str``'s ``node=``: the ``-N`` Slurm keeps; its
    ``node_count`` is also Slurm's own estimate for ``-n`` jobs), for whole nodes
    (``--exclusive``), for GPUs or for tasks per node; else ``cpus`` cores anywhere."""
    node_count = count(record.get("node_count"), "node_count")
    asked = tres_value(text(record, "tres_req_str"), "node", "tres_req_str") or node_count or 1
    wanted_cpus = tres_value(text(record, "tres_req_str"), "cpu", "tres_req_str") or cpus
    tasks = count(record.get("tasks"), "tasks")
    exclusive = is_exclusive(record)
    nodes = max(asked, node_count, 1)
    gpus = job_gpus(record, nodes, tasks)
    per_node_tasks = count(record.get("tasks_per_node"), "tasks_per_node")
    partition = text(record, "partition").split(",", 1)[0]  # a pending job may list several
    if nodes > MAX_NODES:
        raise ValueError(f"node_count is {nodes}, more than {MAX_NODES} nodes")
    if asked > 1 or exclusive or gpus or per_node_tasks:
        cores = max(-(-wanted_cpus // nodes), 1)
        return Request(nodes, cores, gpus, exclusive, partition)
    return Request(0, max(wanted_cpus, 1), 0, False, partition)


def parse_allocation(record: dict[str, Any], gpus_per_node: int = 0) -> tuple[tuple[str, int, int], ...]:
    """(node, CPUs, GPUs) per node of a job's ``job_resources``: v0.0.39+'s ``nodes.allocation``
    or 22.05's ``allocated_nodes`` (CPUs: its allocated cores, scaled to ``allocated_cpus``);
    GPUs from ``gres_detail`` (one entry per node), else ``gpus_per_node`` each."""
    resources = record.get("job_resources")
    if not isinstance(resources, dict):
        return ()
    nodes = resources.get("nodes")
    if isinstance(nodes, dict):
        entries = nodes.get("allocation") or []
        if not isinstance(entries, list) or len(entries) > MAX_NODES:
            raise ValueError(f"job_resources.nodes.allocation is {short(entries)}, not a node list")
        cpus = []
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise ValueError(f"an allocation entry is {short(entry)}, not a node")
            found = entry.get("cpus")
            cpus.append(
                (entry["name"], count(found.get("count") if isinstance(found, dict) else found, "cpus"))
            )
    else:
        cpus = _legacy_allocation(resources, count(record.get("cpus"), "cpus"))
    details = record.get("gres_detail") or []
    if not isinstance(details, list):
        raise ValueError(f"gres_detail is {short(details)}, not a list")
    gpus = [gres_gpus(d, "gres_detail") for d in details] if len(details) == len(cpus) else None
    return tuple(
        (name, cores, gpus[i] if gpus is not None else gpus_per_node) for i, (name, cores) in enumerate(cpus)
    )


def _legacy_allocation(resources: dict[str, Any], cpus: int) -> list[tuple[str, int]]:
    """22.05 (v0.0.38): ``allocated_nodes`` [{nodename, sockets: {s: {cores: {c: "allocated"}}}}];
    a node's CPUs are its allocated cores, scaled up to the job's ``cpus`` when that is a whole
    multiple (threads per core). 22.05's ``allocated_cpus`` is not the allocation (1 for an
    exclusive job holding 64 CPUs), so it is only the fallback without a core map."""
    entries = resources.get("allocated_nodes") or []
    if isinstance(entries, dict):  # some builds key the list by index
        entries = list(entries.values())
    if not isinstance(entries, list) or len(entries) > MAX_NODES:
        raise ValueError(f"job_resources.allocated_nodes is {short(entries)}, not a node list")
    found: list[tuple[str, int]] = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("nodename"), str):
            raise ValueError(f"an allocated node is {short(entry)}, not a node")
        sockets = entry.get("sockets") or {}
        cores = 0
        for socket in sockets.values() if isinstance(sockets, dict) else ():
            socket_cores = socket.get("cores") if isinstance(socket, dict) else None
            if isinstance(socket_cores, dict):
                cores += sum(1 for status in socket_cores.values() if status == "allocated")
        found.append((entry["nodename"], cores))
    counted = sum(c for _, c in found)
    if counted == 0 and found:
        # No core map: the job's CPUs spread evenly.
        total = cpus or count(resources.get("allocated_cpus"), "allocated_cpus")
        share, extra = divmod(total, len(found))
        return [(name, share + (i < extra)) for i, (name, _) in enumerate(found)]
    scale = cpus // counted if counted and cpus >= counted and cpus % counted == 0 else 1
    return [(name, cores * scale) for name, cores in found]


def node_state(states: set[str]) -> NodeState:
    """up, drained or down from a node's states and flags (:func:`node_states`)."""
    if states & DOWN_STATES:
        return "down"
    if states & DRAINED_STATES:
        return "drained"
    return "up"


def parse_node(record: dict[str, Any], leaves: dict[str, int], pods: dict[str, int] | None = None) -> Node:
    """One node record as a :class:`Node`: CPUs, GPUs (``gres``), memory, state, partitions,
    leaf switch (``leaves``: name -> leaf index, else 0), pod (``pods``: name -> the index of
    the switch above its leaf, else 0) and what is free (CPUs - alloc_cpus, GPUs -
    ``gres_used``; nothing on a node that takes no new jobs)."""
    name = record.get("name")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME:
        raise ValueError(f"a node name is {short(name)}, not a name")
    partitions = record.get("partitions") or []
    if not isinstance(partitions, list) or not all(isinstance(p, str) for p in partitions):
        raise ValueError(f"partitions is {short(partitions)}, not a list of names")
    cpus = count(record["cpus"], "cpus")
    gpus = gres_gpus(text(record, "gres"), "gres")
    states = node_states(record)
    usable = not states & UNUSABLE_NODE
    free_cpus = max(cpus - count(record.get("alloc_cpus"), "alloc_cpus"), 0) if usable else 0
    free_gpus = max(gpus - gres_gpus(text(record, "gres_used"), "gres_used"), 0) if usable else 0
    return Node(
        name=name,
        cores=cpus,
        gpus=gpus,
        memory_mb=count(record.get("real_memory"), "real_memory"),
        state=node_state(states),
        partitions=tuple(partitions),
        leaf=leaves.get(name, 0),
        pod=(pods or {}).get(name, 0),
        free_cores=free_cpus,
        free_gpus=free_gpus,
    )


def node_list(
    records: list[dict[str, Any]],
    partitions: Sequence[str] = (),
    leaves: dict[str, int] | None = None,
    pods: dict[str, int] | None = None,
) -> tuple[Node, ...]:
    """The nodes of ``partitions`` (all if empty), in Slurm's order."""
    wanted = set(partitions)
    nodes = []
    for record in records:
        if not isinstance(record, dict):
            raise ValueError(f"a node record is {short(record)}, not an object")
        node = parse_node(record, leaves or {}, pods)
        if not wanted or set(node.partitions) & wanted:
            nodes.append(node)
    return tuple(nodes)


# What to do about a switch line rush cannot read (the daemon's cycle reports it and retries).
TOPOLOGY_FIX = (
    "correct that switch in topology.conf (SwitchName, Switches= and Nodes= take Slurm host lists "
    f"such as s[1-4] or n[01-16], at most {MAX_NODES} names in the whole topology) and run "
    "`scontrol reconfigure`; rush reads the topology again at its next cycle"
)


def _switch_lines(topology: str, wanted: dict[str, str]) -> Iterator[tuple[str, str, list[str]]]:
    """(level, switch name, names) of each switch line of ``scontrol show topology`` whose level
    is in ``wanted``, with the host list of that level's field (``wanted[level]``: Nodes or
    Switches) expanded. The lists of all lines share one budget of :data:`MAX_NODES` names, so
    the work stays bounded however many lines repeat a large range. A list rush cannot read is
    an RJMSError naming the line and the fix."""
    budget = MAX_NODES
    for number, line in enumerate(topology.splitlines()[:MAX_NODES], 1):
        fields = dict(item.partition("=")[::2] for item in line.split() if "=" in item)
        level = fields.get("Level", "")
        if level not in wanted or "SwitchName" not in fields:
            continue
        key = wanted[level]
        try:
            names = hostlist(fields.get(key, ""), f"topology {key}", budget)
        except ValueError as exc:
            raise RJMSError(
                f"switch {short(fields['SwitchName'])}: {exc}"
                + (
                    ""
                    if budget == MAX_NODES
                    else f" (with the {MAX_NODES - budget} names of the lines before)"
                ),
                where=f"scontrol show topology, line {number}",
                fix=TOPOLOGY_FIX,
            ) from None
        budget -= len(names)
        yield level, fields["SwitchName"], names


def leaf_switches(topology: str) -> dict[str, int]:
    """Node name -> leaf switch index from ``scontrol show topology`` (``SwitchName=s1 Level=0
    ... Nodes=n[1-4]``): leaves numbered in the order Slurm prints them; {} when it prints none
    (topology/flat, or no topology.conf). RJMSError on a host list it cannot read."""
    leaves: dict[str, int] = {}
    for index, (_, _, nodes) in enumerate(_switch_lines(topology, {"0": "Nodes"})):
        for node in nodes:
            leaves.setdefault(node, index)
    return leaves


def pod_switches(topology: str) -> dict[str, int]:
    """Node name -> pod index from ``scontrol show topology``: the level-1 switch whose
    ``Switches`` holds the node's leaf switch, numbered in the order Slurm prints them; {} when
    there is no such level (one pod: every node in pod 0). A level-1 switch without
    ``Switches``, or naming no leaf, is a pod of no node; a leaf named by two pods is in the
    first. RJMSError on a host list it cannot read."""
    leaf_nodes: dict[str, list[str]] = {}
    uppers: list[list[str]] = []
    for level, name, names in _switch_lines(topology, {"0": "Nodes", "1": "Switches"}):
        if level == "0":
            leaf_nodes[name] = names
        else:
            uppers.append(names)
    pods: dict[str, int] = {}
    for index, switches in enumerate(uppers):
        for switch in switches:
            # Each leaf's nodes once (pop): a leaf named by many pods costs no more.
            for node in leaf_nodes.pop(switch, ()):
                pods.setdefault(node, index)
    return pods
