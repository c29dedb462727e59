"""When will each pending job start? A forward projection of the queue from the pass's plan.

Every pending job gets an estimated start, recomputed at each pass:

* started now: now;
* conservative: its reservation (the plan itself: the pass's standing reservations);
* EASY: a projection (the head's shadow time, booked on limits, is the latest it starts);
* none (list scheduling): the projection, with starts in priority order.

The projection books the running jobs until their predicted ends and then each queued job, in
the pass's priority order, at the earliest time its processors stay free for its predicted
runtime (on processor counts; on a cluster with nodes, its cores). This is conservative
backfilling without arrivals: EASY may start a later job earlier than projected (it does not
protect every reservation), never a job with a reservation later than its shadow time.

Predicted runtimes: a job the runtime classifier calls small is expected to end by the divider
(as long as it has not run past it), any other at its reservation estimate (its limit, or the
speculative limit of its current attempt). With no model, the limits. Slurm's own
``StartTime`` for pending jobs is its backfill scheduler's projection on limits only, made when
the backfill loop last reached the job; rush's is made for every job at every pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from rush.core.conservative import MIN_DURATION, _breakpoint, _occupy, fit_from

INF = np.inf
# Why a job has its estimate (Decisions.estimate_basis).
BASIS_NOW = "now"
BASIS_RESERVATION = "reservation"
BASIS_PROJECTION = "projection"
BASIS_NEVER = "never"


@njit(cache=True)
def project_starts(
    now: float,
    free: int,
    running_end: np.ndarray,
    running_procs: np.ndarray,
    order: np.ndarray,
    procs: np.ndarray,
    duration: np.ndarray,
    in_order: bool,
) -> np.ndarray:
    """Estimated start of each job of ``order`` (indices into ``procs``/``duration``), in that
    order, after the running jobs (``running_end`` sorted ascending) free their processors;
    ``in_order``: starts never precede an earlier job's (no backfilling). A job wider than the
    machine gets inf."""
    nr = len(running_end)
    no = len(order)
    capacity = 2 * (nr + 2 * no) + 4
    ptime = np.empty(capacity, dtype=np.float64)
    pavail = np.empty(capacity, dtype=np.int64)
    ptime[0] = now
    pavail[0] = free
    n = 1
    for k in range(nr):
        # A job past its predicted end is expected to end one second from now.
        e = running_end[k] if running_end[k] > now else now + 1.0
        if e == ptime[n - 1]:
            pavail[n - 1] += running_procs[k]
        else:
            ptime[n] = e
            pavail[n] = pavail[n - 1] + running_procs[k]
            n += 1
    total = pavail[n - 1]
    starts = np.full(len(procs), INF)
    # Booking only takes processors away, so the first time at which `need` processors are
    # free never moves earlier: each size's scan starts where the last one of that size found
    # them (the same fit, without rescanning the booked past: O(n) per job otherwise).
    needs = np.unique(procs[order])
    first_free = np.full(len(needs), now)
    lo = 0
    for m in range(no):
        j = order[m]
        need = procs[j]
        if need > total:
            continue
        d = max(duration[j], MIN_DURATION)
        size = np.searchsorted(needs, need)
        p = max(lo, np.searchsorted(ptime[:n], first_free[size]))
        while p < n and pavail[p] < need:
            p += 1
        if p == n:
            continue
        first_free[size] = ptime[p]
        i = fit_from(ptime, pavail, n, need, d, p)
        if i < 0:
            continue
        t0 = ptime[i]
        starts[j] = t0
        n = _occupy(ptime, pavail, n, t0, d, -need)
        if in_order:
            lo, n = _breakpoint(ptime, pavail, n, t0)
    return starts


def predicted_durations(
    est: np.ndarray, runtime_class: np.ndarray, elapsed: np.ndarray | None, divider: float
) -> np.ndarray:
    """Each job's predicted runtime: the divider for a job the classifier calls small (0) that
    has not run past it, else its reservation estimate ``est``."""
    small = runtime_class == 0
    if elapsed is not None:
        small &= elapsed < divider
    if not np.isfinite(divider):
        return np.asarray(est, dtype=np.float64)
    return np.where(small, np.minimum(est, divider), est)


@dataclass(frozen=True)
class EstimateInputs:
    """What the projection needs from one pass (indices are the pass's pending jobs)."""

    now: float
    free: int  # processors (cores, on nodes) free before this pass's starts
    mode: str  # the backfilling mode: easy, conservative, none
    order: np.ndarray  # schedulable jobs in priority order
    procs: np.ndarray
    est: np.ndarray  # reservation estimates
    runtime_class: np.ndarray
    divider: float
    started: np.ndarray  # jobs the pass starts now
    reserved: dict[int, float]  # conservative reservations by job index
    running_start: np.ndarray
    running_est: np.ndarray
    running_procs: np.ndarray
    running_class: np.ndarray


@dataclass
class StartEstimates:
    """Per pending job index: estimated start (inf: not in sight), why, and the job (running
    or pending, by its index among ``running`` then ``pending``) whose predicted end it waits for."""

    start: np.ndarray
    basis: list[str]
    behind: dict[int, tuple[str, int]] = field(default_factory=dict)


def estimate_starts(e: EstimateInputs) -> StartEstimates:
    """Estimated starts of the pass's pending jobs (see the module's docstring)."""
    n = len(e.procs)
    start = np.full(n, INF)
    basis = [BASIS_NEVER] * n
    started = np.zeros(n, dtype=np.bool_)
    started[e.started] = True
    conservative = e.mode == "conservative"
    # Conservative's plan books limits; the projection books predicted runtimes.
    if conservative:
        run_dur = np.asarray(e.running_est, dtype=np.float64)
        dur = np.asarray(e.est, dtype=np.float64)
    else:
        elapsed = e.now - np.asarray(e.running_start, dtype=np.float64)
        run_dur = predicted_durations(e.running_est, e.running_class, elapsed, e.divider)
        dur = predicted_durations(e.est, e.runtime_class, None, e.divider)
    run_end = np.asarray(e.running_start, dtype=np.float64) + run_dur
    new_end = e.now + np.maximum(dur[e.started], MIN_DURATION)
    ends = np.concatenate([run_end, new_end])
    end_procs = np.concatenate([np.asarray(e.running_procs, dtype=np.int64), e.procs[e.started]])
    by_end = np.argsort(ends, kind="stable")
    waiting = e.order[~started[e.order]]
    if conservative:
        for j, t in e.reserved.items():
            start[j], basis[j] = t, BASIS_RESERVATION
    else:
        free = int(e.free) - int(e.procs[e.started].sum())
        projected = project_starts(
            e.now,
            max(free, 0),
            np.ascontiguousarray(ends[by_end]),
            np.ascontiguousarray(end_procs[by_end]),
            np.ascontiguousarray(waiting),
            np.ascontiguousarray(e.procs),
            np.ascontiguousarray(dur),
            e.mode == "none",
        )
        for j in waiting.tolist():
            if np.isfinite(projected[j]):
                start[j], basis[j] = projected[j], BASIS_PROJECTION
    for j in np.flatnonzero(started).tolist():
        start[j], basis[j] = e.now, BASIS_NOW
    return StartEstimates(start, basis, _behind(e, start, ends, dur))


def _behind(
    e: EstimateInputs, start: np.ndarray, ends: np.ndarray, dur: np.ndarray
) -> dict[int, tuple[str, int]]:
    """For each job estimated to start later, the job whose predicted end is its start."""
    ending: dict[float, tuple[str, int]] = {}
    nr = len(e.running_start)
    for k, t in enumerate(ends.tolist()):
        ending.setdefault(
            t if t > e.now else e.now + 1.0, ("running", k) if k < nr else ("pending", int(e.started[k - nr]))
        )
    later = np.flatnonzero(np.isfinite(start) & (start > e.now))
    for j, t in zip(
        later.tolist(), (start[later] + np.maximum(dur[later], MIN_DURATION)).tolist(), strict=True
    ):
        ending.setdefault(t, ("pending", j))
    return {j: ending[t] for j, t in zip(later.tolist(), start[later].tolist(), strict=True) if t in ending}


# An estimate is re-published (Flux's sched.t_estimate) when it moved by more than this many
# seconds, or by more than this share of the wait still ahead, whichever is larger.
REPUBLISH_SECONDS = 60.0
REPUBLISH_SHARE = 0.05


def estimate_moved(published: float, now: float) -> float:
    """How far an estimate may move before it is worth sending again."""
    return max(REPUBLISH_SECONDS, REPUBLISH_SHARE * max(published - now, 0.0))
