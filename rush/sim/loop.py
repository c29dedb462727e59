"""The compiled event loop. It holds state and time only; every decision comes from
:mod:`rush.core` (ordering, passes and rules), the same code the daemon calls.

At each event time t: process completions (and false-small kills, which requeue the
job as large with its original submit time; and kills at a speculative reservation, which
requeue it with its next reservation, :mod:`rush.core.reservations`), then arrivals, then one
scheduling pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.backfill import MODE_CONSERVATIVE, MODE_EASY, conservative_pass, easy_pass
from rush.core.ordering import compute_order_keys, sort_queue
from rush.core.reservations import (
    is_speculative,
    next_attempt,
    requeue_after_kill,
    reservation_kill_due,
    run_limit,
)
from rush.core.rules import effective_estimate, is_killable, kill_due, kill_time, requeue_as_large

INF = np.inf


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True, nogil=True)
def run_simulation(
    submit: np.ndarray,
    runtime: np.ndarray,
    requested_time: np.ndarray,
    procs: np.ndarray,
    estimate: np.ndarray,
    runtime_class_in: np.ndarray,
    idempotent: np.ndarray,
    sensitive: np.ndarray,
    var_start: np.ndarray,
    var_end: np.ndarray,
    machine_procs: int,
    mode: int,
    code: int,
    weights: np.ndarray,
    use_static: bool,
    static_key: np.ndarray,
    same_scan: bool,
    scan_code: int,
    scan_weights: np.ndarray,
    scan_use_static: bool,
    scan_static_key: np.ndarray,
    threshold: float,
    use_classes: bool,
    kill_false_small: bool,
    divider: np.ndarray,
    max_requeues: int,
    skip_limit: int,
    time_origin: float,
    wait_quantum: float,
    res_seq: np.ndarray,
    res_count: np.ndarray,
    progress: np.ndarray,
):
    n = len(submit)
    start = np.full(n, -1.0)
    end = np.full(n, -1.0)
    backfilled = np.zeros(n, dtype=np.bool_)
    killed = np.zeros(n, dtype=np.bool_)
    requeues = np.zeros(n, dtype=np.int64)
    wasted = np.zeros(n, dtype=np.float64)
    skips = np.zeros(n, dtype=np.int64)
    first_reservation = np.full(n, np.inf)  # evidence: when the job was first promised a start
    reserved_at = np.full(n, np.inf)  # conservative backfilling's standing reservations
    runtime_class = runtime_class_in.copy()
    est = np.empty(n, dtype=np.float64)  # reservation estimate of the job's next run
    run_est_end = np.empty(n, dtype=np.float64)  # its current run's estimated end
    divider_kill = np.zeros(n, dtype=np.bool_)  # its current run ends by a false-small kill
    attempt = np.zeros(n, dtype=np.int64)  # index of the job's reservation in its sequence
    limit = np.empty(n, dtype=np.float64)  # time limit of its next run: walltime or reservation
    reservation_kill = np.zeros(n, dtype=np.bool_)  # its current run ends at its reservation
    reservation_kills = np.zeros(n, dtype=np.int64)
    for j in range(n):
        limit[j] = run_limit(res_seq[j], res_count[j], 0, requested_time[j])
        killable = is_killable(kill_false_small, runtime_class[j], idempotent[j], 0, max_requeues)
        est[j] = effective_estimate(estimate[j], limit[j], killable, divider[j])

    queue = np.empty(n, dtype=np.int64)
    q_group = np.empty(n, dtype=np.int64)
    q_key = np.empty(n, dtype=np.float64)
    scanq = np.empty(n, dtype=np.int64)
    s_group = np.empty(n, dtype=np.int64)
    s_key = np.empty(n, dtype=np.float64)
    qn = 0
    r_end = np.empty(n, dtype=np.float64)
    r_job = np.empty(n, dtype=np.int64)
    r_procs = np.empty(n, dtype=np.int64)
    rn = 0
    ht = np.empty(n, dtype=np.float64)
    hj = np.empty(n, dtype=np.int64)
    hn = 0
    taken = np.zeros(n, dtype=np.bool_)
    started_mark = np.zeros(n, dtype=np.bool_)
    out_start = np.empty(n, dtype=np.int64)
    out_bf = np.empty(n, dtype=np.bool_)
    out_skip = np.empty(n, dtype=np.int64)
    out_res = np.empty(n, dtype=np.int64)
    out_res_at = np.empty(n, dtype=np.float64)

    free = machine_procs
    nxt = 0
    vi = 0
    nv = len(var_start)
    done = 0
    t_prev = -INF
    while nxt < n or hn > 0 or qn > 0:
        t = INF
        if nxt < n:
            t = submit[nxt]
        if hn > 0 and ht[0] < t:
            t = ht[0]
        # Inside a variability interval, its end may release skipped jobs: it is an event too.
        if qn > 0 and vi < nv and var_start[vi] <= t_prev < var_end[vi] and var_end[vi] < t:
            t = var_end[vi]
        if t == INF:
            break  # only never-startable jobs remain
        t_prev = t
        while vi < nv and var_end[vi] <= t:
            vi += 1
        variable_now = vi < nv and var_start[vi] <= t

        # 1. completions (a false-small kill requeues the job as large)
        while hn > 0 and ht[0] <= t:
            j = hj[0]
            hn = _heap_pop(ht, hj, hn)
            free += procs[j]
            rn = _running_remove(r_end, r_job, r_procs, rn, run_est_end[j], j)
            if divider_kill[j] or reservation_kill[j]:
                wasted[j] += (t - start[j]) * procs[j]
                if divider_kill[j]:
                    runtime_class[j], requeues[j] = requeue_as_large(requeues[j])
                else:
                    attempt[j] = next_attempt(attempt[j])
                    limit[j] = run_limit(res_seq[j], res_count[j], attempt[j], requested_time[j])
                    reservation_kills[j] += 1
                divider_kill[j] = False
                reservation_kill[j] = False
                killable = is_killable(
                    kill_false_small, runtime_class[j], idempotent[j], requeues[j], max_requeues
                )
                est[j] = effective_estimate(estimate[j], limit[j], killable, divider[j])
                start[j] = -1.0
                end[j] = -1.0
                backfilled[j] = False
                queue[qn] = j
                scanq[qn] = j
                qn += 1
            else:
                done += 1
        # 2. arrivals
        while nxt < n and submit[nxt] <= t:
            queue[qn] = nxt
            scanq[qn] = nxt
            qn += 1
            nxt += 1
        if done & 4095 == 0:
            progress[0] = done
        # 3. one scheduling pass (nothing can start on a full machine)
        if qn == 0 or free <= 0:
            continue
        compute_order_keys(
            queue,
            qn,
            t,
            code,
            weights,
            static_key,
            use_static,
            time_origin,
            threshold,
            submit,
            procs,
            estimate,
            runtime_class,
            use_classes,
            wait_quantum,
            q_group,
            q_key,
        )
        sort_queue(queue, q_group, q_key, qn)
        if mode == MODE_CONSERVATIVE:
            ns, nk, nr = conservative_pass(
                t,
                free,
                queue,
                qn,
                procs,
                est,
                reserved_at,
                r_end,
                r_procs,
                rn,
                sensitive,
                variable_now,
                skips,
                skip_limit,
                out_start,
                out_bf,
                out_skip,
                out_res,
                out_res_at,
            )
            for k in range(qn):
                reserved_at[queue[k]] = INF
            for k in range(nr):
                reserved_at[out_res[k]] = out_res_at[k]
            for k in range(nr):
                if first_reservation[out_res[k]] == INF:
                    first_reservation[out_res[k]] = out_res_at[k]
        else:
            if same_scan:
                scan = queue
            else:
                compute_order_keys(
                    scanq,
                    qn,
                    t,
                    scan_code,
                    scan_weights,
                    scan_static_key,
                    scan_use_static,
                    time_origin,
                    threshold,
                    submit,
                    procs,
                    estimate,
                    runtime_class,
                    use_classes,
                    wait_quantum,
                    s_group,
                    s_key,
                )
                sort_queue(scanq, s_group, s_key, qn)
                scan = scanq
            ns, nk, head, shadow, extra = easy_pass(
                t,
                free,
                queue,
                qn,
                scan,
                qn,
                procs,
                est,
                r_end,
                r_procs,
                rn,
                sensitive,
                variable_now,
                skips,
                skip_limit,
                mode == MODE_EASY,
                taken,
                out_start,
                out_bf,
                out_skip,
            )
            if head >= 0 and mode == MODE_EASY and first_reservation[head] == INF:
                first_reservation[head] = shadow
        for k in range(nk):
            skips[out_skip[k]] += 1
        if ns == 0:
            continue
        for k in range(ns):
            j = out_start[k]
            started_mark[j] = True
            free -= procs[j]
            start[j] = t
            backfilled[j] = out_bf[k]
            length = runtime[j]
            killed[j] = False
            if reservation_kill_due(length, limit[j]):
                length = limit[j]
                # A reservation with a successor requeues the job; the last one is a final kill.
                if is_speculative(res_count[j]) and requeue_after_kill(attempt[j], res_count[j]):
                    reservation_kill[j] = True
                else:
                    killed[j] = True
            killable = is_killable(
                kill_false_small, runtime_class[j], idempotent[j], requeues[j], max_requeues
            )
            # The simulator knows the run's length: ask the kill rule at its end.
            if killable and kill_due(t, t + length, divider[j]):
                length = kill_time(t, divider[j]) - t
                killed[j] = False
                reservation_kill[j] = False
                divider_kill[j] = True
            end[j] = t + length
            run_est_end[j] = t + est[j]
            hn = _heap_push(ht, hj, hn, end[j], j)
            rn = _running_insert(r_end, r_job, r_procs, rn, run_est_end[j], j, procs[j])
        # Drop started jobs from both queues, keeping their order.
        m = 0
        for k in range(qn):
            j = queue[k]
            if not started_mark[j]:
                queue[m] = j
                q_group[m] = q_group[k]
                q_key[m] = q_key[k]
                m += 1
        if not same_scan:
            m2 = 0
            for k in range(qn):
                j = scanq[k]
                if not started_mark[j]:
                    scanq[m2] = j
                    s_group[m2] = s_group[k]
                    s_key[m2] = s_key[k]
                    m2 += 1
        else:
            for k in range(m):
                scanq[k] = queue[k]
        qn = m
        for k in range(ns):
            started_mark[out_start[k]] = False
    progress[0] = done
    return (
        start,
        end,
        backfilled,
        killed,
        requeues,
        wasted,
        skips,
        runtime_class,
        first_reservation,
        reservation_kills,
    )
