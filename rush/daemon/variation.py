"""Variation predictors: which pending jobs would suffer performance variability if started now.

A predictor answers ``predict(jobs, now) -> list[bool]`` for jobs that carry a workload type
(``job.wtype``, or ``job.tags["wtype"]`` as the job_submit plugin records it). Flagged jobs
become ``PendingJob.variable``; the core then skips (the daemon holds) them, at most
``skip_limit`` times. Predictors are registered by name, so a learned one (AdaBoost over
window features) plugs in next to the shipped rule.

:class:`RuleVariationPredictor` is the rule "flag jobs whose workload type is ``network``
while the mean of the named counter over the last 5 minutes exceeds X". It reads the
counter from the feature store (``FeatureStore.window_features(None, now - window, now)``:
the mean over nodes of each node's mean) or from any callable ``(start, end) -> mean``, so
tests and the simulator use the same rule. :func:`variable_intervals` turns a counter time
series into the (start, end) intervals during which the rule fires, for
``rush.sim.engine.SimInputs.variable_intervals``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rush.errors import ConfigError

# (start, end) -> mean of the counter over [start, end), or None when there is no sample.
CounterMean = Callable[[float, float], float | None]


@runtime_checkable
class VariationPredictor(Protocol):
    name: str

    def predict(self, jobs: Sequence[Any], now: float) -> list[bool]:
        """One flag per job: True if it is predicted to suffer variability when started at ``now``."""
        ...


_PREDICTORS: dict[str, Callable[..., VariationPredictor]] = {}


def register_predictor(name: str) -> Callable[[type], type]:
    def decorate(cls: type) -> type:
        cls.name = name
        _PREDICTORS[name] = cls
        return cls

    return decorate


def predictor_names() -> list[str]:
    return sorted(_PREDICTORS)


def get_predictor(name: str, **options: Any) -> VariationPredictor:
    if name not in _PREDICTORS:
        raise ConfigError(
            f"unknown variation predictor {name!r}",
            where="variation.predictor",
            fix=f"use one of: {', '.join(predictor_names())}",
        )
    return _PREDICTORS[name](**options)


def workload_type(job: Any) -> str:
    """A job's workload type: ``job.wtype``, else its rush tag ``wtype``, else ""."""
    wtype = getattr(job, "wtype", None)
    if wtype is None:
        wtype = (getattr(job, "tags", None) or {}).get("wtype", "")
    return str(wtype)


def store_counter(store_path: str | Path, counter: str) -> CounterMean:
    """Mean of ``counter`` over [start, end) from the feature store (all nodes)."""
    from rush.collect.store import FeatureStore

    def mean(start: float, end: float) -> float | None:
        with FeatureStore(store_path) as store:
            return store.window_features(None, start, end).get(f"mean_{counter}")

    return mean


@register_predictor("rule")
class RuleVariationPredictor:
    """Flag ``workload_type`` jobs while the counter's mean over the last ``window`` s exceeds ``threshold``.

    ``source`` is a feature-store path or a callable ``(start, end) -> mean | None``.
    No data in the window means no flag (a silent collector must not hold the queue).
    """

    name = "rule"

    def __init__(
        self,
        source: str | Path | CounterMean,
        counter: str = "ib_xmit_bytes_per_s",
        threshold: float = 0.0,
        window: float = 300.0,
        workload_type: str = "network",
    ) -> None:
        if window <= 0:
            raise ConfigError("window must be > 0 seconds", where="variation.window", fix="e.g. 300")
        self.counter = counter
        self.threshold = float(threshold)
        self.window = float(window)
        self.workload_type = workload_type
        self.mean: CounterMean = source if callable(source) else store_counter(source, counter)
        # The last reading, kept for the journal's model outputs.
        self.last_mean: float | None = None

    def busy(self, now: float) -> bool:
        self.last_mean = self.mean(now - self.window, now)
        return self.last_mean is not None and self.last_mean > self.threshold

    def predict(self, jobs: Sequence[Any], now: float) -> list[bool]:
        sensitive = [workload_type(j) == self.workload_type for j in jobs]
        if not any(sensitive):
            self.last_mean = None
            return [False] * len(jobs)
        busy = self.busy(now)
        return [busy and s for s in sensitive]


def variable_intervals(
    times: np.ndarray, values: np.ndarray, threshold: float, window: float = 300.0
) -> np.ndarray:
    """The (k, 2) sorted, disjoint [start, end) intervals where the rule fires.

    At time t the rule averages the samples with ``t - window <= ts < t`` (the feature
    store's window) and fires when that mean exceeds ``threshold``. Which samples are in
    the window changes only at a sample time or a sample time plus ``window``, so the
    rule is evaluated once between consecutive breakpoints (exact, not sampled on a grid).
    """
    times = np.asarray(times, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if times.shape != values.shape or times.ndim != 1:
        raise ValueError("times and values must be 1-d arrays of the same length")
    if window <= 0:
        raise ValueError("window must be > 0")
    if len(times) == 0:
        return np.zeros((0, 2))
    order = np.argsort(times, kind="stable")
    times, values = times[order], values[order]
    cumulative = np.concatenate(([0.0], np.cumsum(values)))
    breaks = np.unique(np.concatenate((times, times + window)))
    # Membership is constant on (b_k, b_k+1]; evaluate inside each piece.
    probe = (breaks[:-1] + breaks[1:]) / 2.0
    lo = np.searchsorted(times, probe - window, side="left")
    hi = np.searchsorted(times, probe, side="left")
    count = hi - lo
    mean = np.divide(
        cumulative[hi] - cumulative[lo], count, out=np.full(len(probe), -np.inf), where=count > 0
    )
    fire = mean > threshold
    if not fire.any():
        return np.zeros((0, 2))
    # Merge consecutive firing pieces into intervals.
    edges = np.diff(np.concatenate(([False], fire, [False])).astype(np.int8))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return np.column_stack((breaks[starts], breaks[ends]))
