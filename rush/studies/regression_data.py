"""Training data for regression-obtained heuristics (Carastan-Santos & de Camargo, SC'17).

A *pair* (S, Q) is 48 consecutive jobs of the Lublin-Feitelson model on a 256-processor machine:
the first |S| = 16 are the machine's recent past, the next |Q| = 32 the jobs whose order we
score. S is submitted and scheduled first come, first served; when S's last job is submitted
the simulation branches into *trials*: each trial is a random permutation of Q, scheduled in
that order by a list scheduler, and yields the mean bounded slowdown of Q's jobs.

    score(j) = mean over the trials where j was scheduled first of the trial's mean BSLD(Q)

normalised per pair to [0, 1] by min-max (0: the best job to put first). A pair whose 32
scores are all equal carries no information (the machine never fills) and is dropped.

The list scheduler (as in SC'17: jobs are started strictly in the list's order, no
backfilling): the next job starts at the earliest time >= its submit time and >= the start of
the job before it in the list at which enough processors are free. It runs on the actual
runtimes p (the trial's outcome is the real one); the features of a job are (p, q, r) with
r = its submit time minus the submit time of S's last job (>= 0, the branching time).

Trials are stratified: every job of Q goes first in ``trials // 32`` trials, the rest of the
order being a uniform random permutation; this is the conditional distribution the score is
defined over, with the same number of samples per job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from rush.errors import ConfigError
from rush.simulator.metrics import DEFAULT_TAU, job_bounded_slowdown

S_SIZE = 16
Q_SIZE = 32
MACHINE_PROCS = 256
TAU = DEFAULT_TAU  # bounded-slowdown threshold, seconds
MAX_PAIRS = 100_000
MAX_TRIALS = 10_000_000


@dataclass(frozen=True)
class PairScores:
    """One pair's Q jobs: features, raw and normalised scores, the score's standard error."""

    p: np.ndarray  # runtimes (s)
    q: np.ndarray  # processors
    r: np.ndarray  # submit time since S's last submit (s)
    raw: np.ndarray  # mean BSLD(Q) over the trials where the job went first
    stderr: np.ndarray  # standard error of raw
    score: np.ndarray  # raw min-max normalised to [0, 1]
    trials_per_job: int


class PairJobs(NamedTuple):
    """A pair's jobs (S then Q, in submit order), as the compiled kernels take them."""

    submit: np.ndarray
    procs: np.ndarray
    runtime: np.ndarray


class Running(NamedTuple):
    """Running jobs sorted by end: their ends and processors (the first ``n_running`` rows)."""

    ends: np.ndarray
    used_procs: np.ndarray


@njit(cache=True)
def _list_schedule(
    jobs: PairJobs,
    order: np.ndarray,
    machine: int,
    running: Running,
    n_running: int,
    used: int,
    t_last: float,
    start: np.ndarray,
) -> None:
    """Start ``order``'s jobs strictly in that order; ``running`` holds the running jobs
    sorted by end (the first ``n_running``), ``used`` their processors, ``t_last`` the last
    start. Writes ``start``; works on copies the caller provides."""
    submit, procs, runtime = jobs.submit, jobs.procs, jobs.runtime
    ends, used_procs = running.ends, running.used_procs
    head = 0
    for k in range(len(order)):
        j = order[k]
        t = max(t_last, submit[j])
        # Jobs ended by t free their processors for good: starts never go back in time.
        while head < n_running and ends[head] <= t:
            used -= used_procs[head]
            head += 1
        while machine - used < procs[j]:
            t = ends[head]
            used -= used_procs[head]
            head += 1
        start[j] = t
        t_last = t
        # Insert (t + p, q) keeping ends[head:n_running] sorted.
        e = t + runtime[j]
        m = n_running
        while m > head and ends[m - 1] > e:
            ends[m] = ends[m - 1]
            used_procs[m] = used_procs[m - 1]
            m -= 1
        ends[m] = e
        used_procs[m] = procs[j]
        n_running += 1
        used += procs[j]


@njit(cache=True)
def _mean_bsld(submit, runtime, start, jobs, tau: float) -> float:
    total = 0.0
    for k in range(len(jobs)):
        j = jobs[k]
        total += job_bounded_slowdown(start[j] - submit[j] + runtime[j], runtime[j], tau)
    return total / len(jobs)


@njit(cache=True)
def _score_pair(
    submit: np.ndarray,
    procs: np.ndarray,
    runtime: np.ndarray,
    n_s: int,
    machine: int,
    per_job: int,
    seed: int,
    tau: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the trial's mean BSLD(Q) for each Q job put first."""
    np.random.seed(seed)
    n = len(submit)
    n_q = n - n_s
    # S, FCFS, from an empty machine: the state at the branching time.
    ends0 = np.zeros(n)
    used0 = np.zeros(n, dtype=np.int64)
    start = np.zeros(n)
    jobs = PairJobs(submit, procs, runtime)
    _list_schedule(jobs, np.arange(n_s), machine, Running(ends0, used0), 0, 0, -np.inf, start)
    t_branch = submit[n_s - 1]
    t_last = start[n_s - 1]
    if t_branch > t_last:
        t_last = t_branch
    # Running jobs at the branch, sorted by end (S's ends are not sorted in list order).
    end_s = start[:n_s] + runtime[:n_s]
    order_s = np.argsort(end_s)
    run_end = np.empty(n)
    run_procs = np.empty(n, dtype=np.int64)
    n_run = 0
    used = 0
    for k in range(n_s):
        j = order_s[k]
        e = end_s[j]
        if e > t_last:
            run_end[n_run] = e
            run_procs[n_run] = procs[j]
            n_run += 1
            used += procs[j]
    q_jobs = np.arange(n_s, n)
    mean = np.zeros(n_q)
    var = np.zeros(n_q)
    order = np.empty(n_q, dtype=np.int64)
    ends = np.empty(n)
    used_procs = np.empty(n, dtype=np.int64)
    for first in range(n_q):
        others = np.empty(n_q - 1, dtype=np.int64)
        m = 0
        for k in range(n_q):
            if k != first:
                others[m] = n_s + k
                m += 1
        s1 = 0.0
        s2 = 0.0
        for _ in range(per_job):
            np.random.shuffle(others)
            order[0] = n_s + first
            order[1:] = others
            ends[:n_run] = run_end[:n_run]
            used_procs[:n_run] = run_procs[:n_run]
            _list_schedule(jobs, order, machine, Running(ends, used_procs), n_run, used, t_last, start)
            b = _mean_bsld(submit, runtime, start, q_jobs, tau)
            s1 += b
            s2 += b * b
        mu = s1 / per_job
        mean[first] = mu
        var[first] = max(s2 / per_job - mu * mu, 0.0)
    return mean, var


def _check_count(value: int, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not low <= value <= high:
        raise ConfigError(f"{name} must be an integer from {low} to {high}, not {value!r}", where=f"--{name}")
    return int(value)


def score_pair(
    submit: np.ndarray,
    procs: np.ndarray,
    runtime: np.ndarray,
    trials: int,
    seed: int = 0,
    n_s: int = S_SIZE,
    machine: int = MACHINE_PROCS,
) -> PairScores | None:
    """Scores of one pair's Q jobs (arrays over S then Q, in submit order); None if flat."""
    submit = np.ascontiguousarray(submit, dtype=np.float64)
    procs = np.ascontiguousarray(procs, dtype=np.int64)
    runtime = np.ascontiguousarray(runtime, dtype=np.float64)
    n_q = len(submit) - n_s
    if n_q < 2 or np.any(procs > machine) or np.any(procs < 1):
        raise ConfigError("a pair needs at least 2 jobs in Q, each fitting the machine", where="pair")
    per_job = max(1, _check_count(trials, "trials", 1, MAX_TRIALS) // n_q)
    mean, var = _score_pair(submit, procs, runtime, n_s, machine, per_job, int(seed) % 2**31, TAU)
    lo, hi = float(mean.min()), float(mean.max())
    if not hi - lo > 1e-9 * max(1.0, hi):
        return None
    return PairScores(
        p=runtime[n_s:],
        q=procs[n_s:].astype(np.float64),
        r=submit[n_s:] - submit[n_s - 1],
        raw=mean,
        stderr=np.sqrt(var / per_job),
        score=(mean - lo) / (hi - lo),
        trials_per_job=per_job,
    )


def check_q_spread(q_spread: float) -> float:
    if isinstance(q_spread, bool) or not isinstance(q_spread, int | float) or not 0.0 <= q_spread <= 1.0:
        raise ConfigError(
            f"--q-spread must be a number from 0 to 1, not {q_spread!r}",
            where="--q-spread",
            fix="1 keeps the model's arrivals; 0.25 packs Q's arrivals into a quarter of their span",
        )
    return float(q_spread)


def pair_jobs(seed: int, q_spread: float = 1.0, n_jobs: int = S_SIZE + Q_SIZE, machine: int = MACHINE_PROCS):
    """One pair's jobs from the Lublin-Feitelson model: (submit, procs, runtime), in submit order.

    ``q_spread`` < 1 packs Q's submit times towards the branching time (r scaled by it): a
    heavier load at the branch, where the order of wide jobs matters more (0: Q arrives at once,
    r is constant and the templates' r terms are singular).
    """
    from rush.workload.lublin import lublin_generate

    q_spread = check_q_spread(q_spread)
    trace = lublin_generate(n_jobs, machine, seed=seed)
    order = np.lexsort((trace["job_id"], trace["submit"]))
    runtime = np.maximum(trace["runtime"][order].astype(np.float64), 1.0)
    submit = trace["submit"][order].astype(np.float64)
    branch = submit[S_SIZE - 1]
    submit[S_SIZE:] = np.floor(branch + (submit[S_SIZE:] - branch) * q_spread)
    return submit, trace["alloc_procs"][order].astype(np.int64), runtime


@dataclass(frozen=True)
class TrainingSet:
    """Rows over all kept pairs' Q jobs."""

    p: np.ndarray
    q: np.ndarray
    r: np.ndarray
    score: np.ndarray
    stderr: np.ndarray  # of the normalised score
    pair: np.ndarray  # pair index of each row
    pairs_kept: int
    pairs_flat: int
    trials_per_job: int

    def __len__(self) -> int:
        return len(self.score)


def training_set(pairs: int, trials: int, seed: int = 0, q_spread: float = 1.0) -> TrainingSet:
    """``pairs`` pairs (seeds seed, seed+1, ...) scored with ``trials`` trials each."""
    pairs = _check_count(pairs, "pairs", 1, MAX_PAIRS)
    _check_count(trials, "trials", Q_SIZE, MAX_TRIALS)
    rows: list[PairScores] = []
    index: list[np.ndarray] = []
    flat = 0
    for k in range(pairs):
        submit, procs, runtime = pair_jobs(seed * MAX_PAIRS + k, q_spread)
        scores = score_pair(submit, procs, runtime, trials, seed=seed * MAX_PAIRS + k)
        if scores is None:
            flat += 1
            continue
        index.append(np.full(Q_SIZE, len(rows)))
        rows.append(scores)
    if not rows:
        raise ConfigError(
            f"all {pairs} pairs are flat (the machine never filled): no job order matters",
            where="--pairs",
            fix="use more pairs",
        )

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(s, name) for s in rows])

    scale = np.concatenate([np.full(Q_SIZE, s.raw.max() - s.raw.min()) for s in rows])
    return TrainingSet(
        p=cat("p"),
        q=cat("q"),
        r=cat("r"),
        score=cat("score"),
        stderr=cat("stderr") / scale,
        pair=np.concatenate(index),
        pairs_kept=len(rows),
        pairs_flat=flat,
        trials_per_job=rows[0].trials_per_job,
    )


def score_spread(seed: int, trial_counts: list[int], repeats: int, q_spread: float = 1.0) -> list[dict]:
    """How the scores of one pair vary between independent repetitions as trials grow.

    For each trial count: the mean over Q's jobs of the standard deviation of the normalised
    score across ``repeats`` repetitions, and the Spearman rank correlation of each
    repetition's scores with those of the largest trial count (mean over repetitions).
    """
    submit, procs, runtime = pair_jobs(seed, q_spread)
    reference = score_pair(submit, procs, runtime, max(trial_counts) * 4, seed=10**6 + seed)
    out: list[dict] = []
    for trials in trial_counts:
        runs = [score_pair(submit, procs, runtime, trials, seed=seed * 1000 + k) for k in range(repeats)]
        if reference is None or any(r is None for r in runs):
            return []
        scores = np.array([r.score for r in runs])  # type: ignore[union-attr]
        rho = [_spearman(s, reference.score) for s in scores]
        out.append(
            {
                "trials": trials,
                "trials_per_job": runs[0].trials_per_job,  # type: ignore[union-attr]
                "score_sd": float(scores.std(axis=0, ddof=1).mean()),
                "spearman_vs_reference": float(np.mean(rho)),
            }
        )
    return out


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])
