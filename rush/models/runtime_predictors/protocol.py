"""The runtime-predictor interface: what a predictor gives the core and how it learns.

A runtime predictor predicts, for each job at its submission, how long it will run (seconds).
The core schedules with that prediction as the job's ``estimate`` (queue order, backfilling,
the head's reservation) and corrects it when a run outlives it
(:mod:`rush.core.runtime_predictions`); the job is still killed at its request only.

Every predictor implements :class:`RuntimePredictor`:

* ``observe(done)``: jobs that have just finished (``runtime`` and ``end`` known), in end
  order. The predictor updates its online state (e.g. each user's last runtimes). Called
  before every prediction with everything that finished strictly before the submissions
  predicted next: no future data.
* ``fit(history)``: every job finished so far (in end order), at each retraining time
  (``retrain_every`` seconds apart in the walk-forward, counted from the first submission;
  ``None``: never, the predictor learns through ``observe`` only). Returns the predictor.
* ``predict(jobs)``: predicted runtimes (seconds) of jobs submitted now (``runtime`` and
  ``end`` NaN). Any float may come back: the core's guard
  (:func:`rush.core.runtime_predictions.predicted_runtime`) turns NaN, infinite and
  non-positive predictions into the request and caps the others by it.

:func:`rush.models.runtime_predictors.walkforward.predict_walkforward` drives a predictor
over a trace (the simulator's prediction source: its result is ``SimInputs.estimate``); a
live shell calls ``observe`` on completions and ``predict`` on new pending jobs and sets
``PendingJob.estimate``. Bad history is handled before a predictor sees it (the driver's
:func:`usable_history`): finished jobs with a NaN, infinite or negative runtime are not
observed; a runtime beyond the request is clipped to it (the job was killed there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from rush.errors import ModelError


@dataclass(frozen=True)
class RuntimeJobs:
    """Jobs as columns. ``job_id`` identifies a job across ``predict`` and ``observe`` (the
    workload's row in the walk-forward); ``runtime`` and ``end`` are NaN until it finished."""

    job_id: np.ndarray  # int64
    user: np.ndarray  # int64, -1 unknown
    submit: np.ndarray  # float64, seconds
    procs: np.ndarray  # int64
    requested_time: np.ndarray  # float64, seconds (the time limit)
    runtime: np.ndarray  # float64, seconds; NaN while unknown
    end: np.ndarray  # float64, seconds; NaN while unknown

    def __len__(self) -> int:
        return len(self.job_id)

    def take(self, rows: np.ndarray | slice) -> RuntimeJobs:
        return RuntimeJobs(
            self.job_id[rows],
            self.user[rows],
            self.submit[rows],
            self.procs[rows],
            self.requested_time[rows],
            self.runtime[rows],
            self.end[rows],
        )

    @classmethod
    def of(
        cls,
        user: np.ndarray,
        submit: np.ndarray,
        procs: np.ndarray,
        requested_time: np.ndarray,
        runtime: np.ndarray | None = None,
        end: np.ndarray | None = None,
        job_id: np.ndarray | None = None,
    ) -> RuntimeJobs:
        """Columns checked for equal lengths (a ModelError naming the column otherwise)."""
        n = len(user)
        cols = {
            "job_id": np.arange(n, dtype=np.int64) if job_id is None else np.asarray(job_id, np.int64),
            "user": np.asarray(user, np.int64),
            "submit": np.asarray(submit, np.float64),
            "procs": np.asarray(procs, np.int64),
            "requested_time": np.asarray(requested_time, np.float64),
            "runtime": np.full(n, np.nan) if runtime is None else np.asarray(runtime, np.float64),
            "end": np.full(n, np.nan) if end is None else np.asarray(end, np.float64),
        }
        for name, arr in cols.items():
            if arr.shape != (n,):
                raise ModelError(
                    f"job column {name!r} has shape {arr.shape}, 'user' has {n} values",
                    where=f"RuntimeJobs.{name}",
                    fix="give one value per job",
                )
        return cls(**cols)


@runtime_checkable
class RuntimePredictor(Protocol):
    """A walk-forward runtime predictor (module docstring)."""

    retrain_every: float | None

    def observe(self, done: RuntimeJobs) -> None: ...

    def fit(self, history: RuntimeJobs) -> RuntimePredictor: ...

    def predict(self, jobs: RuntimeJobs) -> np.ndarray: ...


def usable_history(done: RuntimeJobs) -> tuple[RuntimeJobs, int, int]:
    """Finished jobs a predictor may learn from: those with a NaN, infinite or negative
    runtime dropped, runtimes beyond the request clipped to it (the job was killed there).
    Returns (jobs, dropped, clipped)."""
    ok = np.isfinite(done.runtime) & (done.runtime >= 0)
    kept = done.take(np.flatnonzero(ok)) if not ok.all() else done
    over = kept.runtime > kept.requested_time
    if over.any():
        kept = RuntimeJobs(
            kept.job_id,
            kept.user,
            kept.submit,
            kept.procs,
            kept.requested_time,
            np.where(over, kept.requested_time, kept.runtime),
            kept.end,
        )
    return kept, int((~ok).sum()), int(over.sum())
