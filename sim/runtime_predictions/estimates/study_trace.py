"""What the start-estimate development scripts (``estimate_rules.py``, ``kth_diagnosis.py``) read
of a trace: the study's schedule (the simulator's EASY-FCFS on limits), the cached walk-forward
of the predictor (``run.py``'s cache; ``base`` features unless told), the ladders of the
three runtime sources (limits, the predicted mean with the upper quantiles, the real runtimes),
the quantile function's knots, and every k-th job as a query at its submit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class StudyTrace:
    name: str
    workload: object  # rush.workload.model.Workload
    walkforward: object  # run.py's cached walk-forward
    request: np.ndarray
    ladders: dict[str, np.ndarray]  # "limits", "mean", "real": (n, rungs)
    knots: tuple[np.ndarray, np.ndarray]
    submit: np.ndarray
    start: np.ndarray  # -1: never started in the run
    end: np.ndarray

    def jobs(self) -> tuple:
        """The sweep's jobs tuple (submit, start, end, procs, machine); a job never started
        starts and ends at inf."""
        started = self.start >= 0
        return (
            self.submit,
            np.where(started, self.start, np.inf),
            np.where(started, self.end, np.inf),
            np.asarray(self.workload.procs, dtype=np.int64),
            int(self.workload.machine_procs),
        )

    def sample(self, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every ``step``-th job that started: (jobs, real starts, wait classes)."""
        from rush.studies.estimate_accuracy_offline import wait_class

        jobs = np.arange(0, len(self.submit), step)
        jobs = jobs[self.start[jobs] >= 0]
        real = self.start[jobs]
        return jobs, real, wait_class(real - self.submit[jobs])


def walkforward(trace_name: str, feature_set: str = "base") -> object:
    """run.py's cached walk-forward of the deployed predictor's settings on ``feature_set``."""
    from run import cached_walkforward

    from rush.models.runtime_quantiles import RuntimeQuantileRegressor

    model = RuntimeQuantileRegressor()
    return cached_walkforward(
        trace_name, 10_000, model.max_iter, 1, model.learning_rate, model.max_leaf_nodes, feature_set
    )


def study_trace(trace_name: str, feature_set: str = "base") -> StudyTrace:
    from run import load

    from rush.core.config import CoreConfig
    from rush.core.remaining_runtime import quantile_knots
    from rush.simulator.engine import simulate
    from rush.studies.estimate_accuracy_offline import ladder, limits_ladder

    wf = walkforward(trace_name, feature_set)
    _, workload = load(trace_name)
    result = simulate(workload, CoreConfig.from_names("FCFS", "easy", 200_000))
    req = np.asarray(workload.requested_time, dtype=np.float64)
    runtime = np.minimum(np.asarray(workload.runtime, dtype=np.float64), req)
    upper = wf.quantiles[:, wf.levels > 0.5]
    return StudyTrace(
        trace_name,
        workload,
        wf,
        req,
        {
            "limits": limits_ladder(req),
            "mean": ladder(wf.mean(), upper, req),
            "real": ladder(runtime, None, req),
        },
        quantile_knots(np.log1p(wf.quantiles), wf.levels, np.log1p(req)),
        np.asarray(result.submit, dtype=np.float64),
        np.asarray(result.start, dtype=np.float64),
        np.asarray(result.end, dtype=np.float64),
    )
