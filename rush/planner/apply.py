"""From the core's decisions to the RJMS's levers, with guards, rate limits and crash safety.

:func:`plan_actions` (pure) turns :class:`Decisions` into :class:`Action` s:

* ``kill``: requeue a running job with its tags updated (``class=large``, ``requeues+1``).
  Whether a job may still be killed is the core's rule alone (``false_small_kill.is_killable`` with
  ``daemon.max_requeues_per_job``, over the journal's or the tag's count): never a double requeue;
* ``release``: a job rush holds that the core did not skip in this cycle (its limit is
  reached, the variation predictor stopped flagging it, or the core would not start it now);
* ``hold``: a job the core skipped in this cycle, i.e. would have started now (later skips
  while it stays held only count: ``skip``);
* ``priority``: set the site factor, only when it differs from the last value applied. A job
  the core reads as infeasible and gives the lowest value (``Decision.value`` of its
  ``infeasible`` decision) gets it as a priority too, journaled once with the reason: so a
  gate (Flux's priority 0 until rush ranks a job) never keeps it from the RJMS.

Order: kills, releases, holds, skips, then priorities from the top rank down, so the rate
limit (``max_actions_per_cycle`` RJMS calls) defers the least important ones.

:class:`Applier` runs a plan. In dry-run it only journals (``status=dry-run``) and plays the
bookkeeping in memory. Applying, it commits every intent (and a requeue's new count) before
calling the backend and settles each after; :meth:`Applier.reconcile` settles intents left
open by a crash against a fresh read of the RJMS instead of re-issuing them. A requeue is
asynchronous: the call only issues it and its intent stays open; the next cycle's
reconcile confirms it (restart count or tags), lets the backend finish it
(:meth:`RJMSBackend.finish_requeue`) and settles it; it is never issued twice.

On an RJMS without requeue (Flux: ``requeue_replaces_job``), the backend's requeue cancels
the job and submits a replacement under a new id; reconcile then asks the backend to
confirm it (:meth:`rush.rjms.flux.FluxBackend.confirm_replacement`: the replacement found by
its tag, or submitted then if rush's cancel went through and none exists), never twice.

On a backend that starts jobs itself (``Capabilities.starts_jobs``: the Flux scheduler
module), a hold or release calls nothing: the skipped job stays in rush's own queue, and
the journal keeps its skip count as for any hold.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import repeat
from operator import and_, attrgetter, ne
from typing import Any, Protocol

from rush.core.snapshot import Decisions, RuntimeClass
from rush.errors import RJMSError
from rush.planner.journal import DecisionRow, Intent, JobRecord, Journal
from rush.planner.metrics import DaemonMetrics
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob

# A job with no record: no priority value sent yet.
_NOT_SENT = JobRecord(0)

log = logging.getLogger("rush.daemon")
ORDER = ("kill", "release", "hold", "skip", "priority")
# Actions that call the RJMS (``skip`` only counts a cycle of an existing hold).
RJMS_ACTIONS = frozenset({"kill", "release", "hold", "priority"})
# What a hold or release means on a backend that starts jobs itself (Capabilities.starts_jobs).
SCHEDULER_MODE = {
    "hold": "scheduler mode: kept queued, not started",
    "release": "scheduler mode: may start in a later pass",
}


class Book(Protocol):
    """Per-job state: the journal when applying, a :class:`MemoryBook` in dry-run."""

    def job(self, job_id: int) -> JobRecord: ...

    def jobs(self) -> dict[int, JobRecord]: ...

    def save_job(self, rec: JobRecord) -> None: ...

    def forget_jobs(self, job_ids: list[int]) -> None: ...

    def mark_seen(self, job_ids: list[int], now: float) -> None: ...

    def seen_before(self, before: float) -> list[int]: ...


@dataclass(frozen=True)
class Action:
    kind: str
    job_id: int
    reason: str
    value: float | None = None
    model_outputs: dict[str, Any] = field(default_factory=dict)
    # kill: the class and requeue count the core requeues the job with (false_small_kill.requeue_as_large).
    requeue_class: RuntimeClass | None = None
    requeues: int | None = None


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    refused: list[Action] = field(default_factory=list)
    deferred: list[Action] = field(default_factory=list)
    # Priority values the budget left for a later cycle, as (job id, value): counted, not sent
    # nor put in words (at a first cycle over 10 000 jobs, nearly all of them).
    deferred_priorities: list[tuple[int, int]] = field(default_factory=list)

    def deferred_jobs(self) -> list[tuple[str, int]]:
        """(kind, job id) of every action deferred by the budget, priorities last."""
        return [(a.kind, a.job_id) for a in self.deferred] + [
            ("priority", j) for j, _ in self.deferred_priorities
        ]


def plan_actions(
    decisions: Decisions,
    state: ClusterState,
    records: dict[int, JobRecord],
    *,
    max_actions_per_cycle: int,
    skip_limit: int,
    outputs: dict[int, dict[str, Any]] | None = None,
) -> Plan:
    outputs = outputs or {}
    jobs = {j.job_id: j for j in state.jobs}
    plan = Plan()
    candidates: list[Action] = []

    def rec(job_id: int) -> JobRecord:
        return records.get(job_id) or JobRecord(job_id)

    for d in decisions.of("kill"):
        job = jobs.get(d.job_id)
        action = Action(
            "kill", d.job_id, d.reason, d.value, outputs.get(d.job_id, {}), d.requeue_class, d.requeues
        )
        if job is None or job.state == "PENDING":
            continue  # finished or already requeued since the read
        candidates.append(action)

    skipped = set(decisions.job_ids("skip"))
    for job_id, r in records.items():
        job = jobs.get(job_id)
        if r.held_by_rush and job is not None and job.state == "PENDING" and job_id not in skipped:
            why = (
                f"skip limit reached ({r.skips} of {skip_limit}): release"
                if r.skips >= skip_limit
                else "not skipped this cycle (no longer predicted variable, or it would not start now): release"
            )
            candidates.append(Action("release", job_id, why, float(r.skips), outputs.get(job_id, {})))
    for d in decisions.of("skip"):
        job = jobs.get(d.job_id)
        if job is None or job.state != "PENDING":
            continue
        kind = "skip" if rec(d.job_id).held_by_rush else "hold"
        candidates.append(Action(kind, d.job_id, d.reason, d.value, outputs.get(d.job_id, {})))

    # Only the values that changed are sent, and only as many as the budget leaves after the
    # actions above (priorities come last): only their explanations are put in words.
    def changed(ids: list[int], values: list[int]) -> Iterator[bool]:
        # In bulk, C-level maps: a call per job cost 3-5 ms a cycle over 10 000 jobs.
        last = map(attrgetter("last_site_factor"), map(records.get, ids, repeat(_NOT_SENT)))
        return map(and_, map(jobs.__contains__, ids), map(ne, last, values))

    # Jobs rush reads as infeasible: released to the RJMS at the core's lowest value, before
    # the ranked jobs' priorities (few, and without it a gated job is never seen).
    released = [d for d in decisions.of("infeasible") if d.value is not None]
    for d, send in zip(
        released, changed([d.job_id for d in released], [int(d.value) for d in released]), strict=True
    ):
        if send:
            why = f"rush reads it as infeasible: {d.reason}; released to the RJMS at the lowest priority"
            candidates.append(Action("priority", d.job_id, why, d.value, outputs.get(d.job_id, {})))
    room = max_actions_per_cycle - sum(a.kind in RJMS_ACTIONS for a in candidates)
    sent, later = decisions.split_priorities_where(changed, max(room, 0))
    for d in sent:
        candidates.append(Action("priority", d.job_id, d.reason, d.value, outputs.get(d.job_id, {})))
    candidates.sort(key=lambda a: ORDER.index(a.kind))  # stable: priorities keep rank order
    budget = max_actions_per_cycle
    for action in candidates:
        if action.kind in RJMS_ACTIONS:
            if budget <= 0:
                plan.deferred.append(action)
                continue
            budget -= 1
        plan.actions.append(action)
    plan.deferred_priorities = later  # after every other action: the budget is spent
    return plan


def _requeue_tags(job: RJMSJob, action: Action, requeues: int) -> dict[str, str]:
    """The job's rush tags after the core's requeue: its new class and requeue count."""
    tags = dict(job.tags)
    cls = action.requeue_class if action.requeue_class is not None else RuntimeClass.LARGE
    tags.update({"class": cls.name.lower(), "requeues": str(requeues)})
    return tags


def _skips_after(action: Action | Intent, r: JobRecord) -> int:
    """The job's skip count after a hold or skip: the core's (the decision's value; a periodic
    pass does not count, rush.core.skip_with_limit), never the planner's own arithmetic."""
    return r.skips + 1 if action.value is None else max(r.skips, int(action.value))


def _requeue_count(action: Action) -> int:
    """The requeue count after this kill: the core's (false_small_kill.requeue_as_large over the
    snapshot's count, which is the journal's or the job's tag, whichever is higher)."""
    assert action.requeues is not None, "a kill decision carries its requeue count"
    return action.requeues


class Applier:
    def __init__(self, backend: RJMSBackend, journal: Journal, metrics: DaemonMetrics) -> None:
        self.backend = backend
        self.journal = journal
        self.metrics = metrics

    def _count(self, kind: str, outcome: str, n: int = 1) -> None:
        self.metrics.decisions.labels(kind=kind, outcome=outcome).inc(n)

    # -- dry-run --------------------------------------------------------------------------
    def journal_only(self, cycle: int, plan: Plan, book: Book) -> None:
        """Journal what would be done and play the bookkeeping in ``book`` (memory)."""
        with self.journal.transaction():
            for a in plan.actions:
                self.journal.record(
                    DecisionRow(cycle, a.job_id, a.kind, a.reason, a.value, a.model_outputs, "dry-run"),
                    "dry-run",
                )
                self._count(a.kind, "dry-run")
                r = book.job(a.job_id)
                if a.kind == "kill":
                    r.requeues = _requeue_count(a)
                elif a.kind in ("hold", "skip"):
                    r.held_by_rush, r.skips = True, _skips_after(a, r)
                elif a.kind == "release":
                    r.held_by_rush = False
                elif a.kind == "priority":
                    r.last_site_factor = int(a.value or 0)
                book.save_job(r)
            self._refused(cycle, plan, "dry-run")

    def _refused(self, cycle: int, plan: Plan, mode: str) -> None:
        for a in plan.refused:
            self.journal.record(
                DecisionRow(cycle, a.job_id, a.kind, a.reason, a.value, a.model_outputs, mode), "refused"
            )
            self._count(a.kind, "refused")
        deferred = plan.deferred_jobs()
        if deferred:
            kinds = sorted({kind for kind, _ in deferred})
            self.journal.event(
                cycle,
                "rate-limit",
                f"{len(deferred)} action(s) ({', '.join(kinds)}) deferred by daemon.max_actions_per_cycle",
            )
            for kind in kinds:
                self._count(kind, "deferred", sum(k == kind for k, _ in deferred))

    # -- applying -------------------------------------------------------------------------
    def apply(self, cycle: int, plan: Plan, state: ClusterState) -> tuple[dict[str, int], RJMSError | None]:
        """Run the plan; returns (done actions by kind, the RJMS error that stopped it, if any)."""
        jobs = {j.job_id: j for j in state.jobs}
        intents: list[tuple[Action, int]] = []
        # A requeue issued earlier and not yet confirmed is never issued a second time.
        requeuing = {i.job_id for i in self.journal.open_intents() if i.action == "kill"}
        # All intents first, in one transaction: a crash from here on leaves open intents.
        with self.journal.transaction():
            self._refused(cycle, plan, "apply")
            for a in plan.actions:
                if a.kind == "skip":
                    continue
                if a.kind == "kill" and a.job_id in requeuing:
                    why = "refused: its requeue is still being confirmed"
                    row = DecisionRow(cycle, a.job_id, a.kind, why, a.value, a.model_outputs, "apply")
                    self.journal.record(row, "refused")
                    self._count(a.kind, "refused")
                    continue
                if a.kind == "kill":
                    r = self.journal.job(a.job_id)
                    r.requeues = _requeue_count(a)
                    r.requeued_at_restart = jobs[a.job_id].restarts
                    self.journal.save_job(r)
                intents.append(
                    (
                        a,
                        self.journal.record(
                            DecisionRow(cycle, a.job_id, a.kind, a.reason, a.value, a.model_outputs, "apply"),
                            "intent",
                        ),
                    )
                )
            for a in plan.actions:
                if a.kind == "skip":  # the job stays held: the core's count, no RJMS call
                    r = self.journal.job(a.job_id)
                    r.skips = _skips_after(a, r)
                    self.journal.save_job(r)
                    self.journal.record(
                        DecisionRow(
                            cycle, a.job_id, "skip", a.reason, float(r.skips), a.model_outputs, "apply"
                        ),
                        "done",
                        "still held",
                    )
                    self._count("skip", "done")
        done: dict[str, int] = {}
        # Priorities go last (plan order) and together: one batch call (Flux's plugin takes
        # thousands of jobs per RPC; other backends loop).
        singles = [(a, i) for a, i in intents if a.kind != "priority"]
        grouped = [(a, i) for a, i in intents if a.kind == "priority"]
        for k, (a, intent) in enumerate(singles):
            try:
                result = self._call(a, jobs[a.job_id])
            except RJMSError as exc:
                # Unreachable or timed out: the outcome is unknown for this one, and the rest
                # are not attempted on a queue we can no longer see.
                log.warning(
                    "job %d: %s: RJMS error, stopping this cycle's actions: %s", a.job_id, a.kind, exc
                )
                self.journal.finish(intent, "intent", f"RJMS error, outcome unknown: {exc}")
                for b, other in singles[k + 1 :] + grouped:
                    self._abandon(b, other, "not attempted: the RJMS stopped answering")
                self._count(a.kind, "failed")
                return done, exc
            if self._settle(a, intent, result):
                done[a.kind] = done.get(a.kind, 0) + 1
        if grouped:
            try:
                results = self.backend.set_priorities([(a.job_id, int(a.value or 0)) for a, _ in grouped])
            except RJMSError as exc:  # outcome unknown: the intents stay open for reconcile
                log.warning("priorities: RJMS error, outcome unknown: %s", exc)
                for _, intent in grouped:
                    self.journal.finish(intent, "intent", f"RJMS error, outcome unknown: {exc}")
                self._count("priority", "failed", len(grouped))
                return done, exc
            # One commit for the batch (each _settle joins it): the intents were durable before
            # the RPC, and any left open by a crash here are settled by reconcile.
            with self.journal.transaction():
                for (a, intent), result in zip(grouped, results, strict=True):
                    if self._settle(a, intent, result):
                        done["priority"] = done.get("priority", 0) + 1
        return done, None

    def _call(self, a: Action, job: RJMSJob) -> ActionResult:
        if a.kind == "kill":
            return self.backend.requeue(a.job_id, _requeue_tags(job, a, self.journal.job(a.job_id).requeues))
        if a.kind in SCHEDULER_MODE and self.backend.capabilities.starts_jobs:
            # rush is the scheduler: a skipped job stays queued; only the skip count is kept.
            return ActionResult(ok=True, answer=SCHEDULER_MODE[a.kind])
        if a.kind == "hold":
            return self.backend.hold(a.job_id)
        if a.kind == "release":
            return self.backend.release(a.job_id)
        return self.backend.set_priority(a.job_id, int(a.value or 0))

    def _settle(self, a: Action, intent: int, result: ActionResult) -> bool:
        with self.journal.transaction():
            r = self.journal.job(a.job_id)
            if a.kind == "kill" and result.ok:
                # Issued; Slurm completes it asynchronously. The intent stays open and the
                # next cycle confirms it (restart count, tags) in reconcile, never re-issues it.
                self.journal.finish(intent, "intent", result.answer)
                self._count(a.kind, "issued")
                return True
            if a.kind == "kill" and not result.attempted:
                # Nothing reached the RJMS (e.g. no scontrol on this host): certainly not done.
                self._rollback_requeue(a.job_id)
                self.journal.finish(intent, "failed", result.answer)
                self._count(a.kind, "failed")
                log.warning("job %d: kill not possible: %s", a.job_id, result.answer)
                return False
            if a.kind == "kill" and not result.ok:
                # The requeue may have half happened (killed, tags not written): the next
                # cycle reconciles it against the job's restart count, never re-issues it.
                self.journal.finish(intent, "intent", f"unclear, reconciled next cycle: {result.answer}")
                self._count(a.kind, "unclear")
                return False
            if result.ok:
                if a.kind == "hold":
                    r.held_by_rush, r.skips = True, _skips_after(a, r)
                elif a.kind == "release":
                    # Re-apply the site factor after a release (Slurm recomputes priorities).
                    r.held_by_rush, r.last_site_factor = False, None
                elif a.kind == "priority":
                    r.last_site_factor = int(a.value or 0)
                self.journal.save_job(r)
            self.journal.finish(intent, "done" if result.ok else "failed", result.answer)
        self._count(a.kind, "done" if result.ok else "failed")
        if not result.ok:
            log.warning("job %d: %s failed: %s", a.job_id, a.kind, result.answer)
        return result.ok

    def _abandon(self, a: Action, intent: int, why: str) -> None:
        with self.journal.transaction():
            if a.kind == "kill":
                self._rollback_requeue(a.job_id)
            self.journal.finish(intent, "failed", why)
        self._count(a.kind, "failed")

    def _rollback_requeue(self, job_id: int) -> None:
        r = self.journal.job(job_id)
        r.requeues = max(r.requeues - 1, 0)
        r.requeued_at_restart = -1
        self.journal.save_job(r)

    # -- after a crash --------------------------------------------------------------------
    def reconcile(self, state: ClusterState) -> list[tuple[Intent, str, str]]:
        """Settle open intents against a fresh read; returns (intent, status, answer) per intent."""
        jobs = {j.job_id: j for j in state.jobs}
        settled = []
        for intent in self.journal.open_intents():
            with self.journal.transaction():
                try:
                    if intent.action == "kill" and self.backend.capabilities.requeue_replaces_job:
                        status, answer = self._reconcile_replacement(intent, state)
                    else:
                        status, answer = self._reconcile_one(intent, jobs.get(intent.job_id))
                except RJMSError as exc:  # a follow-up call failed: confirm again next cycle
                    status, answer = "intent", str(exc)
                if status == "intent":  # still in progress: the row stays as it is
                    log.info("job %d: %s still in progress: %s", intent.job_id, intent.action, answer)
                    continue
                self.journal.finish(
                    intent.id,
                    status,
                    f"reconciled: {answer}" + (f" ({intent.answer})" if intent.answer else ""),
                )
            self._count(intent.action, f"reconciled-{status}")
            log.info(
                "job %d: open %s intent reconciled as %s: %s", intent.job_id, intent.action, status, answer
            )
            settled.append((intent, status, answer))
        return settled

    def _reconcile_replacement(self, intent: Intent, state: ClusterState) -> tuple[str, str]:
        """A kill on an RJMS without requeue: the backend finds (or completes) the replacement."""
        r = self.journal.job(intent.job_id)
        tags = {"class": "large", "requeues": str(max(r.requeues, 1))}  # false_small_kill.requeue_as_large
        status, answer = self.backend.confirm_replacement(intent.job_id, tags, state)
        if status == "failed":
            self._rollback_requeue(intent.job_id)
        return status, answer

    def _reconcile_one(self, intent: Intent, job: RJMSJob | None) -> tuple[str, str]:
        r = self.journal.job(intent.job_id)
        if intent.action == "kill":
            if job is None:
                return "failed", "the job left the queue; nothing to requeue"
            if r.requeued_at_restart >= 0 and job.restarts > r.requeued_at_restart:
                evidence = f"requeued (restart count {r.requeued_at_restart} -> {job.restarts})"
            elif job.tags.get("requeues") == str(r.requeues) and job.tags.get("class") == "large":
                evidence = "requeued (the job carries rush's requeue tags)"
            else:
                evidence = ""
            if evidence:
                finished = self.backend.finish_requeue(job)
                if finished is None:  # the old run is still completing
                    return "intent", f"{evidence}; still completing"
                return "done", f"{evidence}; {finished.answer}"
            self._rollback_requeue(intent.job_id)
            return "failed", "not requeued (restart count unchanged); the core decides again on fresh data"
        if intent.action == "hold":
            if job is not None and job.held:
                if not r.held_by_rush:
                    r.held_by_rush, r.skips = True, _skips_after(intent, r)
                    self.journal.save_job(r)
                return "done", "the job is held"
            return "failed", "the job is not held"
        if intent.action == "release":
            if job is None or not job.held:
                r.held_by_rush, r.last_site_factor = False, None
                self.journal.save_job(r)
                return "done", "the job is not held"
            return "failed", "the job is still held; released again if still due"
        if intent.action == "priority":
            if job is not None and intent.value is not None and job.site_factor == int(intent.value):
                r.last_site_factor = int(intent.value)
                self.journal.save_job(r)
                return "done", f"site factor is {job.site_factor}"
            return "failed", "site factor not seen; set again if still due"
        return "failed", f"unknown action {intent.action!r}"
