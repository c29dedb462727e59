"""The planner both live shells share: read the RJMS, ask the core, carry out its plan, journal.

The Slurm daemon (:mod:`rush.daemon.service`, which adds the loop and back-off) and the Flux
scheduler module (:mod:`rush.flux_module.scheduler`, which then allocates the core's starts)
run one :class:`Planner` cycle per pass:

1. read the RJMS; on failure, a garbage answer or a read slower than
   ``daemon.max_read_seconds``: log, count, journal and take **no** action on stale data;
2. reconcile intents left open by a crash, and confirm the requeues issued last cycle
   (they are asynchronous: issued, never waited for, never re-issued) (:meth:`Applier.reconcile`);
3. feed finished jobs to the runtime classifier's live history and the runtime predictor
   (:mod:`rush.planner.runtime_prediction`, whose predictions become the jobs' estimates);
4. build the core's snapshot (:mod:`rush.planner.snapshot_builder`), its job columns kept
   between cycles (:mod:`rush.planner.snapshot_columns`: only changed jobs are read again);
5. call :func:`rush.core.schedule` — the same core as ``rush simulate``;
6. plan and apply through the backend within the rate limits, or in dry-run only journal
   (:mod:`rush.planner.apply`); the core's start/backfill/reserve view is journaled as
   ``advice``, the evidence for its order. What the backend can do is read from its declared
   :class:`~rush.rjms.base.Capabilities` (a backend that starts jobs has no holds to place).

Any other failure (a corrupt model file, a bug on odd input) is journaled as an event and
the cycle ends without action.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace

from rush.core.config import CoreConfig
from rush.core.kept_nodes import KeptNodes
from rush.core.schedule import schedule
from rush.core.snapshot import Decisions
from rush.errors import ConfigError, RJMSError, RushError
from rush.planner.apply import Applier, Book, plan_actions
from rush.planner.config import RushConfig
from rush.planner.hostlist_text import compress_hostlist, reservation_nodes
from rush.planner.journal import DecisionRow, JobRecord, Journal, MemoryBook, QueueRow
from rush.planner.metrics import DaemonMetrics
from rush.planner.pass_trigger import PassTrigger
from rush.planner.queue_view import QueueView, RowInputs, describe_core, queue_delta
from rush.planner.runtime_prediction import LiveRuntimePredictor, load_runtime_predictor
from rush.planner.snapshot_builder import Built, ClassPredictor, SnapshotBuilder, load_class_predictor
from rush.planner.snapshot_columns import KeptColumns
from rush.planner.speculative import speculator_for
from rush.planner.start_order import (
    MAX_REPORTED,
    PendingEpisodes,
    StartOrderRead,
    ended_line,
    expected_and_gone,
    left_pending,
    pending_line,
    released_and_gone,
    released_left_pending,
    released_line,
    released_pending_line,
    rjms_started_any,
    started_out_of_order,
)
from rush.planner.variation import VariationPredictor, get_predictor
from rush.planner.variation_placement import predict_at_placement
from rush.rjms.base import ClusterState, RJMSBackend, RJMSJob, get_backend

log = logging.getLogger("rush.daemon")
# A job rush knows nothing more about is forgotten this long after it left the queue.
FORGET_AFTER = 3600.0


@dataclass
class CycleReport:
    cycle: int
    ok: bool
    error: str = ""
    # The core's decisions by action, and the RJMS actions done by kind.
    decisions: dict[str, int] = field(default_factory=dict)
    applied: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    outcome: str = "ok"  # ok, rjms_error, error


def make_backend(config: RushConfig) -> RJMSBackend:
    """The configured backend; a wrong option is a ConfigError naming ``rjms.options``."""
    options = dict(config.rjms.options)
    if config.site.fairshare == "rjms":
        # The backend reads each pending job's fair-share factor (Slurm: sshare; Flux: mf_priority).
        options.setdefault("fairshare", True)
    try:
        return get_backend(config.rjms.backend, **options)
    except TypeError as exc:
        fairshare = "fairshare" in options and "fairshare" not in config.rjms.options
        raise ConfigError(
            f"the {config.rjms.backend} backend does not accept these options: {exc}",
            where="site.fairshare" if fairshare and "fairshare" in str(exc) else "rjms.options",
            fix='use a backend that reads fair-share (slurm, flux), or site.fairshare = "none"'
            if fairshare and "fairshare" in str(exc)
            else "see the backend's documented options in deploy/rush.toml",
        ) from None


class Planner:
    """One cycle of snapshot -> core -> plan -> RJMS levers and journal, for any live shell."""

    def __init__(
        self,
        config: RushConfig,
        backend: RJMSBackend | None = None,
        dry_run: bool | None = None,
        metrics: DaemonMetrics | None = None,
        journal_sync: str = "FULL",
    ) -> None:
        self.config = config
        self.dry_run = config.daemon.dry_run if dry_run is None else dry_run
        self.mode = "dry-run" if self.dry_run else "apply"
        self.metrics = metrics or DaemonMetrics()
        self.metrics.dry_run.set(1 if self.dry_run else 0)
        self.journal = Journal(
            config.daemon.journal, retention=config.daemon.journal_retention, synchronous=journal_sync
        )
        self.backend = backend or make_backend(config)
        self.applier = Applier(self.backend, self.journal, self.metrics)
        # Dry-run never writes per-job state to the journal; it plays it in memory (on copies:
        # the journal's kept book lends its own records, and the memory book changes its own).
        self.book: Book = (
            MemoryBook({k: r.copy() for k, r in self.journal.jobs().items()})
            if self.dry_run
            else self.journal
        )
        self.failures = 0
        # The last successful cycle's (cycle number, built snapshot, decisions), for a shell
        # that carries the core's starts out itself (the Flux scheduler module allocates them).
        self.last: tuple[int, Built, Decisions] | None = None
        self._trigger = PassTrigger()
        # Conservative on nodes: the last pass's record of its reservations' nodes, given back
        # to the next (rush.core.kept_nodes); lost on restart, when they keep their times only.
        self._kept: KeptNodes | None = None
        # The reservations' nodes as last journaled: node names, job -> node indices (None: not
        # yet by this process).
        self._journaled_nodes: tuple[tuple[str, ...], dict[int, tuple[int, ...]]] | None = None
        self._running: dict[int, RJMSJob] = {}
        # The pass's job columns, kept between cycles (rush.planner.snapshot_columns).
        self._columns = KeptColumns()
        # The journal's queue rows as last written (rewritten only when they change).
        self._queue: dict[int, QueueRow] = self.journal.queue()
        self._queue_inputs: dict[str, RowInputs] = {}  # queue_delta's memo of the last pass
        self._estimate_noted: set[int] = set()  # running jobs whose refused quantiles are journaled
        self._request_noted: set[int] = set()  # jobs whose unreadable request is journaled
        self._left_pending = PendingEpisodes()  # expected jobs found still pending (journaled once)
        self._released_pending = PendingEpisodes()  # released infeasible jobs the RJMS keeps (once)
        self.classifier = self._load_classifier()
        self.runtime = self._load_runtime_predictor()
        self.core_config = self._core_config()
        # What rush explain needs to recompute a priority's terms (policy, threshold, ...).
        self.journal.set_meta("core_config", describe_core(self.core_config, config.policy.policy))
        if self.core_config.placement == "variability" and not self.backend.capabilities.starts_jobs:
            # The RJMS places jobs itself: a flagged job released for a quiet pod may land anywhere.
            note = (
                "placement = variability on an RJMS that places jobs itself: rush's placements are "
                "advice; flagged jobs with a quiet placement are released, not held (first-fit keeps "
                "skip-with-limit)"
            )
            self.journal.event(None, "config", note)
            log.warning(note)
        self.variation = self._load_variation()
        self.speculator = speculator_for(config, self.backend, self.journal, self.dry_run)
        self.builder = SnapshotBuilder(
            self.classifier,
            self.variation,
            self._model_error,
            time_origin=self._time_origin(),
            kill_false_small=self.core_config.kill_false_small,
            runtime=self.runtime,
        )

    @property
    def awaiting_completions(self) -> bool:
        """Jobs seen running last pass: a pass now would learn which of them finished."""
        return bool(self._running)

    # -- set-up ---------------------------------------------------------------------------
    def _model_error(self, model: str, exc: Exception, cycle: int | None = None) -> None:
        """A model that cannot be used is journaled; the daemon goes on without it."""
        log.error("model %s not used: %s", model, exc)
        self.metrics.model_errors.labels(model=model).inc()
        self.journal.event(cycle, "model", f"{model}: {exc}")

    def _load_classifier(self) -> ClassPredictor | None:
        m = self.config.models
        try:
            classifier = load_class_predictor(m.runtime_class, m.history, m.small_below)
        except RushError as exc:
            self._model_error("runtime-class", exc)
            classifier = load_class_predictor(None, None, m.small_below)
        except Exception as exc:  # a pickle that fails in an unexpected way
            self._model_error("runtime-class", exc)
            classifier = load_class_predictor(None, None, m.small_below)
        if classifier is not None:
            self.metrics.model_info.labels(model=classifier.name, version=classifier.version).set(1)
            # What an administrator should know about the model (e.g. live users cannot match its history).
            for note in getattr(classifier, "notes", []):
                self.journal.event(None, "model", f"{classifier.name}: {note}")
        return classifier

    def _load_runtime_predictor(self) -> LiveRuntimePredictor | None:
        """The configured runtime predictor with the history kept in the journal; one that
        cannot load (a quantile model file refused) is journaled, and estimates use limits."""
        name = self.config.policy.runtime_prediction
        try:
            runtime = load_runtime_predictor(name, self.config.models.runtime_quantiles, self.journal.db)
            if runtime is not None:
                runtime.warm_up(time.time())  # a model that cannot predict one job is not used
        except Exception as exc:
            self._model_error(f"runtime:{name}", exc)
            return None
        if runtime is not None:
            self.metrics.model_info.labels(model=f"runtime:{name}", version=runtime.version).set(1)
            for note in runtime.notes:
                self.journal.event(None, "model", f"runtime:{name}: {note}")
        return runtime

    def _core_config(self) -> CoreConfig:
        divider = self.classifier.divider if self.classifier is not None else None
        starts_jobs = self.backend.capabilities.starts_jobs
        try:
            return self.config.core_config(divider=divider, starts_jobs=starts_jobs)
        except RushError as exc:
            # kill_false_small with the model's divider, but the model did not load.
            self.journal.event(None, "config", f"false-small kills disabled: {exc}")
            log.error("false-small kills disabled: %s", exc)
            return replace(
                self.config.core_config(divider=1.0, starts_jobs=starts_jobs),
                kill_false_small=False,
                divider=None,
            )

    def _sets_priorities(self) -> bool:
        """Priority actions only where the RJMS orders by them: not when rush starts jobs itself
        (Flux module), nor under the RJMS policy, whose order is the RJMS's own priority (on
        Slurm that priority includes rush's SiteFactor: setting it would feed back)."""
        return not self.backend.capabilities.starts_jobs and self.core_config.policy.name != "RJMS"

    def _time_origin(self) -> float:
        """Live origin of r = submit - origin (F1-F4, LIN): configured, else the first cycle's time.

        Offline it is the trace's start; live, the day rush started scheduling this cluster
        plays that role. It is kept in the journal, so restarts do not move every priority.
        """
        if self.config.policy.time_origin is not None:
            # Kept in the journal too: rush explain recomputes the terms from it.
            self.journal.set_meta("time_origin", repr(float(self.config.policy.time_origin)))
            return float(self.config.policy.time_origin)
        return float(self.journal.meta_default("time_origin", repr(time.time())))

    def _load_variation(self) -> VariationPredictor | None:
        v = self.config.variation
        if not v.enabled:
            return None
        try:
            predictor = get_predictor(v.predictor, **v.predictor_options())
        except Exception as exc:  # e.g. a tampered model file: journaled, no job is held
            self._model_error(f"variation:{v.predictor}", exc)
            return None
        card = getattr(predictor, "card", None)
        version = (
            f"{card['estimator']} {card['sha256'][:12]} flags {','.join(predictor.classes)}"
            if card
            else f"{v.counter}>{v.threshold:g}/{v.window:g}s"
        )
        self.metrics.model_info.labels(model=f"variation:{v.predictor}", version=version).set(1)
        return predictor

    # -- one cycle ------------------------------------------------------------------------
    def _read(self, cycle: int) -> ClusterState:
        started = time.monotonic()
        try:
            state = self.backend.read_state(self.config.daemon.partitions)
        except RJMSError:
            raise
        except Exception as exc:  # garbage the backend did not catch: no action on it
            raise RJMSError(f"unusable answer: {exc!r}", where=f"{self.config.rjms.backend} read") from exc
        took = time.monotonic() - started
        if took > self.config.daemon.max_read_seconds:
            raise RJMSError(
                f"the queue read took {took:.1f} s > daemon.max_read_seconds; the data is stale",
                where=f"{self.config.rjms.backend} read",
                fix="rush retries next cycle; raise daemon.max_read_seconds if the RJMS is always this slow",
            )
        return state

    def _fail(self, cycle: int, started: float, outcome: str, exc: BaseException) -> CycleReport:
        self.failures += 1
        self.metrics.cycles.labels(outcome=outcome).inc()
        self.metrics.consecutive_failures.set(self.failures)
        if outcome == "rjms_error":
            self.metrics.rjms_errors.inc()
            log.warning("cycle %d: RJMS unavailable, no action taken: %s", cycle, exc)
        else:
            log.exception("cycle %d failed; the daemon keeps running", cycle, exc_info=exc)
        seconds = time.perf_counter() - started
        try:
            self.journal.event(cycle, outcome, str(exc))
            self.journal.end_cycle(cycle, False, self.mode, seconds=seconds, error=str(exc)[:2000])
        except Exception:  # the journal itself failing must not kill the loop
            log.exception("cannot journal cycle %d's failure", cycle)
        return CycleReport(cycle, False, str(exc), seconds=seconds, outcome=outcome)

    def run_cycle(self) -> CycleReport:
        started = time.perf_counter()
        cycle = self.journal.next_cycle()
        try:
            state = self._read(cycle)
        except RJMSError as exc:
            return self._fail(cycle, started, "rjms_error", exc)
        try:
            self._journal_request_notes(cycle, state)
            self._check_start_order(cycle, state)
            self.applier.reconcile(state)
            self._observe_completions(state, cycle)
            built = self.builder.build(state, self.book.jobs())
            # Only a pass an RJMS event triggered counts skips (rush.core.skip_with_limit).
            # The last pass's record gives each standing reservation its nodes back (kept_nodes).
            snapshot = replace(built.snapshot, trigger=self._trigger.of(state), kept=self._kept)
            built = replace(built, snapshot=snapshot)
            try:  # job-node windows at the core's tentative placement; quiet pods (issue 20)
                built = predict_at_placement(built, self.variation, self.core_config, state)
            except Exception as exc:  # a model failing on live input must not stop scheduling
                self._model_error(f"variation:{getattr(self.variation, 'name', '?')}", exc, cycle)
            # The jobs' columns, kept between cycles: only the rows of jobs that changed are read.
            columns = self._columns.update(built.snapshot.pending, built.snapshot.running)
            built = replace(built, snapshot=replace(built.snapshot, columns=columns))
            if built.dropped:
                shown = ", ".join(f"{job_id} ({why})" for job_id, why in built.dropped[:20])
                self.journal.event(
                    cycle, "rjms_data", f"{len(built.dropped)} job(s) left out, unusable as read: {shown}"
                )
            for name, seconds in built.model_seconds.items():
                self.metrics.model_latency.labels(model=name).observe(seconds)
            decisions = schedule(built.snapshot, self.core_config, explain_priorities=self._sets_priorities())
            self.last = (cycle, built, decisions)
            self._kept = decisions.kept
            self._record_queue(cycle, state, built, decisions)
            # Limits first: a priority nudge may start the job at once.
            speculated = self._speculate(cycle, state)
            applied, rjms_error = self._act(cycle, state, built, decisions)
            for kind, n in speculated.items():
                applied[kind] = applied.get(kind, 0) + n
        except Exception as exc:
            return self._fail(cycle, started, "error", exc)
        counts = decisions.counts()
        if decisions.unconsidered:  # a bounded pass: each job's queue row says "not considered"
            counts["unconsidered"] = len(decisions.unconsidered)
        seconds = time.perf_counter() - started
        pending, running = len(built.snapshot.pending), len(built.snapshot.running)
        if rjms_error is not None:
            # Part of the plan may be done; the rest waits for the RJMS, with back-off.
            report = self._fail(cycle, started, "rjms_error", rjms_error)
            report.decisions, report.applied = counts, applied
            return report
        self.failures = 0
        self.metrics.cycles.labels(outcome="ok").inc()
        self.metrics.consecutive_failures.set(0)
        self.metrics.cycle_seconds.observe(seconds)
        self.metrics.queue_length.set(pending)
        self.metrics.running_jobs.set(running)
        self.metrics.last_success.set(time.time())
        self.journal.end_cycle(cycle, True, self.mode, pending, running, counts, seconds)
        return CycleReport(cycle, True, decisions=counts, applied=applied, seconds=seconds)

    def _check_start_order(self, cycle: int, state: ClusterState) -> None:
        """Priority mode: journal the jobs the RJMS started ahead of ones rush expected it to
        start (rush.planner.start_order); a shell that starts jobs itself follows rush's order."""
        if self.last is None or self.backend.capabilities.starts_jobs:
            return
        read = StartOrderRead(self.last[2], state)  # the read's indexes, made once for every check
        lines = started_out_of_order(read)
        for job_id in expected_and_gone(read):  # one RPC each, at most the expected
            why = self.backend.ended_unstarted(job_id)
            if why is not None:
                lines.append(ended_line(job_id, why))
        for job_id in released_and_gone(read):  # released as infeasible, then refused
            why = self.backend.ended_unstarted(job_id)
            if why is not None:
                lines.append(released_line(job_id, why))
        settled = not rjms_started_any(read)
        lines += [pending_line(j) for j in self._left_pending.update(left_pending(read), settled)]
        released = released_left_pending(read)
        kept = self._released_pending.update(list(released), settled)
        lines += [released_pending_line(j, released[j]) for j in kept]
        for line in lines[:MAX_REPORTED]:
            self.journal.event(cycle, "rjms_order", line)
        for j in kept:  # on the job's own history too, so that `rush explain` says so
            row = DecisionRow(
                cycle, j, "rjms_order", released_pending_line(j, released[j]), None, None, self.mode
            )
            self.journal.record(row, "observed")
        if len(lines) > MAX_REPORTED:
            self.journal.event(cycle, "rjms_order", f"... and {len(lines) - MAX_REPORTED} more such job(s)")

    def _journal_request_notes(self, cycle: int, state: ClusterState) -> None:
        """Once per job: a request the RJMS accepted and rush cannot read (its cores anywhere)."""
        for job in state.jobs:
            if job.request_note and job.job_id not in self._request_noted:
                self._request_noted.add(job.job_id)
                self.journal.event(
                    cycle,
                    "request",
                    f"job {job.job_id}: rush cannot read its resource request ({job.request_note}); "
                    f"read as its {job.procs} cores anywhere",
                )
        self._request_noted &= {job.job_id for job in state.jobs}  # bounded: the jobs listed

    def _record_queue(self, cycle: int, state: ClusterState, built: Built, decisions: Decisions) -> None:
        """The queue as rush sees it, into the journal (changed rows only) and the metrics."""
        now = state.taken_at
        view = QueueView(cycle, now, state, built, decisions, self.core_config, self.config.policy.policy)
        # The memo stands for rows journaled: a pass that fails to write them forgets it.
        inputs, self._queue_inputs = self._queue_inputs, {}
        rows, moved = queue_delta(view, self._queue, inputs, hold_estimates=True)
        self.journal.record_queue(rows, moved)
        for row in moved:
            self._queue[row.job_id] = row
        for row in rows:
            if row.state == "gone":
                self._queue.pop(row.job_id, None)
            else:
                self._queue[row.job_id] = row
        self._queue_inputs = inputs
        self.metrics.observe_estimates(now, list(decisions.estimated_start.values()))
        self._journal_estimate_notes(cycle, decisions)
        if self.runtime is not None:
            self.metrics.observe_runtime_sources(built.outputs)

    def _journal_estimate_notes(self, cycle: int, decisions: Decisions) -> None:
        """Once per job: why the start estimates refused its predicted quantiles (a running
        job's end, or a pending job's length under rule L2, is then read off its prediction, or
        its request)."""
        for job_id, why in decisions.estimate_notes.items():
            if job_id not in self._estimate_noted:
                self._estimate_noted.add(job_id)
                self.journal.event(
                    cycle,
                    "estimate",
                    f"job {job_id}: predicted runtime quantiles refused ({why}); start estimates read "
                    "its prediction or its request instead",
                )
        if len(self._estimate_noted) > 4 * len(decisions.estimate_notes) + 1024:  # bounded memory
            self._estimate_noted &= set(decisions.estimate_notes)

    def _act(
        self, cycle: int, state: ClusterState, built: Built, decisions: Decisions
    ) -> tuple[dict[str, int], RJMSError | None]:
        # Remember classes predicted this cycle (a running job keeps its pending prediction).
        with self.journal.transaction():
            for job_id, cls in built.predicted.items():
                rec = self.book.job(job_id)
                if rec.predicted_class != cls:
                    rec.predicted_class = cls
                    self.book.save_job(rec)
            # Conservative reservations stand from pass to pass: the core's new ones replace
            # the old for every job it saw pending (the next snapshot gives them back).
            # With their nodes, when the pass kept them (conservative on nodes), for rush explain;
            # a job's row is rewritten only when its time or its nodes changed.
            names, nodes = reservation_nodes(decisions.kept)
            before = self._journaled_nodes
            same_machine = before is not None and before[0] == names
            # Read from the pass's columns (the snapshot's jobs in its order), not the core jobs.
            columns = built.snapshot.columns
            assert columns is not None  # given in run_cycle
            for job_id, was in zip(
                columns.pending.job_id.tolist(), columns.pending.reserved_at.tolist(), strict=True
            ):
                at = decisions.reserved_at.get(job_id)
                where = nodes.get(job_id)
                if before is None:  # a restart: the journal may hold nodes from before it
                    moved = was < math.inf
                else:
                    moved = not same_machine or before[1].get(job_id) != where
                if (math.inf if at is None else at) != was or moved:
                    rec = self.book.job(job_id)
                    rec.reserved_at = at
                    rec.reserved_nodes = None if where is None else compress_hostlist(names[i] for i in where)
                    self.book.save_job(rec)
            self._journaled_nodes = (names, nodes)
            self._touch(state)
        plan = plan_actions(
            decisions,
            state,
            self.book.jobs(),
            max_actions_per_cycle=self.config.daemon.max_actions_per_cycle,
            skip_limit=self.core_config.skip_limit,
            outputs=built.outputs,
        )
        if self.dry_run:
            self.applier.journal_only(cycle, plan, self.book)
            applied: dict[str, int] = {}
            rjms_error = None
        else:
            applied, rjms_error = self.applier.apply(cycle, plan, state)
        # A shell that starts jobs journals its starts with their outcome itself.
        advice = (
            ("reserve", "infeasible")
            if self.backend.capabilities.starts_jobs
            else ("start", "backfill", "reserve", "infeasible")
        )
        with self.journal.transaction():
            for d in decisions.among(advice):
                row = DecisionRow(
                    cycle, d.job_id, d.action, d.reason, d.value, built.outputs.get(d.job_id), self.mode
                )
                self.journal.record(row, "advice")
        return applied, rjms_error

    def _speculate(self, cycle: int, state: ClusterState) -> dict[str, int]:
        """Speculative reservations (rush.planner.speculative): the RJMS actions done by kind. A
        failure there is journaled and leaves the core's actions of this cycle standing."""
        if self.speculator is None:
            return {}
        try:
            return self.speculator.cycle(cycle, state)
        except Exception as exc:
            log.exception("speculative reservations skipped this cycle")
            self.journal.event(cycle, "speculative", f"skipped this cycle: {exc}")
            return {}

    def _touch(self, state: ClusterState) -> None:
        """Mark the jobs still in the queue; forget the ones long gone (none with open intents)."""
        now = state.taken_at
        # Without reading the book: its records are as many as the jobs rush ever set a factor
        # for, and each listed one moves its last_seen every read (round 28, r31walks).
        self.book.mark_seen([j.job_id for j in state.jobs], now)
        # A listed job's record is now seen at `now`, never before the cut-off: only gone ones.
        open_jobs = {i.job_id for i in self.journal.open_intents()}
        stale = [job_id for job_id in self.book.seen_before(now - FORGET_AFTER) if job_id not in open_jobs]
        if stale:
            self.book.forget_jobs(stale)

    def _observe_completions(self, state: ClusterState, cycle: int) -> None:
        """Jobs that were running last cycle and left the queue finished: feed the history."""
        running = {j.job_id: j for j in state.jobs if j.state != "PENDING" and j.start is not None}
        still_here = {j.job_id for j in state.jobs}
        finished = [j for job_id, j in self._running.items() if job_id not in still_here]
        self._running = running
        if not finished or (self.classifier is None and self.runtime is None):
            return
        # A run rush killed (false-small; on Flux the job leaves and a replacement is submitted)
        # was cut short: its length is not a runtime for the history.
        records = self.book.jobs()
        finished = [j for j in finished if not _killed_by_rush(j, records.get(j.job_id))]
        if not finished:
            return
        ends = self._end_times([j.job_id for j in finished])
        if self.runtime is not None:
            try:
                with self.journal.transaction():
                    self.runtime.observe_finished([(j, ends.get(j.job_id, state.taken_at)) for j in finished])
            except Exception as exc:
                self._model_error(f"runtime:{self.runtime.name}", exc, cycle)
        if self.classifier is None:
            return
        try:
            for j in finished:
                self.classifier.observe_finished(j, ends.get(j.job_id, state.taken_at))
            self.classifier.save()
        except Exception as exc:
            self._model_error(self.classifier.name, exc, cycle)

    def _end_times(self, job_ids: list[int]) -> dict[int, float]:
        """When finished jobs ended: as a shell that saw them end says (the Flux module's
        ``end_times``), else as the RJMS's accounting says; a job missing is ended at the read."""
        end_times = getattr(self.backend, "end_times", None)
        if end_times is not None:
            return end_times(job_ids)
        ends: dict[int, float] = {}
        try:
            for record in self.backend.accounting(job_ids):
                if record.get("end"):
                    ends[int(record["job_id"])] = float(record["end"])
        except (NotImplementedError, RushError) as exc:
            log.debug("no accounting for finished jobs (%s); using the read time", exc)
        return ends


def _killed_by_rush(job: RJMSJob, rec: JobRecord | None) -> bool:
    """This run of ``job`` ended by rush's kill: the journal counts more requeues than it ran with."""
    try:
        ran_with = int(job.tags.get("requeues", 0))
    except ValueError:
        ran_with = 0
    return rec is not None and rec.requeues > ran_with
