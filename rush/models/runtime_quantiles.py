"""rush's runtime predictor: a distribution of each job's runtime, not one number (issue 29).

``RuntimeQuantileRegressor(quantiles=(0.1, 0.25, 0.5, 0.75, 0.9), max_iter=40,
learning_rate=0.1, max_leaf_nodes=15, min_samples_leaf=20, random_state=0, divider=None)``:
one scikit-learn ``HistGradientBoostingRegressor(loss="quantile")`` per quantile, fitted on
log(1 + runtime) (runtimes span seconds to days; the log makes the pinball loss care about
ratios). Predictions are sorted per job (quantile models fitted apart can cross), mapped
back to seconds and clipped to [0, request] (the request is feature 0, log(1 + p~): the
job is killed there). 40 small steps (rate 0.1) of 15-leaf trees: 20 steps at 0.2 of 31
leaves cost half the prediction time of 40 at 0.1 but kept only 0.684 of the class-clairvoyant
gain on SDSC-SP2 (target 0.75); 15 leaves keep the 40 steps within the 50 ms target
(sim/runtime_predictions/estimates/README.md, "Boosting size"). Each use takes the quantile it needs:

* :meth:`predict_quantiles` (n, k) seconds; :meth:`predict` the median; :meth:`predict_mean`
  the distribution's mean (start estimates add runtimes up: they need the mean);
* :meth:`proba_below` P(runtime <= t) per job, read off the predicted quantile function
  (linear in log runtime between the quantiles, linear to 0 and 1 beyond the outer ones,
  1 at the request): runtime classes with ``divider``; :meth:`predict_proba` gives
  [P(small), P(large)] for ``divider`` (scikit-learn's classifier convention, classes 0 small
  and 1 large).

Bad input: a row with a NaN or infinite feature gets the request as every quantile (the
documented fallback; P(small) then 1 if the request is within the divider, else 0); a NaN
or negative request is refused (ValueError): there is nothing sound to publish. A prediction
is never negative, never NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from rush.core.remaining_runtime import quantile_knots
from rush.models.runtime_quantiles_features import REQUEST_COLUMN
from rush.models.trees import compile_regressors

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
SMALL, LARGE = 0, 1
# Where P(small) comes from: the quantile function, a classification head, or their mean.
CLASS_HEADS = ("quantiles", "head", "blend")


class RuntimeQuantileRegressor(RegressorMixin, BaseEstimator):
    def __init__(
        self,
        quantiles: tuple[float, ...] = QUANTILES,
        max_iter: int = 40,
        learning_rate: float = 0.1,
        max_leaf_nodes: int = 15,
        min_samples_leaf: int = 20,
        random_state: int | None = 0,
        divider: float | None = None,
        class_head: str = "quantiles",
    ) -> None:
        self.quantiles = quantiles
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state
        self.divider = divider
        self.class_head = class_head

    def __setstate__(self, state: dict) -> None:
        state.setdefault("class_head", "quantiles")  # pickled before class heads existed
        state.setdefault("mean_bands_", None)  # pickled before mean bands: factor 1
        super().__setstate__(state)
        if "levels_" in self.__dict__:
            self._compile()

    def _levels(self) -> np.ndarray:
        levels = np.asarray(self.quantiles, dtype=np.float64).reshape(-1)
        if not len(levels) or not np.all((levels > 0) & (levels < 1)) or np.any(np.diff(levels) <= 0):
            raise ValueError(f"quantiles {self.quantiles!r} must increase strictly within (0, 1)")
        return levels

    def fit(self, X: Any, y: Any) -> RuntimeQuantileRegressor:
        """``y``: runtimes in seconds. Rows whose runtime is NaN or negative are left out (a
        broken record); runtimes past the request are clipped to it."""
        from sklearn.ensemble import HistGradientBoostingRegressor

        levels = self._levels()
        if self.class_head not in CLASS_HEADS:
            raise ValueError(f"class_head {self.class_head!r} is not one of {CLASS_HEADS}")
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.ndim != 2 or len(X) != len(y):
            raise ValueError(f"X has shape {X.shape}, y has {len(y)} values")
        keep = np.isfinite(y) & (y >= 0) & np.isfinite(X).all(axis=1)
        if not keep.any():
            raise ValueError("no job with a usable runtime (finite, >= 0) to fit on")
        X, y = X[keep], y[keep]
        target = np.minimum(np.log1p(y), X[:, REQUEST_COLUMN])
        self.n_features_in_ = X.shape[1]
        self.levels_ = levels
        if np.ptp(target) == 0.0:  # every runtime alike (an early week): that value, certain
            self.models_ = None
            self.constant_ = float(target[0])
        else:
            self.models_ = [
                HistGradientBoostingRegressor(
                    loss="quantile",
                    quantile=float(q),
                    max_iter=self.max_iter,
                    learning_rate=self.learning_rate,
                    max_leaf_nodes=self.max_leaf_nodes,
                    min_samples_leaf=self.min_samples_leaf,
                    early_stopping=False,  # a random validation split would make refits depend on it
                    random_state=self.random_state,
                ).fit(X, target)
                for q in levels
            ]
        self.head_ = None
        self.mean_bands_ = None  # set by calibrate_mean from out-of-sample means
        if self.class_head != "quantiles":  # the classes' own model, on the same rows and features
            self.head_ = RuntimeClassHead(
                divider=self.divider,
                max_iter=self.max_iter,
                learning_rate=self.learning_rate,
                max_leaf_nodes=self.max_leaf_nodes,
                min_samples_leaf=self.min_samples_leaf,
                random_state=self.random_state,
            ).fit(X, y)
        self._compile()
        return self

    def _compile(self) -> None:
        # The models in one compiled pass (rush.models.trees.compile_regressors): scikit-learn's per-call
        # overhead, five times, is most of a pass's prediction time. Built at fit and load.
        self.compiled_ = None if getattr(self, "models_", None) is None else compile_regressors(self.models_)
        if self.compiled_ is not None:
            self.compiled_.warm()

    def __getstate__(self) -> dict:
        state = dict(super().__getstate__())
        state.pop("compiled_", None)  # rebuilt on load
        return state

    def _checked(self, X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        check_is_fitted(self, "levels_")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has shape {X.shape}; the model takes {self.n_features_in_} features")
        log_request = X[:, REQUEST_COLUMN]
        if not np.all(np.isfinite(log_request) & (log_request >= 0)):
            raise ValueError("a job's requested time is NaN, infinite or negative: no prediction for it")
        ok = np.isfinite(X).all(axis=1)
        return X, log_request, ok

    def predict_log_quantiles(self, X: Any) -> np.ndarray:
        """(n, k) log(1 + runtime) quantiles, sorted, within [0, log(1 + request)]."""
        X, log_request, ok = self._checked(X)
        out = np.repeat(log_request[:, None], len(self.levels_), axis=1)  # the fallback: the request
        if ok.any():
            rows = X[ok] if not ok.all() else X
            compiled = getattr(self, "compiled_", None)
            if self.models_ is None:
                raw = np.full((len(rows), len(self.levels_)), self.constant_)
            elif compiled is not None:
                raw = np.array(compiled.raw(rows), dtype=np.float64)  # bit-equal to the models' predict
            else:
                raw = np.column_stack([m.predict(rows) for m in self.models_])
            raw.sort(axis=1)
            out[ok] = np.clip(raw, 0.0, log_request[ok][:, None])
        return out

    def predict_quantiles(self, X: Any) -> np.ndarray:
        """(n, k) runtime quantiles in seconds (``quantiles`` order), never negative or NaN."""
        return np.expm1(self.predict_log_quantiles(X))

    def predict(self, X: Any) -> np.ndarray:
        """The median runtime (the quantile nearest 0.5), seconds."""
        q = self.predict_quantiles(X)
        return q[:, int(np.argmin(np.abs(self.levels_ - 0.5)))]

    def proba_below(self, X: Any, seconds: float | np.ndarray) -> np.ndarray:
        """P(runtime <= ``seconds``) per job (scalar or one value per job)."""
        return proba_below_quantiles(self.predict_log_quantiles(X), self.levels_, seconds, X)

    def predict_mean(self, X: Any) -> np.ndarray:
        """The mean runtime of each job's predicted distribution, seconds (what a sum of
        runtimes, such as a start estimate, needs; the median is below it for skewed runtimes),
        calibrated per band of itself when the model has bands (:meth:`calibrated_mean`)."""
        X = np.asarray(X, dtype=np.float64)
        return self.calibrated_mean(self.predict_log_quantiles(X), X[:, REQUEST_COLUMN])

    def calibrated_mean(self, log_q: np.ndarray, log_request: np.ndarray) -> np.ndarray:
        """The mean a queued job runs (seconds) from its predicted log quantiles: the
        distribution's mean times its band's factor (rush.models.runtime_mean_bands), or the
        plain mean for a model without bands. The one function every use of the mean calls."""
        mean = mean_of_quantiles(log_q, self.levels_, log_request)
        bands = getattr(self, "mean_bands_", None)
        return mean if bands is None else bands.apply(mean, np.expm1(log_request))

    def calibrate_mean(self, out_of_sample_mean: Any, runtime: Any) -> RuntimeQuantileRegressor:
        """Fit the mean's bands from the training rows' out-of-sample predicted (uncalibrated)
        means and real runtimes (rush.models.runtime_mean_bands.fit_mean_bands)."""
        from rush.models.runtime_mean_bands import fit_mean_bands

        check_is_fitted(self, "levels_")
        self.mean_bands_ = fit_mean_bands(out_of_sample_mean, runtime)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): [P(small), P(large)] for the ``divider`` hyperparameter."""
        small = self.proba_small(X)
        return np.column_stack([small, 1.0 - small])

    def proba_small(self, X: Any, log_q: np.ndarray | None = None) -> np.ndarray:
        """P(runtime <= ``divider``) per job as ``class_head`` says: read off the quantiles
        (``log_q`` if already predicted), the head's, or the mean of both. A row the head
        cannot read (a NaN feature) keeps the quantiles' value (the request's fallback)."""
        if self.divider is None or not np.isfinite(self.divider) or self.divider <= 0:
            raise ValueError("class probabilities need a positive divider (the runtime classes' boundary)")
        if log_q is None:
            log_q = self.predict_log_quantiles(X)
        small = proba_below_quantiles(log_q, self.levels_, float(self.divider), X)
        head = getattr(self, "head_", None)
        if self.class_head == "quantiles" or head is None:
            return small
        if not np.isclose(head.divider, self.divider):
            raise ValueError(
                f"the class head was fitted at divider {head.divider}, the model's is {self.divider}: refit it"
            )
        own = head.predict_proba(X)[:, SMALL]
        own = np.where(np.isfinite(own), own, small)
        return own if self.class_head == "head" else (small + own) / 2.0


def _knots(log_q: np.ndarray, levels: np.ndarray, log_request: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The quantile function's knots: the core's rule (a running job's remaining time reads the same)."""
    return quantile_knots(log_q, levels, log_request)


def mean_of_quantiles(
    log_q: np.ndarray, levels: np.ndarray, log_request: np.ndarray, points: int = 64
) -> np.ndarray:
    """The mean runtime (seconds) of the piecewise-linear quantile function in log runtime
    (the one :func:`proba_below_quantiles` inverts), by the midpoint rule over ``points``."""
    xs, ps = _knots(np.asarray(log_q, dtype=np.float64), np.asarray(levels, dtype=np.float64), log_request)
    grid = (np.arange(points) + 0.5) / points
    seg = np.clip(np.searchsorted(ps, grid, side="right") - 1, 0, len(ps) - 2)
    frac = (grid - ps[seg]) / (ps[seg + 1] - ps[seg])
    values = xs[:, seg] + frac[None, :] * (xs[:, seg + 1] - xs[:, seg])
    return np.maximum(np.expm1(values).mean(axis=1), 0.0)


def proba_below_quantiles(
    log_q: np.ndarray, levels: np.ndarray, seconds: float | np.ndarray, X: Any
) -> np.ndarray:
    """The CDF at ``seconds`` of each row's quantile function (module docstring)."""
    log_q = np.asarray(log_q, dtype=np.float64)
    n, k = log_q.shape
    t = np.log1p(np.broadcast_to(np.asarray(seconds, dtype=np.float64), (n,)))
    log_request = np.asarray(X, dtype=np.float64)[:, REQUEST_COLUMN]
    # Knots: (0 at a tail below the first quantile, levels..., 1 at the request).
    xs, ps = _knots(log_q, np.asarray(levels, dtype=np.float64), log_request)
    out = np.empty(n)
    for i in range(k + 1):  # segment i between knots i and i + 1 (vectorised per segment)
        x0, x1 = xs[:, i], xs[:, i + 1]
        inside = (t >= x0) & (t < x1)
        frac = np.where(x1 > x0, (t - x0) / np.where(x1 > x0, x1 - x0, 1.0), 1.0)
        out = (
            np.where(inside, ps[i] + frac * (ps[i + 1] - ps[i]), out)
            if i
            else np.where(t < x0, 0.0, np.where(inside, frac * ps[1], np.nan))
        )
    out = np.where(t >= xs[:, -1], 1.0, out)
    return np.clip(np.nan_to_num(out, nan=1.0), 0.0, 1.0)


class RuntimeClassHead(BaseEstimator):
    """A classification head beside the quantile models: one ``HistGradientBoostingClassifier``
    (log loss on runtime > ``divider``, classes 0 small and 1 large) on the same features, of
    the quantile models' size. The pinball losses spread their trees over the whole
    distribution; a classification loss spends them where the class decision is."""

    def __init__(
        self,
        divider: float | None = None,
        max_iter: int = 40,
        learning_rate: float = 0.1,
        max_leaf_nodes: int = 15,
        min_samples_leaf: int = 20,
        random_state: int | None = 0,
    ) -> None:
        self.divider = divider
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> RuntimeClassHead:
        """``y``: runtimes in seconds (NaN or negative rows left out), labelled at ``divider``."""
        from sklearn.ensemble import HistGradientBoostingClassifier

        if self.divider is None or not np.isfinite(self.divider) or self.divider <= 0:
            raise ValueError("a class head needs a positive divider (the runtime classes' boundary)")
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.ndim != 2 or len(X) != len(y):
            raise ValueError(f"X has shape {X.shape}, y has {len(y)} values")
        keep = np.isfinite(y) & (y >= 0) & np.isfinite(X).all(axis=1)
        if not keep.any():
            raise ValueError("no job with a usable runtime (finite, >= 0) to fit on")
        label = np.where(y[keep] <= self.divider, SMALL, LARGE)
        self.n_features_in_ = X.shape[1]
        if label.min() == label.max():  # one class only (an early week): that class, certain
            self.model_ = None
            self.constant_ = int(label[0])
        else:
            self.model_ = HistGradientBoostingClassifier(
                max_iter=self.max_iter,
                learning_rate=self.learning_rate,
                max_leaf_nodes=self.max_leaf_nodes,
                min_samples_leaf=self.min_samples_leaf,
                early_stopping=False,
                random_state=self.random_state,
            ).fit(X[keep], label)
        self._compile()
        return self

    def _compile(self) -> None:
        from rush.models.trees import compile_trees

        self.compiled_ = None if getattr(self, "model_", None) is None else compile_trees(self.model_)

    def __getstate__(self) -> dict:
        state = dict(super().__getstate__())
        state.pop("compiled_", None)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if "n_features_in_" in self.__dict__:
            self._compile()

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): [P(small), P(large)]; a row with a NaN or infinite feature gets NaN (the
        caller's fallback decides)."""
        check_is_fitted(self, "n_features_in_")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has shape {X.shape}; the head takes {self.n_features_in_} features")
        out = np.full((len(X), 2), np.nan)
        ok = np.isfinite(X).all(axis=1)
        if self.model_ is None:
            out[ok] = np.eye(2)[self.constant_]
        elif ok.any():
            rows = X[ok]
            compiled = getattr(self, "compiled_", None)
            out[ok] = (
                compiled.predict_proba(rows) if compiled is not None else self.model_.predict_proba(rows)
            )
        return out
