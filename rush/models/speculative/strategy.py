"""Speculative reservations for stochastic jobs (Aupy et al., IPDPS 2019; Gainaru & Pallez, ScalA 2019).

A job's runtime X is unknown, drawn from a law D on [a, b]. A *strategy* S = (t1 < t2 < ...)
reserves t1; if X > t1 the run is killed at t1, its work lost, and t2 is reserved, and so on.
Reserving t for a job of length x costs ``alpha*t + beta*min(x, t) + gamma`` (alpha: pay what
you reserve, beta: pay what you use, gamma: a fixed cost per submission, e.g. the wait).
With t0 = 0 the expected cost is (Aupy et al., eq. 1)::

    E(S) = beta*E[X] + sum_{i>=0} (alpha*t_{i+1} + beta*t_i + gamma) * P(X > t_i)

(each failed attempt i costs alpha*t_i + beta*t_i + gamma, the successful one alpha*t_k +
beta*X + gamma). :func:`expected_cost` computes it exactly from the survival function.

Optimal strategies:

* **discrete law** (values v1 < ... < vm): the optimal reservations are among the values, and
  the dynamic programme ``C(i) = min_{j>i} (alpha*v_j + beta*v_i + gamma)*P(X > v_i) + C(j)``,
  ``C(m) = 0``, gives them in O(m^2) (:func:`optimal_discrete`);
* **continuous law**: a strategy satisfies, at an interior optimum, the published recurrence
  (derivative of E(S) in t_i set to zero)::

      t_{i+1} = S(t_{i-1})/f(t_i) + (beta/alpha)*(S(t_i)/f(t_i) - t_i) - gamma/alpha

  so S is fixed by t1; Aupy et al.'s BRUTE-FORCE tries t1 on a grid and keeps the cheapest
  sequence (:func:`recurrence_strategy`). We also run the discrete programme on a fine
  discretisation of D (the mass of each cell given to its right end, which keeps every strategy
  feasible) and keep the cheaper of the two, both costed exactly under D
  (:func:`optimal_continuous`).

Estimators from n past runs (Gainaru & Pallez):

* **discrete**: the programme over the empirical law of the samples (:func:`discrete_estimator`);
* **continuous**: fit a continuous law to the samples and optimise for it
  (:func:`continuous_estimator`). The authors' tool (iSBatch's ``DistInterpolation``) fits a
  list of scipy families by maximum likelihood and keeps the one whose curve is closest to the
  empirical one (least squares); we do the same over normal, exponential, lognormal, gamma,
  Weibull and uniform (location fixed at 0 for the positive families), judged on the CDF at
  the samples, then truncate the fit to [0, upper bound].

Baselines: one reservation of the user's upper bound, and the mean of the last 10 runs doubled
at each failure (:func:`upper_bound_strategy`, :func:`mean_doubling_strategy`).

Every strategy ends at the user's upper bound when one is given (a run never exceeds it), as
in the authors' tool. Degenerate input is answered, not refused: all samples equal gives a
single reservation at that value (then the upper bound, if larger); no sample gives the upper
bound alone; the ``note`` of the :class:`Strategy` says so.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rush.errors import ConfigError
from rush.models.speculative.distributions import BoundedRuntime

# Support points of a discretised law: the O(m^2) programme stays at a few milliseconds.
GRID_POINTS = 600
# Beyond this many distinct samples the empirical law is binned at its quantiles, so that no
# history makes the O(m^2) programme do work out of proportion (say so in the note).
MAX_SUPPORT = 2000
MEAN_WINDOW = 10
# The fitted law's discretisation: coarser than the optimum's (an estimate is run per job).
FIT_GRID_POINTS = 300


@dataclass(frozen=True)
class CostModel:
    """Cost of reserving t for a run of length x: alpha*t + beta*min(x, t) + gamma."""

    alpha: float = 1.0
    beta: float = 0.0
    gamma: float = 0.0

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ConfigError(
                    f"{name} = {value!r} must be a finite number >= 0",
                    where=f"cost model {name}",
                    fix="costs are non-negative: e.g. alpha=1, beta=0, gamma=0 (pay what you reserve)",
                )
        if self.alpha == 0 and self.beta == 0 and self.gamma == 0:
            raise ConfigError(
                "alpha, beta and gamma are all 0: every strategy costs nothing",
                where="cost model",
                fix="give alpha > 0 (pay what you reserve) or beta > 0",
            )


@dataclass(frozen=True)
class Strategy:
    """Reservations t1 < t2 < ... and a note on how they were obtained."""

    reservations: tuple[float, ...]
    note: str = ""

    def __len__(self) -> int:
        return len(self.reservations)


def _check_times(values: Sequence[float] | np.ndarray, where: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    bad = ~np.isfinite(arr) | (arr <= 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ConfigError(
            f"value #{k} is {arr[k]!r}; runtimes and reservations must be finite and > 0",
            where=where,
            fix="drop failed or zero-length runs from the history before estimating",
        )
    return arr


def _check_upper(upper: float | None, where: str = "upper bound") -> float | None:
    if upper is None:
        return None
    if not (math.isfinite(upper) and upper > 0):
        raise ConfigError(
            f"{upper!r} must be finite and > 0", where=where, fix="give the walltime in seconds"
        )
    return float(upper)


def expected_cost(reservations: Sequence[float], law: BoundedRuntime, cost: CostModel = CostModel()) -> float:
    """E(S) under ``law`` (formula in the module docstring); inf if S does not cover the support."""
    t = _check_times(reservations, "strategy")
    if len(t) == 0 or np.any(np.diff(t) <= 0):
        raise ConfigError("a strategy is a non-empty increasing sequence", where="strategy")
    if t[-1] < law.upper * (1 - 1e-12):
        return math.inf
    prev = np.concatenate(([0.0], t[:-1]))
    survive = law.sf(prev)
    survive[0] = 1.0
    total = float(np.sum((cost.alpha * t + cost.beta * prev + cost.gamma) * survive))
    if cost.beta:
        total += cost.beta * law.mean()
    return total


def empirical_cost(
    reservations: Sequence[float], runs: Sequence[float], cost: CostModel = CostModel()
) -> float:
    """Mean cost of S over observed run lengths (a Monte Carlo estimate of E(S))."""
    t = np.asarray(reservations, dtype=float)
    x = np.asarray(runs, dtype=float)
    k = np.searchsorted(t, x, side="left")  # index of the first reservation >= x
    if np.any(k >= len(t)):
        return math.inf
    csum = np.concatenate(([0.0], np.cumsum(t)))
    failed = csum[k]  # sum of the reservations that failed
    per_run = cost.alpha * (failed + t[k]) + cost.beta * (failed + x) + cost.gamma * (k + 1)
    return float(per_run.mean())


def optimal_discrete(
    values: np.ndarray, probs: np.ndarray, cost: CostModel = CostModel()
) -> tuple[np.ndarray, float]:
    """Optimal strategy for a discrete law (values increasing, probabilities summing to 1).

    Returns (reservations, C(0)); C(0) excludes the constant beta*E[X].
    """
    v = np.asarray(values, dtype=float)
    p = np.asarray(probs, dtype=float)
    m = len(v)
    # sf[i] = P(X > t_i) for the state "t_i failed"; state 0 is the start (t_0 = 0).
    sf = np.empty(m + 1)
    sf[0] = 1.0
    sf[1:] = np.clip(1.0 - np.cumsum(p), 0.0, 1.0)
    sf[m] = 0.0
    t_state = np.concatenate(([0.0], v))
    best = np.zeros(m + 1)
    choice = np.full(m + 1, m, dtype=np.int64)
    for i in range(m - 1, -1, -1):
        if sf[i] <= 0.0:
            continue  # nothing left to cover: the chain never reaches this state
        # next reservation v[j-1] for j in i+1..m (state j)
        cand = cost.alpha * v[i:] * sf[i] + best[i + 1 :]
        k = int(np.argmin(cand))
        best[i] = cand[k] + (cost.beta * t_state[i] + cost.gamma) * sf[i]
        choice[i] = i + 1 + k
    out = []
    i = 0
    while i < m:
        i = int(choice[i])
        out.append(v[i - 1])
        if sf[i] <= 0.0:
            break
    return np.asarray(out), float(best[0])


def _close(reservations: Sequence[float], upper: float | None) -> tuple[float, ...]:
    """Strictly increasing, ending at the upper bound when one is given."""
    out: list[float] = []
    for t in reservations:
        t = float(t)
        if upper is not None and t >= upper:
            break
        if not out or t > out[-1]:
            out.append(t)
    if upper is not None:
        out.append(upper)
    return tuple(out)


def _grid(law: BoundedRuntime, points: int) -> tuple[np.ndarray, np.ndarray]:
    """A discretisation of ``law``: equal-time and equal-probability points, mass to the right end."""
    eq_time = np.linspace(law.lower, law.upper, points + 1)[1:]
    eq_prob = law.ppf(np.linspace(0.0, 1.0, points + 1)[1:])
    v = np.unique(np.concatenate((eq_time, eq_prob, [law.upper])))
    v = v[v > law.lower]
    c = law.cdf(v)
    p = np.diff(np.concatenate(([0.0], c)))
    keep = p > 0
    keep[-1] = True
    v, p = v[keep], np.clip(p[keep], 0.0, None)
    return v, p / p.sum()


def discretised_optimum(
    law: BoundedRuntime, cost: CostModel = CostModel(), points: int = GRID_POINTS
) -> Strategy:
    """The discrete programme on a discretisation of ``law`` (a feasible, near-optimal strategy)."""
    v, p = _grid(law, points)
    res, _ = optimal_discrete(v, p, cost)
    return Strategy(_close(res, law.upper), f"discretised programme on {len(v)} points")


def recurrence_strategy(
    law: BoundedRuntime, t1: float, cost: CostModel = CostModel(), limit: int = 500
) -> tuple[float, ...]:
    """The sequence the published recurrence builds from t1, closed at the upper bound."""
    if cost.alpha <= 0:
        raise ConfigError("the recurrence divides by alpha", where="cost model alpha", fix="use alpha > 0")
    seq = [float(t1)]
    prev = 0.0
    while seq[-1] < law.upper and len(seq) < limit:
        ti = seq[-1]
        f = float(law.pdf(ti))
        if not f > 0:
            break
        s_prev = 1.0 if prev == 0.0 else float(law.sf(prev))
        s_i = float(law.sf(ti))
        nxt = s_prev / f + (cost.beta / cost.alpha) * (s_i / f - ti) - cost.gamma / cost.alpha
        if not (math.isfinite(nxt) and nxt > ti):
            break  # not a valid continuation: finish with the upper bound
        prev = ti
        seq.append(nxt)
    return _close(seq, law.upper)


def optimal_continuous(law: BoundedRuntime, cost: CostModel = CostModel(), t1_points: int = 300) -> Strategy:
    """Full-knowledge optimum: the better of BRUTE-FORCE over t1 and the discretised programme."""
    best = discretised_optimum(law, cost)
    best_cost = expected_cost(best.reservations, law, cost)
    if cost.alpha > 0:
        starts = np.unique(law.ppf(np.linspace(0.0, 1.0, t1_points + 1)[1:]))
        starts = starts[starts > 0]
        for t1 in starts:
            seq = recurrence_strategy(law, float(t1), cost)
            c = expected_cost(seq, law, cost)
            if c < best_cost:
                best, best_cost = Strategy(seq, f"recurrence from t1 = {t1:.6g}"), c
    return best


def empirical_law(samples: Sequence[float]) -> tuple[np.ndarray, np.ndarray, str]:
    """Distinct values and their frequencies; binned at quantiles beyond MAX_SUPPORT values."""
    x = np.sort(_check_times(samples, "samples"))
    values, counts = np.unique(x, return_counts=True)
    note = ""
    if len(values) > MAX_SUPPORT:
        # Quantile bins, mass to the right end: a reservation at an edge covers its bin.
        edges = np.unique(np.quantile(x, np.linspace(0, 1, MAX_SUPPORT + 1)[1:]))
        idx = np.searchsorted(edges, x, side="left")
        counts = np.bincount(idx, minlength=len(edges))
        values = edges
        keep = counts > 0
        values, counts = values[keep], counts[keep]
        note = f"; {len(x)} samples binned at {len(values)} quantiles"
    return values, counts / counts.sum(), note


def upper_bound_strategy(upper: float) -> Strategy:
    """Baseline: one reservation of the user's upper bound (the plain walltime)."""
    upper = _check_upper(upper)
    if upper is None:
        raise ConfigError("the upper-bound baseline needs an upper bound", where="upper bound")
    return Strategy((upper,), "user's upper bound")


def mean_doubling_strategy(
    samples: Sequence[float], upper: float | None, window: int = MEAN_WINDOW
) -> Strategy:
    """Baseline: the mean of the last ``window`` runs, doubled at each failure, closed at the bound."""
    x = _check_times(samples, "samples")
    upper = _check_upper(upper)
    if len(x) == 0:
        return upper_bound_strategy(upper) if upper is not None else _no_history()
    t = float(np.mean(x[-window:]))
    seq = [t]
    top = upper if upper is not None else float(x.max())
    while seq[-1] < top:
        seq.append(seq[-1] * 2.0)
    if upper is None:
        return Strategy(tuple(seq), f"mean of the last {min(window, len(x))} runs, doubled")
    return Strategy(_close(seq, upper), f"mean of the last {min(window, len(x))} runs, doubled")


def _no_history():
    raise ConfigError(
        "no past run and no upper bound: nothing to reserve",
        where="samples",
        fix="give the user's walltime as the upper bound, or at least one past run",
    )


def _degenerate(x: np.ndarray, upper: float | None, what: str) -> Strategy | None:
    if len(x) == 0:
        if upper is None:
            _no_history()
        return Strategy((upper,), f"{what}: no past run, the upper bound alone")
    if np.all(x == x[0]):
        note = f"{what}: all {len(x)} samples equal {x[0]:.6g}: a single reservation at that value"
        if upper is not None and upper > x[0]:
            note += ", then the upper bound"
        return Strategy(_close([x[0]], upper) if upper is not None else (float(x[0]),), note)
    return None


def discrete_estimator(
    samples: Sequence[float], upper: float | None = None, cost: CostModel = CostModel()
) -> Strategy:
    """Optimal strategy for the empirical law of ``samples`` (Gainaru & Pallez's discrete approach)."""
    x = _check_times(samples, "samples")
    upper = _check_upper(upper)
    if upper is not None and len(x) and x.max() > upper:
        upper = float(x.max())  # a past run beyond the bound: the bound was not one
    degenerate = _degenerate(x, upper, "discrete")
    if degenerate is not None:
        return degenerate
    values, probs, note = empirical_law(x)
    res, _ = optimal_discrete(values, probs, cost)
    return Strategy(
        _close(res, upper) if upper is not None else tuple(res), f"discrete on {len(x)} samples{note}"
    )


# Families fitted by the continuous estimator: (name, scipy name, fixed location at 0).
FAMILIES: tuple[tuple[str, str, bool], ...] = (
    ("normal", "norm", False),
    ("exponential", "expon", True),
    ("lognormal", "lognorm", True),
    ("gamma", "gamma", True),
    ("weibull", "weibull_min", True),
    ("uniform", "uniform", False),
)


def _weibull_mle(x: np.ndarray) -> tuple[float, float, float]:
    """Weibull MLE with location 0: the shape solves the score equation (one root, brentq).

    scipy's generic fit runs Nelder-Mead (~0.1 s); this gives the same estimate in ~1 ms.
    """
    from scipy.optimize import brentq

    logs = np.log(x)
    scaled = logs - logs.max()  # x^k / max(x)^k: no overflow for large k

    def score(k: float) -> float:
        w = np.exp(k * scaled)
        return float(np.dot(w, logs) / w.sum() - 1.0 / k - logs.mean())

    shape = brentq(score, 1e-3, 1e3)
    scale = float(np.exp(logs.max()) * np.mean(np.exp(shape * scaled)) ** (1.0 / shape))
    return shape, 0.0, scale


def fit_law(samples: Sequence[float], upper: float | None = None) -> tuple[BoundedRuntime, str]:
    """The family (MLE) whose CDF is closest to the empirical one, truncated to [0, upper]."""
    from scipy import stats

    from rush.models.speculative.distributions import BoundedRuntime as _BR

    x = np.sort(_check_times(samples, "samples"))
    hi = float(upper) if upper is not None else float(x.max())
    ecdf = (np.arange(1, len(x) + 1) - 0.5) / len(x)
    best: tuple[float, _BR, str] | None = None
    for label, scipy_name, zero_loc in FAMILIES:
        family = getattr(stats, scipy_name)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                if scipy_name == "weibull_min":
                    params = _weibull_mle(x)
                else:
                    params = family.fit(x, floc=0.0) if zero_loc else family.fit(x)
                frozen = family(*params)
                law = _BR(label, frozen, 0.0, hi)
                sse = float(np.sum((law.cdf(x) - ecdf) ** 2))
            except Exception:  # a family that cannot fit these samples is skipped
                continue
        if math.isfinite(sse) and (best is None or sse < best[0]):
            best = (sse, law, label)
    if best is None:
        raise ConfigError("no family fits the samples", where="samples", fix="use the discrete estimator")
    return best[1], best[2]


def continuous_estimator(
    samples: Sequence[float], upper: float | None = None, cost: CostModel = CostModel()
) -> Strategy:
    """Fit a continuous law to ``samples``, then optimise for it (Gainaru & Pallez's continuous approach).

    With fewer than 2 distinct samples no family can be fitted: the discrete answer is
    returned and the note says so.
    """
    x = _check_times(samples, "samples")
    upper = _check_upper(upper)
    if upper is not None and len(x) and x.max() > upper:
        upper = float(x.max())
    degenerate = _degenerate(x, upper, "continuous")
    if degenerate is not None:
        return degenerate
    if len(np.unique(x)) < 2:  # pragma: no cover - covered by _degenerate
        return discrete_estimator(x, upper, cost)
    try:
        law, family = fit_law(x, upper)
    except ConfigError:
        fallback = discrete_estimator(x, upper, cost)
        return Strategy(fallback.reservations, "continuous: no family fits, discrete used")
    best = discretised_optimum(law, cost, points=FIT_GRID_POINTS)
    res = best.reservations
    if upper is None:
        res = _close(res, float(x.max()))
    return Strategy(res, f"continuous: {family} fitted to {len(x)} samples")


ESTIMATORS = ("discrete", "continuous", "mean-doubling", "upper-bound")


def estimate_strategy(
    estimator: str, samples: Sequence[float], upper: float | None, cost: CostModel = CostModel()
) -> Strategy:
    """One of :data:`ESTIMATORS` from past runs and the user's upper bound."""
    if estimator == "discrete":
        return discrete_estimator(samples, upper, cost)
    if estimator == "continuous":
        return continuous_estimator(samples, upper, cost)
    if estimator == "mean-doubling":
        return mean_doubling_strategy(samples, upper)
    if estimator == "upper-bound":
        return upper_bound_strategy(upper)
    raise ConfigError(
        f"unknown estimator {estimator!r}", where="estimator", fix=f"choose among {', '.join(ESTIMATORS)}"
    )
