"""How good are start-time estimates, live: rush's beside the RJMS's own, in the same replay.

During a live replay (:mod:`rush.studies.replay`) an :class:`EstimateRecorder` runs as the
``cycle`` hook: after the daemon's cycle it reads, in the same moment, every pending job's
estimated start from each estimator:

* ``rush``: the daemon's journal ``queue`` table (:mod:`rush.planner.queue_view`), the core's
  estimate of the cycle that just ran;
* ``slurm``: ``squeue --start`` (``StartTime`` of pending jobs, set by Slurm's backfill
  scheduler; ``N/A`` when it has none), one call per poll;
* ``flux``: ``flux jobs`` ``{annotations.sched.t_estimate}`` (flux-core's sched-backfill
  annotates the head of the queue only), one call per poll;
* ``fluxion``: the same read when Fluxion's ``sched-fluxion-qmanager`` is the instance's
  scheduler (it annotates ``t_estimate`` on the jobs it reserves: the head under ``easy``);
* in scheduler mode (rush's Flux module is the scheduler) that read is rush's own estimate,
  ``rush`` (:func:`module_recorder`).

The protocol follows Brown et al. (arXiv:2204.13543, ARCHER2/Cirrus): a job's prediction is
the estimate available at, or first after, its submit; it is compared with the job's real
start (the RJMS's accounting). Per estimator: coverage (share of jobs that had an estimate at
all), the share within 1 minute and within 10 % of the actual wait, and the mean absolute
error, by wait class. Times in the report are trace seconds (wall seconds times the replay's
speedup K), so "within 1 minute" is one trace minute; the RJMS's timing granularity in trace
seconds is reported beside it.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path

from rush.errors import RJMSError, RushError

log = logging.getLogger(__name__)

# Wait classes in trace seconds: (name, upper bound exclusive). "0": the job started within
# the RJMS's timing granularity of its submit (a live run never waits exactly 0).
WAIT_CLASSES = ("0", "<10min", "10min-1h", ">1h")
ONE_MINUTE = 60.0
WITHIN_SHARE = 0.10
# squeue prints these when Slurm has no estimate for a pending job.
NO_ESTIMATE = frozenset({"N/A", "NONE", "UNKNOWN", "(NULL)", ""})

Reader = Callable[[], dict[int, float | None]]


@dataclass(frozen=True)
class Sample:
    time: float  # unix seconds the estimators were read
    job_id: int  # the RJMS's job id
    estimator: str
    start: float | None  # the estimated start, unix seconds; None: none shown


def parse_squeue_start(text: str) -> dict[int, float | None]:
    """``squeue -h -t PD -o "%i %S"`` -> {job id: StartTime (unix) or None for N/A}.

    Slurm prints local time without a zone (ISO 8601), read here in this host's zone, the
    zone slurmctld runs in on a test cluster; a line that is neither is an RJMSError."""
    out: dict[int, float | None] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) > 2 or not parts[0].isdigit():
            raise RJMSError(
                f"unreadable squeue --start line {number}: {line[:200]!r}",
                where="squeue -h -t PD -o '%i %S'",
                fix="expected '<job id> <StartTime|N/A>' (job arrays are not replayed)",
            )
        value = parts[1] if len(parts) == 2 else ""
        if value.upper() in NO_ESTIMATE:
            out[int(parts[0])] = None
            continue
        try:
            out[int(parts[0])] = datetime.fromisoformat(value).timestamp()
        except ValueError:
            raise RJMSError(
                f"unreadable StartTime {value[:60]!r} on squeue --start line {number}",
                where="squeue -h -t PD -o '%i %S'",
                fix="expected an ISO 8601 time such as 2026-11-26T06:40:00, or N/A",
            ) from None
    return out


def parse_flux_estimates(text: str) -> dict[int, float | None]:
    """``flux jobs -n --filter=pending -o "{id.dec} {annotations.sched.t_estimate}"`` ->
    {job id: t_estimate (unix) or None when the scheduler annotated none}."""
    out: dict[int, float | None] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            job_id = int(parts[0])
            value = float(parts[1]) if len(parts) == 2 else None
        except ValueError:
            value, job_id = math.nan, -1
        if len(parts) > 2 or job_id < 0 or (value is not None and not math.isfinite(value)):
            raise RJMSError(
                f"unreadable flux jobs line {number}: {line[:200]!r}",
                where="flux jobs -o '{id.dec} {annotations.sched.t_estimate}'",
                fix="expected '<decimal job id> [<t_estimate in unix seconds>]'",
            )
        out[job_id] = value
    return out


def slurm_reader(backend) -> Reader:
    """Slurm's own estimates: one ``squeue --start`` of the pending jobs per call."""
    cli = getattr(backend, "cli", None)
    if cli is None or not cli.has("squeue"):
        raise RushError(
            "Slurm's own estimates are read with squeue, which this backend cannot run",
            where="replay --estimates",
            fix="give rjms.options.bin_dir where squeue is installed",
        )

    def read() -> dict[int, float | None]:
        out = cli.run("squeue", "-h", "-t", "PD", "-o", "%i %S")
        if out.returncode != 0:
            raise RJMSError(f"squeue --start failed: {out.stderr.strip()[-500:]}", where="squeue")
        return parse_squeue_start(out.stdout)

    return read


def flux_estimator(scheduler: str | None) -> str:
    """The name of a Flux scheduler's estimates in the report, from its module's name:
    ``fluxion`` for Fluxion's qmanager, ``flux`` for flux-core's (sched-backfill)."""
    return "fluxion" if (scheduler or "").startswith("sched-fluxion") else "flux"


def flux_reader(uri: str) -> Reader:
    """The Flux scheduler's own estimates (sched-backfill's or Fluxion's ``t_estimate``): one
    ``flux jobs``."""
    from rush.studies.replay import flux_command

    command = flux_command()
    env = dict(os.environ)
    if uri:
        env["FLUX_URI"] = uri

    def read() -> dict[int, float | None]:
        argv = [command, "jobs", "-n", "--filter=pending", "-o", "{id.dec} {annotations.sched.t_estimate}"]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RJMSError(f"flux jobs failed: {out.stderr.strip()[-500:]}", where="flux jobs")
        return parse_flux_estimates(out.stdout)

    return read


def journal_reader(path: Path) -> Reader:
    """rush's estimates: the pending rows of the daemon's journal queue table."""
    from rush.planner.journal import Journal

    journal: list[Journal] = []  # opened at the first read: the daemon creates the file

    def read() -> dict[int, float | None]:
        if not journal:
            journal.append(Journal(path))
        return {job_id: row.estimated_start for job_id, row in journal[0].queue(("pending",)).items()}

    return read


@dataclass
class EstimateRecorder:
    """The replay's ``cycle`` hook: the daemon's cycle, then every estimator read at once.

    A failed read is logged and counted (the replay goes on: a missed poll only delays the
    first estimate seen)."""

    readers: dict[str, Reader]
    cycle: Callable[[], object] | None = None
    clock: Callable[[], float] = time.time
    samples: list[Sample] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    polls: int = 0

    def __call__(self) -> None:
        if self.cycle is not None:
            self.cycle()
        self.polls += 1
        for name, read in self.readers.items():
            now = self.clock()
            try:
                values = read()
            except (RJMSError, OSError, subprocess.SubprocessError) as exc:
                log.warning("estimates: reading %s's failed: %s", name, exc)
                self.failures[name] = self.failures.get(name, 0) + 1
                continue
            self.samples.extend(Sample(now, job_id, name, start) for job_id, start in values.items())


@dataclass(frozen=True)
class Prediction:
    """One job, one estimator. Times: unix seconds; ``*_error``: trace seconds (predicted
    start minus real start, times the speedup); None where there was no estimate."""

    trace_job_id: int
    rjms_job_id: int
    estimator: str
    submit: float
    start: float
    wait: float  # trace seconds
    wait_class: str
    estimate: float | None  # the first estimate at or after submit
    estimated_at: float | None
    error: float | None
    halfway_estimate: float | None  # the last estimate made by submit + wait/2
    halfway_error: float | None
    samples: int  # how many polls showed this estimator an estimate for the job


def wait_class(wait: float, granularity: float) -> str:
    """The class of a wait in trace seconds; waits within the granularity count as 0."""
    if wait <= granularity:
        return "0"
    if wait < 600:
        return "<10min"
    return "10min-1h" if wait < 3600 else ">1h"


def predictions(
    samples: Iterable[Sample],
    outcome: dict[int, tuple[float, float]],
    ids: dict[int, int],
    estimators: Sequence[str],
    speedup: float,
    granularity: float,
) -> list[Prediction]:
    """Per job and estimator, the prediction by the protocol (module docstring).

    ``outcome``: RJMS id -> (submit, start) in unix seconds; ``ids``: trace id -> RJMS id;
    ``granularity``: the RJMS's timing granularity in wall seconds (wait class 0)."""
    by_key: dict[tuple[int, str], list[Sample]] = {}
    for s in samples:
        if s.start is not None and math.isfinite(s.start):
            by_key.setdefault((s.job_id, s.estimator), []).append(s)
    out = []
    for trace_id, rjms_id in sorted(ids.items()):
        if rjms_id not in outcome:
            continue
        submit, start = outcome[rjms_id]
        wait = max(0.0, start - submit)
        for name in estimators:
            seen = sorted(
                (s for s in by_key.get((rjms_id, name), ()) if submit <= s.time <= start),
                key=lambda s: s.time,
            )
            first = seen[0] if seen else None
            half = [s for s in seen if s.time <= submit + wait / 2]
            halfway = half[-1] if half else None
            out.append(
                Prediction(
                    trace_job_id=trace_id,
                    rjms_job_id=rjms_id,
                    estimator=name,
                    submit=submit,
                    start=start,
                    wait=wait * speedup,
                    wait_class=wait_class(wait * speedup, granularity * speedup),
                    estimate=None if first is None else first.start,
                    estimated_at=None if first is None else first.time,
                    error=None if first is None else (first.start - start) * speedup,  # type: ignore[operator]
                    halfway_estimate=None if halfway is None else halfway.start,
                    halfway_error=None if halfway is None else (halfway.start - start) * speedup,  # type: ignore[operator]
                    samples=len(seen),
                )
            )
    return out


def accuracy(errors: Sequence[float | None], waits: Sequence[float]) -> dict:
    """Coverage, share within 1 minute, share within 10 % of the actual wait and mean
    absolute error (trace seconds) of one estimator's errors (None: no estimate) over jobs
    with these actual waits. Shares are of the jobs that had an estimate; ``*_of_all`` count
    a job without one as a miss."""
    if len(errors) != len(waits):
        raise ValueError("one error per wait")
    jobs = len(errors)
    pairs = [(abs(e), w) for e, w in zip(errors, waits, strict=True) if e is not None]
    n = len(pairs)
    minute = sum(1 for e, _ in pairs if e <= ONE_MINUTE)
    tenth = sum(1 for e, w in pairs if e <= WITHIN_SHARE * w)
    return {
        "jobs": jobs,
        "estimated": n,
        "coverage": n / jobs if jobs else None,
        "within_1min": minute / n if n else None,
        "within_10pct": tenth / n if n else None,
        "within_1min_of_all": minute / jobs if jobs else None,
        "mean_abs_error": sum(e for e, _ in pairs) / n if n else None,
        "median_abs_error": statistics.median(e for e, _ in pairs) if n else None,
    }


def summarize(rows: Sequence[Prediction], estimators: Sequence[str], halfway: bool = False) -> dict:
    """{estimator: {wait class or "all": accuracy}} over the predictions."""
    out: dict[str, dict] = {}
    for name in estimators:
        mine = [r for r in rows if r.estimator == name]
        out[name] = {}
        for cls in ("all", *WAIT_CLASSES):
            part = [r for r in mine if cls in ("all", r.wait_class)]
            errors = [r.halfway_error if halfway else r.error for r in part]
            out[name][cls] = accuracy(errors, [r.wait for r in part])
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _minutes(value: float | None) -> str:
    return "-" if value is None else f"{value / 60:.1f}"


def table(summary: dict) -> str:
    """A plain-text table: one line per estimator and wait class."""
    head = f"{'estimator':10} {'wait':9} {'jobs':>5} {'covered':>8} {'<=1min':>7} {'<=10%':>6} {'MAE min':>8}"
    lines = [head]
    for name, classes in summary.items():
        for cls in ("all", *WAIT_CLASSES):
            acc = classes.get(cls)
            if not acc or not acc["jobs"]:
                continue
            lines.append(
                f"{name:10} {cls:9} {acc['jobs']:>5} {_pct(acc['coverage']):>8} "
                f"{_pct(acc['within_1min']):>7} {_pct(acc['within_10pct']):>6} "
                f"{_minutes(acc['mean_abs_error']):>8}"
            )
    return "\n".join(lines)


def write_csv(rows: Sequence[Prediction], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([x.name for x in fields(Prediction)])
        for r in rows:
            writer.writerow(["" if v is None else v for v in asdict(r).values()])


def real_starts(backend, rjms_ids: Sequence[int]) -> dict[int, tuple[float, float]]:
    """RJMS id -> (submit, start), unix seconds, from the RJMS's accounting."""
    out = {}
    for record in backend.accounting(list(rjms_ids)):
        if record.get("start") is not None and record.get("submit") is not None:
            out[int(record["job_id"])] = (float(record["submit"]), float(record["start"]))
    return out


def report(
    recorder: EstimateRecorder,
    backend,
    ids: dict[int, int],
    speedup: float,
    granularity: float,
) -> tuple[list[Prediction], dict]:
    """The per-job predictions and the summary of a finished replay (``ids``: trace id ->
    RJMS id, the replay report's ``rjms_job_ids``)."""
    estimators = list(recorder.readers)
    outcome = real_starts(backend, list(ids.values()))
    rows = predictions(recorder.samples, outcome, ids, estimators, speedup, granularity)
    summary = {
        "speedup": speedup,
        "granularity_trace_seconds": granularity * speedup,
        "polls": recorder.polls,
        "failed_reads": dict(recorder.failures),
        "jobs": len({r.trace_job_id for r in rows}),
        "first": summarize(rows, estimators),
        "halfway": summarize(rows, estimators, halfway=True),
    }
    return rows, summary


def module_recorder(uri: str) -> EstimateRecorder:
    """Scheduler mode (``rush replay --mode scheduler``): rush's Flux module is the instance's
    scheduler, so the ``sched.t_estimate`` annotations read each poll are rush's own
    estimates, as a user sees them (the module annotates every queued job)."""
    return EstimateRecorder({"rush": flux_reader(uri)})


def recorder_for(backend, journal: Path, cycle: Callable[[], object] | None) -> EstimateRecorder:
    """rush's estimates (the daemon's journal) beside the RJMS's own, read after each cycle."""
    if cycle is None:
        raise RushError(
            "rush's estimates come from the daemon's cycles during the replay",
            where="replay --estimates",
            fix="give --config rush.toml (priority mode), whose daemon journals the estimates",
        )
    if backend.name == "slurm":
        own = slurm_reader(backend)
    elif backend.name == "flux":
        from rush.studies.replay import loaded_scheduler

        uri = str(getattr(backend, "uri", "") or os.environ.get("FLUX_URI", ""))
        return EstimateRecorder(
            {"rush": journal_reader(journal), flux_estimator(loaded_scheduler(uri)): flux_reader(uri)}, cycle
        )
    else:
        raise RushError(
            f"no reader for {backend.name}'s own start estimates",
            where="replay --estimates",
            fix="replay on slurm or flux",
        )
    return EstimateRecorder({"rush": journal_reader(journal), backend.name: own}, cycle)
