"""Conservative backfilling with compression, and its standing reservations.

Every job in priority order gets the earliest reservation that fits the availability profile
left by running jobs and all higher-priority reservations; those whose reservation is now
start. A reservation *stands* from pass to pass (:class:`rush.core.pass_data.PassState`
``reserved_at``, carried by the simulator's loop and, live, by the daemon's journal): jobs
holding one are compressed in order of their reservations, each taken out and put back at
its earliest fit, so it can only move earlier and no reservation is ever delayed.

Skip-with-limit applies to a job whose reservation would be now
(:func:`rush.core.skip_with_limit.should_skip`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.pass_data import PassConfig, PassJobs, PassMoment, PassOut, PassQueues, PassState, RunningSet
from rush.core.skip_with_limit import should_skip

INF = np.inf


@njit(cache=True)
def _profile_from_running(
    now: float, free: int, running: RunningSet, capacity: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Availability step function: avail[i] processors free on [time[i], time[i+1])."""
    ptime = np.empty(capacity, dtype=np.float64)
    pavail = np.empty(capacity, dtype=np.int64)
    ptime[0] = now
    pavail[0] = free
    n = 1
    # A job past its estimate is assumed to end one second from now: after one ending within
    # the second, so the ends (ascending as given) are re-sorted once moved.
    ends = np.empty(running.count, dtype=np.float64)
    for k in range(running.count):
        ends[k] = running.end[k] if running.end[k] > now else now + 1.0
    by_end = np.argsort(ends, kind="mergesort")
    for x in range(running.count):
        k = by_end[x]
        e = ends[k]
        if e == ptime[n - 1]:
            pavail[n - 1] += running.procs[k]
        else:
            ptime[n] = e
            pavail[n] = pavail[n - 1] + running.procs[k]
            n += 1
    return ptime, pavail, n


@njit(cache=True)
def fit_before(
    ptime: np.ndarray, pavail: np.ndarray, n: int, need: int, duration: float, lo: int, bound: float
) -> int:
    """Index of the first breakpoint from ``lo`` on, and before time ``bound``, from which
    ``need`` processors stay free for ``duration`` (-1: none). A bound keeps the scan of a kept
    reservation (which searches only before its own time) short."""
    i = lo
    # bound = inf searches everything, a breakpoint at infinity included.
    while i < n and (ptime[i] < bound or bound == np.inf):
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
def fit_from(ptime: np.ndarray, pavail: np.ndarray, n: int, need: int, duration: float, lo: int) -> int:
    """Index of the first breakpoint from ``lo`` on from which ``need`` processors stay free
    for ``duration`` (-1: none)."""
    return fit_before(ptime, pavail, n, need, duration, lo, np.inf)


@njit(cache=True, inline="always")
def _earliest_fit(ptime: np.ndarray, pavail: np.ndarray, n: int, need: int, duration: float) -> int:
    """Index of the first breakpoint from which ``need`` processors stay free for ``duration``."""
    return fit_from(ptime, pavail, n, need, duration, 0)


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
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
) -> tuple[int, int, int]:
    """Conservative backfilling with compression; returns (n_started, n_skipped, n_reserved).

    ``state.reserved_at[j]`` is job j's standing reservation (``inf`` if it has none yet).
    Jobs holding one are compressed in order of their reservations: each is taken out and put
    back at its earliest fit, so it can only move earlier and never delays another. Jobs
    without one are then placed in priority order. Those whose reservation is now start.
    The reservations are written to ``out.reserved``/``out.reserved_at``, not to ``state``.
    """
    now = moment.now
    on = moment.queued
    order = queues.queue
    procs = jobs.procs
    est = jobs.est
    reserved_at = state.reserved_at
    capacity = 2 * (running.count + 2 * on) + 4
    ptime, pavail, n = _profile_from_running(now, moment.free, running, capacity)
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
            if i == 0 and should_skip(
                jobs.sensitive[j] and moment.variable_now, state.skips[j], config.skip_limit
            ):
                out.skip[nk] = j
                nk += 1
                continue
            n = _occupy(ptime, pavail, n, ptime[i], duration, -procs[j])
            if i == 0:
                start_now[position[j]] = True
            else:
                out.reserved[nr] = j
                out.reserved_at[nr] = ptime[i]
                nr += 1
    # A start is a backfill when a job ahead of it in priority order is still waiting.
    waiting_ahead = False
    for k in range(on):
        if start_now[k]:
            out.start[ns] = order[k]
            out.backfilled[ns] = waiting_ahead
            ns += 1
        else:
            waiting_ahead = True
    return ns, nk, nr
