"""The core's entry point for a live queue: ``schedule(snapshot, config) -> Decisions``.

It calls the one scheduling pass (:func:`rush.core.scheduling_pass.scheduling_pass`) that
the simulator's event loop calls, and explains every decision in words for the journal.
One call here is one simulator pass at the same moment:

* ``kill``: running false-small jobs due to be killed (:func:`rush.core.false_small_kill.kill_due`),
  with the class and requeue count they are requeued with. As in the simulator, a job
  killed now is back in the queue for this very pass (large, original submit time) and its
  processors are free.
* ``priority``: one value per pending job (:mod:`rush.core.priority_values`), in the core's
  order; the RJMS orders by it (Slurm: SiteFactor).
* ``start``/``backfill``/``reserve``: what the pass starts and reserves now. Conservative
  reservations stand from pass to pass: the caller gives each job's previous one back as
  ``PendingJob.reserved_at`` (``Decisions.reserved_at`` holds the new ones).
* ``skip``: exactly the jobs this pass would start now and the variation predictor flags,
  below their skip limit (:mod:`rush.core.skip_with_limit`); the daemon holds them.
* ``infeasible``: a request the machine can never satisfy as rush reads it; out of the pass.
  Where the shell sets priorities, its value is the lowest (``LOWEST_VALUE``): the job is
  released to the RJMS, which starts it (rush misread it) or refuses it.

Speculative reservations live: a job's ``requested_time`` is its current limit (what the
RJMS enforces) and its ``estimate`` the policy's runtime estimate (the user's walltime when
no model gives one), as the simulator orders by the estimate and reserves by the limit.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from itertools import repeat

import numpy as np

from rush.core.config import CoreConfig
from rush.core.decision_columns import NONE, DecisionColumns
from rush.core.false_small_kill import kill_due, requeue_as_large
from rush.core.job_columns import (
    PendingColumns,
    PendingRows,
    RunningColumns,
    SnapshotColumns,
    pending_columns,
    running_columns,
    snapshot_columns,
)
from rush.core.job_rules import job_rules, limit_estimates
from rush.core.kept_nodes import PassNodes, kept_after, kept_state
from rush.core.node_view import procs_only_view
from rush.core.nodes_snapshot import on_nodes as _on_nodes
from rush.core.ordering import policy_group
from rush.core.pass_budget import BASIS_UNCONSIDERED, bound_queue
from rush.core.pass_data import (
    OrderPolicy,
    PassJobs,
    PassMoment,
    RunningSet,
    new_out,
    new_queues,
    new_state,
    order_policy,
    pass_config,
)
from rush.core.priority_explanations import PriorityExplanations
from rush.core.priority_values import LOWEST_VALUE, priority_values, scaled
from rush.core.remaining_runtime import queued_projection_from_columns, rule_upper, running_median_runtimes
from rush.core.runtime_predictions import correction_code, running_estimates
from rush.core.scheduling_pass import scheduling_pass
from rush.core.skip_with_limit import counts_skips
from rush.core.snapshot import Decision, Decisions, PendingJob, RuntimeClass, Snapshot
from rush.core.start_estimates import EstimateInputs, estimate_starts
from rush.errors import RushError

_DIVIDER_NONE = float("inf")


def unusable_jobs(
    procs: np.ndarray, when: np.ndarray, requested: np.ndarray, estimate: np.ndarray
) -> np.ndarray:
    """Jobs the kernels cannot order soundly: no processors, a non-finite submit or start time,
    a NaN or negative request or estimate (an unlimited request, inf, is fine). One rule for
    the core's check and the daemon's snapshot builder, which drops such jobs and says why."""
    return (procs <= 0) | ~np.isfinite(when) | ~(requested >= 0) | ~(estimate >= 0)


def check_snapshot(
    snapshot: Snapshot,
    when: np.ndarray,
    requested: np.ndarray,
    estimate: np.ndarray,
    procs: np.ndarray,
    job_ids: np.ndarray,
) -> None:
    """Refuse a snapshot the kernels cannot order soundly (NaN times, no processors, ...).

    ``when`` is the submit time of pending jobs and the start of running ones; the other
    columns are over pending then running jobs. The daemon's snapshot builder drops such
    jobs first; this guards every other caller. An unlimited request (inf) is allowed.
    """
    if not math.isfinite(snapshot.now) or not math.isfinite(snapshot.time_origin):
        raise RushError("the snapshot's time is not finite", where="snapshot.now")
    if not 0 <= snapshot.free_procs <= max(snapshot.total_procs, 0):
        raise RushError(
            f"free processors {snapshot.free_procs} outside [0, {snapshot.total_procs}]",
            where="snapshot.free_procs",
        )
    bad = unusable_jobs(procs, when, requested, estimate)
    unique, first, counts = np.unique(job_ids, return_index=True, return_counts=True)
    repeated = np.zeros(len(job_ids), dtype=np.bool_)
    repeated[first[counts > 1]] = True
    if np.any(bad | repeated):
        job_id = int(job_ids[np.argmax(bad | repeated)])
        raise RushError(
            f"job {job_id} is repeated or has a non-finite submit/start, a NaN or negative "
            "request or no processors",
            where=f"snapshot job {job_id}",
            fix="drop the job before scheduling (the daemon's snapshot builder does)",
        )


def _pending_with_kills(snapshot: Snapshot, config: CoreConfig, divider: float, columns):
    """Kill decisions, the running jobs left, and the pending jobs with the killed ones back
    in the queue (large, one more requeue, original submit), as the simulator has them; the
    pending and running jobs' columns beside them (``columns``: the snapshot's own)."""
    now = float(snapshot.now)
    waiting, busy = columns
    kills: list[Decision] = []
    requeued: list[PendingJob] = []
    killable = job_rules(
        busy.estimate,
        busy.requested_time,
        busy.runtime_class,
        busy.idempotent,
        busy.requeues,
        config.kill_false_small,
        config.max_requeues,
        divider,
    )[1]
    due = np.zeros(len(snapshot.running), dtype=np.bool_)
    for k in np.flatnonzero(killable).tolist():
        r = snapshot.running[k]
        if not kill_due(r.start, now, divider):
            continue
        due[k] = True
        new_class, requeues = requeue_as_large(r.requeues)
        kills.append(
            Decision(
                r.job_id,
                "kill",
                f"predicted small but running {now - r.start:.0f} s >= divider {divider:.0f} s; "
                f"opted in as idempotent: requeue as large (requeue {requeues} of {config.max_requeues})",
                now - r.start,
                requeue_class=RuntimeClass(new_class),
                requeues=requeues,
            )
        )
        requeued.append(
            PendingJob(
                r.job_id,
                r.start if r.submit is None else r.submit,
                r.procs,
                r.requested_time,
                r.estimate,
                RuntimeClass(new_class),
                r.idempotent,
                r.variable,
                r.skips,
                requeues=requeues,
                request=r.request,
            )
        )
    kept = np.flatnonzero(~due)
    running = tuple(snapshot.running[k] for k in kept.tolist()) if requeued else tuple(snapshot.running)
    # The jobs as given (PendingRows: made only where read), the killed ones after them.
    every = (*snapshot.pending, *requeued) if requeued else snapshot.pending
    if requeued:
        waiting = PendingColumns.concatenate(waiting, pending_columns(requeued))
    by_submit = np.lexsort((waiting.job_id, waiting.submit))  # job ids are unique (checked)
    if np.array_equal(by_submit, np.arange(len(every))):  # the usual case: the RJMS lists them in order
        return kills, every, running, waiting, busy.take(kept)
    if isinstance(every, PendingRows):
        taken = every.take(by_submit, waiting)  # its columns taken once
        return kills, taken, running, taken.columns, busy.take(kept)
    pending = tuple(map(every.__getitem__, by_submit.tolist()))
    return kills, pending, running, waiting.take(by_submit), busy.take(kept)


def schedule(
    snapshot: Snapshot,
    config: CoreConfig,
    *,
    explain_priorities: bool = True,
    estimate_starts_too: bool = True,
) -> Decisions:
    """Decide kills, priorities, starts, reservations and skips for one snapshot.

    ``explain_priorities=False`` leaves out the one ``priority`` decision per pending job (a
    shell that starts jobs itself, the Flux scheduler module, needs only ``order`` and
    ``priority``, not 10 000 explanations per pass).
    """
    now = float(snapshot.now)
    divider = float(config.divider) if config.divider is not None else _DIVIDER_NONE
    columns = _columns(snapshot)
    _check(snapshot, *columns)
    kills, pending, running, waiting, busy = _pending_with_kills(snapshot, config, divider, columns)
    n = len(pending)
    submit = waiting.submit
    procs = waiting.procs
    estimate = waiting.estimate
    runtime_class, killable, est = job_rules(
        estimate,
        waiting.requested_time,
        waiting.runtime_class,
        waiting.idempotent,
        waiting.requeues,
        config.kill_false_small,
        config.max_requeues,
        divider,
    )
    r_class, r_killable, r_est = job_rules(
        busy.estimate,
        busy.requested_time,
        busy.runtime_class,
        busy.idempotent,
        busy.requeues,
        config.kill_false_small,
        config.max_requeues,
        divider,
    )
    r_start = busy.start
    if config.prediction_correction != "none":  # expired predictions corrected, as in the simulator
        r_est = running_estimates(
            correction_code(config.prediction_correction),
            r_est,
            now - r_start,
            busy.requested_time,
        )
    r_end_all = r_start + r_est
    r_procs_all = busy.procs
    by_end = np.lexsort((r_procs_all, r_end_all))  # by estimated end, then processors
    killed = {d.job_id for d in kills}
    if snapshot.nodes:
        sized = _on_nodes(snapshot, config, waiting, [running[k] for k in by_end], killed)
        nodes, infeasible = sized.view, sized.infeasible
        # With nodes a running set's "procs" are its rows of allocations (nodes.held).
        r_procs_all = np.empty(len(running), dtype=np.int64)
        r_procs_all[by_end] = np.arange(len(running))
        free = sized.free
    else:
        nodes, infeasible = procs_only_view(n), {}
        # The RJMS's free count (it knows drained and down resources), plus what the kills free.
        free = int(snapshot.free_procs) + sum(r.procs for r in snapshot.running if r.job_id in killed)
    # By the end of their limits too, for a starved head (rush.core.starved_head).
    r_limit_end = r_start + limit_estimates(busy.requested_time, r_killable, divider)
    by_limit = np.lexsort((r_procs_all, r_limit_end))
    running_set = RunningSet(
        np.ascontiguousarray(r_end_all[by_end]),
        np.ascontiguousarray(r_procs_all[by_end]),
        len(running),
        np.ascontiguousarray(r_limit_end[by_limit]),
        np.ascontiguousarray(r_procs_all[by_limit]),
    )
    jobs = PassJobs(
        submit,
        procs,
        estimate,
        est,
        runtime_class,
        waiting.variable,
        _fairshare(waiting),
        limit_estimates(waiting.requested_time, killable, divider),
    )
    state = new_state(n, waiting.skips.copy(), waiting.reserved_at.copy())
    keeping = None  # conservative on nodes: standing reservations keep their nodes (kept_nodes)
    if snapshot.nodes and config.backfill == "conservative":
        keeping = PassNodes(
            now,
            nodes.pool,
            tuple(node.name for node in snapshot.nodes),
            nodes.request,
            procs,
            est,
            waiting.job_id,
            running_set,
            busy.job_id[by_end],
            nodes.held,
        )
        for k in infeasible:  # out of the pass: a reservation it had is freed, not kept
            state.reserved_at[k] = math.inf
        state, reserved = kept_state(snapshot.kept, keeping, state)
        nodes = nodes._replace(reserved=reserved)
    skips_before = state.skips.copy()
    primary = _primary(waiting.rjms_priority) if config.rjms_priority_first else None
    policy = _order(config.policy, waiting.rjms_priority, primary)
    scan = (
        policy
        if config.backfill_policy is None
        else _order(config.scan_policy, waiting.rjms_priority, primary)
    )
    pass_cfg = pass_config(config, policy, scan, float(snapshot.time_origin))
    queues = new_queues(n)
    # A job that can never run here is left out of the pass (it would block the queue).
    out_of_pass = np.zeros(n, dtype=np.bool_)
    out_of_pass[list(infeasible)] = True
    schedulable = np.flatnonzero(~out_of_pass)
    queues.queue[: len(schedulable)] = schedulable
    queues.scan[: len(schedulable)] = schedulable
    out = new_out(n)
    moment = PassMoment(
        now,
        free,
        len(schedulable),
        True,
        counts_skips(snapshot.trigger, busy.requested_time),
    )
    # A bounded pass (config.max_jobs_considered) leaves the tail unconsidered: rush.core.pass_budget.
    bounded = bound_queue(moment, pass_cfg, jobs, state, queues, config.max_jobs_considered)
    if bounded is not None:
        moment = bounded.moment
    result = scheduling_pass(moment, pass_cfg, jobs, state, queues, running_set, out, nodes)
    names = tuple(node.name for node in snapshot.nodes)
    kept = None if keeping is None else kept_after(keeping, state, nodes.reserved, result, out, nodes.placed)

    queued = moment.queued
    sorted_queue = queues.queue[:queued].copy()
    queues = queues._replace(
        queue=queues.queue[:queued], group=queues.group[:queued], key=queues.key[:queued]
    )
    if bounded is not None:  # priorities for every job, considered or not
        queues = queues._replace(queue=bounded.queue, group=bounded.group, key=bounded.key)
    order = queues.queue
    values = scaled(
        priority_values(
            policy_group(queues.group), queues.key, config.policy.code, float(snapshot.time_origin)
        ),
        config.priority_weight,
    )
    decided = Decisions(now=now, kept=kept)
    decided.order = waiting.job_id[order].tolist()
    decided.priority = dict(zip(decided.order, np.asarray(values, dtype=np.int64).tolist(), strict=True))
    decided.priority_group = dict(zip(decided.order, queues.group.tolist(), strict=True))
    decided.priority_key = dict(zip(decided.order, queues.key.tolist(), strict=True))
    ranked = _ranked_columns(waiting.job_id, order, values, queues)
    decisions: list[Decision] = list(kills)
    # A job read as infeasible is out of the pass, not out of the RJMS's queue: where the shell
    # sets priorities, it is released at the lowest value (the decision's value), so that the
    # RJMS decides, starting it if rush misread its request or refusing it, and no gate (Flux's
    # priority 0 for an unranked job) keeps it from the RJMS's scheduler for ever.
    lowest = int(scaled(np.array([LOWEST_VALUE]), config.priority_weight)[0]) if explain_priorities else None
    for k, why in sorted(infeasible.items()):
        decisions.append(Decision(pending[k].job_id, "infeasible", why, lowest))
        if lowest is not None:
            decided.priority[pending[k].job_id] = lowest
            ranked.priority[k], ranked.has_priority[k] = lowest, True
    decided.columns = ranked
    explained_at = len(decisions)
    for k in range(result.reserved):
        j = out.reserved[k]
        decided.reserved_at[pending[j].job_id] = float(out.reserved_at[k])
        decisions.append(
            Decision(
                pending[j].job_id,
                "reserve",
                f"conservative reservation at t={out.reserved_at[k]:.0f}",
                out.reserved_at[k],
            )
        )
    if result.head >= 0 and config.backfill == "easy":
        decisions.append(_head_decision(pending[result.head], result, nodes, names))
    for k in range(result.started):
        j = out.start[k]
        start = _start_decision(pending[j], bool(out.backfilled[k]), now, est[j], result, config)
        if names:
            where, taken = _row(nodes.placed, k, names)
            start = dataclasses.replace(
                start, reason=f"{start.reason}; on {_short(where)}", nodes=where, allocation=taken
            )
        decisions.append(start)
    # Skips are exactly the pass's: jobs it would have started now (skip_with_limit.should_skip).
    for k in range(result.skipped):
        j = out.skip[k]
        decisions.append(
            Decision(
                pending[j].job_id,
                "skip",
                f"would start now but predicted to suffer variability: delay {state.skips[j]} "
                f"of at most {config.skip_limit}"
                + ("" if state.skips[j] > skips_before[j] else " (periodic pass: not counted)"),
                float(state.skips[j]),
            )
        )
    if explain_priorities:  # put in words when read (rush.core.priority_explanations)
        decided.explain_later(
            decisions, _priority_explanations(order, queues, values, waiting, config), explained_at
        )
    else:
        decided.decisions = decisions
    if bounded is not None:
        decided.unconsidered = waiting.job_id[bounded.unconsidered].tolist()
    if estimate_starts_too:
        # A running job with predicted quantiles ends at its median runtime given its elapsed
        # time (the offline study's rule); refused quantiles are noted for the shells' journal.
        r_runtime, decided.estimate_notes = running_median_runtimes(running, now)
        # A queued job with predicted quantiles is projected for their upper part (rule L2, or
        # the site's rule T), from the pending columns' per-job inputs, computed when their rows
        # were read (no core job made, no quantile object read).
        upper = rule_upper(waiting.queued_upper, waiting.queued_tail, config.estimate_rule)
        q_runtime, q_notes = queued_projection_from_columns(
            (waiting.quantile_code, upper, waiting.projection_shift, waiting.quantile_key),
            waiting.requested_time,
            waiting.job_id,
            est,
        )
        decided.estimate_notes.update(q_notes)
        inputs = estimate_inputs(
            EstimateContext(config, now, divider, sorted_queue, result, out),
            jobs,
            free,
            (busy.start, r_est, busy.procs, r_class, r_runtime),
        )
        _publish_estimates(
            decided, waiting.job_id, busy.job_id, dataclasses.replace(inputs, queued_runtime=q_runtime)
        )
    return decided


@dataclasses.dataclass(frozen=True)
class EstimateContext:
    config: CoreConfig
    now: float
    divider: float
    order: np.ndarray
    result: object
    out: object


def estimate_inputs(c: EstimateContext, jobs: PassJobs, free: int, running_columns) -> EstimateInputs:
    """The projection's inputs from one pass."""
    r_start, r_est, r_procs, r_class, r_runtime = running_columns
    return EstimateInputs(
        now=c.now,
        free=int(free),
        mode=c.config.backfill,
        order=c.order,
        procs=jobs.procs,
        est=jobs.est,
        runtime_class=jobs.runtime_class,
        divider=c.divider,
        started=c.out.start[: c.result.started].copy(),
        reserved={int(c.out.reserved[k]): float(c.out.reserved_at[k]) for k in range(c.result.reserved)},
        running_start=r_start,
        running_est=r_est,
        running_procs=r_procs,
        running_class=r_class,
        running_runtime=r_runtime,
    )


def _publish_estimates(
    decided: Decisions, pending_ids: np.ndarray, running_ids: np.ndarray, inputs: EstimateInputs
) -> None:
    estimates = estimate_starts(inputs)
    ids = pending_ids.tolist()
    decided.estimated_start = dict(zip(ids, estimates.start.tolist(), strict=True))
    decided.estimate_basis = dict(zip(ids, estimates.basis, strict=True))
    for job_id in decided.unconsidered:  # left out by a bounded pass: no projection of its own
        decided.estimate_basis[job_id] = BASIS_UNCONSIDERED
    decided.waits_behind = _waits_behind(estimates.behind, pending_ids, running_ids)
    basis = np.array(estimates.basis, dtype=object)
    if decided.unconsidered:
        basis[np.isin(pending_ids, decided.unconsidered)] = BASIS_UNCONSIDERED
    behind = np.full(len(ids), NONE, dtype=np.int64)
    if decided.waits_behind:  # (by id in ``estimates.behind``'s order: its keys are the rows)
        rows = np.fromiter(estimates.behind, dtype=np.int64, count=len(estimates.behind))
        behind[rows] = list(decided.waits_behind.values())
    if decided.columns is not None:
        decided.columns = dataclasses.replace(
            decided.columns, estimated_start=estimates.start.astype(np.float64), basis=basis, behind=behind
        )


def _ranked_columns(job_id: np.ndarray, order: np.ndarray, values: np.ndarray, queues) -> DecisionColumns:
    """The ranked jobs' priority, group and key as columns aligned with the pending columns
    (``order``: their rows, in rank order; the others: no priority, group NONE, key NaN)."""
    n = len(job_id)
    priority = np.zeros(n, dtype=np.int64)
    priority[order] = np.asarray(values, dtype=np.int64)
    has_priority = np.zeros(n, dtype=np.bool_)
    has_priority[order] = True
    group = np.full(n, NONE, dtype=np.int64)
    group[order] = queues.group
    key = np.full(n, np.nan)
    key[order] = queues.key
    return DecisionColumns(np.asarray(job_id, dtype=np.int64), priority, has_priority, group, key)


def _waits_behind(
    behind: dict[int, tuple[str, int]], pending_ids: np.ndarray, running_ids: np.ndarray
) -> dict[int, int]:
    """By job id, the id of the job each estimated job waits behind (``behind``: by pending
    index, a running or pending job's index), in ``behind``'s order: whole arrays, no per-job
    lookup (a cycle estimates most of a queue of 10 000)."""
    if not behind:
        return {}
    kinds, index = zip(*behind.values(), strict=True)
    index = np.array(index, dtype=np.int64)
    running = np.fromiter(map(operator.eq, kinds, repeat("running")), dtype=np.bool_, count=len(index))
    ahead = np.empty(len(index), dtype=np.int64)
    ahead[running] = np.asarray(running_ids, dtype=np.int64)[index[running]]
    ahead[~running] = np.asarray(pending_ids, dtype=np.int64)[index[~running]]
    waiting = np.asarray(pending_ids, dtype=np.int64)[np.fromiter(behind, dtype=np.int64, count=len(index))]
    return dict(zip(waiting.tolist(), ahead.tolist(), strict=True))


def _fairshare(waiting: PendingColumns) -> np.ndarray:
    """Each pending job's fair-share factor (unknown: neutral), refused outside [0, 1]."""
    values = waiting.fairshare
    bad = ~((values >= 0.0) & (values <= 1.0))
    if np.any(bad):
        job_id = int(waiting.job_id[int(np.argmax(bad))])
        raise RushError(
            f"job {job_id}'s fair-share factor {float(values[int(np.argmax(bad))])!r} is outside [0, 1]",
            where=f"snapshot job {job_id}: fairshare",
            fix="give the RJMS's normalised factor (Slurm: sprio -n, flux-accounting: fairshare)",
        )
    return values


def _primary(rjms_priority: np.ndarray) -> np.ndarray:
    """Each pending job's rank by its RJMS priority (0: the highest; equal priorities, one rank)."""
    if not np.all(np.isfinite(rjms_priority)):
        raise RushError("a pending job's RJMS priority is not finite", where="PendingJob.rjms_priority")
    return np.unique(-rjms_priority, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _order(policy, rjms_priority: np.ndarray, primary: np.ndarray | None = None) -> OrderPolicy:
    """A policy as the pass sees it; the RJMS policy's keys are the RJMS's priorities (higher
    first; ties in submit order). ``primary``: ranks ordered before the policy's keys."""
    if policy.name != "RJMS":
        return order_policy(policy, primary=primary)
    keys = -rjms_priority
    if not np.all(np.isfinite(keys)):
        raise RushError("a pending job's RJMS priority is not finite", where="PendingJob.rjms_priority")
    return order_policy(policy, keys, primary)


def _head_decision(job: PendingJob, result, nodes, names: tuple[str, ...]) -> Decision:
    if not names:
        return Decision(
            job.job_id,
            "reserve",
            f"first job that does not fit (q={job.procs} > free); shadow time t={result.shadow:.0f}, "
            f"extra processors {result.extra}",
            result.shadow,
        )
    if result.shadow == math.inf:
        why = "first job that does not fit; it cannot fit until drained or down nodes return: no reservation"
        return Decision(job.job_id, "reserve", why, result.shadow)
    held, taken = _row(nodes.reserved, 0, names)
    return Decision(
        job.job_id,
        "reserve",
        f"first job that does not fit now; shadow time t={result.shadow:.0f} on {_short(held)}, "
        f"{result.extra} cores free now outside it",
        result.shadow,
        nodes=held,
        allocation=taken,
    )


def _row(slots, row: int, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, int, int], ...]]:
    """Node names of allocation ``row`` and (name, cores, GPUs) per node."""
    lo, hi = int(slots.offset[row]), int(slots.offset[row + 1])
    taken = tuple(
        (names[i], c, g)
        for i, c, g in zip(
            slots.node[lo:hi].tolist(), slots.cores[lo:hi].tolist(), slots.gpus[lo:hi].tolist(), strict=True
        )
    )
    return tuple(dict.fromkeys(name for name, _, _ in taken)), taken


def _short(nodes: tuple[str, ...]) -> str:
    return ",".join(nodes) if len(nodes) <= 8 else ",".join(nodes[:8]) + f",... ({len(nodes)} nodes)"


def _columns(snapshot: Snapshot) -> SnapshotColumns:
    """The snapshot's job columns: the shell's kept ones, checked to hold its jobs in its order
    (the pass reads the columns, the decisions' words the objects), else read from the objects."""
    given = snapshot.columns
    rows = snapshot.pending if isinstance(snapshot.pending, PendingRows) else None
    if given is None:
        if rows is not None:  # jobs given as columns: the core reads them, not the jobs
            return SnapshotColumns(rows.columns, running_columns(snapshot.running))
        return snapshot_columns(snapshot.pending, snapshot.running)
    for kind, jobs, ids in (
        ("pending", snapshot.pending, given.pending.job_id),
        ("running", snapshot.running, given.running.job_id),
    ):
        if kind == "pending" and rows is not None:
            listed = rows.columns.job_id  # (the jobs' own ids, without making them)
        else:
            listed = np.fromiter(map(operator.attrgetter("job_id"), jobs), dtype=np.int64, count=len(jobs))
        if not np.array_equal(listed, ids):
            raise RushError(
                f"the snapshot's {kind} columns are not its {kind} jobs in their order "
                f"({len(ids)} rows, {len(jobs)} jobs)",
                where=f"snapshot.columns.{kind}",
                fix="give the columns of the snapshot's own jobs, in their order (or none)",
            )
    return given


def _check(snapshot: Snapshot, waiting: PendingColumns, busy: RunningColumns) -> None:
    check_snapshot(
        snapshot,
        np.concatenate([waiting.submit, busy.start]),
        np.concatenate([waiting.requested_time, busy.requested_time]),
        np.concatenate([waiting.estimate, busy.estimate]),
        np.concatenate([waiting.procs, busy.procs]),
        np.concatenate([waiting.job_id, busy.job_id]),
    )


def _start_decision(
    job: PendingJob, backfilled: bool, now: float, estimate: float, result, config: CoreConfig
) -> Decision:
    if not backfilled:
        return Decision(job.job_id, "start", f"fits now (q={job.procs}) in priority order", now)
    estimated_end = now + estimate
    if config.backfill == "easy" and estimated_end <= result.shadow:
        why = f"backfill: ends by its estimate at t={estimated_end:.0f} <= shadow time t={result.shadow:.0f}"
    elif config.backfill == "easy":
        why = f"backfill: q={job.procs} fits the extra processors at the shadow time"
    else:
        why = "backfill: its conservative reservation is now, ahead of a waiting higher-priority job"
    return Decision(job.job_id, "backfill", why, now)


def _priority_explanations(
    order: np.ndarray, queues, values: np.ndarray, waiting: PendingColumns, config: CoreConfig
) -> PriorityExplanations:
    return PriorityExplanations(
        waiting.job_id[order],
        policy_group(queues.group),
        np.array(queues.key, dtype=np.float64),
        np.asarray(values),
        (_group_words(0, config), _group_words(1, config), _group_words(2, config)),
        config.policy.name,
        _order_words(config),
    )


def _group_words(group: int, config: CoreConfig) -> str:
    if group == 0:
        return "starved (waited > threshold)"
    if not config.use_classes:
        return "not starved"
    return "predicted small" if group == 1 else "predicted large or unknown"


def _order_words(config: CoreConfig) -> str:
    parts = []
    if config.threshold is not None:
        parts.append(f"starvation (> {config.threshold:.0f} s waits first)")
    if config.use_classes:
        parts.append("runtime class (small first)")
    parts.append(config.policy.name)
    return ", then ".join(parts)
