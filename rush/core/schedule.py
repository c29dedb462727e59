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
from rush.core.rules import job_rules, kill_due, requeue_as_large
from rush.core.snapshot import Decision, Decisions, RuntimeClass, Snapshot
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


def _column(jobs, name: str, dtype) -> np.ndarray:
    return np.fromiter((getattr(j, name) for j in jobs), dtype=dtype, count=len(jobs))


def _estimates(jobs) -> np.ndarray:
    return np.fromiter(
        (j.requested_time if j.estimate is None else j.estimate for j in jobs),
        dtype=np.float64,
        count=len(jobs),
    )


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


def schedule(snapshot: Snapshot, config: CoreConfig, *, explain_priorities: bool = True) -> Decisions:
    """Decide priorities, starts, reservations, skips and kills for one snapshot.

    ``explain_priorities=False`` leaves out the one ``priority`` decision per pending job (a
    shell that starts jobs itself, the Flux scheduler module, needs only ``order`` and
    ``priority``, not 10 000 explanations per pass).
    """
    now = float(snapshot.now)
    divider = float(config.divider) if config.divider is not None else _DIVIDER_NONE
    pending = sorted(snapshot.pending, key=lambda p: (p.submit, p.job_id))
    running = snapshot.running
    everyone = (*pending, *running)
    n = len(pending)
    submit = _column(pending, "submit", np.float64)
    procs = _column(pending, "procs", np.int64)
    requested = _column(pending, "requested_time", np.float64)
    estimate = _estimates(pending)
    r_start = _column(running, "start", np.float64)
    r_procs_all = _column(running, "procs", np.int64)
    r_requested = _column(running, "requested_time", np.float64)
    r_estimate = _estimates(running)
    check_snapshot(
        snapshot,
        np.concatenate([submit, r_start]),
        np.concatenate([requested, r_requested]),
        np.concatenate([estimate, r_estimate]),
        np.concatenate([procs, r_procs_all]),
        _column(everyone, "job_id", np.int64),
    )
    classes, killable, est = job_rules(
        np.concatenate([estimate, r_estimate]),
        np.concatenate([requested, r_requested]),
        np.fromiter((int(j.runtime_class) for j in everyone), dtype=np.int64, count=len(everyone)),
        _column(everyone, "idempotent", np.bool_),
        _column(everyone, "requeues", np.int64),
        config.kill_false_small,
        config.max_requeues,
        divider,
    )
    runtime_class, est, r_est = classes[:n], est[:n], est[n:]
    variable = _column(pending, "variable", np.bool_)
    skips = _column(pending, "skips", np.int64)

    # Running jobs: estimated ends (sorted) and the false-small kill rule.
    decisions: list[Decision] = []
    r_end_all = r_start + r_est
    for k in np.flatnonzero(killable[n:]):
        r = running[k]
        if kill_due(r.start, now, divider):
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
    by_end = np.lexsort((r_procs_all, r_end_all))  # by estimated end, then processors
    r_end = np.ascontiguousarray(r_end_all[by_end])
    r_procs = np.ascontiguousarray(r_procs_all[by_end])

    arrays = (submit, procs, estimate, runtime_class)
    order, group, key = _order(snapshot, config, config.policy, arrays)
    values = priority_values(group, key, config.policy.code, float(snapshot.time_origin))
    result = Decisions(now=now)
    result.order = [pending[k].job_id for k in order]
    result.priority = {pending[k].job_id: int(v) for k, v in zip(order, values, strict=True)}
    words = _order_words(config)
    groups = {g: _group_words(g, config) for g in (0, 1, 2)}
    name = config.policy.name
    explained = zip(order.tolist(), group.tolist(), key.tolist(), values.tolist(), strict=True)
    for rank, (k, g, kv, v) in enumerate(explained if explain_priorities else ()):
        decisions.append(
            Decision(
                pending[k].job_id,
                "priority",
                f"rank {rank + 1} of {n}: {groups[g]}, {name} key {kv:.6g} by {words}",
                v,
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
