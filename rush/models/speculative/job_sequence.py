"""A job's speculative reservation sequence from its application's past runs: the one rule set.

The trace study (:mod:`rush.studies.speculative`) and the daemon
(:mod:`rush.planner.speculative`) both call :func:`job_sequence`; neither decides these rules.

**Which runs are samples.** The quantity a reservation must cover is how long a run holds its
allocation when no limit cuts it. So:

* a run that *ended by itself* (``COMPLETED``, ``FAILED``, ``OUT_OF_MEMORY``) is an observation
  of that length: a failed run held its allocation exactly as long as it ran, and a reservation
  needs to cover no more;
* a run *stopped from outside* (``TIMEOUT``/``DEADLINE`` at its walltime or at a speculative
  reservation, ``CANCELLED``, ``PREEMPTED``, ``NODE_FAIL``) is **right-censored**: it would have
  run longer than it did;
* anything else (``BOOT_FAIL``, unknown states, zero or non-finite lengths) is not a sample.

A speculative kill followed by a requeue is not a sample: the same job's final run is.

**How censored runs count.** Dropping them biases the law low (the longest runs are the ones cut),
and so does counting them as if they ended at the cut. We use the Kaplan–Meier estimate of the
runtime law from the observed and censored lengths (``scipy.stats.ecdf`` on ``CensoredData``, a
maintained implementation), with the mass the estimate leaves beyond the last observed length
put on the job's walltime (the run is killed there whatever its length). Every length at or above
the job's walltime becomes an observation at the walltime (it needs all of it). With no censored
run below the walltime, Kaplan–Meier *is* the empirical law, and the estimators of
:mod:`rush.models.speculative.strategy` run on the lengths as they always did. With censored runs: the
discrete programme runs on the Kaplan–Meier law; the continuous estimator fits each family by
censored maximum likelihood (scipy) and keeps the one closest to the Kaplan–Meier CDF;
mean-doubling starts from the Kaplan–Meier mean (restricted to the walltime).

**Rounding.** Each reservation is rounded *up* to the RJMS's time-limit granularity (Slurm: whole
minutes; Flux: seconds), capped at the walltime, strictly increasing and ending at it
(:func:`round_up`). The daemon takes the granularity from its backend; the study simulates a Slurm
site and uses :data:`SLURM_GRANULARITY`.

**History.** The last :data:`HISTORY` samples of the application (oldest first), and at least
:data:`MIN_HISTORY` of them (observed or censored) before a job gets a sequence.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rush.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from rush.models.speculative.distributions import BoundedRuntime
    from rush.models.speculative.strategy import CostModel, Strategy

# numpy, scipy and the estimators are imported where used: the daemon's configuration reads this
# module's defaults, and `rush --help` stays fast.

# Past runs of an application a job's sequence is built from (the daemon's ``speculative.samples``
# default, the study's ``--history`` default).
HISTORY = 20
# Samples needed before a job gets a sequence (the daemon's ``speculative.min_samples`` default,
# the study's value).
MIN_HISTORY = 5
# Slurm holds time limits in whole minutes; the study simulates a Slurm site.
SLURM_GRANULARITY = 60.0

ENDED_BY_ITSELF = frozenset({"COMPLETED", "FAILED", "OUT_OF_MEMORY"})
# Flux spells it CANCELED; Slurm CANCELLED.
STOPPED_FROM_OUTSIDE = frozenset({"TIMEOUT", "DEADLINE", "CANCELLED", "CANCELED", "PREEMPTED", "NODE_FAIL"})
# SWF status field: 1 completed, 0 failed (a timeout included), 5 cancelled.
SWF_COMPLETED, SWF_FAILED, SWF_CANCELLED = 1, 0, 5
# Estimators that read the samples (the upper-bound baseline does not).
CENSORING_AWARE = frozenset({"discrete", "continuous", "mean-doubling"})


@dataclass(frozen=True)
class PastRun:
    """One sample of an application: a run's length, and whether a limit or a person cut it."""

    length: float
    censored: bool


def past_run(state: str, length: float) -> PastRun | None:
    """The sample a run that ended in ``state`` after ``length`` seconds gives, or None."""
    if not (math.isfinite(length) and length > 0):
        return None
    if state in ENDED_BY_ITSELF:
        return PastRun(float(length), False)
    if state in STOPPED_FROM_OUTSIDE:
        return PastRun(float(length), True)
    return None


def swf_state(status: int, runtime: float, requested_time: float) -> str:
    """A trace run's end as an RJMS state: SWF's "failed" that reached its walltime is a TIMEOUT.

    Unknown status (-1) or a partial execution: by the clock alone (at or beyond the walltime
    a TIMEOUT, else COMPLETED), since the run was not cut otherwise as far as the trace says.
    """
    reached = requested_time > 0 and runtime >= requested_time
    if status == SWF_COMPLETED:
        return "COMPLETED"
    if status == SWF_CANCELLED:
        return "CANCELLED"
    if status == SWF_FAILED:
        return "TIMEOUT" if reached else "FAILED"
    return "TIMEOUT" if reached else "COMPLETED"


def round_up(sequence: Iterable[float], granularity: float, walltime: float) -> tuple[float, ...]:
    """The reservations as the RJMS can hold them: rounded up to its granularity (a run is never
    cut before its reservation), at most the walltime, strictly increasing, ending at it."""
    walltime = float(walltime)
    out: list[float] = []
    for t in sequence:
        # At least one unit: a limit of 0 is no limit at all to Slurm.
        held = max(math.ceil(t / granularity - 1e-9), 1) * granularity if granularity > 0 else float(t)
        held = min(held, walltime)
        if not out or held > out[-1]:
            out.append(held)
    if not out or out[-1] < walltime:
        out.append(walltime)
    return tuple(out)


def kaplan_meier_law(runs: Sequence[PastRun], upper: float) -> tuple[np.ndarray, np.ndarray]:
    """Support points and masses of the runtime law on (0, upper] (see the module doc)."""
    import numpy as np
    from scipy import stats

    observed = [min(r.length, upper) for r in runs if not r.censored or r.length >= upper]
    censored = [r.length for r in runs if r.censored and r.length < upper]
    if not observed:
        return np.array([upper]), np.array([1.0])
    if not censored:
        values, counts = np.unique(np.asarray(observed), return_counts=True)
        return values, counts / counts.sum()
    sf = stats.ecdf(stats.CensoredData(uncensored=observed, right=censored)).sf
    times, survival = np.asarray(sf.quantiles), np.asarray(sf.probabilities)
    mass = -np.diff(np.concatenate(([1.0], survival)))
    residual = float(survival[-1])  # beyond the last length seen: the walltime
    keep = mass > 0
    values, probs = times[keep], mass[keep]
    if residual > 0:
        if len(values) and values[-1] >= upper:
            probs[-1] += residual
        else:
            values, probs = np.append(values, upper), np.append(probs, residual)
    return values, probs / probs.sum()


def _fit_censored(runs: Sequence[PastRun], upper: float) -> tuple[BoundedRuntime, str] | None:
    """The family (censored MLE) whose CDF is closest to Kaplan–Meier's, truncated to [0, upper]."""
    import warnings

    import numpy as np
    from scipy import stats

    from rush.models.speculative.distributions import BoundedRuntime
    from rush.models.speculative.strategy import FAMILIES

    observed = np.asarray([min(r.length, upper) for r in runs if not r.censored or r.length >= upper])
    censored = np.asarray([r.length for r in runs if r.censored and r.length < upper])
    data = stats.CensoredData(uncensored=observed, right=censored)
    values, probs = kaplan_meier_law(runs, upper)
    km_cdf = np.cumsum(probs)
    best: tuple[float, BoundedRuntime, str] | None = None
    for label, scipy_name, zero_loc in FAMILIES:
        family = getattr(stats, scipy_name)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                params = family.fit(data, floc=0.0) if zero_loc else family.fit(data)
                law = BoundedRuntime(label, family(*params), 0.0, upper)
                sse = float(np.sum((law.cdf(values) - km_cdf) ** 2))
            except Exception:  # a family that cannot fit these samples is skipped
                continue
        if math.isfinite(sse) and (best is None or sse < best[0]):
            best = (sse, law, label)
    return None if best is None else (best[1], best[2])


def _censored_strategy(estimator: str, runs: Sequence[PastRun], upper: float, cost: CostModel) -> Strategy:
    """An estimator's strategy when some runs are censored below the walltime."""
    import numpy as np

    from rush.models.speculative.strategy import (
        FIT_GRID_POINTS,
        MEAN_WINDOW,
        Strategy,
        discretised_optimum,
        optimal_discrete,
    )

    n_cut = sum(r.censored and r.length < upper for r in runs)
    what = f"{len(runs)} samples, {n_cut} censored: Kaplan–Meier"
    if estimator == "mean-doubling":
        values, probs = kaplan_meier_law(runs[-MEAN_WINDOW:], upper)
        seq = [float(np.dot(values, probs))]
        while seq[-1] < upper:
            seq.append(seq[-1] * 2.0)
        return Strategy(round_up(seq, 0.0, upper), f"mean-doubling on {what} mean")
    values, probs = kaplan_meier_law(runs, upper)
    if estimator == "continuous" and sum(not r.censored for r in runs) >= 2:
        fitted = _fit_censored(runs, upper)
        if fitted is not None:
            best = discretised_optimum(fitted[0], cost, points=FIT_GRID_POINTS)
            return Strategy(best.reservations, f"continuous: {fitted[1]} fitted to {what} (censored MLE)")
    res, _ = optimal_discrete(values, probs, cost)
    return Strategy(round_up(res, 0.0, upper), f"{estimator} on {what} law")


def job_sequence(
    runs: Sequence[PastRun],
    walltime: float,
    estimator: str,
    granularity: float,
    cost: CostModel | None = None,
    min_history: int = MIN_HISTORY,
) -> Strategy:
    """The reservation sequence of a job with walltime ``walltime`` from ``runs`` (oldest first).

    Empty when the job keeps its walltime (too little history, or the ``walltime`` estimator);
    the note says why. Otherwise rounded to ``granularity`` and ending at the walltime.
    ``cost`` defaults to pay-what-you-reserve (alpha = 1).
    """
    from rush.models.speculative.strategy import CostModel, Strategy, estimate_strategy

    cost = cost if cost is not None else CostModel()
    if not (math.isfinite(walltime) and walltime > 0):
        raise ConfigError(
            f"walltime {walltime!r} is not a positive number of seconds",
            where="speculative sequence",
            fix="a job needs a finite walltime > 0 for its sequence to end at",
        )
    if estimator == "walltime":
        return Strategy((), "the walltime estimator: no sequence")
    if len(runs) < min_history:
        return Strategy((), f"{len(runs)} sample(s) < min_samples {min_history}")
    if estimator in CENSORING_AWARE and any(r.censored and r.length < walltime for r in runs):
        strategy = _censored_strategy(estimator, runs, walltime, cost)
    else:
        lengths = [min(r.length, walltime) for r in runs]
        strategy = estimate_strategy(estimator, lengths, walltime, cost)
    return Strategy(round_up(strategy.reservations, granularity, walltime), strategy.note)
