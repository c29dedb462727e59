"""How good are start estimates, offline, on whole traces (issue 29, item 4)?

The schedule is the simulator's EASY-FCFS on limits (what an RJMS without rush does); every
estimator changes only the *estimates*, never the starts. For a job j and a moment t (its
submit, and halfway through its wait), the state is read off the simulated run: the jobs
running at t (start <= t < end) and the jobs pending at t ahead of j in FCFS order (submit
<= t < start, submitted before j) and j itself. Its estimate is the core's projection
(:func:`rush.core.start_estimates.project_starts`: conservative backfilling without
arrivals, the rule behind ``rush explain``), with each estimator's runtimes:

* ``limits``: every job runs to its request, what Slurm's ``squeue --start`` assumes;
* ``easy++``: Tsafrir et al.'s prediction (mean of the user's last two finished runtimes,
  capped by the request; the request with fewer than two), corrected as in the core's
  ``stepwise`` rule (prediction + 1 min, 5 min, 15 min, ... up to the request) once a run
  outlives it;
* ``quantiles``: rush's predictor (:mod:`rush.models.runtime_quantiles`), walked forward
  weekly: a pending job runs its predicted median; a running job its median, and once it
  outlives that, its 0.75, then 0.9 quantile, then its request (the distribution is the
  correction rule).

A job started at its submit (wait 0) gets "now" from every estimator (error 0). Per
estimator, moment and wait class (0, < 10 min, 10 min - 1 h, > 1 h, as the live study):
the share within 1 minute, within 10 % of the wait, the mean and median absolute error.

The sweep is compiled (numba): the jobs of a trace in time order, each query a projection
of the queue ahead of the job. On the long traces a deterministic sample of queries is
taken (every k-th job, ``max_queries``), said in the output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from rush.core.conservative import MIN_DURATION
from rush.core.remaining_runtime import conditional_mean_runtime, conditional_quantile_runtime
from rush.core.start_distribution import (
    SCENARIOS,
    median_of_starts,
    sampled_runtime,
    scenario_levels,
    scenario_seed,
)
from rush.core.start_estimates import EasyRunning, project_easy_starts, project_starts

WAIT_CLASSES = ("0", "<10min", "10min-1h", ">1h")
ONE_MINUTE = 60.0
WITHIN_SHARE = 0.10
# The core's stepwise correction amounts (Tsafrir et al., as predictsim implements them).
STEPWISE = np.array(
    [60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 18000.0, 36000.0, 72000.0, 180000.0, 360000.0]
)
RUNGS = len(STEPWISE) + 1
# The projection a sweep uses: the core's conservative projection, or its replay of EASY.
RULE_CONSERVATIVE = 0
RULE_EASY = 1
# How a running job's end is read (``conditional`` per estimator): off its ladder, or its
# expected (mean) or median runtime given the time it has run.
REMAINING_LADDER = 0
REMAINING_MEAN = 1
REMAINING_MEDIAN = 2
# Round 7's H5 (dev_log.md): the conditional 0.4 quantile, one step below the median.
REMAINING_Q40 = 3
# Round 30's rule R (dev_log.md; refuted, the core's rule reverted): the conditional 0.75 quantile.
REMAINING_Q75 = 4
# The level of each conditional quantile above, by its code minus REMAINING_MEDIAN.
CONDITIONAL_LEVELS = (0.5, 0.4, 0.75)
# Round 31's rule M (dev_log.md; rush.core.start_distribution): the median over sampled
# scenarios of the job's projected start, every running end and queued length drawn from the
# knots (the estimator's ladder is not read).
REMAINING_SAMPLED = 5
# Round 31's post-hoc rule MR: rule M's drawn running ends, the queue at the estimator's own
# lengths (its ladder's first rung) in every scenario.
REMAINING_SAMPLED_RUNNING = 6


def wait_class(wait: np.ndarray) -> np.ndarray:
    """Index into :data:`WAIT_CLASSES` per job."""
    wait = np.asarray(wait, dtype=np.float64)
    return np.select([wait <= 0, wait < 600, wait <= 3600], [0, 1, 2], 3)


def ladder(first: np.ndarray, then: np.ndarray | None, requested_time: np.ndarray) -> np.ndarray:
    """(n, RUNGS) increasing predicted lengths: ``first``, then the columns of ``then``, then
    the request, each capped by the request, padded with the request."""
    req = np.asarray(requested_time, dtype=np.float64)
    cols = [np.asarray(first, dtype=np.float64)]
    if then is not None:
        cols += [np.asarray(c, dtype=np.float64) for c in np.atleast_2d(then.T)]
    out = np.repeat(req[:, None], RUNGS, axis=1)
    for k, col in enumerate(cols[: RUNGS - 1]):
        col = np.where(np.isfinite(col) & (col > 0), col, req)
        out[:, k] = np.minimum(np.maximum(col, MIN_DURATION), req)
    return np.maximum.accumulate(out, axis=1)


def limits_ladder(requested_time: np.ndarray) -> np.ndarray:
    return ladder(requested_time, None, requested_time)


def easy_plus_plus_ladder(prediction: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    steps = np.asarray(prediction, dtype=np.float64)[:, None] + STEPWISE[None, :]
    return ladder(prediction, steps, requested_time)


def quantile_ladder(quantiles: np.ndarray, levels: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """Median first, then the higher predicted quantiles."""
    median = int(np.argmin(np.abs(np.asarray(levels) - 0.5)))
    return ladder(quantiles[:, median], quantiles[:, median + 1 :], requested_time)


def easy_plus_plus_prediction(last: np.ndarray, last2: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """Mean of the user's last two finished runtimes (negative: unknown), capped by the request."""
    both = (last >= 0) & (last2 >= 0)
    return np.where(both, np.minimum(0.5 * (last + last2), requested_time), requested_time)


@njit(cache=True)
def _running_length(rungs: np.ndarray, elapsed: float) -> float:
    """The first rung beyond ``elapsed`` (the last one when none is)."""
    for r in range(len(rungs)):
        if rungs[r] > elapsed:
            return rungs[r]
    return rungs[len(rungs) - 1]


class Projection(NamedTuple):
    """How a sweep projects: ``rule`` (:data:`RULE_CONSERVATIVE`, or :data:`RULE_EASY`, which
    reads ``request``, the limits EASY decides on) and, per estimator, how a running job ends
    (``conditional``: :data:`REMAINING_LADDER` off its ladder, :data:`REMAINING_MEAN` /
    :data:`REMAINING_MEDIAN` at its mean / median runtime given its elapsed time, from the
    quantile function's knots ``knots_x`` (n, k) at levels ``knots_p``; :data:`REMAINING_SAMPLED`:
    rule M over ``scenarios`` scenarios drawn from the knots)."""

    rule: int
    request: np.ndarray
    conditional: np.ndarray
    knots_x: np.ndarray
    knots_p: np.ndarray
    scenarios: int


def projection(
    rule: int,
    request: np.ndarray,
    conditional: np.ndarray,
    knots: tuple[np.ndarray, np.ndarray] | None = None,
    scenarios: int = SCENARIOS,
) -> Projection:
    """A :class:`Projection` with contiguous arrays (``conditional``: one code per estimator;
    ``scenarios``: rule M's, :data:`REMAINING_SAMPLED`)."""
    n = len(request)
    knots_x, knots_p = (np.zeros((n, 2)), np.array([0.0, 1.0])) if knots is None else knots
    return Projection(
        int(rule),
        np.ascontiguousarray(request, dtype=np.float64),
        np.asarray(conditional, dtype=np.int64),
        np.ascontiguousarray(knots_x, dtype=np.float64),
        np.ascontiguousarray(knots_p, dtype=np.float64),
        int(scenarios),
    )


def sweep_estimates(
    query_time: np.ndarray,
    query_job: np.ndarray,
    submit: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    procs: np.ndarray,
    ladders: np.ndarray,
    machine: int,
) -> np.ndarray:
    """(estimators, queries) estimated starts with the conservative projection on the ladders
    (:func:`sweep_projected` for the other rules)."""
    plain = projection(RULE_CONSERVATIVE, np.full(len(submit), np.inf), np.zeros(ladders.shape[0]))
    return sweep_projected(query_time, query_job, (submit, start, end, procs, machine), ladders, plain)


def sweep_projected(
    query_time: np.ndarray,
    query_job: np.ndarray,
    jobs: tuple,
    ladders: np.ndarray,
    how: Projection,
) -> np.ndarray:
    """(estimators, queries) estimated starts. Queries sorted by time; jobs in FCFS order
    (submit order, the workload's); ``jobs`` = (submit, start, end, procs, machine processors);
    ``ladders`` (estimators, n, rungs): a running job ends off its ladder (or as
    ``how.conditional`` says), a queued job runs its first rung; ``how``: the :class:`Projection`."""
    first_rung = np.ascontiguousarray(ladders[:, :, 0])
    return sweep_by_source(query_time, query_job, jobs, (ladders, first_rung), how)


@njit(cache=True)
def sweep_by_source(
    query_time: np.ndarray,
    query_job: np.ndarray,
    jobs: tuple,
    runtimes: tuple,
    how: Projection,
) -> np.ndarray:
    """:func:`sweep_projected` with the two sources of runtimes apart: ``runtimes`` =
    (ladders (estimators, n, rungs) the running jobs' ends are read off, queue (estimators, n)
    the queued jobs' runtimes), so that an estimator may mix sources (a diagnosis splitting the
    error into what the running jobs' ends and the queue's runtimes cost)."""
    submit, start, end, procs, machine = jobs
    ladders, queue = runtimes
    rule, request, conditional, knots_x, knots_p, _ = how
    n_est = ladders.shape[0]
    nq = len(query_time)
    out = np.full((n_est, nq), np.inf)
    active = np.empty(len(submit), dtype=np.int64)  # submitted, not ended
    n_active = 0
    nxt = 0
    for q in range(nq):
        t = query_time[q]
        j = query_job[q]
        while nxt < len(submit) and submit[nxt] <= t:
            active[n_active] = nxt
            n_active += 1
            nxt += 1
        kept = 0
        for a in range(n_active):
            k = active[a]
            if end[k] > t:
                active[kept] = k
                kept += 1
        n_active = kept
        if start[j] <= t:
            for e in range(n_est):
                out[e, q] = start[j]
            continue
        n_run = 0
        n_pend = 0
        for a in range(n_active):
            k = active[a]
            if start[k] <= t:
                n_run += 1
            elif k <= j:
                n_pend += 1
        run_k = np.empty(n_run, dtype=np.int64)
        pend_k = np.empty(n_pend, dtype=np.int64)
        r = 0
        p = 0
        busy = 0
        for a in range(n_active):
            k = active[a]
            if start[k] <= t:
                run_k[r] = k
                r += 1
                busy += procs[k]
            elif k <= j:
                pend_k[p] = k
                p += 1
        pend_k = np.sort(pend_k)  # FCFS: submit order
        local_procs = procs[pend_k]
        run_procs = procs[run_k]
        free = max(machine - busy, 0)
        for e in range(n_est):
            if conditional[e] == REMAINING_SAMPLED or conditional[e] == REMAINING_SAMPLED_RUNNING:
                lengths = queue[e, pend_k] if conditional[e] == REMAINING_SAMPLED_RUNNING else queue[e, :0]
                out[e, q] = _sampled_start(t, free, (run_k, pend_k, lengths), start, procs, how)
                continue
            run_end = np.empty(n_run)
            for i in range(n_run):
                k = run_k[i]
                if conditional[e] == REMAINING_MEAN:
                    run_end[i] = start[k] + conditional_mean_runtime(knots_x[k], knots_p, t - start[k])
                elif conditional[e] >= REMAINING_MEDIAN:  # a conditional quantile
                    level = CONDITIONAL_LEVELS[conditional[e] - REMAINING_MEDIAN]
                    run_end[i] = start[k] + conditional_quantile_runtime(
                        knots_x[k], knots_p, t - start[k], level
                    )
                else:
                    run_end[i] = start[k] + _running_length(ladders[e, k], t - start[k])
            dur = np.empty(n_pend)
            for i in range(n_pend):
                dur[i] = queue[e, pend_k[i]]
            running = EasyRunning(run_end, start[run_k] + request[run_k], run_procs)
            # j is the last of the jobs ahead of it and itself
            out[e, q] = _project(rule, t, free, running, local_procs, dur, request[pend_k])[n_pend - 1]
    return out


@njit(cache=True)
def _project(
    rule: int,
    t: float,
    free: int,
    running: EasyRunning,
    procs: np.ndarray,
    dur: np.ndarray,
    limit: np.ndarray,
) -> np.ndarray:
    """The starts of the queued jobs (in FCFS order) under the sweep's ``rule``: the core's EASY
    replay, or its conservative projection (which reads no limit)."""
    order = np.arange(len(procs))
    if rule == RULE_EASY:
        return project_easy_starts(t, free, running, order, procs, dur, limit)
    by_end = np.argsort(running.end)
    return project_starts(t, free, running.end[by_end], running.procs[by_end], order, procs, dur, False)


@njit(cache=True)
def _sampled_start(
    t: float, free: int, rows: tuple, start: np.ndarray, procs: np.ndarray, how: Projection
) -> float:
    """Rule M's estimate for the last queued job of ``rows`` = (running jobs, queued jobs in FCFS
    order, their lengths: empty to draw them (M), else one per queued job (MR)) at ``t``: the median over ``how.scenarios`` scenarios of its projected start, each
    running job ending and each queued job running at its level in the scenario
    (:func:`rush.core.start_distribution.scenario_levels`, seeded from ``t``; running jobs' levels
    first), drawn from the knots (:func:`rush.core.start_distribution.sampled_runtime`; a queued
    job's length at least 1 s, at most its request, as the ladders' first rung)."""
    rule, request, _, knots_x, knots_p, scenarios = how
    run_k, pend_k, lengths = rows
    n_run = len(run_k)
    n_pend = len(pend_k)
    levels = scenario_levels(scenario_seed(t), scenarios, n_run + n_pend)
    starts = np.empty((scenarios, 1))
    run_end = np.empty(n_run)
    dur = np.empty(n_pend)
    for s in range(scenarios):
        for i in range(n_run):
            k = run_k[i]
            run_end[i] = start[k] + sampled_runtime(knots_x[k], knots_p, t - start[k], levels[s, i], np.inf)
        for i in range(n_pend):
            k = pend_k[i]
            if len(lengths):
                dur[i] = lengths[i]
            else:
                drawn = sampled_runtime(knots_x[k], knots_p, 0.0, levels[s, n_run + i], request[k])
                dur[i] = min(max(drawn, 1.0), request[k])
        running = EasyRunning(run_end.copy(), start[run_k] + request[run_k], procs[run_k])
        projected = _project(rule, t, free, running, procs[pend_k], dur.copy(), request[pend_k])
        starts[s, 0] = projected[n_pend - 1]
    return median_of_starts(starts)[0]


@dataclass
class Queries:
    """Which (job, moment) pairs are estimated."""

    job: np.ndarray
    time: np.ndarray
    moment: np.ndarray  # 0 at submit, 1 halfway through the wait


def make_queries(submit: np.ndarray, start: np.ndarray, max_queries: int | None) -> tuple[Queries, int]:
    """At submit for every sampled job; halfway through the wait for those that waited.
    Returns the queries (time order) and the sampling step (1: every job)."""
    n = len(submit)
    step = 1 if not max_queries or n <= max_queries else int(np.ceil(n / max_queries))
    jobs = np.arange(0, n, step)
    jobs = jobs[start[jobs] >= 0]  # started in the run
    wait = start[jobs] - submit[jobs]
    half = jobs[wait > 0]
    job = np.concatenate([jobs, half])
    time = np.concatenate([submit[jobs], submit[half] + 0.5 * (start[half] - submit[half])])
    moment = np.concatenate([np.zeros(len(jobs), np.int8), np.ones(len(half), np.int8)])
    order = np.lexsort((job, time))
    return Queries(job[order], time[order], moment[order]), step


def error_rows(
    trace: str, estimators: list[str], estimates: np.ndarray, queries: Queries, submit, start
) -> list[dict]:
    """Per estimator, moment and wait class (and all classes): the accuracy figures."""
    rows = []
    real = start[queries.job]
    wait = real - submit[queries.job]
    classes = wait_class(wait)
    for e, name in enumerate(estimators):
        err = np.abs(estimates[e] - real)
        for moment, moment_name in ((0, "submit"), (1, "half-wait")):
            in_moment = queries.moment == moment
            for c, class_name in [(-1, "all"), (-2, "waited"), *enumerate(WAIT_CLASSES)]:
                mask = in_moment & (
                    np.ones_like(in_moment) if c == -1 else (wait > 0) if c == -2 else (classes == c)
                )
                if not mask.any():
                    continue
                e_m, w_m = err[mask], wait[mask]
                finite = np.isfinite(e_m)
                rows.append(
                    {
                        "trace": trace,
                        "estimator": name,
                        "moment": moment_name,
                        "wait_class": class_name,
                        "jobs": int(mask.sum()),
                        "within_1min": float(np.mean(e_m <= ONE_MINUTE)),
                        "within_10pct": float(np.mean(e_m <= WITHIN_SHARE * w_m)),
                        "mae_min": float(np.mean(e_m[finite]) / 60.0) if finite.any() else None,
                        "median_ae_min": float(np.median(e_m[finite]) / 60.0) if finite.any() else None,
                        "no_estimate": int((~finite).sum()),
                    }
                )
    return rows
