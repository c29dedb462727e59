"""A linear regressor trained with an asymmetric squared loss (scikit-learn API).

Underpredicting a runtime costs ``underprediction_cost`` times as much as overpredicting it
by the same amount: the loss of a job is ``c * (y - f)^2`` when ``f < y`` (c =
``underprediction_cost``) and ``(y - f)^2`` otherwise, plus ``alpha * |w|^2``. It is minimised
by iteratively reweighted ridge regression (the expectile-regression fixed point: each round
weights every example by the side of its current residual; ``max_iter`` rounds at most). This is rush's
reading of Gaussier et al.'s (SC'15) asymmetric "E-Loss": an underprediction delays the jobs
planned after it, an overprediction only loses a backfilling chance.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, check_X_y, validate_data


class AsymmetricRidgeRegressor(RegressorMixin, BaseEstimator):
    """Ridge regression under an asymmetric squared loss (module docstring)."""

    def __init__(self, underprediction_cost: float = 10.0, alpha: float = 1.0, max_iter: int = 30) -> None:
        self.underprediction_cost = underprediction_cost
        self.alpha = alpha
        self.max_iter = max_iter

    def fit(self, X, y, sample_weight=None) -> AsymmetricRidgeRegressor:
        if not (self.underprediction_cost > 0 and np.isfinite(self.underprediction_cost)):
            raise ValueError(
                f"underprediction_cost must be a finite number > 0, not {self.underprediction_cost!r}"
            )
        X, y = check_X_y(X, y, dtype=np.float64, y_numeric=True)
        self.n_features_in_ = X.shape[1]
        base = np.ones(len(y)) if sample_weight is None else _check_sample_weight(sample_weight, X)
        if not base.any():
            raise ValueError("sample_weight is all zero: nothing to fit")
        # Ridge with an unpenalised intercept: centre by the weighted means at each round.
        # The Gram matrices of each side are updated by the rows that change side only.
        A = np.hstack([X, np.ones((len(y), 1))])
        Ab = A * base[:, None]
        gram_all = A.T @ Ab
        rhs_all = Ab.T @ y
        penalty = self.alpha * np.eye(A.shape[1])
        penalty[-1, -1] = 0.0
        extra = self.underprediction_cost - 1.0
        side = np.zeros(len(y), dtype=bool)  # True: underpredicted at the previous round
        gram_under = np.zeros_like(gram_all)
        rhs_under = np.zeros_like(rhs_all)
        self.n_iter_ = 0
        beta = np.zeros(A.shape[1])
        for _ in range(self.max_iter):
            lhs, rhs = gram_all + extra * gram_under + penalty, rhs_all + extra * rhs_under
            try:
                beta = np.linalg.solve(lhs, rhs)
            except np.linalg.LinAlgError:  # collinear features without a penalty
                beta = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
            self.n_iter_ += 1
            under = y > A @ beta
            flipped = under != side
            if not flipped.any():
                break  # the weights are those of the loss at this fit: the minimum
            sign = np.where(under[flipped], 1.0, -1.0)
            rows = A[flipped]
            weighted = rows * (base[flipped] * sign)[:, None]
            gram_under += rows.T @ weighted
            rhs_under += weighted.T @ y[flipped]
            side = under
        self.coef_ = beta[:-1]
        self.intercept_ = float(beta[-1])
        return self

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_

    def loss(self, X, y) -> float:
        """Mean asymmetric squared loss of the fitted model on (X, y) (without the penalty)."""
        r = np.asarray(y, dtype=np.float64) - self.predict(X)
        return float(np.mean(np.where(r > 0, self.underprediction_cost, 1.0) * r * r))
