"""One scheduling pass: list scheduling, EASY and conservative backfilling.

A pass sees the pending queue in priority order (``order``) and, for backfilling, in the
backfill order (``scan``); the running jobs' estimated ends sorted ascending; the free
processors now. It writes what to start (and whether by backfilling), whom it skipped
under skip-with-limit, and the reservations it made. It never mutates job state: the
simulator and the daemon apply the decisions.

EASY (Mu'alem & Feitelson 2001), exactly:

1. start jobs in priority order while they fit;
2. the first job that does not fit (the head) is reserved at the *shadow time*: the
   earliest estimated end of running jobs at which enough processors are free; ``extra``
   = processors free at the shadow time beyond the head's need;
3. scan the rest in backfill order; start a job if it fits now and either ends (by its
   estimate) no later than the shadow time, or needs no more than ``extra`` (then
   ``extra -= q``).

Conservative: every job in priority order gets the earliest reservation that fits the
availability profile left by running jobs and all higher-priority reservations; those
whose reservation is now start. No backfilling: step 1 only (strict list scheduling).

Skip-with-limit: a job that would start now but is predicted to suffer variability is
passed over (and not reserved) while its skip count is below the limit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.rules import should_skip

MODE_EASY = 0
MODE_CONSERVATIVE = 1
MODE_NONE = 2
INF = np.inf


@njit(cache=True)
def _list_phase(
    now: float,
    free: int,
    order: np.ndarray,
    on: int,
    procs: np.ndarray,
    sensitive: np.ndarray,
    variable_now: bool,
    skips: np.ndarray,
    skip_limit: int,
    taken: np.ndarray,
    out_start: np.ndarray,
    out_backfilled: np.ndarray,
    out_skip: np.ndarray,
) -> tuple[int, int, int, int]:
    """Start in order while jobs fit; return (free, n_started, n_skipped, head)."""
    ns = 0
    nk = 0
    head = -1
    for k in range(on):
        j = order[k]
        if procs[j] > free:
            head = j
            break
        taken[j] = True
        if should_skip(sensitive[j] and variable_now, skips[j], skip_limit):
            out_skip[nk] = j
            nk += 1
            continue
        free -= procs[j]
        out_start[ns] = j
        out_backfilled[ns] = False
        ns += 1
    return free, ns, nk, head


@njit(cache=True)
def _shadow(
    now: float,
    free: int,
    need: int,
    run_end: np.ndarray,
    run_procs: np.ndarray,
    rn: int,
    new_end: np.ndarray,
    new_procs: np.ndarray,
    nn: int,
) -> tuple[float, int]:
    """Shadow time and extra processors, merging running jobs and jobs just started."""
    avail = free
    a = 0
    b = 0
    shadow = INF
    while a < rn or b < nn:
        if b >= nn or (a < rn and run_end[a] <= new_end[b]):
            e = run_end[a]
            p = run_procs[a]
            a += 1
        else:
            e = new_end[b]
            p = new_procs[b]
            b += 1
        avail += p
        if avail >= need:
            shadow = e
            # Everything that ends at the shadow time is free then, too.
            while a < rn and run_end[a] <= shadow:
                avail += run_procs[a]
                a += 1
            while b < nn and new_end[b] <= shadow:
                avail += new_procs[b]
                b += 1
            break
    if shadow < now:
        shadow = now
    return shadow, avail - need


@njit(cache=True)
def easy_pass(
    now: float,
    free: int,
    order: np.ndarray,
    on: int,
    scan: np.ndarray,
    sn: int,
    procs: np.ndarray,
    est: np.ndarray,
    run_end: np.ndarray,
    run_procs: np.ndarray,
    rn: int,
    sensitive: np.ndarray,
    variable_now: bool,
    skips: np.ndarray,
    skip_limit: int,
    backfill: bool,
    taken: np.ndarray,
    out_start: np.ndarray,
    out_backfilled: np.ndarray,
    out_skip: np.ndarray,
) -> tuple[int, int, int, float, int]:
    """EASY (``backfill``) or list scheduling; returns (n_started, n_skipped, head, shadow, extra).

    ``est`` is the per-job reservation estimate (see rules.effective_estimate). ``taken``
    is a per-job scratch mask, all False on entry and restored on exit.
    """
    free, ns, nk, head = _list_phase(
        now,
        free,
        order,
        on,
        procs,
        sensitive,
        variable_now,
        skips,
        skip_limit,
        taken,
        out_start,
        out_backfilled,
        out_skip,
    )
    shadow = INF
    extra = 0
    if head >= 0 and backfill:
        new_end = np.empty(ns, dtype=np.float64)
        new_procs = np.empty(ns, dtype=np.int64)
        for k in range(ns):
            new_end[k] = now + est[out_start[k]]
            new_procs[k] = procs[out_start[k]]
        if ns > 1:
            perm = np.argsort(new_end)
            new_end = new_end[perm]
            new_procs = new_procs[perm]
        shadow, extra = _shadow(now, free, procs[head], run_end, run_procs, rn, new_end, new_procs, ns)
        taken[head] = True
        for k in range(sn):
            if free <= 0:
                break
            j = scan[k]
            if taken[j] or procs[j] > free:
                continue
            ends_in_time = now + est[j] <= shadow
            if not ends_in_time and procs[j] > extra:
                continue
            taken[j] = True
            if should_skip(sensitive[j] and variable_now, skips[j], skip_limit):
                out_skip[nk] = j
                nk += 1
                continue
            free -= procs[j]
            if not ends_in_time:
                extra -= procs[j]
            out_start[ns] = j
            out_backfilled[ns] = True
            ns += 1
    # Restore the scratch mask.
    for k in range(on):
        taken[order[k]] = False
    return ns, nk, head, shadow, extra


@njit(cache=True)
def _profile_from_running(
    now: float, free: int, run_end: np.ndarray, run_procs: np.ndarray, rn: int, capacity: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Availability step function: avail[i] processors free on [time[i], time[i+1])."""
    ptime = np.empty(capacity, dtype=np.float64)
    pavail = np.empty(capacity, dtype=np.int64)
    ptime[0] = now
    pavail[0] = free
    n = 1
    for k in range(rn):
        # A job past its estimate is assumed to end one second from now.
        e = run_end[k] if run_end[k] > now else now + 1.0
        if e == ptime[n - 1]:
            pavail[n - 1] += run_procs[k]
        else:
            ptime[n] = e
            pavail[n] = pavail[n - 1] + run_procs[k]
            n += 1
    return ptime, pavail, n


@njit(cache=True)
def _earliest_fit(ptime: np.ndarray, pavail: np.ndarray, n: int, need: int, duration: float) -> int:
    """Index of the first breakpoint from which ``need`` processors stay free for ``duration``."""
    i = 0
    while i < n:
        if pavail[i] < need:
            i += 1
            continue
        end = ptime[i] + duration
        k = i + 1
        ok = True
        while k < n and ptime[k] < end:
            if pavail[k] < need:
                ok = False
                break
            k += 1
        if ok:
            return i
        i = k + 1
    return -1


@njit(cache=True)
def _breakpoint(ptime: np.ndarray, pavail: np.ndarray, n: int, t: float) -> tuple[int, int]:
    """Index of the breakpoint at time ``t`` (inserted if missing) and the new length."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if ptime[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    if lo < n and ptime[lo] == t:
        return lo, n
    for m in range(n, lo, -1):
        ptime[m] = ptime[m - 1]
        pavail[m] = pavail[m - 1]
    ptime[lo] = t
    pavail[lo] = pavail[lo - 1]
    return lo, n + 1


@njit(cache=True)
def _occupy(ptime: np.ndarray, pavail: np.ndarray, n: int, t0: float, duration: float, delta: int) -> int:
    """Add ``delta`` free processors on [t0, t0 + duration); return the new length."""
    i, n = _breakpoint(ptime, pavail, n, t0)
    k, n = _breakpoint(ptime, pavail, n, t0 + duration)
    for m in range(i, k):
        pavail[m] += delta
    return n


# A job occupies its processors for at least this long, so zero-length jobs still count.
MIN_DURATION = 1e-6


@njit(cache=True)
def conservative_pass(
    now: float,
    free: int,
    order: np.ndarray,
    on: int,
    procs: np.ndarray,
    est: np.ndarray,
    reserved_at: np.ndarray,
    run_end: np.ndarray,
    run_procs: np.ndarray,
    rn: int,
    sensitive: np.ndarray,
    variable_now: bool,
    skips: np.ndarray,
    skip_limit: int,
    out_start: np.ndarray,
    out_backfilled: np.ndarray,
    out_skip: np.ndarray,
    out_reserved: np.ndarray,
    out_reserved_at: np.ndarray,
) -> tuple[int, int, int]:
    """Conservative backfilling with compression; returns (n_started, n_skipped, n_reserved).

    ``reserved_at[j]`` is job j's current reservation (``inf`` if it has none yet). Jobs
    holding one are compressed in order of their reservations: each is taken out and put
    back at its earliest fit, so it can only move earlier and never delays another. Jobs
    without one are then placed in priority order. Those whose reservation is now start.
    """
    capacity = 2 * (rn + 2 * on) + 4
    ptime, pavail, n = _profile_from_running(now, free, run_end, run_procs, rn, capacity)
    held = np.empty(on, dtype=np.int64)
    held_at = np.empty(on, dtype=np.float64)
    nh = 0
    for k in range(on):
        j = order[k]
        if reserved_at[j] < INF:
            t0 = reserved_at[j] if reserved_at[j] > now else now
            held[nh] = j
            held_at[nh] = t0
            nh += 1
            n = _occupy(ptime, pavail, n, t0, max(est[j], MIN_DURATION), -procs[j])
    # Stable by reservation time, so equal times keep priority order.
    by_time = np.argsort(held_at[:nh], kind="mergesort")
    start_now = np.zeros(on, dtype=np.bool_)
    position = np.empty(len(procs), dtype=np.int64)
    for k in range(on):
        position[order[k]] = k
    ns = 0
    nk = 0
    nr = 0
    for phase in range(2):
        count = nh if phase == 0 else on
        for m in range(count):
            if phase == 0:
                j = held[by_time[m]]
                duration = max(est[j], MIN_DURATION)
                n = _occupy(ptime, pavail, n, held_at[by_time[m]], duration, procs[j])
            else:
                j = order[m]
                if reserved_at[j] < INF:
                    continue
                duration = max(est[j], MIN_DURATION)
            i = _earliest_fit(ptime, pavail, n, procs[j], duration)
            if i < 0:
                continue  # wider than the machine can ever offer: leave it pending
            if i == 0 and should_skip(sensitive[j] and variable_now, skips[j], skip_limit):
                out_skip[nk] = j
                nk += 1
                continue
            n = _occupy(ptime, pavail, n, ptime[i], duration, -procs[j])
            if i == 0:
                start_now[position[j]] = True
            else:
                out_reserved[nr] = j
                out_reserved_at[nr] = ptime[i]
                nr += 1
    # A start is a backfill when a job ahead of it in priority order is still waiting.
    waiting_ahead = False
    for k in range(on):
        if start_now[k]:
            out_start[ns] = order[k]
            out_backfilled[ns] = waiting_ahead
            ns += 1
        else:
            waiting_ahead = True
    return ns, nk, nr
