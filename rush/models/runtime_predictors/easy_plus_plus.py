"""EASY++'s runtime predictor (Tsafrir, Etsion & Feitelson, TPDS 2007).

A job's runtime is predicted as the mean of its user's last two finished runtimes, capped by
its request; a user with fewer than two finished jobs (and a job of no known user) gets the
request. "Last" is by end time, as the jobs finished. Learning is online only: every
finished job updates its user's pair (``observe``), nothing is refit.
"""

from __future__ import annotations

import numpy as np

from rush.models.runtime_predictors.protocol import RuntimeJobs


class EasyPlusPlusPredictor:
    """Mean of the user's last two finished runtimes (the request with fewer than two)."""

    retrain_every: float | None = None

    def __init__(self) -> None:
        # user -> (last runtime, the one before; NaN when not seen yet)
        self.last_two_: dict[int, tuple[float, float]] = {}

    def observe(self, done: RuntimeJobs) -> None:
        last = self.last_two_
        for user, runtime in zip(done.user.tolist(), done.runtime.tolist(), strict=True):
            if user < 0 or not (runtime >= 0.0) or runtime == float("inf"):
                continue  # unknown user, or a runtime that says nothing
            previous = last.get(user, (float("nan"), float("nan")))[0]
            last[user] = (runtime, previous)

    def fit(self, history: RuntimeJobs) -> EasyPlusPlusPredictor:
        """Nothing to refit: the prediction is the online state (``observe``)."""
        return self

    def predict(self, jobs: RuntimeJobs) -> np.ndarray:
        out = np.array(jobs.requested_time, dtype=np.float64)
        nan_pair = (float("nan"), float("nan"))
        for k, user in enumerate(jobs.user.tolist()):
            a, b = self.last_two_.get(user, nan_pair)
            if a == a and b == b:  # both seen (NaN != NaN)
                mean = 0.5 * (a + b)
                if mean < out[k]:
                    out[k] = mean
        return out
