"""The parallel-job-scheduling literature's metrics, computed from a :class:`SimResult`.

Notation, per job j (all times in seconds):

* ``submit_j``, ``start_j``, ``end_j`` as recorded; ``q_j`` processors;
* ``p_j = end_j - start_j``: the time held in the **final** run (the runtime, or the requested
  time when the job was killed at its walltime). Runs lost to false-small kills are not in
  ``p_j``; they are reported as ``requeues`` and ``wasted_area``;
* ``w_j = start_j - submit_j`` (wait; includes time lost to earlier, killed runs);
* ``r_j = end_j - submit_j = w_j + p_j`` (response time, a.k.a. turnaround / flow time);
* ``M``: ``machine_procs``; ``t0 = min submit``.

Per-job metrics (Feitelson & Rudolph, "Metrics and benchmarking for parallel job scheduling",
JSSPP 1998; Feitelson, "Metrics for parallel job scheduling and their convergence", JSSPP 2001):

* bounded slowdown ``bsld_j = max(r_j / max(p_j, tau), 1)`` with ``tau`` = 10 s by default.
  Feitelson's form (tau bounds the effect of very short jobs); its mean, AVEbsld with
  tau = 10 s, is the objective of the learned policies of Carastan-Santos & de Camargo (SC17)
  and of the EASY-queue tuning of Lelong, Reis & Trystram (JSSPP 2017).
* per-processor bounded slowdown ``ppbsld_j = max(r_j / (q_j * max(p_j, tau)), 1)``. Feitelson
  & Rudolph (1998) discuss normalising slowdown by the job's processors, so that a wide job
  (which needs many processors free at once) is not compared with a narrow one on equal
  terms; this is its bounded form, the same tau as bsld (batsim-py's ``per_processor_slowdown``
  is the unbounded ``max(r / (q p), 1)``).

Whole-run metrics:

* ``utilization = sum(q_j * p_j) / (M * (max end - t0))``: useful (final-run) work over the
  machine's capacity from the first submit to the last end. Work lost to false-small kills
  is excluded (it is ``wasted_area``).
* ``utilization_window``: the same with every job's ``[start, end)`` clipped to the window
  ``W = [t0 + 0.15 S, t0 + 0.85 S]`` where ``S = max submit - t0`` is the *submission* span;
  this leaves out the warm-up (empty machine) and the drain after the last arrival:
  ``sum(q_j * |[start_j, end_j) ∩ W|) / (M * |W|)``.
* ``throughput_std``: job completions (``end``) inside ``W`` are counted per bin of
  ``throughput_bin`` seconds (default one day: hourly counts are dominated by the daily cycle
  and by Poisson noise on small traces); the counts are divided by their mean and the
  population standard deviation (ddof=0) of that normalized series is reported, i.e. the
  coefficient of variation of daily throughput. Only whole bins from the window's start are
  used; fewer than 2 bins (or no completions) gives NaN. Only non-empty bins are stored.
* Series with one entry per period (``weekly_cumulative_bounded_slowdown``,
  :func:`utilization_profile`) refuse, with a :class:`~rush.errors.RushError`, a time span
  needing more than ``100 000 + 100 × jobs`` entries (corrupt, far-apart submit times).
* ``awrt = sum(q_j p_j r_j) / sum(q_j p_j)``: area-weighted response time (Schwiegelshohn &
  Yahyapour); jobs of zero area carry no weight.
* ``makespan = max end - t0``.
* ``max_wait``, ``max_bounded_slowdown``, and percentiles ``wait_p50/p90/p99`` and
  ``bounded_slowdown_p50/p90/p99`` (linear interpolation, numpy's default).
* counts: ``jobs`` (finished jobs), ``unstarted`` (never started: ``start < submit``, e.g. the
  simulator's ``-1``), ``backfilled``, ``killed`` (killed at walltime), ``requeues``,
  ``skips``, ``wasted_area``, ``dropped`` (jobs the trace semantics dropped, summed over
  ``result.info["dropped"]``) and ``dropped_by_reason``.
* ``cumulative_bounded_slowdown`` (see the function): after each week since ``t0``, the mean
  bsld of every job submitted so far.

Empty results (no finished job): counts are 0; every mean, percentile, maximum, ratio and
``makespan`` is NaN (``float("nan")``; JSON writers turn it into ``null``).
When every job was submitted at the same time the window is empty, so ``utilization_window``
and ``throughput_std`` are NaN.

Per-class breakdowns (:func:`per_class`) compute the same metrics on each class's jobs, with
the whole run's time frame for the utilization terms (so the classes' utilizations add up to
the run's) and the class's own ``t0`` for ``makespan``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from rush.errors import RushError
from rush.simulator.result import SimResult

DEFAULT_TAU = 10.0
WEEK = 7 * 86400.0
DAY = 86400.0
WINDOW = (0.15, 0.85)
PERCENTILES = (50, 90, 99)
NAN = float("nan")
# Per-period arrays (weekly series, utilization bins) are refused past this many entries per
# job plus a floor, so memory follows the number of jobs, not the span of their times.
MAX_PERIODS_PER_JOB = 100
MIN_PERIODS_ALLOWED = 100_000


@dataclass(frozen=True)
class _Frame:
    """The time frame of the whole run, shared by its classes."""

    t0: float  # first submit
    t_end: float  # last end
    w0: float  # steady-state window [w0, w1)
    w1: float


def _frame(submit: np.ndarray, end: np.ndarray, window: tuple[float, float]) -> _Frame:
    if len(submit) == 0:
        return _Frame(NAN, NAN, NAN, NAN)
    t0 = float(submit.min())
    span = float(submit.max()) - t0
    return _Frame(t0, float(end.max()), t0 + window[0] * span, t0 + window[1] * span)


def started_mask(result: SimResult) -> np.ndarray:
    """Jobs that ran (the simulator marks never-started jobs with start = -1 < submit)."""
    return (result.start >= result.submit) & (result.end >= result.start)


@njit(cache=True)
def job_bounded_slowdown(response: float, run: float, tau: float) -> float:
    """``max(response / max(run, tau), 1)``: the one bounded-slowdown formula (response = end -
    submit), for one job: here over arrays, in compiled studies (rush.studies.regression_data)
    per job. Not a numba ufunc: a ufunc's wrapper is compiled again in every process (~0.1 s)."""
    slowdown = response / max(run, tau)
    return slowdown if slowdown > 1.0 else 1.0


@njit(cache=True)
def _bounded_slowdowns(response: np.ndarray, run: np.ndarray, tau: float) -> np.ndarray:
    out = np.empty(len(response))
    for k in range(len(response)):
        out[k] = job_bounded_slowdown(response[k], run[k], tau)
    return out


def bounded_slowdown(result: SimResult, tau: float = DEFAULT_TAU) -> np.ndarray:
    """``max((end - submit) / max(end - start, tau), 1)`` per job (NaN for unstarted jobs)."""
    _check_tau(tau)
    started = started_mask(result)
    run = np.where(started, result.end - result.start, tau)  # unstarted: masked below, kept finite
    out = _bounded_slowdowns(np.where(started, result.end - result.submit, 0.0), run, float(tau))
    return np.where(started, out, np.nan)


def pp_bounded_slowdown(result: SimResult, tau: float = DEFAULT_TAU) -> np.ndarray:
    """``max((end - submit) / (q * max(end - start, tau)), 1)`` per job."""
    _check_tau(tau)
    run = result.end - result.start
    out = np.maximum((result.end - result.submit) / (result.procs * np.maximum(run, tau)), 1.0)
    return np.where(started_mask(result), out, np.nan)


def _check_tau(tau: float) -> None:
    if not tau > 0:
        raise RushError(f"tau must be positive, got {tau}", where="--tau", fix="use e.g. --tau 10")


def _subset(result: SimResult, mask: np.ndarray) -> SimResult:
    def pick(a: np.ndarray) -> np.ndarray:
        return a[mask] if len(a) == len(mask) else a[:0]

    return SimResult(
        job_id=result.job_id[mask],
        submit=result.submit[mask],
        start=result.start[mask],
        end=result.end[mask],
        procs=result.procs[mask],
        requested_time=result.requested_time[mask],
        runtime=result.runtime[mask],
        backfilled=result.backfilled[mask],
        killed=result.killed[mask],
        machine_procs=result.machine_procs,
        requeues=pick(result.requeues),
        wasted_area=pick(result.wasted_area),
        skips=pick(result.skips),
        info=result.info,
        attributes={k: pick(v) for k, v in result.attributes.items()},
    )


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if len(x) else NAN


def _max(x: np.ndarray) -> float:
    return float(x.max()) if len(x) else NAN


def _percentiles(name: str, x: np.ndarray) -> dict[str, float]:
    if len(x) == 0:
        return {f"{name}_p{p}": NAN for p in PERCENTILES}
    values = np.percentile(x, PERCENTILES)
    return {f"{name}_p{p}": float(v) for p, v in zip(PERCENTILES, values, strict=True)}


def _clipped_area(start: np.ndarray, end: np.ndarray, procs: np.ndarray, w0: float, w1: float) -> float:
    overlap = np.minimum(end, w1) - np.maximum(start, w0)
    return float(np.sum(procs * np.maximum(overlap, 0.0)))


def _check_periods(periods: float, jobs: int, what: str, period: float) -> int:
    """``periods`` as an int, or a RushError when the time span would need more per-period
    entries than ``MAX_PERIODS_PER_JOB`` per job (plus ``MIN_PERIODS_ALLOWED``).

    Submit times 2**53 s apart (a corrupt trace) would otherwise ask for an array of
    terabytes; real traces stay far below the bound (a year of weeks is 52 entries).
    """
    allowed = MIN_PERIODS_ALLOWED + MAX_PERIODS_PER_JOB * jobs
    if not periods <= allowed:  # also NaN
        raise RushError(
            f"the times span {periods:.3g} periods of {period:g} s for {jobs} jobs ({what}); "
            f"more than {allowed} entries is refused",
            where="trace submit/end times",
            fix="check the trace's submit times (a corrupt or far-future value?) or use a longer period",
        )
    return int(periods)


def _throughput_std(end: np.ndarray, w0: float, w1: float, bin_seconds: float) -> float:
    bins = int(np.floor((w1 - w0) / bin_seconds)) if w1 > w0 else 0
    if bins < 2:
        return NAN
    inside = end[(end >= w0) & (end < w0 + bins * bin_seconds)]
    if len(inside) == 0:
        return NAN
    # Only the non-empty bins are stored (memory by jobs, not by time span); the empty ones
    # enter the population moments as zeros.
    _, counts = np.unique(((inside - w0) // bin_seconds).astype(np.int64), return_counts=True)
    mean = len(inside) / bins
    second_moment = float(np.sum((counts / mean) ** 2)) / bins
    return float(np.sqrt(max(second_moment - 1.0, 0.0)))  # normalised series has mean 1


def _dropped(info: dict) -> tuple[int, dict[str, int]]:
    by_reason = {str(k): int(v) for k, v in (info.get("dropped") or {}).items()}
    return sum(by_reason.values()), by_reason


@dataclass(frozen=True)
class _Jobs:
    """The finished jobs' arrays, computed once and shared by every metric."""

    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    procs: np.ndarray  # float64
    bsld: np.ndarray
    ran: np.ndarray  # mask over the result's jobs


def _jobs(result: SimResult, tau: float) -> _Jobs:
    ran = started_mask(result)
    submit, start, end = result.submit[ran], result.start[ran], result.end[ran]
    bsld = np.maximum((end - submit) / np.maximum(end - start, tau), 1.0)
    return _Jobs(submit, start, end, result.procs[ran].astype(np.float64), bsld, ran)


def _metrics(result: SimResult, jobs: _Jobs, tau: float, frame: _Frame, throughput_bin: float) -> dict:
    submit, start, end, procs, bsld, ran = jobs.submit, jobs.start, jobs.end, jobs.procs, jobs.bsld, jobs.ran
    run = end - start
    wait = start - submit
    response = end - submit
    ppbsld = np.maximum(response / (procs * np.maximum(run, tau)), 1.0)
    area = procs * run
    total_area = float(area.sum())
    machine = float(result.machine_procs)

    capacity = machine * (frame.t_end - frame.t0)
    window_capacity = machine * (frame.w1 - frame.w0)
    dropped, dropped_by_reason = _dropped(result.info)
    n = len(submit)
    out: dict = {
        "jobs": n,
        "unstarted": int(len(result) - n),
        "dropped": dropped,
        "dropped_by_reason": dropped_by_reason,
        "tau": float(tau),
        "mean_wait": _mean(wait),
        "max_wait": _max(wait),
        "mean_bounded_slowdown": _mean(bsld),
        "max_bounded_slowdown": _max(bsld),
        "mean_pp_bounded_slowdown": _mean(ppbsld),
        "mean_response_time": _mean(response),
        "utilization": total_area / capacity if n and capacity > 0 else NAN,
        "utilization_window": (
            _clipped_area(start, end, procs, frame.w0, frame.w1) / window_capacity
            if n and window_capacity > 0
            else NAN
        ),
        "throughput_bin": float(throughput_bin),
        "throughput_std": _throughput_std(end, frame.w0, frame.w1, throughput_bin) if n else NAN,
        "awrt": float(np.dot(area, response)) / total_area if total_area > 0 else NAN,
        "makespan": float(end.max() - submit.min()) if n else NAN,
        "backfilled": int(np.count_nonzero(result.backfilled[ran])),
        "killed": int(np.count_nonzero(result.killed[ran])),
        "requeues": int(result.requeues.sum()),
        "skips": int(result.skips.sum()),
        "wasted_area": float(result.wasted_area.sum()),
    }
    out |= _percentiles("wait", wait)
    out |= _percentiles("bounded_slowdown", bsld)
    return out


def _check_bin(throughput_bin: float) -> None:
    if not throughput_bin > 0:
        raise RushError(f"throughput bin must be positive, got {throughput_bin}", where="throughput_bin")


def compute_metrics(
    result: SimResult,
    tau: float = DEFAULT_TAU,
    by: np.ndarray | str | None = None,
    *,
    throughput_bin: float = DAY,
    window: tuple[float, float] = WINDOW,
) -> dict:
    """All metrics of the module docstring as a flat, JSON-serialisable dict.

    Also ``weekly_cumulative_bounded_slowdown`` (list, see :func:`cumulative_bounded_slowdown`).
    ``by``: a per-job class array (or the name of a ``result.attributes`` entry) adds
    ``by_class`` = :func:`per_class`.
    """
    _check_tau(tau)
    _check_bin(throughput_bin)
    jobs = _jobs(result, tau)
    frame = _frame(jobs.submit, jobs.end, window)
    out = _metrics(result, jobs, tau, frame, throughput_bin)
    _, weekly = _cumulative(jobs.submit, jobs.bsld, WEEK)
    out["weekly_cumulative_bounded_slowdown"] = weekly.tolist()
    if by is not None:
        out["by_class"] = per_class(result, by, tau, throughput_bin=throughput_bin, window=window)
    return out


def _class_values(result: SimResult, attribute: np.ndarray | str) -> np.ndarray:
    if isinstance(attribute, str):
        if attribute not in result.attributes:
            raise RushError(
                f"the result has no per-job attribute {attribute!r}",
                where="per_class",
                fix=f"use one of: {', '.join(sorted(result.attributes)) or '(none recorded)'}",
            )
        attribute = result.attributes[attribute]
    values = np.asarray(attribute)
    if values.shape != (len(result),):
        raise RushError(
            f"class array has shape {values.shape}, the result has {len(result)} jobs",
            where="per_class",
            fix="give one class value per job, in the result's order",
        )
    return values


def per_class(
    result: SimResult,
    attribute: np.ndarray | str,
    tau: float = DEFAULT_TAU,
    *,
    throughput_bin: float = DAY,
    window: tuple[float, float] = WINDOW,
) -> dict[str, dict]:
    """``{str(class value): metrics}`` for each distinct value of ``attribute`` (sorted).

    Utilization terms use the whole run's frame, so they are each class's share of the machine.
    """
    _check_tau(tau)
    _check_bin(throughput_bin)
    values = _class_values(result, attribute)
    whole = _jobs(result, tau)
    frame = _frame(whole.submit, whole.end, window)
    out: dict[str, dict] = {}
    for value in np.unique(values):
        part = _subset(result, values == value)
        label = str(value.item() if isinstance(value, np.generic) else value)
        out[label] = _metrics(part, _jobs(part, tau), tau, frame, throughput_bin)
    return out


def cumulative_bounded_slowdown(
    result: SimResult, tau: float = DEFAULT_TAU, period: float = WEEK
) -> tuple[np.ndarray, np.ndarray]:
    """Mean bsld of all (finished) jobs submitted up to the end of each period since ``t0``.

    Returns ``(times, values)``: ``times[k] = (k + 1) * period`` seconds after the first submit
    (the last period may extend past the last submit, so every job is counted); ``values[k]``
    the mean over jobs with ``submit < t0 + times[k]`` (NaN while no job has been submitted).
    """
    _check_tau(tau)
    if not period > 0:
        raise RushError(f"period must be positive, got {period}", where="cumulative_bounded_slowdown")
    jobs = _jobs(result, tau)
    return _cumulative(jobs.submit, jobs.bsld, period)


def _cumulative(submit: np.ndarray, bsld: np.ndarray, period: float) -> tuple[np.ndarray, np.ndarray]:
    if len(submit) == 0:
        return np.zeros(0), np.zeros(0)
    if np.any(submit[1:] < submit[:-1]):
        order = np.argsort(submit, kind="stable")
        submit, bsld = submit[order], bsld[order]
    t0 = submit[0]
    periods = _check_periods(np.floor((submit[-1] - t0) / period) + 1, len(submit), "weekly series", period)
    times = (np.arange(periods) + 1.0) * period
    counts = np.searchsorted(submit - t0, times, side="left")
    sums = np.concatenate(([0.0], np.cumsum(bsld)))[counts]
    values = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return times, values


def utilization_profile(result: SimResult, bin_seconds: float, origin: float | None = None):
    """Busy processors / ``machine_procs`` averaged over consecutive bins.

    Returns ``(bin_starts, utilization)``; bins start at ``origin`` (default the first submit)
    and cover up to the last end. The busy area per bin is the exact integral of the
    step function "processors in use", computed from the sorted start/end events.
    """
    ran = started_mask(result)
    start, end = result.start[ran], result.end[ran]
    procs = result.procs[ran].astype(np.float64)
    if len(start) == 0 or result.machine_procs <= 0:
        return np.zeros(0), np.zeros(0)
    origin = float(result.submit[ran].min()) if origin is None else float(origin)
    if not bin_seconds > 0:
        raise RushError(f"bin must be positive, got {bin_seconds}", where="utilization_profile")
    bins = max(
        _check_periods(np.ceil((end.max() - origin) / bin_seconds), len(start), "utilization", bin_seconds), 1
    )
    edges = origin + np.arange(bins + 1) * bin_seconds
    times = np.concatenate((start, end))
    delta = np.concatenate((procs, -procs))
    order = np.argsort(times, kind="stable")
    times, delta = times[order], delta[order]
    busy = np.cumsum(delta)  # processors in use just after each event
    area = np.concatenate(([0.0], np.cumsum(busy[:-1] * np.diff(times))))  # integral up to each event
    idx = np.searchsorted(times, edges, side="right") - 1
    safe = np.maximum(idx, 0)
    cumulative = np.where(idx >= 0, area[safe] + busy[safe] * (edges - times[safe]), 0.0)
    return edges[:-1], np.diff(cumulative) / (result.machine_procs * bin_seconds)


def fair_share_summary(result: SimResult, top: int = 10) -> dict:
    """What a site checks before turning fair-share on: per association, its share of the
    processor-seconds used against its target share, and waits by how much users used.

    Needs a run with a fair-share model (``SimInputs.fair_share_model``: the result's
    ``attributes["association"]`` and ``info["fair_share"]``). Used processor-seconds are
    ``q_j * (end_j - start_j)`` of the final runs plus ``wasted_area`` (work lost to kills
    used the machine too), undecayed, over the whole run. Returns:

    * ``associations``: the ``top`` associations by used processor-seconds, each with
      ``user``, ``group``, ``jobs``, ``usage_share``, ``target_share`` (normalised shares S),
      ``mean_wait``, and ``mean_factor`` (the mean fair-share factor its jobs started with);
    * ``share_gap``: half the sum over all associations of ``|usage_share - target_share|``
      (0: every association used exactly its share; 1: all usage by associations with no share);
    * ``mean_wait_by_usage_decile``: the users (associations) sorted by used processor-seconds,
      cut into ten groups of (nearly) equal size, lightest first, with each group's mean wait
      over its jobs (fewer groups when there are fewer than ten associations);
    * ``associations_count``.
    """
    meta = result.info.get("fair_share")
    if meta is None or "association" not in result.attributes:
        raise RushError(
            "this run has no fair-share associations",
            where="fair_share_summary",
            fix="simulate with a fair-share model (SimInputs.fair_share_model, --fairshare-half-life)",
        )
    assoc = np.asarray(result.attributes["association"], dtype=np.int64)
    target = np.asarray(meta["share"], dtype=np.float64)
    count = len(target)
    started = started_mask(result)
    area = np.where(started, result.procs * (result.end - result.start), 0.0)
    if len(result.wasted_area) == len(result):
        area = area + result.wasted_area
    used = np.bincount(assoc, weights=area, minlength=count)
    total = used.sum()
    usage_share = used / total if total > 0 else np.zeros(count)
    wait = result.start - result.submit
    jobs = np.bincount(assoc[started], minlength=count)
    wait_sum = np.bincount(assoc[started], weights=wait[started], minlength=count)
    factor = np.asarray(result.attributes.get("fairshare", np.full(len(result), NAN)), dtype=np.float64)
    factor_sum = np.bincount(assoc[started], weights=np.nan_to_num(factor[started]), minlength=count)
    heaviest = np.argsort(-used, kind="stable")[:top]
    rows = [
        {
            "user": int(meta["user"][a]),
            "group": int(meta["group"][a]),
            "jobs": int(jobs[a]),
            "usage_share": float(usage_share[a]),
            "target_share": float(target[a]),
            "mean_wait": float(wait_sum[a] / jobs[a]) if jobs[a] else NAN,
            "mean_factor": float(factor_sum[a] / jobs[a]) if jobs[a] else NAN,
        }
        for a in heaviest
    ]
    deciles = []
    for part in np.array_split(np.argsort(used, kind="stable"), min(10, count)) if count else []:
        in_part = np.isin(assoc, part) & started
        deciles.append(_mean(wait[in_part]))
    return {
        "associations": rows,
        "associations_count": count,
        "share_gap": float(0.5 * np.abs(usage_share - target).sum()) if total > 0 else NAN,
        "mean_wait_by_usage_decile": deciles,
    }
