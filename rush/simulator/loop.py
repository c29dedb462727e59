"""The compiled event loop. It holds state and time only; every decision comes from
:mod:`rush.core` (ordering, passes and rules), the same code the daemon calls.

At each event time t: process completions (and false-small kills, which requeue the
job as large with its original submit time; and kills at a speculative reservation, which
requeue it with its next reservation, :mod:`rush.core.speculative_reservations`), then arrivals, then one
scheduling pass (:func:`rush.core.scheduling_pass.scheduling_pass`, the live core's too).
Which kill ends a run is :func:`rush.core.false_small_kill.run_outcome`'s decision.

With a fair-share model (:mod:`rush.core.fairshare`), the calc-period ticks up to t come
first: each tick adds the period's processor-seconds to the decayed usage; before a pass the
queued jobs take their association's factor of the period when a policy reads it (LINEAR's
``fairshare`` term); starts and ends change what the running jobs are charged. Ticks
are not events: as with every time-dependent policy, the new order is seen at the next event.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from rush.core.fairshare import (
    FairShareTree,
    UsageLedger,
    association_factor,
    close_period,
    new_ledger,
    run_ends,
    run_starts,
)
from rush.core.false_small_kill import (
    RUN_DIVIDER_REQUEUE,
    RUN_FINAL_KILL,
    RUN_RESERVATION_REQUEUE,
    is_killable,
    requeue_as_large,
    run_outcome,
)
from rush.core.gaussier_online import (
    CV_LOSS,
    GaussierState,
    gaussier_arrival,
    gaussier_completion,
    new_gaussier_state,
    user_running,
)
from rush.core.job_rules import effective_estimate, limit_estimate
from rush.core.node_pool import NodeView, Slots, need_units, new_slots, node_table
from rush.core.pass_data import (
    OrderPolicy,
    PassConfig,
    PassJobs,
    PassMoment,
    PassOut,
    PassQueues,
    PassResult,
    PassState,
    RunningSet,
    new_out,
    new_queues,
)
from rush.core.policies import priority_key
from rush.core.runtime_predictions import (
    CORRECTION_NONE,
    JITTER_OFF,
    ONLINE_GAUSSIER,
    jittered_prediction,
    last_two_prediction,
    order_takes_prediction,
    record_finished_run,
    running_estimate,
)
from rush.core.scheduling_pass import counts_pass, drop_started, scheduling_pass
from rush.core.speculative_reservations import next_attempt, run_limit

INF = np.inf


@njit(cache=True, _nrt=False)  # per event: no reference counts (rush.core.node_pool)
def _heap_push(ht: np.ndarray, hj: np.ndarray, hn: int, t: float, j: int) -> int:
    k = hn
    ht[k] = t
    hj[k] = j
    while k > 0:
        parent = (k - 1) >> 1
        if ht[parent] < ht[k] or (ht[parent] == ht[k] and hj[parent] <= hj[k]):
            break
        ht[parent], ht[k] = ht[k], ht[parent]
        hj[parent], hj[k] = hj[k], hj[parent]
        k = parent
    return hn + 1


@njit(cache=True, _nrt=False)  # per event: no reference counts (rush.core.node_pool)
def _heap_pop(ht: np.ndarray, hj: np.ndarray, hn: int) -> int:
    hn -= 1
    ht[0] = ht[hn]
    hj[0] = hj[hn]
    k = 0
    while True:
        left = 2 * k + 1
        if left >= hn:
            break
        c = left
        right = left + 1
        if right < hn and (ht[right] < ht[left] or (ht[right] == ht[left] and hj[right] < hj[left])):
            c = right
        if ht[k] < ht[c] or (ht[k] == ht[c] and hj[k] <= hj[c]):
            break
        ht[c], ht[k] = ht[k], ht[c]
        hj[c], hj[k] = hj[k], hj[c]
        k = c
    return hn


@njit(cache=True, _nrt=False)  # per event: no reference counts (rush.core.node_pool)
def _running_insert(
    r_end: np.ndarray, r_job: np.ndarray, r_procs: np.ndarray, rn: int, e: float, j: int, p: int
) -> int:
    lo, hi = 0, rn
    while lo < hi:
        mid = (lo + hi) >> 1
        if r_end[mid] <= e:
            lo = mid + 1
        else:
            hi = mid
    for m in range(rn, lo, -1):
        r_end[m] = r_end[m - 1]
        r_job[m] = r_job[m - 1]
        r_procs[m] = r_procs[m - 1]
    r_end[lo] = e
    r_job[lo] = j
    r_procs[lo] = p
    return rn + 1


@njit(cache=True, _nrt=False)  # per event: no reference counts (rush.core.node_pool)
def _running_remove(
    r_end: np.ndarray, r_job: np.ndarray, r_procs: np.ndarray, rn: int, e: float, j: int
) -> int:
    lo, hi = 0, rn
    while lo < hi:
        mid = (lo + hi) >> 1
        if r_end[mid] < e:
            lo = mid + 1
        else:
            hi = mid
    k = lo
    while k < rn and r_job[k] != j:
        k += 1
    for m in range(k, rn - 1):
        r_end[m] = r_end[m + 1]
        r_job[m] = r_job[m + 1]
        r_procs[m] = r_procs[m + 1]
    return rn - 1


class SimJobs(NamedTuple):
    """The workload's per-job columns in (submit, job_id) order, with the models' inputs
    (see :class:`rush.simulator.engine.SimInputs`)."""

    submit: np.ndarray
    runtime: np.ndarray
    requested_time: np.ndarray
    procs: np.ndarray
    estimate: np.ndarray
    runtime_class: np.ndarray
    idempotent: np.ndarray
    sensitive: np.ndarray
    divider: np.ndarray
    reservations: np.ndarray
    reservation_counts: np.ndarray
    # The site's fair-share factor per job in [0, 1] (LINEAR's fairshare term).
    fairshare: np.ndarray
    # Predictions from the replay's own completions (SimInputs.online_prediction): each job's
    # user as an index into the per-user history (-1: unknown); empty: ``estimate`` is given.
    history_user: np.ndarray
    # Which online rule (rush.core.runtime_predictions.ONLINE_RULES; 0: none).
    online_rule: int
    # Where its predictions are used (rush.core.runtime_predictions.PREDICTION_SCOPES; 0: everywhere).
    prediction_scope: int = 0
    # A study's jitter of the online predictions (rush.core.runtime_predictions.jittered_prediction;
    # JITTER_OFF: none) and Gaussier et al.'s composite loss (rush.core.gaussier_online.CV_LOSS: theirs).
    jitter_seed: int = JITTER_OFF
    gaussier_loss: np.ndarray = CV_LOSS


class KillRules(NamedTuple):
    kill_false_small: bool
    max_requeues: int
    # How a run's estimate is corrected when it outlives it (rush.core.runtime_predictions).
    correction: int = 0


class VariabilityWindows(NamedTuple):
    """Sorted, disjoint [start, end) intervals in which sensitive jobs are predicted to vary."""

    start: np.ndarray
    end: np.ndarray


class SimOutcome(NamedTuple):
    start: np.ndarray
    end: np.ndarray
    backfilled: np.ndarray
    killed: np.ndarray
    requeues: np.ndarray
    wasted: np.ndarray
    skips: np.ndarray
    runtime_class: np.ndarray
    first_reservation: np.ndarray
    reservation_kills: np.ndarray
    fairshare_at_start: np.ndarray  # the factor the job's last start was ordered with
    estimate: np.ndarray  # the estimate each job was scheduled with (given, or predicted at arrival)


@njit(cache=True, nogil=True, _nrt=False)  # no reference counts (rush.core.node_pool)
def _give_back(
    free_c: np.ndarray, free_g: np.ndarray, usable: np.ndarray, held: Slots, row: int, sign: int = 1
) -> int:
    """Return (sign 1) or take (-1) allocation ``row``'s cores and GPUs on the pool's free
    cores and GPUs; returns its cores on usable nodes (what the machine's free count changes
    by). Takes the pool's arrays, not the pool: a call counts a reference per array passed."""
    cores = 0
    h_off, h_node, h_c, h_g = held
    for k in range(h_off[row], h_off[row + 1]):
        node = h_node[k]
        free_c[node] += sign * h_c[k]
        free_g[node] += sign * h_g[k]
        if usable[node]:
            cores += h_c[k]
    return cores


@njit(cache=True, nogil=True, _nrt=False)  # no reference counts (rush.core.node_pool)
def _held_full(held: Slots, placed: Slots, k: int, row: int) -> bool:
    """Whether ``held`` lacks the room for start ``k``'s allocation as row ``row``."""
    count = placed.offset[k + 1] - placed.offset[k]
    return row + 2 > held.offset.shape[0] or held.offset[row] + count > held.node.shape[0]


@njit(cache=True, nogil=True)
def _grown(held: Slots, placed: Slots, k: int, row: int) -> Slots:
    """``held``'s rows before ``row`` in buffers twice as large, with room for start ``k``'s."""
    count = placed.offset[k + 1] - placed.offset[k]
    at = held.offset[row]
    bigger = new_slots(2 * held.offset.shape[0], 2 * held.node.shape[0] + count)
    bigger.offset[: row + 1] = held.offset[: row + 1]
    bigger.node[:at] = held.node[:at]
    bigger.cores[:at] = held.cores[:at]
    bigger.gpus[:at] = held.gpus[:at]
    return bigger


@njit(cache=True, nogil=True, _nrt=False)  # no reference counts (rush.core.node_pool)
def _keep_placement(held: Slots, placed: Slots, k: int, row: int) -> None:
    """Append start ``k``'s allocation (``placed`` row k) as ``held`` row ``row``, which has
    the room (:func:`_held_full`, :func:`_grown`)."""
    first = placed.offset[k]
    count = placed.offset[k + 1] - first
    at = held.offset[row]
    h_node, h_c, h_g = held.node, held.cores, held.gpus
    p_node, p_c, p_g = placed.node, placed.cores, placed.gpus
    for x in range(count):
        h_node[at + x] = p_node[first + x]
        h_c[at + x] = p_c[first + x]
        h_g[at + x] = p_g[first + x]
    held.offset[row + 1] = at + count


@njit(cache=True, nogil=True, _nrt=False)
def _pass_on_nodes(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: tuple[RunningSet, Slots],
    out: PassOut,
    nodes: NodeView,
) -> PassResult:
    """The scheduling pass on the replay's nodes (their view with the kept reservations and
    placement's table); ``running``: the running jobs and their allocations (rows of the
    second). Compiled without numba's runtime like the pass: the view built here at every pass
    counts no reference on its 30 arrays (rush.core.scheduling_pass)."""
    running_set, held = running
    view = NodeView(
        nodes.pool, nodes.request, held, nodes.placement, nodes.placed, nodes.reserved, nodes.table
    )
    return scheduling_pass(moment, config, jobs, state, queues, running_set, out, view)


@njit(cache=True, nogil=True, inline="always")  # inlined: a call would count references per event
def _refresh_factors(tree: FairShareTree, ledger: UsageLedger, queue: np.ndarray, qn: int) -> None:
    """The queued jobs take their association's factor of this period."""
    for k in range(qn):
        j = queue[k]
        ledger.job_factor[j] = association_factor(ledger, tree, tree.job_assoc[j])


@njit(cache=True, nogil=True)
def _estimates_below_limits(jobs: SimJobs) -> bool:
    """Whether some job's estimate is below a time limit it may run with (its walltime, or the
    last of its speculative reservations): only then can a reservation on limits differ from one
    on estimates."""
    for j in range(len(jobs.estimate)):
        c = jobs.reservation_counts[j]
        top = jobs.reservations[j, c - 1] if c > 0 else jobs.requested_time[j]
        if jobs.estimate[j] < top:
            return True
    return False


@njit(cache=True, nogil=True)
def _online_prediction(
    jobs: SimJobs,
    history: np.ndarray,
    gaussier: GaussierState,
    running: np.ndarray,
    start: np.ndarray,
    j: int,
) -> float:
    """The core's prediction for job ``j`` arriving now, from what finished so far in this replay
    (and, for Gaussier et al., its user's jobs ``running`` now): the loop only passes its state."""
    user = jobs.history_user[j]
    if jobs.online_rule >= ONLINE_GAUSSIER:
        now = jobs.submit[j]
        mine = user_running(jobs.history_user, jobs.procs, start, running, user, now)
        return gaussier_arrival(gaussier, j, user, now, jobs.requested_time[j], float(jobs.procs[j]), mine)
    return last_two_prediction(history, user, jobs.requested_time[j])


@njit(cache=True, nogil=True)
def _record_finished(
    jobs: SimJobs, history: np.ndarray, gaussier: GaussierState, j: int, ran: float, now: float
) -> None:
    """Job ``j`` finished now after running ``ran`` seconds: the online rule's state learns it."""
    user = jobs.history_user[j]
    if jobs.online_rule >= ONLINE_GAUSSIER:
        gaussier_completion(gaussier, j, user, jobs.submit[j], ran, float(jobs.procs[j]), now)
    else:
        record_finished_run(history, user, ran)


@njit(cache=True, nogil=True)
def _predict_at_arrival(
    jobs: SimJobs, config: PassConfig, estimate: np.ndarray, j: int, value: float
) -> None:
    """Job ``j`` arrives: its estimate is ``value``, the core's online prediction
    (:func:`_online_prediction`), and a time-independent order's key, computed once per job, is
    computed from it now: the backfill scan's always, the queue order's unless the core's scope
    keeps the order on its own key (:func:`order_takes_prediction`)."""
    estimate[j] = value
    if order_takes_prediction(jobs.prediction_scope):
        _static_key_from(config.order, config, jobs, j, value)
    _static_key_from(config.scan, config, jobs, j, value)


@njit(cache=True, nogil=True)
def _static_key_from(policy: OrderPolicy, config: PassConfig, jobs: SimJobs, j: int, value: float) -> None:
    """A time-independent ``policy``'s key of job ``j`` from the estimate ``value`` (none for a
    time-dependent one: it reads the estimate at each pass)."""
    if policy.use_static:
        policy.static_key[j] = priority_key(
            policy.code, policy.weights, 0.0, config.time_origin, jobs.submit[j], jobs.procs[j], value
        )


@njit(cache=True, nogil=True)
def run_simulation(
    jobs: SimJobs,
    config: PassConfig,
    rules: KillRules,
    windows: VariabilityWindows,
    machine_procs: int,
    progress: np.ndarray,
    nodes: NodeView,
    fair: FairShareTree,
) -> SimOutcome:
    """Replay ``jobs`` on a machine of ``machine_procs`` processors, or on ``nodes`` when its
    pool has nodes (``nodes.pool.free_cores`` is then updated as jobs start and end, and the
    running set's ``procs`` are rows of the started jobs' allocations). With a fair-share
    model (``fair.period`` finite) the jobs' factors come from its decayed usage instead of
    ``jobs.fairshare``."""
    submit = jobs.submit
    procs = jobs.procs
    n = len(submit)
    start = np.full(n, -1.0)
    end = np.full(n, -1.0)
    backfilled = np.zeros(n, dtype=np.bool_)
    killed = np.zeros(n, dtype=np.bool_)
    requeues = np.zeros(n, dtype=np.int64)
    wasted = np.zeros(n, dtype=np.float64)
    runtime_class = jobs.runtime_class.copy()
    est = np.empty(n, dtype=np.float64)  # reservation estimate of the job's next run
    sure = np.empty(n, dtype=np.float64)  # its length at the latest (a starved head's reservation)
    run_est_end = np.empty(n, dtype=np.float64)  # its current run's estimated end
    outcome = np.zeros(n, dtype=np.int64)  # how its current run ends (false_small_kill.run_outcome)
    attempt = np.zeros(n, dtype=np.int64)  # index of the job's reservation in its sequence
    limit = np.empty(n, dtype=np.float64)  # time limit of its next run: walltime or reservation
    reservation_kills = np.zeros(n, dtype=np.int64)
    # Node memory for conservative on nodes: nothing booked yet, every usable node as it is.
    memory = np.zeros((nodes.pool.count, 5), dtype=np.float64)
    for node in range(nodes.pool.count):
        memory[node, 1] = -INF
        memory[node, 2] = 1.0 if nodes.pool.usable[node] else 0.0
        memory[node, 3] = INF
        memory[node, 4] = -INF
    state = PassState(
        np.zeros(n, dtype=np.int64),
        np.full(n, INF),
        np.full(n, INF),
        np.full(n, -1, dtype=np.int64),
        memory,
        np.full(n, INF),
    )
    fair_on = fair.period < INF
    ledger = new_ledger(fair, n if fair_on else 0)
    factor_of_job = ledger.job_factor if fair_on else jobs.fairshare
    fairshare_at_start = np.full(n, np.nan)
    factors_epoch = 0.0  # the period whose factors the queued jobs hold
    # Predictions from the replay's own completions: each job's estimate is set at its arrival
    # from its user's finished runs (per user: the last two, NaN while unseen).
    online = len(jobs.history_user) > 0
    estimate = jobs.estimate.copy() if online else jobs.estimate
    users = 0
    for j in range(len(jobs.history_user)):
        users = max(users, jobs.history_user[j] + 1)
    history = np.full((users, 2), np.nan)
    learns = jobs.online_rule >= ONLINE_GAUSSIER  # Gaussier et al.'s rule (or a study variant)
    gaussier = new_gaussier_state(
        users if learns else 0, n if learns else 0, jobs.online_rule, jobs.gaussier_loss
    )
    # Estimates below a limit (predictions): the running jobs are also kept by the end of their
    # limits, for a starved head (rush.core.starved_head); else both lists are one.
    by_limits = online or _estimates_below_limits(jobs)
    pass_jobs = PassJobs(
        submit,
        procs,
        estimate,
        est,
        runtime_class,
        jobs.sensitive,
        factor_of_job,
        sure if by_limits else est,
    )
    for j in range(n):
        limit[j] = run_limit(jobs.reservations[j], jobs.reservation_counts[j], 0, jobs.requested_time[j])
        killable = is_killable(
            rules.kill_false_small, runtime_class[j], jobs.idempotent[j], 0, rules.max_requeues
        )
        est[j] = effective_estimate(estimate[j], limit[j], killable, jobs.divider[j])
        sure[j] = limit_estimate(limit[j], killable, jobs.divider[j])

    queues = new_queues(n)
    qn = 0
    r_end = np.empty(n, dtype=np.float64)
    r_job = np.empty(n, dtype=np.int64)
    r_procs = np.empty(n, dtype=np.int64)
    rn = 0
    n_lim = n if by_limits else 0
    l_end = np.empty(n_lim, dtype=np.float64)
    l_job = np.empty(n_lim, dtype=np.int64)
    l_procs = np.empty(n_lim, dtype=np.int64)
    run_sure_end = np.empty(n_lim, dtype=np.float64)  # the current run's end at the latest
    ht = np.empty(n, dtype=np.float64)
    hj = np.empty(n, dtype=np.int64)
    hn = 0
    # Prediction expiries: a running job reaching its estimated end while still running gets
    # a corrected estimate (an event, with a pass after it).
    correcting = rules.correction != CORRECTION_NONE
    xt = np.empty(n if correcting else 0, dtype=np.float64)
    xj = np.empty(n if correcting else 0, dtype=np.int64)
    xn = 0
    run_len = np.empty(n if correcting else 0, dtype=np.float64)  # current run's estimated length
    started_mark = np.zeros(n, dtype=np.bool_)
    out = new_out(n)

    on_nodes = nodes.pool.count > 0
    free = machine_procs
    # Node mode: every start's allocation, appended (row_of[j]: job j's current run's row).
    held = nodes.held
    row_of = np.full(n, -1, dtype=np.int64)
    rows = 0
    # Conservative's standing reservations keep their nodes from pass to pass (rows of the
    # view's ``reserved``, state.reserved_row); sized for every job reserved at once.
    kept = nodes.reserved
    if on_nodes:
        kept_entries = nodes.pool.count + 1
        for j in range(n):
            kept_entries += min(need_units(nodes.request, j, procs[j]), nodes.pool.count)
        # Room for every job's first run (a start takes at most min(need, nodes) entries): grown
        # only by reruns, where doubling copied up to twice the replay's allocations.
        held = new_slots(n + 16, kept_entries + 16)
        kept = new_slots(n + 1, kept_entries)
        free = 0
        for node in range(nodes.pool.count):
            if nodes.pool.usable[node]:
                free += nodes.pool.free_cores[node]
    pool_free_c, pool_free_g, pool_usable = nodes.pool.free_cores, nodes.pool.free_gpus, nodes.pool.usable
    # Placement's table of the pool, built once: the pool's nodes do not change during a replay.
    table = node_table(nodes.pool) if on_nodes else np.zeros((0, 0), dtype=np.int64)
    # The replay's view with its kept reservations and table, which do not change; a pass adds
    # the running jobs' allocations (``held``, reallocated when it grows) in an uncounted
    # helper. No view is reassigned in the loop: on processor counts it would cost a
    # reference-count update per array at every event (counts_pass takes none).
    replay_nodes = NodeView(nodes.pool, nodes.request, held, nodes.placement, nodes.placed, kept, table)
    nxt = 0
    vi = 0
    nv = len(windows.start)
    done = 0
    t_prev = -INF
    while nxt < n or hn > 0 or qn > 0:
        t = INF
        if nxt < n:
            t = submit[nxt]
        if hn > 0 and ht[0] < t:
            t = ht[0]
        if xn > 0 and xt[0] < t:
            t = xt[0]
        # Inside a variability interval, its end may release skipped jobs: it is an event too.
        if qn > 0 and vi < nv and windows.start[vi] <= t_prev < windows.end[vi] and windows.end[vi] < t:
            t = windows.end[vi]
        if t == INF:
            break  # only never-startable jobs remain
        t_prev = t
        while vi < nv and windows.end[vi] <= t:
            vi += 1
        variable_now = vi < nv and windows.start[vi] <= t
        while ledger.clock[0] <= t:  # never without a fair-share model (the clock stays at inf)
            close_period(ledger, fair)

        # 1. completions (a kill at the divider or at a speculative reservation requeues the job)
        while hn > 0 and ht[0] <= t:
            j = hj[0]
            hn = _heap_pop(ht, hj, hn)
            if on_nodes:
                free += _give_back(pool_free_c, pool_free_g, pool_usable, held, row_of[j])
            else:
                free += procs[j]
            rn = _running_remove(r_end, r_job, r_procs, rn, run_est_end[j], j)
            if by_limits:
                _running_remove(l_end, l_job, l_procs, rn + 1, run_sure_end[j], j)
            if fair_on:
                run_ends(ledger, fair, j, procs[j], t)
            if outcome[j] == RUN_DIVIDER_REQUEUE or outcome[j] == RUN_RESERVATION_REQUEUE:
                wasted[j] += (t - start[j]) * procs[j]
                if outcome[j] == RUN_DIVIDER_REQUEUE:
                    runtime_class[j], requeues[j] = requeue_as_large(requeues[j])
                else:
                    attempt[j] = next_attempt(attempt[j])
                    limit[j] = run_limit(
                        jobs.reservations[j], jobs.reservation_counts[j], attempt[j], jobs.requested_time[j]
                    )
                    reservation_kills[j] += 1
                outcome[j] = 0
                killable = is_killable(
                    rules.kill_false_small,
                    runtime_class[j],
                    jobs.idempotent[j],
                    requeues[j],
                    rules.max_requeues,
                )
                est[j] = effective_estimate(estimate[j], limit[j], killable, jobs.divider[j])
                sure[j] = limit_estimate(limit[j], killable, jobs.divider[j])
                start[j] = -1.0
                end[j] = -1.0
                backfilled[j] = False
                if fair.ordered:
                    factor_of_job[j] = association_factor(ledger, fair, fair.job_assoc[j])
                queues.queue[qn] = j
                queues.scan[qn] = j
                qn += 1
            else:
                done += 1
                if online:  # a finished run (not a requeued one) joins its user's history,
                    # with the length it ran (a run killed at its limit ran the limit)
                    _record_finished(jobs, history, gaussier, j, min(jobs.runtime[j], limit[j]), t)
        # 1b. running jobs that outlived their estimate get the correction rule's next one
        while xn > 0 and xt[0] <= t:
            j = xj[0]
            expired = xt[0]
            xn = _heap_pop(xt, xj, xn)
            if start[j] < 0 or run_est_end[j] != expired or end[j] <= t:
                continue  # ended or requeued since
            rn = _running_remove(r_end, r_job, r_procs, rn, run_est_end[j], j)
            # Elapsed at least the expired length: t - start may round below it.
            elapsed = max(t - start[j], run_len[j])
            run_len[j] = running_estimate(rules.correction, est[j], elapsed, limit[j])
            run_est_end[j] = start[j] + run_len[j]
            rn = _running_insert(
                r_end, r_job, r_procs, rn, run_est_end[j], j, row_of[j] if on_nodes else procs[j]
            )
            if end[j] > run_est_end[j] and run_est_end[j] > expired:
                xn = _heap_push(xt, xj, xn, run_est_end[j], j)
        # 2. arrivals
        while nxt < n and submit[nxt] <= t:
            if fair.ordered:
                factor_of_job[nxt] = association_factor(ledger, fair, fair.job_assoc[nxt])
            if online:
                value = _online_prediction(jobs, history, gaussier, r_job[:rn], start, nxt)
                value = jittered_prediction(value, jobs.requested_time[nxt], jobs.jitter_seed, nxt)
                _predict_at_arrival(jobs, config, estimate, nxt, value)
                killable = is_killable(
                    rules.kill_false_small, runtime_class[nxt], jobs.idempotent[nxt], 0, rules.max_requeues
                )
                est[nxt] = effective_estimate(estimate[nxt], limit[nxt], killable, jobs.divider[nxt])
            queues.queue[qn] = nxt
            queues.scan[qn] = nxt
            qn += 1
            nxt += 1
        if done & 4095 == 0:
            progress[0] = done
        # 3. one scheduling pass (nothing can start on a full machine)
        if qn == 0 or free <= 0:
            continue
        # Factors change at ticks; only a pass reads them (none on a full machine).
        if fair.ordered and ledger.clock[3] != factors_epoch:
            _refresh_factors(fair, ledger, queues.queue, qn)
            factors_epoch = ledger.clock[3]
        moment = PassMoment(t, free, qn, variable_now, True)  # every simulator pass is an event pass
        running_set = (
            RunningSet(r_end, r_procs, rn, l_end, l_procs)
            if by_limits
            else RunningSet(r_end, r_procs, rn, r_end, r_procs)
        )
        if on_nodes:
            result = _pass_on_nodes(
                moment, config, pass_jobs, state, queues, (running_set, held), out, replay_nodes
            )
        else:
            result = counts_pass(moment, config, pass_jobs, state, queues, running_set, out)
        ns = result.started
        if ns == 0:
            continue
        for k in range(ns):
            j = out.start[k]
            started_mark[j] = True
            if on_nodes:
                if _held_full(held, nodes.placed, k, rows):
                    held = _grown(held, nodes.placed, k, rows)
                _keep_placement(held, nodes.placed, k, rows)
                row_of[j] = rows
                rows += 1
                free -= _give_back(pool_free_c, pool_free_g, pool_usable, held, row_of[j], -1)
            else:
                free -= procs[j]
            start[j] = t
            if fair_on:
                fairshare_at_start[j] = association_factor(ledger, fair, fair.job_assoc[j])
                run_starts(ledger, fair, j, procs[j], t)
            else:
                fairshare_at_start[j] = factor_of_job[j]
            backfilled[j] = out.backfilled[k]
            killable = is_killable(
                rules.kill_false_small, runtime_class[j], jobs.idempotent[j], requeues[j], rules.max_requeues
            )
            # The simulator knows the run's length: the core says how and when it ends.
            length, outcome[j] = run_outcome(
                jobs.runtime[j], limit[j], attempt[j], jobs.reservation_counts[j], killable, jobs.divider[j]
            )
            killed[j] = outcome[j] == RUN_FINAL_KILL
            end[j] = t + length
            run_est_end[j] = t + est[j]
            if correcting:
                run_len[j] = est[j]
            hn = _heap_push(ht, hj, hn, end[j], j)
            rn = _running_insert(
                r_end, r_job, r_procs, rn, run_est_end[j], j, row_of[j] if on_nodes else procs[j]
            )
            if by_limits:
                run_sure_end[j] = t + sure[j]
                _running_insert(
                    l_end, l_job, l_procs, rn - 1, run_sure_end[j], j, row_of[j] if on_nodes else procs[j]
                )
            if correcting and end[j] > run_est_end[j]:
                xn = _heap_push(xt, xj, xn, run_est_end[j], j)
        qn = drop_started(queues, qn, started_mark, config.same_scan)
        for k in range(ns):
            started_mark[out.start[k]] = False
    progress[0] = done
    return SimOutcome(
        start,
        end,
        backfilled,
        killed,
        requeues,
        wasted,
        state.skips,
        runtime_class,
        state.first_reservation,
        reservation_kills,
        fairshare_at_start,
        estimate,
    )
