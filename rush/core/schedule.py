"""The core's entry point for a live queue: ``schedule(snapshot, config) -> Decisions``.

It calls the same compiled ordering, pass and rule kernels as the simulator's event loop,
and explains every decision in words for the journal. One pass here is one simulator pass:

* ``priority``: one value per pending job (:mod:`rush.core.priority_values`), in the core's
  order; the RJMS orders by it (Slurm: SiteFactor).
* ``start``/``backfill``/``reserve``: what the core would do now; live, the RJMS starts the
  jobs itself, so these are the evidence for the order (journaled as advice).
* ``skip``: exactly the jobs this pass would start now and the variation predictor flags,
  below their skip limit (:mod:`rush.core.rules`); the daemon holds them for this cycle.
* ``kill``: running false-small jobs due to be killed, with the class and requeue count they
  are requeued with.
"""

from __future__ import annotations

import math

import numpy as np

from rush.core.backfill import conservative_pass, easy_pass
from rush.core.config import CoreConfig
from rush.core.ordering import compute_order_keys, sort_queue
from rush.core.priority_values import priority_values
from rush.core.rules import effective_estimate, is_killable, kill_due, requeue_as_large, runtime_class_of
from rush.core.snapshot import Decision, Decisions, PendingJob, RuntimeClass, Snapshot
from rush.errors import RushError

_DIVIDER_NONE = float("inf")


def _order(
    snapshot: Snapshot, config: CoreConfig, policy, arrays
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pending jobs in the core's order, with their (group, key) in that order."""
    submit, procs, estimate, runtime_class = arrays
    n = len(submit)
    queue = np.arange(n, dtype=np.int64)
    group = np.empty(n, dtype=np.int64)
    key = np.empty(n, dtype=np.float64)
    compute_order_keys(
        queue,
        n,
        float(snapshot.now),
        policy.code,
        policy.weight_array(),
        np.zeros(1),
        False,
        float(snapshot.time_origin),
        -1.0 if config.threshold is None else float(config.threshold),
        submit,
        procs,
        estimate,
        runtime_class,
        config.use_classes,
        float(config.wait_quantum),
        group,
        key,
    )
    # Sort by index first so the (group, key, index) tie-break is (submit, job_id).
    sort_queue(queue, group, key, n)
    return queue, group, key


def check_snapshot(snapshot: Snapshot) -> None:
    """Refuse a snapshot the kernels cannot order soundly (NaN times, no processors, ...).

    The daemon's snapshot builder drops such jobs first; this guards every other caller.
    """
    if not math.isfinite(snapshot.now) or not math.isfinite(snapshot.time_origin):
        raise RushError("the snapshot's time is not finite", where="snapshot.now")
    if not 0 <= snapshot.free_procs <= max(snapshot.total_procs, 0):
        raise RushError(
            f"free processors {snapshot.free_procs} outside [0, {snapshot.total_procs}]",
            where="snapshot.free_procs",
        )
    seen: set[int] = set()
    for job in (*snapshot.pending, *snapshot.running):
        when = job.submit if isinstance(job, PendingJob) else job.start
        # An unlimited request (inf) is allowed; NaN and negative ones are not.
        if (
            job.job_id in seen
            or job.procs <= 0
            or not math.isfinite(when)
            or not job.requested_time >= 0
            or (job.estimate is not None and not job.estimate >= 0)
        ):
            raise RushError(
                f"job {job.job_id} is repeated or has a non-finite submit/start, a NaN or negative "
                "request or no processors",
                where=f"snapshot job {job.job_id}",
                fix="drop the job before scheduling (the daemon's snapshot builder does)",
            )
        seen.add(job.job_id)


def schedule(snapshot: Snapshot, config: CoreConfig) -> Decisions:
    """Decide priorities, starts, reservations, skips and kills for one snapshot."""
    now = float(snapshot.now)
    divider = float(config.divider) if config.divider is not None else _DIVIDER_NONE
    check_snapshot(snapshot)
    pending = sorted(snapshot.pending, key=lambda p: (p.submit, p.job_id))
    n = len(pending)
    submit = np.array([p.submit for p in pending], dtype=np.float64)
    procs = np.array([p.procs for p in pending], dtype=np.int64)
    requested = np.array([p.requested_time for p in pending], dtype=np.float64)
    estimate = np.array(
        [p.requested_time if p.estimate is None else p.estimate for p in pending], dtype=np.float64
    )
    runtime_class = np.array(
        [runtime_class_of(int(p.runtime_class), p.requeues) for p in pending], dtype=np.int64
    )
    variable = np.array([p.variable for p in pending], dtype=np.bool_)
    skips = np.array([p.skips for p in pending], dtype=np.int64)
    est = np.array(
        [
            effective_estimate(
                estimate[k],
                requested[k],
                is_killable(
                    config.kill_false_small, runtime_class[k], p.idempotent, p.requeues, config.max_requeues
                ),
                divider,
            )
            for k, p in enumerate(pending)
        ],
        dtype=np.float64,
    )

    # Running jobs: estimated ends (sorted) and the false-small kill rule.
    decisions: list[Decision] = []
    run_end = []
    for r in snapshot.running:
        r_estimate = r.requested_time if r.estimate is None else r.estimate
        r_class = runtime_class_of(int(r.runtime_class), r.requeues)
        killable = is_killable(
            config.kill_false_small, r_class, r.idempotent, r.requeues, config.max_requeues
        )
        run_end.append(
            (r.start + effective_estimate(r_estimate, r.requested_time, killable, divider), r.procs)
        )
        if killable and kill_due(r.start, now, divider):
            new_class, requeues = requeue_as_large(r.requeues)
            decisions.append(
                Decision(
                    r.job_id,
                    "kill",
                    f"predicted small but running {now - r.start:.0f} s > divider {divider:.0f} s; "
                    f"opted in as idempotent: requeue as large (requeue {requeues} of {config.max_requeues})",
                    now - r.start,
                    requeue_class=RuntimeClass(new_class),
                    requeues=requeues,
                )
            )
    run_end.sort()
    r_end = np.array([e for e, _ in run_end], dtype=np.float64)
    r_procs = np.array([p for _, p in run_end], dtype=np.int64)

    arrays = (submit, procs, estimate, runtime_class)
    order, group, key = _order(snapshot, config, config.policy, arrays)
    values = priority_values(group, key, config.policy.code, float(snapshot.time_origin))
    result = Decisions(now=now)
    result.order = [pending[k].job_id for k in order]
    result.priority = {pending[k].job_id: int(v) for k, v in zip(order, values, strict=True)}
    for rank, k in enumerate(order):
        decisions.append(
            Decision(
                pending[k].job_id,
                "priority",
                f"rank {rank + 1} of {n}: {_group_words(int(group[rank]), config)}, {config.policy.name} key "
                f"{key[rank]:.6g} by {_order_words(config)}",
                int(values[rank]),
            )
        )

    out_start = np.empty(n, dtype=np.int64)
    out_bf = np.empty(n, dtype=np.bool_)
    out_skip = np.empty(n, dtype=np.int64)
    free = int(snapshot.free_procs)
    if config.backfill == "conservative":
        out_res = np.empty(n, dtype=np.int64)
        out_res_at = np.empty(n, dtype=np.float64)
        ns, nk, nr = conservative_pass(
            now,
            free,
            order,
            n,
            procs,
            est,
            np.full(n, np.inf),  # the RJMS keeps no rush reservations: place every job afresh
            r_end,
            r_procs,
            len(r_end),
            variable,
            True,
            skips,
            config.skip_limit,
            out_start,
            out_bf,
            out_skip,
            out_res,
            out_res_at,
        )
        for k in range(nr):
            j = out_res[k]
            decisions.append(
                Decision(
                    pending[j].job_id,
                    "reserve",
                    f"conservative reservation at t={out_res_at[k]:.0f}",
                    out_res_at[k],
                )
            )
        head, shadow, extra = -1, np.inf, 0
    else:
        scan = (
            order
            if config.backfill_policy is None
            else _order(snapshot, config, config.scan_policy, arrays)[0]
        )
        taken = np.zeros(n, dtype=np.bool_)
        ns, nk, head, shadow, extra = easy_pass(
            now,
            free,
            order,
            n,
            scan,
            n,
            procs,
            est,
            r_end,
            r_procs,
            len(r_end),
            variable,
            True,
            skips,
            config.skip_limit,
            config.backfill == "easy",
            taken,
            out_start,
            out_bf,
            out_skip,
        )
        if head >= 0:
            decisions.append(
                Decision(
                    pending[head].job_id,
                    "reserve",
                    f"first job that does not fit (q={procs[head]} > free); shadow time t={shadow:.0f}, "
                    f"extra processors {extra}",
                    shadow,
                )
            )
    for k in range(ns):
        j = out_start[k]
        if out_bf[k]:
            if config.backfill == "easy" and now + est[j] <= shadow:
                why = f"backfill: ends by its estimate at t={now + est[j]:.0f} <= shadow time t={shadow:.0f}"
            elif config.backfill == "easy":
                why = f"backfill: q={procs[j]} fits the extra processors at the shadow time"
            else:
                why = "backfill: its conservative reservation is now, ahead of a waiting higher-priority job"
            decisions.append(Decision(pending[j].job_id, "backfill", why, now))
        else:
            decisions.append(
                Decision(pending[j].job_id, "start", f"fits now (q={procs[j]}) in priority order", now)
            )
    # Skips are exactly the pass's: jobs it would have started now (rules.should_skip).
    for k in range(nk):
        j = out_skip[k]
        decisions.append(
            Decision(
                pending[j].job_id,
                "skip",
                f"would start now but predicted to suffer variability: delay {skips[j] + 1} "
                f"of at most {config.skip_limit}",
                float(skips[j] + 1),
            )
        )
    result.decisions = decisions
    return result


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
