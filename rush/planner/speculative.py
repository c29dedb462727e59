"""Speculative reservations, live: carry out rush.core.speculative_reservations on the RJMS (issue 12, part 4).

A user opts a stochastic job in with the rush tag ``speculative`` (Slurm: ``sbatch
--comment=rush:speculative[,app=NAME]``, written to AdminComment by the job_submit plugin;
Flux: ``flux submit --setattr=rush.speculative=1 [--setattr=rush.app=NAME]``). Its
*application* is ``user/app`` (``app`` tag, else the job name). The samples are that
application's previous runs the daemon saw end, observed or censored by the rules of
:mod:`rush.models.speculative.job_sequence` (the trace study uses the same); the last
``speculative.samples`` of them are kept in the journal's database, so they survive restarts.

At first sight of a pending opted-in job, :func:`rush.models.speculative.job_sequence.job_sequence`
(``speculative.estimator``, cost alpha, beta, gamma, at least ``speculative.min_samples``
samples, the backend's time-limit granularity) gives t1 < t2 < ... < walltime: never a limit
above what the user asked, the last reservation is the walltime, each one held as the RJMS can
(Slurm: whole minutes; Flux: seconds). The job's limit is set to t1. When the job ends
by its time limit at reservation t_k and :func:`rush.core.speculative_reservations.requeue_after_kill`
says so, it is requeued with t_{k+1} (Slurm: ``scontrol requeue`` + ``TimeLimit``; Flux: its
jobspec resubmitted with the new duration and its original submit time). Every step is a
journal decision (action ``speculate``, ``speculative_requeue`` or ``speculative_end``) with
its reason.

At most one requeue per attempt, across restarts: the attempt lives in the journal
(``speculative_jobs``) and in a tag; a requeue is marked ``requeuing`` *before* it is issued,
and a later cycle confirms it from the RJMS (Slurm: the restart count went up; Flux: the
replacement job exists) before anything else is done for that job. The rules of what happens
at a limit are :mod:`rush.core.speculative_reservations`'; this module only reads, asks and acts.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from rush.errors import ConfigError, RushError
from rush.models.speculative.job_sequence import HISTORY, MIN_HISTORY, PastRun, past_run
from rush.planner.journal import DecisionRow
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob

log = logging.getLogger("rush.planner.speculative")

SCHEMA = """
CREATE TABLE IF NOT EXISTS speculative_history (
    app TEXT NOT NULL, job_id INTEGER NOT NULL, runtime REAL NOT NULL, time REAL NOT NULL,
    censored INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (app, job_id));
CREATE TABLE IF NOT EXISTS speculative_jobs (
    job_id INTEGER PRIMARY KEY, app TEXT NOT NULL, walltime REAL NOT NULL, sequence TEXT NOT NULL,
    attempt INTEGER NOT NULL, restarts INTEGER NOT NULL, status TEXT NOT NULL,
    origin INTEGER NOT NULL, updated REAL NOT NULL);
"""
# An application label as the job_submit plugin accepts it (and a bounded user name).
LABEL = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
USER = re.compile(r"^[A-Za-z0-9._@-]{0,64}$")
# numpy, numba (rush.core.speculative_reservations) and scipy (rush.models.speculative.strategy) are imported where
# used: the daemon's config imports this module for its section, and `rush --help` stays fast.
# Bounds on one cycle's work, whatever the queue holds: estimates (one per new opted-in job;
# a continuous fit is tens of ms) and the finished jobs asked about.
MAX_ESTIMATES_PER_CYCLE = 50
MAX_ENDED_PER_CYCLE = 500
# A job that left the queue with no accounting record is dropped after this long.
FORGET_AFTER = 3600.0
# The journal status of a requeue issued and not yet confirmed. Not the Applier's "intent":
# its reconcile settles every open intent of the core's actions, and these are not those.
ISSUED = "issued"
# How a run ended, by accounting record: Slurm names its state; Flux's job-list gives the
# result as flux_job_result_t (1 COMPLETED, 2 FAILED, 4 CANCELED, 8 TIMEOUT).
FLUX_RESULTS = {"1": "COMPLETED", "2": "FAILED", "4": "CANCELED", "8": "TIMEOUT"}
TIMED_OUT = frozenset({"TIMEOUT", "DEADLINE"})


def ended_as(record: dict[str, Any]) -> str:
    """The final state of an accounting record, by name (TIMEOUT, COMPLETED, ...)."""
    state = str(record.get("state", ""))
    return FLUX_RESULTS.get(state, state)


class SpeculativeSection(BaseModel):
    """``[speculative]`` of rush.toml: live speculative reservations for opted-in jobs."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: StrictBool = Field(False, description="true or false (default false)")
    estimator: Literal["discrete", "continuous", "mean-doubling"] = Field(
        "discrete", description="discrete, continuous or mean-doubling"
    )
    samples: StrictInt = Field(
        HISTORY,
        ge=1,
        le=1000,
        description=f"past runtimes kept per application, 1 to 1000 (default {HISTORY})",
    )
    min_samples: StrictInt = Field(
        MIN_HISTORY,
        ge=1,
        le=1000,
        description=f"runtimes needed before a job is speculated on, 1 to 1000 (default {MIN_HISTORY})",
    )
    alpha: float = Field(1.0, strict=True, ge=0, le=1e6, description="cost per reserved second, 0 to 1e6")
    beta: float = Field(0.0, strict=True, ge=0, le=1e6, description="cost per used second, 0 to 1e6")
    gamma: float = Field(0.0, strict=True, ge=0, le=1e9, description="cost per submission, 0 to 1e9")

    @model_validator(mode="after")
    def _consistent(self) -> SpeculativeSection:
        if self.min_samples > self.samples:
            raise ValueError(
                f"min_samples ({self.min_samples}) is more than the samples kept ({self.samples})"
            )
        if self.alpha == 0 and self.beta == 0 and self.gamma == 0:
            raise ValueError("alpha, beta and gamma are all 0: every strategy would cost nothing")
        return self


@dataclass
class SpecJob:
    """One opted-in job the daemon follows (a row of ``speculative_jobs``)."""

    job_id: int
    app: str
    walltime: float
    sequence: tuple[float, ...]
    attempt: int
    restarts: int
    # watch: left at its walltime (runtime still feeds the history); limited: attempt runs
    # under sequence[attempt]; requeuing: the requeue after attempt's kill was issued and
    # awaits confirmation; refused: hostile tags, never touched.
    status: str
    origin: int
    updated: float

    def row(self) -> tuple:
        return (
            self.job_id,
            self.app,
            self.walltime,
            json.dumps(list(self.sequence)),
            self.attempt,
            self.restarts,
            self.status,
            self.origin,
            self.updated,
        )

    def limit(self) -> float:
        import numpy as np

        from rush.core.speculative_reservations import run_limit

        seq = np.asarray(self.sequence, dtype=float)
        return float(run_limit(seq, len(self.sequence), self.attempt, self.walltime))


def opt_in(job: RJMSJob) -> tuple[bool, str]:
    """(opted in, why not / the application key). Hostile tag values: (False, the reason)."""
    flag = job.tags.get("speculative")
    if flag is None:
        return False, ""
    if flag not in ("1", "yes", "true"):
        return False, f"speculative={flag[:40]!r} is not a flag (write rush:speculative)"
    app = job.tags.get("app") or job.name
    if not LABEL.match(app or ""):
        return False, f"app {app[:40]!r} is not [A-Za-z0-9._-], 1 to 128 characters"
    if not USER.match(job.user or ""):
        return False, f"user {job.user[:40]!r} cannot key a history"
    return True, f"{job.user}/{app}"


class Speculator:
    """The daemon's side of speculative reservations (one per daemon; see the module doc)."""

    def __init__(
        self,
        section: SpeculativeSection,
        backend: RJMSBackend,
        journal: Any,
        dry_run: bool = False,
    ) -> None:
        from rush.models.speculative.strategy import CostModel

        self.section = section
        self.backend = backend
        self.journal = journal
        self.dry_run = dry_run
        self.mode = "dry-run" if dry_run else "apply"
        try:
            self.cost = CostModel(section.alpha, section.beta, section.gamma)
        except ConfigError as exc:
            raise ConfigError(str(exc), where="speculative", fix=exc.fix) from None
        self.granularity = backend.capabilities.time_limit_granularity
        self.replaces = backend.capabilities.requeue_replaces_job
        journal.db.executescript(SCHEMA)
        _add_censored_column(journal.db)
        # Dry-run remembers what it would have done in memory, never in the journal.
        self._dry: dict[int, SpecJob] = {}

    # -- storage ----------------------------------------------------------------------------
    def jobs(self) -> dict[int, SpecJob]:
        if self.dry_run:
            return dict(self._dry)
        rows = self.journal.db.execute(
            "SELECT job_id, app, walltime, sequence, attempt, restarts, status, origin, updated"
            " FROM speculative_jobs"
        )
        return {r[0]: SpecJob(r[0], r[1], r[2], tuple(json.loads(r[3])), *r[4:]) for r in rows}

    def _save(self, job: SpecJob) -> None:
        if self.dry_run:
            self._dry[job.job_id] = job
            return
        self.journal.db.execute(
            "INSERT OR REPLACE INTO speculative_jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", job.row()
        )

    def _drop(self, job_id: int) -> None:
        if self.dry_run:
            self._dry.pop(job_id, None)
            return
        self.journal.db.execute("DELETE FROM speculative_jobs WHERE job_id = ?", (job_id,))

    def history(self, app: str) -> list[PastRun]:
        """The application's last ``speculative.samples`` samples, oldest first."""
        rows = self.journal.db.execute(
            "SELECT runtime, censored FROM speculative_history WHERE app = ?"
            " ORDER BY time DESC, job_id DESC LIMIT ?",
            (app, self.section.samples),
        )
        return [PastRun(float(r[0]), bool(r[1])) for r in rows][::-1]

    def add_sample(self, app: str, job_id: int, runtime: float, when: float, censored: bool = False) -> None:
        """A run's length (``censored``: cut by a limit or a person) joins the application's
        history (the last N are kept)."""
        if self.dry_run or not (math.isfinite(runtime) and runtime > 0):
            return
        db = self.journal.db
        db.execute(
            "INSERT OR REPLACE INTO speculative_history (app, job_id, runtime, time, censored)"
            " VALUES (?, ?, ?, ?, ?)",
            (app, job_id, runtime, when, int(censored)),
        )
        db.execute(
            "DELETE FROM speculative_history WHERE app = ? AND rowid NOT IN (SELECT rowid FROM"
            " speculative_history WHERE app = ? ORDER BY time DESC, job_id DESC LIMIT ?)",
            (app, app, self.section.samples),
        )

    def _record(self, cycle: int, job_id: int, action: str, reason: str, value: float | None,
                outputs: dict[str, Any], status: str, answer: str = "") -> None:  # fmt: skip
        self.journal.record(
            DecisionRow(cycle, job_id, action, reason, value, outputs, self.mode), status, answer
        )

    # -- one cycle --------------------------------------------------------------------------
    def cycle(self, cycle: int, state: ClusterState) -> dict[str, int]:
        """Follow the opted-in jobs of this read; returns the RJMS actions done by kind."""
        done: dict[str, int] = {}
        live = {j.job_id: j for j in state.jobs}
        self._ended(cycle, state, live, self.jobs(), done)
        self._confirm(cycle, state, live, self.jobs(), done)
        # Read again: a Flux replacement confirmed above is followed, not new.
        self._new(cycle, state, self.jobs(), done)
        return done

    def _count(self, done: dict[str, int], kind: str, result: ActionResult) -> None:
        if result.ok and not self.dry_run:
            done[kind] = done.get(kind, 0) + 1

    def _new(
        self, cycle: int, state: ClusterState, followed: dict[int, SpecJob], done: dict[str, int]
    ) -> None:
        from rush.models.speculative.job_sequence import job_sequence

        estimates = 0
        strategies: dict[tuple[str, float], tuple[tuple[float, ...], str, int]] = {}
        for job in state.jobs:
            if job.job_id in followed or "speculative" not in job.tags:
                continue
            if "attempt" in job.tags:
                # A run rush requeued (its row confirms it) or a forged tag: never a new sequence.
                continue
            opted, why = opt_in(job)
            now = state.taken_at
            if not opted:
                with self.journal.transaction():
                    self._record(cycle, job.job_id, "speculate", f"refused: {why}", None, {}, "refused")
                    self._save(SpecJob(job.job_id, "", 0.0, (), 0, job.restarts, "refused", job.job_id, now))
                continue
            app = why
            walltime = float(job.requested_time)
            watch = SpecJob(job.job_id, app, walltime, (), 0, job.restarts, "watch", job.job_id, now)
            if job.state != "PENDING" or not (math.isfinite(walltime) and walltime > 0):
                # Seen running (started before rush saw it) or no walltime to cap the sequence:
                # left as it is; a completion still feeds the history.
                reason = "already started" if job.state != "PENDING" else "no walltime to end the sequence at"
                with self.journal.transaction():
                    self._record(cycle, job.job_id, "speculate", f"left at its limit: {reason}", None,
                                 {"app": app}, "skipped")  # fmt: skip
                    self._save(watch)
                continue
            key = (app, walltime)
            if key not in strategies:
                if estimates >= MAX_ESTIMATES_PER_CYCLE:
                    continue  # the rest next cycle
                estimates += 1
                samples = self.history(app)
                try:
                    strategy = job_sequence(samples, walltime, self.section.estimator, self.granularity,
                                            self.cost, self.section.min_samples)  # fmt: skip
                    strategies[key] = (strategy.reservations, strategy.note, len(samples))
                except (RushError, ValueError, FloatingPointError) as exc:
                    strategies[key] = ((), f"no strategy: {exc}", len(samples))
            seq, note, n = strategies[key]
            outputs = {"app": app, "samples": n, "estimator": self.section.estimator, "sequence": list(seq),
                       "walltime": walltime, "note": note}  # fmt: skip
            if len(seq) < 2:
                why_not = note if not seq else f"the strategy is the walltime alone ({note})"
                with self.journal.transaction():
                    self._record(cycle, job.job_id, "speculate", f"left at its walltime: {why_not}", None,
                                 outputs, "skipped")  # fmt: skip
                    self._save(watch)
                continue
            spec = SpecJob(job.job_id, app, walltime, seq, 0, job.restarts, "limited", job.job_id, now)
            reason = f"attempt 1 of {len(seq)}: limit t1 = {seq[0]:g} s (walltime {walltime:g} s)"
            self._act_limit(cycle, job.job_id, spec, reason, outputs, done)

    def _act_limit(self, cycle: int, job_id: int, spec: SpecJob, reason: str, outputs: dict[str, Any],
                   done: dict[str, int]) -> None:  # fmt: skip
        """Set the job's limit to its attempt's reservation; journal it; follow the job."""
        limit = spec.limit()
        if self.dry_run:
            # Journaled only: the job keeps its walltime, so it is watched, never requeued.
            self._record(cycle, job_id, "speculate", reason, limit, outputs, "dry-run")
            self._save(SpecJob(**{**spec.__dict__, "sequence": (), "status": "watch"}))
            return
        result = self.backend.set_time_limit(job_id, limit)
        with self.journal.transaction():
            self._record(cycle, job_id, "speculate", reason, limit, outputs,
                         "done" if result.ok else "failed", result.answer)  # fmt: skip
            if not result.ok and spec.attempt == 0:
                # The job keeps its walltime: watched only.
                spec = SpecJob(spec.job_id, spec.app, spec.walltime, (), 0, spec.restarts, "watch",
                               spec.origin, spec.updated)  # fmt: skip
            self._save(spec)
        self._count(done, "speculate", result)

    def _ended(self, cycle: int, state: ClusterState, live: dict[int, RJMSJob], followed: dict[int, SpecJob],
               done: dict[str, int]) -> None:  # fmt: skip
        """Followed jobs that left the queue: a completion feeds the history, a kill at a
        reservation with a further one is requeued with it."""
        gone = [s for s in followed.values() if s.job_id not in live and s.status != "requeuing"]
        gone = sorted(gone, key=lambda s: s.job_id)[:MAX_ENDED_PER_CYCLE]
        if not gone:
            return
        try:
            records = {int(r["job_id"]): r for r in self.backend.accounting([s.job_id for s in gone])}
        except (NotImplementedError, RushError) as exc:
            log.warning("speculative: no accounting for ended jobs (%s)", exc)
            records = {}
        now = state.taken_at
        for spec in gone:
            if self._ended_one(cycle, spec, records.get(spec.job_id), now):
                self._requeue(cycle, spec, records[spec.job_id], now, done)

    def _ended_one(self, cycle: int, spec: SpecJob, record: dict[str, Any] | None, now: float) -> bool:
        """Journal how a followed job ended; True when it is to be requeued with its next limit."""
        with self.journal.transaction():
            return self._settle_end(cycle, spec, record, now)

    def _settle_end(self, cycle: int, spec: SpecJob, record: dict[str, Any] | None, now: float) -> bool:
        from rush.core.speculative_reservations import requeue_after_kill

        if record is None:
            if spec.updated < now - FORGET_AFTER:
                self._drop(spec.job_id)
            return False
        if spec.status == "refused":
            self._drop(spec.job_id)
            return False
        result = ended_as(record)
        start, end = record.get("start"), record.get("end")
        runtime = float(end) - float(start) if start is not None and end is not None else math.nan
        limit = spec.limit() if spec.status == "limited" else spec.walltime
        outputs = {"app": spec.app, "attempt": spec.attempt + 1, "limit": limit, "runtime": runtime,
                   "result": result, "sequence": list(spec.sequence)}  # fmt: skip
        count = len(spec.sequence) if spec.status == "limited" else 0
        if result in TIMED_OUT and count and requeue_after_kill(spec.attempt, count):
            return True
        # Which ends are samples, and which of them censored, is job_sequence's rule (the study's too).
        sample = past_run(result, runtime)
        if sample is not None:
            self.add_sample(spec.app, spec.origin, sample.length, float(end or now), sample.censored)
        kind = "no sample" if sample is None else "a censored sample" if sample.censored else "a sample"
        if result == "COMPLETED":
            why = f"completed in {runtime:.0f} s at attempt {spec.attempt + 1}: {kind} of {spec.app}"
        elif result in TIMED_OUT:
            why = f"killed at its last reservation at attempt {spec.attempt + 1}: {kind} of {spec.app}"
        else:
            why = f"ended {result or 'without a state'} at attempt {spec.attempt + 1}: {kind} of {spec.app}"
        self._record(cycle, spec.job_id, "speculative_end", why, runtime if math.isfinite(runtime) else None,
                     outputs, "done")  # fmt: skip
        self._drop(spec.job_id)
        return False

    def _requeue(
        self, cycle: int, spec: SpecJob, record: dict[str, Any], now: float, done: dict[str, int]
    ) -> None:
        """Issue the one requeue of this attempt: marked ``requeuing`` in the journal first."""
        from rush.core.speculative_reservations import next_attempt

        k = next_attempt(spec.attempt)
        limit = SpecJob(**{**spec.__dict__, "attempt": k}).limit()
        restarts = int(record.get("restarts", spec.restarts) or 0)
        reason = (f"killed at t{spec.attempt + 1} = {spec.limit():g} s; requeued with t{k + 1} = {limit:g} s"
                  f" (attempt {k + 1} of {len(spec.sequence)})")  # fmt: skip
        tags = {"speculative": "1", "attempt": str(k)}
        outputs = {"app": spec.app, "attempt": k + 1, "limit": limit, "sequence": list(spec.sequence),
                   "result": ended_as(record)}  # fmt: skip
        if self.dry_run:
            self._record(cycle, spec.job_id, "speculative_requeue", reason, limit, outputs, "dry-run")
            self._drop(spec.job_id)
            return
        # The intent is committed before the RJMS hears of it: a crash in between is settled
        # by _confirm from the RJMS's own evidence, never by a second requeue.
        with self.journal.transaction():
            decision = self._record_id(cycle, spec.job_id, "speculative_requeue", reason, limit, outputs)
            requeuing = {"status": "requeuing", "restarts": restarts, "updated": now}
            self._save(SpecJob(**{**spec.__dict__, **requeuing}))
        try:
            result = self.backend.requeue_with_limit(spec.job_id, tags, limit)
        except RushError as exc:
            result = ActionResult(False, str(exc), attempted=False)
        with self.journal.transaction():
            if not result.attempted:
                self.journal.finish(decision, "failed", result.answer)
                self._drop(spec.job_id)
                return
            self.journal.finish(decision, ISSUED, result.answer)
        self._count(done, "speculative_requeue", result)

    def _record_id(self, cycle: int, job_id: int, action: str, reason: str, value: float,
                   outputs: dict[str, Any]) -> int:  # fmt: skip
        return self.journal.record(
            DecisionRow(cycle, job_id, action, reason, value, outputs, self.mode), ISSUED
        )

    def _open_requeue(self, job_id: int) -> dict[str, Any] | None:
        open_ = [d for d in self.journal.decisions(job_id, "speculative_requeue") if d["status"] == ISSUED]
        return open_[-1] if open_ else None

    def _confirm(self, cycle: int, state: ClusterState, live: dict[int, RJMSJob], followed: dict[int, SpecJob],
                 done: dict[str, int]) -> None:  # fmt: skip
        """Settle requeues issued earlier from what the RJMS shows (never issued twice)."""
        from rush.core.speculative_reservations import next_attempt

        # A requeue issued on this very read is confirmed from the next one.
        for spec in [s for s in followed.values() if s.status == "requeuing" and s.updated < state.taken_at]:
            decision = self._open_requeue(spec.job_id)
            nxt = SpecJob(**{**spec.__dict__, "attempt": next_attempt(spec.attempt), "status": "limited"})
            if self.replaces:
                new_id = self.backend.find_replacement(spec.job_id, state)
                if new_id is None:
                    # Not resubmitted (a crash before it reached Flux, or Flux refused): once,
                    # from the journal's intent; the old job has ended, so nothing runs twice.
                    result = self.backend.requeue_with_limit(
                        spec.job_id, {"speculative": "1", "attempt": str(nxt.attempt)}, nxt.limit()
                    )
                    if decision is not None:
                        self.journal.finish(decision["id"], "done" if result.ok else "failed", result.answer)
                    if not result.ok:
                        self._drop(spec.job_id)
                    continue
                self._drop(spec.job_id)
                self._save(SpecJob(**{**nxt.__dict__, "job_id": new_id, "updated": state.taken_at}))
                if decision is not None:
                    self.journal.finish(
                        decision["id"], "done", f"{decision['answer']}; replaced by job {new_id}"
                    )
                continue
            job = live.get(spec.job_id)
            if job is not None:
                restarts = job.restarts
            else:
                # Ended again (a short rerun between two reads) or never requeued: its record says.
                records = {int(r["job_id"]): r for r in self.backend.accounting([spec.job_id])}
                record = records.get(spec.job_id)
                if record is None:
                    # Not finished as slurmctld knows it now: requeued and live since this read
                    # (confirmed next cycle), or forgotten long ago.
                    if spec.updated < state.taken_at - FORGET_AFTER:
                        self._drop(spec.job_id)
                    continue
                restarts = int(record.get("restarts", 0) or 0)
                if restarts <= spec.restarts:
                    # The requeue never reached Slurm (a crash after the journal's intent): issue it
                    # now, once; the restart count is the evidence next cycle.
                    result = self.backend.requeue_with_limit(
                        spec.job_id, {"speculative": "1", "attempt": str(nxt.attempt)}, nxt.limit()
                    )
                    if decision is not None:
                        status = ISSUED if result.ok else "failed"
                        self.journal.finish(
                            decision["id"], status, f"issued after a restart: {result.answer}"
                        )
                    if not result.ok:
                        self._drop(spec.job_id)
                    continue
            if restarts <= spec.restarts:
                continue  # not requeued yet as far as Slurm shows
            answer = f"restart count {spec.restarts} -> {restarts}"
            if job is not None and job.state == "PENDING" and abs(job.requested_time - nxt.limit()) > 1:
                # The limit did not stick (e.g. a crash between requeue and update): set it now.
                result = self.backend.set_time_limit(job.job_id, nxt.limit())
                answer += f"; limit set again: {result.answer}"
            # Confirmed: the job is followed at its next attempt (its end, if it already ended,
            # is settled next cycle like any other).
            self._save(SpecJob(**{**nxt.__dict__, "restarts": restarts, "updated": state.taken_at}))
            if decision is not None:
                self.journal.finish(decision["id"], "done", f"{decision['answer']}; {answer}")


def _add_censored_column(db: Any) -> None:
    """Journals written before censored runs were samples lack the column: every row then was a
    completed run (not censored)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(speculative_history)")}
    if "censored" not in columns:
        db.execute("ALTER TABLE speculative_history ADD COLUMN censored INTEGER NOT NULL DEFAULT 0")


def speculator_for(config: Any, backend: RJMSBackend, journal: Any, dry_run: bool) -> Speculator | None:
    """The daemon's speculator when ``[speculative]`` is enabled (and the config has it)."""
    section = getattr(config, "speculative", None)
    if section is None or not section.enabled:
        return None
    return Speculator(section, backend, journal, dry_run=dry_run)
