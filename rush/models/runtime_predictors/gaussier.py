"""Gaussier, Glesser, Reis & Trystram's runtime predictor (SC'15), as rush reads it.

A linear model over degree-2 polynomial features of what is known at submission, trained
with an asymmetric loss that makes underprediction costlier
(:class:`~rush.models.runtime_predictors.asymmetric_regression.AsymmetricRidgeRegressor`).

Features of a job at its submission (:data:`FEATURES`), from its user's finished jobs (the
paper's list, as their simulator ``predictsim`` builds it, minus the four about the user's
jobs running at that moment, which the walk-forward's history of finished jobs does not hold):
the user's last three runtimes (each capped by the request; the request when missing), the
request, the means of the last two and three, the mean of all the user's runtimes, seconds
since the user's last job ended, processors over the user's mean processors, the time of
day and the day of the week (cos, sin; from the trace's clock), processors.

Learning: the paper updates its model online at every completion (normalised adaptive
gradient); rush refits weekly (``retrain_every``), as the thesis's protocol does for every
learner, on the ``max_train_jobs`` most recently finished jobs, with each job's features as
they were at its submission. Before the first fit the prediction is the request.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from rush.models.runtime_predictors.asymmetric_regression import AsymmetricRidgeRegressor
from rush.models.runtime_predictors.protocol import RuntimeJobs

WEEK = 7 * 86400.0
DAY = 86400.0
FEATURES: tuple[str, ...] = (
    "last_runtime_1",
    "last_runtime_2",
    "last_runtime_3",
    "requested_time",
    "mean_last_2",
    "mean_last_3",
    "user_mean_runtime",
    "since_user_last_end",
    "procs_over_user_mean",
    "cos_time_of_day",
    "sin_time_of_day",
    "cos_day_of_week",
    "sin_day_of_week",
    "procs",
)


class _UserState:
    __slots__ = ("last", "n", "runtime_sum", "procs_sum", "last_end")

    def __init__(self) -> None:
        self.last: list[float] = []  # most recent first, at most three
        self.n = 0
        self.runtime_sum = 0.0
        self.procs_sum = 0.0
        self.last_end = math.nan


def job_features(state: _UserState | None, submit: float, procs: int, requested: float) -> list[float]:
    """The :data:`FEATURES` of one job from its user's state at its submission."""
    last = state.last if state is not None else []
    lags = [min(requested, last[k]) if k < len(last) else requested for k in range(3)]
    seen = len(last)
    mean2 = sum(lags[:2]) / 2 if seen >= 2 else (lags[0] if seen == 1 else requested)
    mean3 = sum(lags) / 3 if seen >= 3 else mean2
    n = state.n if state is not None else 0
    user_mean = state.runtime_sum / n if n else 0.0
    since = submit - state.last_end if state is not None and state.last_end == state.last_end else 0.0
    procs_ratio = procs / (state.procs_sum / n) if n and state.procs_sum > 0 else 0.0
    day = 2 * math.pi * (submit % DAY) / DAY
    week = 2 * math.pi * (submit % WEEK) / WEEK
    return [
        *lags,
        requested,
        mean2,
        mean3,
        user_mean,
        max(since, 0.0),
        procs_ratio,
        math.cos(day),
        math.sin(day),
        math.cos(week),
        math.sin(week),
        float(procs),
    ]


def gaussier_model(underprediction_cost: float = 10.0, alpha: float = 1.0) -> Pipeline:
    """Scaled features, their degree-2 polynomial, scaled again, the asymmetric regression."""
    return make_pipeline(
        StandardScaler(),
        PolynomialFeatures(degree=2, include_bias=False),
        StandardScaler(),
        AsymmetricRidgeRegressor(underprediction_cost=underprediction_cost, alpha=alpha),
    )


class GaussierPredictor:
    """Polynomial regression with an asymmetric loss, refit weekly (module docstring).

    Hyperparameters fixed before any simulation: underprediction costs 10 times an equal
    overprediction, ridge penalty 1 on standardised features, the 50,000 most recently
    finished jobs per refit (a cost bound)."""

    def __init__(
        self,
        underprediction_cost: float = 10.0,
        alpha: float = 1.0,
        max_train_jobs: int = 50_000,
        retrain_every: float | None = WEEK,
    ) -> None:
        self.underprediction_cost = underprediction_cost
        self.alpha = alpha
        self.max_train_jobs = max_train_jobs
        self.retrain_every = retrain_every
        self.users_: dict[int, _UserState] = {}
        self.rows_: dict[int, int] = {}  # job id -> row of its features at submission
        self.features_: list[list[float]] = []
        self.model_: Pipeline | None = None
        self.linear_: tuple[np.ndarray, ...] = ()

    def observe(self, done: RuntimeJobs) -> None:
        for user, runtime, procs, end in zip(
            done.user.tolist(), done.runtime.tolist(), done.procs.tolist(), done.end.tolist(), strict=True
        ):
            if user < 0 or not (0.0 <= runtime < math.inf):
                continue
            state = self.users_.get(user)
            if state is None:
                state = self.users_[user] = _UserState()
            state.last = [runtime, *state.last[:2]]
            state.n += 1
            state.runtime_sum += runtime
            state.procs_sum += procs
            state.last_end = end

    def fit(self, history: RuntimeJobs) -> GaussierPredictor:
        ids = history.job_id[-self.max_train_jobs :].tolist()
        runtime = history.runtime[-self.max_train_jobs :]
        keep = [k for k, j in enumerate(ids) if j in self.rows_ and 0.0 <= runtime[k] < math.inf]
        if len(keep) < 2:
            return self  # nothing to learn from yet: keep predicting as before
        X = np.array([self.features_[self.rows_[ids[k]]] for k in keep])
        y = runtime[keep]
        self.model_ = gaussier_model(self.underprediction_cost, self.alpha).fit(X, y)
        self.linear_ = _folded(self.model_)
        return self

    def predict(self, jobs: RuntimeJobs) -> np.ndarray:
        rows = []
        for job_id, user, submit, procs, requested in zip(
            jobs.job_id.tolist(),
            jobs.user.tolist(),
            jobs.submit.tolist(),
            jobs.procs.tolist(),
            jobs.requested_time.tolist(),
            strict=True,
        ):
            x = job_features(self.users_.get(user) if user >= 0 else None, submit, procs, requested)
            self.rows_[job_id] = len(self.features_)
            self.features_.append(x)
            rows.append(x)
        if self.model_ is None or not rows:
            return np.array(jobs.requested_time, dtype=np.float64)
        X = np.array(rows)
        out = np.array(jobs.requested_time, dtype=np.float64)
        ok = np.isfinite(X).all(axis=1)  # a NaN or infinite request: that job falls back to it
        if ok.any():
            # The paper's predictor floors its predictions at one second (a linear model goes
            # below zero for the shortest jobs); the core caps them by the request.
            out[ok] = np.maximum(_predict_folded(self.linear_, X[ok]), 1.0)
        return out


def _folded(model: Pipeline) -> tuple[np.ndarray, ...]:
    """The fitted pipeline as arrays (first scaler, the degree-2 terms' column pairs, the
    second scaler folded into the coefficients): a prediction per submission costs
    microseconds, not a pipeline call."""
    first, poly, second, reg = (step for _, step in model.steps)
    n_in = first.mean_.shape[0]
    left, right = [], []
    for powers in poly.powers_:
        idx = np.flatnonzero(powers)
        if powers.sum() == 1:
            left.append(idx[0])
            right.append(n_in)  # times the column of ones
        elif len(idx) == 1:
            left.append(idx[0])
            right.append(idx[0])
        else:
            left.append(idx[0])
            right.append(idx[1])
    coef = reg.coef_ / second.scale_
    intercept = reg.intercept_ - float(np.dot(second.mean_, coef))
    return first.mean_, first.scale_, np.array(left), np.array(right), coef, np.array([intercept])


def _predict_folded(linear: tuple[np.ndarray, ...], X: np.ndarray) -> np.ndarray:
    mean, scale, left, right, coef, intercept = linear
    z = np.hstack([(X - mean) / scale, np.ones((len(X), 1))])
    return (z[:, left] * z[:, right]) @ coef + intercept[0]
