"""When will each pending job start? A forward projection of the queue from the pass's plan.

Every pending job gets an estimated start, recomputed at each pass:

* started now: now;
* conservative: its reservation (the plan itself: the pass's standing reservations);
* EASY: a replay of EASY itself without arrivals (:func:`project_easy_starts`): at each
  predicted end the core's EASY pass (:func:`rush.core.easy.easy_pass`, the simulator's: EASY's
  rules exist once) decides, reading the reservation estimates for the head's shadow time and
  the backfill test; time moves on the predicted runtimes; the head never starts later than
  its shadow time (above :data:`EASY_REPLAY_MAX_JOBS` waiting jobs, for its cost, the
  projection below);
* none (list scheduling): the projection, with starts in priority order.

The projection books the running jobs until their predicted ends and then each queued job, in
the pass's priority order, at the earliest time its processors stay free for its predicted
runtime (on processor counts; on a cluster with nodes, its cores): conservative backfilling
without arrivals. Under EASY it was the estimate until round 6 of issue 29; it backfills a job
into any hole its predicted runtime fits, where EASY, deciding on limits, does not, and even
with exact runtimes it erred by 44 minutes on KTH-SP2 where the replay errs by 16
(``sim/runtime_predictions/estimates/dev_log.md``). The replay scans the backfill candidates in
priority order (a pass with another backfill order differs there).

Predicted runtimes: a job the runtime classifier calls small is expected to end by the divider
(as long as it has not run past it), any other at its reservation estimate (its limit, or the
speculative limit of its current attempt). With no model, the limits. Slurm's own
``StartTime`` for pending jobs is its backfill scheduler's projection on limits only, made when
the backfill loop last reached the job; rush's is made for every job at every pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba import njit

from rush.core.conservative import MIN_DURATION
from rush.core.easy import easy_pass
from rush.core.fit_bounds import first_free_bound, fit_bound, new_bounds, record_first_free, record_fit
from rush.core.free_profile import add_breakpoint, add_free, earliest_fit, new_profile
from rush.core.pass_data import (
    MODE_EASY,
    OrderPolicy,
    PassConfig,
    PassJobs,
    PassMoment,
    PassQueues,
    PassState,
    RunningSet,
    new_out,
)

INF = np.inf
# The EASY replay costs one EASY pass per predicted end (about 2 ms CPU for 1 000 pending jobs
# and 100 ms for 10 000 on bench_nodes' queue, up to 850 ms on others, against 10 ms for the
# projection): above this many waiting jobs a pass projects instead, so that a pass at scale
# keeps its cost (the estimates then are round 5's).
EASY_REPLAY_MAX_JOBS = 2000
# Why a job has its estimate (Decisions.estimate_basis).
BASIS_NOW = "now"
BASIS_RESERVATION = "reservation"
BASIS_PROJECTION = "projection"
BASIS_NEVER = "never"
_KINDS = np.array(["pending", "running"], dtype=object)  # what a job waits behind, by "is it running"


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
    order, after the running jobs (``running_end``, in any order) free their processors;
    ``in_order``: starts never precede an earlier job's (no backfilling). A job wider than the
    machine gets inf.

    Each job goes at the first breakpoint of the profile from which its processors stay free
    for its duration (as :func:`rush.core.conservative.fit_from` finds it), searched from the
    latest fit of a job no larger and no longer (:mod:`rush.core.fit_bounds`) in a profile kept
    in blocks (:mod:`rush.core.free_profile`): the same starts as scanning a flat profile from
    its beginning, without its O(n²)."""
    nr = len(running_end)
    no = len(order)
    ptime = np.empty(nr + 1, dtype=np.float64)
    pavail = np.empty(nr + 1, dtype=np.int64)
    ptime[0] = now
    pavail[0] = free
    n = 1
    # A job past its predicted end is expected to end one second from now: after one that ends
    # within that second, so the ends are sorted again once moved.
    ends = np.where(running_end > now, running_end, now + 1.0)
    for k in np.argsort(ends, kind="mergesort"):
        e = ends[k]
        if e == ptime[n - 1]:
            pavail[n - 1] += running_procs[k]
        else:
            ptime[n] = e
            pavail[n] = pavail[n - 1] + running_procs[k]
            n += 1
    total = pavail[n - 1]
    starts = np.full(len(procs), INF)
    profile = new_profile(ptime, pavail, n, n + no + 2)
    lengths = np.empty(no, dtype=np.float64)
    for m in range(no):
        lengths[m] = max(duration[order[m]], MIN_DURATION)
    bounds = new_bounds(procs[order], lengths, now)
    earliest = now  # in order: no start before the last one
    for m in range(no):
        j = order[m]
        need = procs[j]
        if need > total:
            continue
        d = lengths[m]
        floor = first_free_bound(bounds, m, earliest)
        after = fit_bound(bounds, m, floor)
        t0, first_free = earliest_fit(profile, need, d, after)
        if after == floor:  # searched from the first-free bound: first_free is the true one
            record_first_free(bounds, m, first_free)
        record_fit(bounds, m, t0)
        starts[j] = t0
        add_breakpoint(profile, t0 + d)
        add_free(profile, t0, t0 + d, -need)
        if in_order:
            earliest = t0
    return starts


class EasyRunning(NamedTuple):
    """The running jobs of an EASY replay, in any order."""

    end: np.ndarray  # predicted ends
    limit: np.ndarray  # ends on their reservation estimates (what EASY's shadow time reads)
    procs: np.ndarray


@njit(cache=True, inline="always")
def _book(booked: tuple, n: int, limit_end: float, end: float, procs: int) -> int:
    """Add a running row (end on its limit, predicted end, processors) to the replay's running
    set, kept sorted by the end on its limit as EASY's pass reads it. Returns the row count."""
    lim, ends, held = booked
    k = n
    while k > 0 and lim[k - 1] > limit_end:
        lim[k] = lim[k - 1]
        ends[k] = ends[k - 1]
        held[k] = held[k - 1]
        k -= 1
    lim[k] = limit_end
    ends[k] = end
    held[k] = procs
    return n + 1


@njit(cache=True)
def _replay_pass(procs: np.ndarray, limit: np.ndarray, n_jobs: int, queue_len: int) -> tuple:
    """The containers of the core's EASY pass for a replay over ``n_jobs`` jobs, ``queue_len`` of
    them waiting: EASY, the backfill scan in priority order, no job flagged (so no skip)."""
    no_order = OrderPolicy(0, np.zeros(1), np.zeros(1), False, np.zeros(0, dtype=np.int64))
    config = PassConfig(MODE_EASY, no_order, no_order, True, -1.0, False, 0.0, 0.0, 0)
    jobs = PassJobs(limit, procs, limit, limit, procs, np.zeros(n_jobs, dtype=np.bool_), limit, limit)
    state = PassState(
        np.zeros(n_jobs, dtype=np.int64),
        np.zeros(0),
        np.zeros(0),
        np.zeros(0, dtype=np.int64),
        np.zeros((0, 5)),
        np.zeros(0),
    )
    none_i = np.zeros(0, dtype=np.int64)
    none_f = np.zeros(0)
    queues = PassQueues(
        np.empty(queue_len, dtype=np.int64),
        none_i,
        none_f,
        none_i,
        none_i,
        none_f,
        np.zeros(n_jobs, dtype=np.bool_),
    )
    return config, jobs, state, queues, new_out(queue_len)


@njit(cache=True)
def project_easy_starts(
    now: float,
    free: int,
    running: EasyRunning,
    order: np.ndarray,
    procs: np.ndarray,
    duration: np.ndarray,
    limit: np.ndarray,
) -> np.ndarray:
    """Estimated start of each job of ``order`` by replaying EASY itself without arrivals: at
    each moment the core's EASY pass (:func:`rush.core.easy.easy_pass`, the simulator's) decides
    on the limits (the head's shadow time from the running jobs' ``running.limit`` ends and the
    jobs it starts, the backfill test from each job's ``limit``); time moves on the predicted
    ends (``running.end``, each started job's ``duration``) to the next one. Jobs in the arrays'
    order; a job wider than the machine gets inf. With exact runtimes the error left is the
    arrivals'.

    A running job past its predicted end is expected to end one second from now (as in
    :func:`project_starts`); a running job's limit earlier than its predicted end is read as
    that end (in the passes after the one that starts a job, too: the replay's time runs on
    predictions, and a job predicted to outlive its limit holds its processors). Within the pass
    that starts a job, the shadow time reads its limit, as EASY does (before round 7 the replay
    read the later of limit and predicted end there too; no caller predicts past a limit)."""
    running_end, running_limit, running_procs = running
    nr = len(running_end)
    no = len(order)
    cap = nr + no
    booked = (np.empty(cap), np.empty(cap), np.empty(cap, dtype=np.int64))
    lim, end, held = booked
    ends = np.where(running_end > now, running_end, now + 1.0)
    limits = np.maximum(running_limit, ends)
    n = 0
    total = free
    for k in np.argsort(limits, kind="mergesort"):
        lim[n] = limits[k]
        end[n] = ends[k]
        held[n] = running_procs[k]
        n += 1
        total += running_procs[k]
    starts = np.full(len(procs), INF)
    started = np.zeros(len(procs), dtype=np.bool_)
    config, jobs, state, queues, out = _replay_pass(procs, limit, len(procs), no)
    # Waiting jobs per size: no pass runs while fewer processors are free than the smallest
    # size still waiting (it could start nothing), without rescanning the queue.
    size_count = np.zeros(total + 2, dtype=np.int64)
    queued = 0
    for m in range(no):
        j = order[m]
        if procs[j] <= total:  # a job wider than the machine never starts, nor blocks
            queues.queue[queued] = j
            queued += 1
            size_count[max(procs[j], 0)] += 1
    smallest = 0
    t = now
    while queued > 0:
        while smallest <= total and size_count[smallest] == 0:
            smallest += 1
        if free >= smallest:
            result = easy_pass(
                PassMoment(t, free, queued, False, False),
                config,
                jobs,
                state,
                queues,
                RunningSet(lim, held, n, lim, held),
                out,
            )
            for k in range(result[0]):
                j = out.start[k]
                started[j] = True  # (a start at inf, after a job of infinite length, is one too)
                starts[j] = t
                free -= procs[j]
                size_count[max(procs[j], 0)] -= 1
                e = t + max(duration[j], MIN_DURATION)
                n = _book(booked, n, max(t + max(limit[j], MIN_DURATION), e), e, procs[j])
            if result[0] > 0:
                kept = 0
                for k in range(queued):
                    if not started[queues.queue[k]]:
                        queues.queue[kept] = queues.queue[k]
                        kept += 1
                queued = kept
        if queued == 0 or n == 0:
            break
        # The next predicted end: its processors come back.
        t = end[0]
        for i in range(1, n):
            t = min(t, end[i])
        kept = 0
        for i in range(n):
            if end[i] <= t:
                free += held[i]
            else:
                end[kept] = end[i]
                lim[kept] = lim[i]
                held[kept] = held[i]
                kept += 1
        n = kept
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
    # Each running job's predicted runtime given its elapsed time, from its quantiles
    # (rush.core.remaining_runtime); NaN, or None for all: its end is read as above.
    running_runtime: np.ndarray | None = None
    # Each pending job's runtime in the projection from its quantiles (rule L2,
    # rush.core.remaining_runtime.queued_projection_runtimes); NaN, or None for all: ``est``.
    # Only the projection's time: the replay's decisions keep ``est``.
    queued_runtime: np.ndarray | None = None


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
    basis = np.full(n, BASIS_NEVER, dtype=object)
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
        if e.running_runtime is not None:  # the median given the elapsed time, where predicted
            run_dur = np.where(np.isfinite(e.running_runtime), e.running_runtime, run_dur)
        dur = predicted_durations(e.est, e.runtime_class, None, e.divider)
        if e.queued_runtime is not None:  # rule L2, for the jobs still waiting after this pass
            upper = np.where(np.isfinite(e.queued_runtime), e.queued_runtime, e.est)
            dur = np.where(started, dur, predicted_durations(upper, e.runtime_class, None, e.divider))
    run_end = np.asarray(e.running_start, dtype=np.float64) + run_dur
    new_end = e.now + np.maximum(dur[e.started], MIN_DURATION)
    ends = np.concatenate([run_end, new_end])
    end_procs = np.concatenate([np.asarray(e.running_procs, dtype=np.int64), e.procs[e.started]])
    by_end = np.argsort(ends, kind="stable")
    waiting = e.order[~started[e.order]]
    if conservative:
        held = np.fromiter(e.reserved.keys(), dtype=np.int64, count=len(e.reserved))
        start[held] = np.fromiter(e.reserved.values(), dtype=np.float64, count=len(e.reserved))
        basis[held] = BASIS_RESERVATION
    else:
        free = int(e.free) - int(e.procs[e.started].sum())
        if e.mode == "easy" and len(waiting) <= EASY_REPLAY_MAX_JOBS:  # EASY's own rule
            est = np.asarray(e.est, dtype=np.float64)
            limit_ends = np.concatenate(
                [
                    np.asarray(e.running_start, dtype=np.float64)
                    + np.asarray(e.running_est, dtype=np.float64),
                    e.now + np.maximum(est[e.started], MIN_DURATION),
                ]
            )
            projected = project_easy_starts(
                e.now,
                max(free, 0),
                EasyRunning(
                    np.ascontiguousarray(ends),
                    np.ascontiguousarray(limit_ends),
                    np.ascontiguousarray(end_procs),
                ),
                np.ascontiguousarray(waiting),
                np.ascontiguousarray(e.procs),
                np.ascontiguousarray(dur),
                np.ascontiguousarray(est),
            )
        else:
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
        seen = waiting[np.isfinite(projected[waiting])]
        start[seen] = projected[seen]
        basis[seen] = BASIS_PROJECTION
    start[started] = e.now
    basis[started] = BASIS_NOW
    return StartEstimates(start, basis.tolist(), _behind(e, start, ends, dur))


def _behind(
    e: EstimateInputs, start: np.ndarray, ends: np.ndarray, dur: np.ndarray
) -> dict[int, tuple[str, int]]:
    """For each job estimated to start later, the job whose predicted end is its start: the
    first, in this order, of the running jobs, the jobs started now and the jobs estimated to
    start later (by index) whose predicted end is that time."""
    nr = len(e.running_start)
    later = np.flatnonzero(np.isfinite(start) & (start > e.now))
    when = np.concatenate(
        [np.where(ends > e.now, ends, e.now + 1.0), start[later] + np.maximum(dur[later], MIN_DURATION)]
    )
    who = np.concatenate([np.asarray(e.started, dtype=np.int64), later])  # pending job of each end
    times, first = np.unique(when, return_index=True)  # the first end at each time
    at = np.minimum(np.searchsorted(times, start[later]), max(len(times) - 1, 0))
    hit = (times[at] == start[later]) if len(times) else np.zeros(len(later), dtype=np.bool_)
    source = first[at[hit]]
    running = source < nr
    index = source.copy()
    index[~running] = who[source[~running] - nr]
    kind = _KINDS[running.astype(np.intp)]  # whole arrays: one dict of 100 000 jobs takes 0.1 s in a loop
    return dict(zip(later[hit].tolist(), zip(kind.tolist(), index.tolist(), strict=True), strict=True))


# An estimate is re-published (Flux's sched.t_estimate) when it moved by more than this many
# seconds, or by more than this share of the wait still ahead, whichever is larger.
REPUBLISH_SECONDS = 60.0
REPUBLISH_SHARE = 0.05


def estimate_moved(published, now: float):
    """How far an estimate (or an array of them) may move before it is worth sending again."""
    return np.maximum(REPUBLISH_SECONDS, REPUBLISH_SHARE * np.maximum(np.subtract(published, now), 0.0))


def shown_starts(shown: np.ndarray, new: np.ndarray, same: np.ndarray, now: float) -> np.ndarray:
    """The estimated starts to show after a pass, by job: the one last shown (``shown``; NaN:
    none) while the pass's (``new``; NaN or infinite: none in sight) stays within
    :func:`estimate_moved` of it and ``same`` holds (what comes with the estimate, its basis and
    the job it waits behind, unchanged); else the pass's. So an estimate drifting by a second a
    pass (a job waiting behind one that outlived its estimate, projected to end a second from
    now) is shown again once it has moved by the granularity, not at every pass; a job coming
    into or out of sight shows the pass's value at once."""
    shown = np.asarray(shown, dtype=np.float64)
    new = np.asarray(new, dtype=np.float64)
    keep = np.asarray(same, dtype=np.bool_) & np.isfinite(shown) & np.isfinite(new)
    k = np.flatnonzero(keep)
    keep[k] = np.abs(new[k] - shown[k]) <= estimate_moved(shown[k], now)
    return np.where(keep, shown, new)
