"""Runtime distributions of stochastic jobs, bounded to a support [lower, upper].

A reservation strategy must end with a reservation that no run exceeds, so every
distribution here has a bounded support. The distributions of Aupy et al. ("Reservation
strategies for stochastic jobs", IPDPS 2019, Table I) with unbounded support (exponential,
Weibull, gamma, lognormal, normal, Pareto) are **truncated at their 0.999 quantile** and
renormalised; the truncated law is the true one for sampling and for costs, and its upper
end is the user's upper bound (walltime) of the study.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rush.errors import ConfigError

TRUNCATION_QUANTILE = 0.999


@dataclass(frozen=True)
class BoundedRuntime:
    """A scipy continuous law restricted to [lower, upper] and renormalised."""

    name: str
    base: object  # a frozen scipy.stats distribution
    lower: float
    upper: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper) and 0 <= self.lower < self.upper):
            raise ConfigError(
                f"support [{self.lower}, {self.upper}] is not a finite interval of non-negative times",
                where=f"distribution {self.name}",
                fix="give 0 <= lower < upper, both finite",
            )
        f_lo = float(self.base.cdf(self.lower))
        mass = float(self.base.cdf(self.upper)) - f_lo
        if not mass > 0:
            raise ConfigError(
                f"the law puts no probability on [{self.lower}, {self.upper}]",
                where=f"distribution {self.name}",
                fix="choose a support where the law has mass",
            )
        # Computed once: the recurrence calls cdf/pdf point by point.
        object.__setattr__(self, "_f_lo", f_lo)
        object.__setattr__(self, "_mass", mass)

    def cdf(self, x):
        x = np.clip(np.asarray(x, dtype=float), self.lower, self.upper)
        return np.clip((self.base.cdf(x) - self._f_lo) / self._mass, 0.0, 1.0)

    def sf(self, x):
        return 1.0 - self.cdf(x)

    def pdf(self, x):
        x = np.asarray(x, dtype=float)
        inside = (x >= self.lower) & (x <= self.upper)
        return np.where(inside, self.base.pdf(x) / self._mass, 0.0)

    def ppf(self, q):
        q = np.clip(np.asarray(q, dtype=float), 0.0, 1.0)
        return np.clip(self.base.ppf(self._f_lo + q * self._mass), self.lower, self.upper)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.asarray(self.ppf(rng.random(n)), dtype=float)

    def mean(self) -> float:
        # Quantile-grid mean: E[X] = integral of ppf over (0, 1); midpoint rule on 4096 cells.
        q = (np.arange(4096) + 0.5) / 4096
        return float(np.mean(self.ppf(q)))


def bounded(name: str, base, lower: float | None = None, upper: float | None = None) -> BoundedRuntime:
    """``base`` on its own support, cut at the truncation quantile where it is unbounded."""
    lo, hi = (float(v) for v in base.support())
    if lower is not None:
        lo = max(lo, float(lower))
    if upper is not None:
        hi = min(hi, float(upper))
    if not math.isfinite(hi):
        hi = float(base.ppf(TRUNCATION_QUANTILE))
    return BoundedRuntime(name, base, max(lo, 0.0), hi)


def _catalogue() -> dict[str, Callable[[], BoundedRuntime]]:
    from scipy import stats

    # Parameters of Aupy et al., Table I (rates turned into scipy's scales).
    return {
        "exponential": lambda: bounded("exponential", stats.expon(scale=1.0)),
        "weibull": lambda: bounded("weibull", stats.weibull_min(0.5, scale=1.0)),
        "gamma": lambda: bounded("gamma", stats.gamma(2.0, scale=0.5)),
        "lognormal": lambda: bounded("lognormal", stats.lognorm(0.5, scale=math.exp(3.0))),
        "truncnormal": lambda: bounded("truncnormal", stats.norm(8.0, math.sqrt(2.0)), lower=0.0),
        "pareto": lambda: bounded("pareto", stats.pareto(3.0, scale=1.5)),
        "uniform": lambda: bounded("uniform", stats.uniform(10.0, 10.0)),
        "beta": lambda: bounded("beta", stats.beta(2.0, 2.0)),
        "boundedpareto": lambda: bounded("boundedpareto", stats.pareto(2.1, scale=1.0), upper=20.0),
    }


DISTRIBUTIONS: tuple[str, ...] = (
    "truncnormal",
    "exponential",
    "lognormal",
    "uniform",
    "weibull",
    "gamma",
    "beta",
    "pareto",
    "boundedpareto",
)


def distribution(name: str) -> BoundedRuntime:
    """A distribution of the study by name (see :data:`DISTRIBUTIONS`)."""
    table = _catalogue()
    if name not in table:
        raise ConfigError(
            f"unknown distribution {name!r}",
            where="--distributions",
            fix=f"choose among {', '.join(DISTRIBUTIONS)}",
        )
    return table[name]()
