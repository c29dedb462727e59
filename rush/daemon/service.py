"""The rush daemon: read the queue, ask the core, apply (or only journal) its decisions.

One cycle:

1. read the RJMS (on failure: log, count, back off, and take **no** action on stale data);
2. reconcile actions interrupted by a crash (see :mod:`rush.daemon.journal`);
3. build the core's snapshot: rush tags from the job_submit plugin, runtime classes (tags,
   else the configured model), the variation predictor's flags, skip and requeue counts;
4. call :func:`rush.core.schedule` — the same core as ``rush simulate``;
5. apply through the backend, most important first (kills, holds, releases, then
   priorities), within ``max_actions_per_cycle``; in dry-run, only journal.

Dry-run changes nothing in the RJMS and no per-job bookkeeping; it journals what it would do.
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rush.core import PendingJob, RunningJob, RuntimeClass, Snapshot, schedule
from rush.core.snapshot import Decision, Decisions
from rush.daemon.config import RushConfig, load_config
from rush.daemon.journal import Journal
from rush.daemon.metrics import DaemonMetrics
from rush.errors import RJMSError, RushError
from rush.rjms.base import ClusterState, RJMSBackend, get_backend

log = logging.getLogger("rush.daemon")
CLASS_TAGS = {"small": RuntimeClass.SMALL, "large": RuntimeClass.LARGE}


@dataclass
class CycleReport:
    cycle: int
    ok: bool
    error: str = ""
    decisions: dict[str, int] = field(default_factory=dict)
    applied: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _user_id(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


class Daemon:
    def __init__(
        self,
        config: RushConfig,
        backend: RJMSBackend | None = None,
        dry_run: bool | None = None,
        metrics: DaemonMetrics | None = None,
    ) -> None:
        self.config = config
        self.core_config = config.core_config()
        self.dry_run = config.daemon.dry_run if dry_run is None else dry_run
        self.backend = backend or get_backend(config.rjms.backend, **config.rjms.options)
        self.journal = Journal(config.daemon.journal)
        self.metrics = metrics or DaemonMetrics()
        self.failures = 0
        self.model = None
        self.history = None
        self._load_model()

    # -- models ---------------------------------------------------------------------------
    def _load_model(self) -> None:
        path = self.config.models.runtime_class
        if path is None:
            return
        from rush.models.persistence import load_model
        from rush.models.runtime_features import FEATURES, RuntimeHistory

        try:
            self.model, meta = load_model(path, expected_features=list(FEATURES))
        except RushError as exc:
            # A bad model is journaled and the daemon runs without it (classes unknown).
            log.error("runtime-class model not used: %s", exc)
            self.metrics.model_errors.inc()
            return
        if self.core_config.divider is None:
            from dataclasses import replace

            self.core_config = replace(self.core_config, divider=float(meta["divider"]))
        self.metrics.model_info.labels(model="runtime-class", version=meta.get("sha256", "")[:12]).set(1)
        history_path = self.config.models.history
        self.history = (
            RuntimeHistory.load(history_path)
            if history_path and Path(history_path).exists()
            else RuntimeHistory()
        )

    def _predict_classes(self, jobs: list) -> dict[int, int]:
        if self.model is None or not jobs:
            return {}
        started = time.perf_counter()
        X = self.history.features(
            np.array([_user_id(j.user) for j in jobs]),
            np.array([j.procs for j in jobs]),
            np.array([j.requested_time for j in jobs]),
            np.array([j.submit for j in jobs]),
            float(self.core_config.divider),
        )
        predicted = self.model.predict(X)
        self.metrics.model_latency.observe(time.perf_counter() - started)
        return {j.job_id: int(c) for j, c in zip(jobs, predicted, strict=True)}

    def _variable_now(self) -> bool:
        v = self.config.variation
        if not v.enabled or v.store is None:
            return False
        from rush.collect.store import FeatureStore

        now = time.time()
        with FeatureStore(v.store) as store:
            mean = store.window_features(None, now - v.window, now).get(f"mean_{v.counter}")
        return mean is not None and mean > v.threshold

    # -- one cycle ------------------------------------------------------------------------
    def run_cycle(self) -> CycleReport:
        started = time.perf_counter()
        cycle = self.journal.next_cycle()
        try:
            state = self.backend.read_state(self.config.daemon.partitions)
        except RJMSError as exc:
            self.failures += 1
            self.metrics.rjms_errors.inc()
            log.warning("cycle %d: RJMS unavailable, no action taken: %s", cycle, exc)
            return CycleReport(cycle, False, str(exc), seconds=time.perf_counter() - started)
        self.failures = 0
        self._reconcile(state)
        snapshot = self._snapshot(state)
        decisions = schedule(snapshot, self.core_config)
        applied = self._apply(cycle, state, decisions)
        seconds = time.perf_counter() - started
        self.metrics.cycle_seconds.observe(seconds)
        self.metrics.queue_length.set(len(snapshot.pending))
        self.metrics.last_success.set(time.time())
        counts: dict[str, int] = {}
        for d in decisions.decisions:
            counts[d.action] = counts.get(d.action, 0) + 1
        return CycleReport(cycle, True, decisions=counts, applied=applied, seconds=seconds)

    def _snapshot(self, state: ClusterState) -> Snapshot:
        records = self.journal.jobs()
        pending_jobs = [j for j in state.jobs if j.state == "PENDING"]
        predicted = self._predict_classes([j for j in pending_jobs if "class" not in j.tags])
        variable_now = self._variable_now()
        wtype = self.config.variation.workload_type
        pending = []
        for j in pending_jobs:
            rec = records.get(j.job_id)
            runtime_class = CLASS_TAGS.get(j.tags.get("class", ""), RuntimeClass(predicted.get(j.job_id, -1)))
            if rec is None or rec.predicted_class != int(runtime_class):
                if not self.dry_run:
                    rec = rec or self.journal.job(j.job_id)
                    rec.predicted_class = int(runtime_class)
                    self.journal.save_job(rec)
            pending.append(
                PendingJob(
                    job_id=j.job_id,
                    submit=j.submit,
                    procs=j.procs,
                    requested_time=j.requested_time,
                    runtime_class=runtime_class,
                    idempotent=j.tags.get("idempotent") == "1",
                    variable=variable_now and j.tags.get("wtype") == wtype,
                    skips=rec.skips if rec else 0,
                    user=_user_id(j.user),
                )
            )
        running = []
        for j in state.jobs:
            if j.state != "RUNNING" or j.start is None:
                continue
            rec = records.get(j.job_id)
            tag_class = CLASS_TAGS.get(j.tags.get("class", ""))
            runtime_class = (
                tag_class if tag_class is not None else RuntimeClass(rec.predicted_class if rec else -1)
            )
            running.append(
                RunningJob(
                    job_id=j.job_id,
                    start=j.start,
                    procs=j.procs,
                    requested_time=j.requested_time,
                    runtime_class=runtime_class,
                    idempotent=j.tags.get("idempotent") == "1",
                    requeues=max(rec.requeues if rec else 0, int(j.tags.get("requeues", "0") or 0)),
                )
            )
        return Snapshot(
            now=state.taken_at,
            total_procs=state.total_procs,
            free_procs=state.free_procs,
            pending=tuple(pending),
            running=tuple(running),
        )

    def _reconcile(self, state: ClusterState) -> None:
        """Settle intents left by a crash between journaling and the RJMS's answer."""
        jobs = {j.job_id: j for j in state.jobs}
        for decision_id, job_id, action in self.journal.open_intents():
            job = jobs.get(job_id)
            rec = self.journal.job(job_id)
            if action == "kill":
                happened = job is not None and (
                    job.restarts > rec.requeued_at_restart or job.tags.get("class") == "large"
                )
                # Never issued twice: the job record already counts this requeue.
                self.journal.finish(
                    decision_id,
                    happened,
                    "reconciled after restart: " + ("requeued" if happened else "not seen in RJMS"),
                )
            elif action == "skip":
                held = job is not None and job.held
                rec.held_by_rush = held
                self.journal.save_job(rec)
                self.journal.finish(decision_id, held, "reconciled after restart")
            else:
                self.journal.finish(
                    decision_id, False, "reconciled after restart: outcome unknown, re-decided next cycle"
                )

    def _apply(self, cycle: int, state: ClusterState, decisions: Decisions) -> dict[str, int]:
        mode = "dry-run" if self.dry_run else "apply"
        jobs = {j.job_id: j for j in state.jobs}
        skip_ids = set(decisions.job_ids("skip"))
        actions: list[tuple[str, Decision]] = []
        for d in decisions.of("kill"):
            actions.append(("kill", d))
        for d in decisions.of("skip"):
            if not self.journal.job(d.job_id).held_by_rush or self.dry_run:
                actions.append(("hold", d))
            else:
                actions.append(("skip-count", d))
        for job_id, rec in self.journal.jobs().items():
            if rec.held_by_rush and job_id not in skip_ids and job_id in jobs:
                actions.append(
                    (
                        "release",
                        Decision(
                            job_id,
                            "skip",
                            "skip limit reached or variability no longer predicted: release",
                            None,
                        ),
                    )
                )
        for d in decisions.of("priority"):
            rec = self.journal.job(d.job_id)
            if rec.last_site_factor != int(d.value):
                actions.append(("priority", d))
        applied: dict[str, int] = {}
        budget = self.config.daemon.max_actions_per_cycle
        for kind, d in actions:
            if kind != "skip-count" and budget <= 0:
                self.metrics.decisions.labels(kind=kind, outcome="rate-limited").inc()
                continue
            if self.dry_run:
                self.journal.record(cycle, d.job_id, kind, d.reason, d.value, None, mode, "dry-run")
                self.metrics.decisions.labels(kind=kind, outcome="dry-run").inc()
                continue
            if kind != "skip-count":
                budget -= 1
            ok = self._act(cycle, kind, d, jobs.get(d.job_id))
            applied[kind] = applied.get(kind, 0) + int(ok)
            self.metrics.decisions.labels(kind=kind, outcome="ok" if ok else "failed").inc()
        # Journal the core's start/backfill/reserve view too: it is the evidence for the order.
        for d in decisions.decisions:
            if d.action in ("start", "backfill", "reserve"):
                self.journal.record(cycle, d.job_id, d.action, d.reason, d.value, None, mode, "advice")
        return applied

    def _act(self, cycle: int, kind: str, d: Decision, job) -> bool:
        rec = self.journal.job(d.job_id)
        mode = "apply"
        if kind == "skip-count":
            rec.skips += 1
            self.journal.save_job(rec)
            self.journal.record(
                cycle, d.job_id, "skip", d.reason, rec.skips, None, mode, "done", "still held"
            )
            return True
        if kind == "kill":
            tags = dict(job.tags) if job else {}
            tags.update({"class": "large", "requeues": str(rec.requeues + 1)})
            rec.requeues += 1
            rec.requeued_at_restart = job.restarts if job else -1
            rec.predicted_class = int(RuntimeClass.LARGE)
            with self.journal.db:
                self.journal.save_job(rec)
                intent = self.journal.record(cycle, d.job_id, "kill", d.reason, d.value, None, mode, "intent")
            result = self.backend.requeue(d.job_id, tags)
        elif kind == "hold":
            intent = self.journal.record(cycle, d.job_id, "skip", d.reason, d.value, None, mode, "intent")
            result = self.backend.hold(d.job_id)
            if result.ok:
                rec.held_by_rush = True
                rec.skips += 1
        elif kind == "release":
            intent = self.journal.record(cycle, d.job_id, "release", d.reason, None, None, mode, "intent")
            result = self.backend.release(d.job_id)
            if result.ok:
                rec.held_by_rush = False
        else:
            intent = self.journal.record(cycle, d.job_id, "priority", d.reason, d.value, None, mode, "intent")
            result = self.backend.set_priority(d.job_id, int(d.value))
            if result.ok:
                rec.last_site_factor = int(d.value)
        self.journal.save_job(rec)
        self.journal.finish(intent, result.ok, result.answer)
        if not result.ok:
            log.warning("job %d: %s failed: %s", d.job_id, kind, result.answer)
        return result.ok

    # -- the loop -------------------------------------------------------------------------
    def run(self, cycles: int | None = None) -> None:
        done = 0
        while cycles is None or done < cycles:
            report = self.run_cycle()
            done += 1
            if report.ok:
                log.info(
                    "cycle %d: %s applied %s in %.3f s",
                    report.cycle,
                    report.decisions,
                    report.applied,
                    report.seconds,
                )
                delay = self.config.daemon.cycle_interval
            else:
                delay = min(
                    self.config.daemon.backoff_max,
                    self.config.daemon.cycle_interval * 2 ** min(self.failures, 10),
                )
            if cycles is None or done < cycles:
                time.sleep(delay)


def replay_hooks(config_path: Path):
    """(core config, backend, one-cycle callable) for ``rush replay --config``."""
    config = load_config(config_path)
    daemon = Daemon(config)
    return daemon.core_config, daemon.backend, daemon.run_cycle
