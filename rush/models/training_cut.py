"""What a model may be trained on: the jobs finished before a moment, on a replay's time scale.

A model evaluated on a window of a trace must not have seen the window (no future data): with
``before`` only the jobs that *finished* by then (submit + wait + runtime <= before) are kept,
what a site's accounting holds at that moment. ``before`` is a submit time of the trace
(seconds, as the trace's submit column) or ``job:N``, the submit time of the N-th job in submit
order: the same numbering as ``rush replay --window N:COUNT``, so ``--before job:N`` trains on
what had finished when that window's first job was submitted.

A live replay sped up K times (``rush replay --speedup K``) divides requests and runtimes by K.
Rather than make the live predictor aware of K, the model is trained on the history scaled the
same way (``time_scale`` = K): requests, runtimes and waits divided by K, submit times
compressed by K around the cutoff (or the first submit), so the model reads and predicts
seconds of the replay. The live code runs it unchanged. Both are recorded on the model card
(``training_window.before``, ``training_window.time_scale``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rush.errors import ConfigError
from rush.workload.model import Workload

MAX_TIME_SCALE = 1e6  # a speedup beyond this leaves sub-microsecond jobs


def logged_ends(workload: Workload) -> np.ndarray:
    """Each job's end in trace seconds: submit + wait + runtime (unknown wait or runtime: 0)."""
    wait = workload.extra.get("wait")
    wait = np.zeros(len(workload)) if wait is None else np.asarray(wait, dtype=np.float64)
    runtime = np.asarray(workload.runtime, dtype=np.float64)
    return (
        np.asarray(workload.submit, dtype=np.float64)
        + np.maximum(np.nan_to_num(wait), 0.0)
        + np.maximum(np.nan_to_num(runtime), 0.0)
    )


@dataclass(frozen=True)
class TrainingCut:
    """``before``: trace seconds (None: the whole trace); ``time_scale``: the replay's K."""

    before: float | None = None
    time_scale: float = 1.0

    @classmethod
    def parse(cls, before: str | None, time_scale: float, workload: Workload) -> TrainingCut:
        """The options as given on the command line, checked against the trace (ConfigError)."""
        check_time_scale(time_scale)
        if before is None:
            return cls(None, float(time_scale))
        return cls(_cutoff(before.strip(), workload), float(time_scale))

    def apply(self, workload: Workload) -> Workload:
        """The jobs finished by ``before``, with their times divided by ``time_scale``."""
        part = workload
        if self.before is not None:
            part = workload.subset(np.flatnonzero(logged_ends(workload) <= self.before))
            if len(part) == 0:
                raise ConfigError(
                    f"no job of the trace finished by {self.before:g} s",
                    where="--before",
                    fix="give a later submit time or job (the first jobs must have finished by then)",
                )
        if self.time_scale == 1.0:
            return part
        k = self.time_scale
        origin = self.before if self.before is not None else float(part.submit[0])
        extra = dict(part.extra)
        if "wait" in extra:
            wait = np.asarray(extra["wait"], dtype=np.float64)
            extra["wait"] = np.where(wait >= 0, wait / k, wait)  # -1 (unknown) stays unknown
        return Workload(
            job_id=part.job_id,
            submit=origin + (part.submit - origin) / k,
            runtime=np.where(part.runtime >= 0, part.runtime / k, part.runtime),
            procs=part.procs,
            requested_time=np.where(part.requested_time >= 0, part.requested_time / k, part.requested_time),
            user=part.user,
            machine_procs=part.machine_procs,
            name=f"{part.name}/{k:g}" if part.name else "",
            dropped=dict(part.dropped),
            extra=extra,
            machine=part.machine,
            requests=part.requests,
        )

    def card(self) -> dict:
        """The model card's record of the cut (under ``training_window``)."""
        return {"before": self.before, "time_scale": self.time_scale}


def check_time_scale(time_scale: float) -> None:
    """A replay's speedup K: finite, positive, at most MAX_TIME_SCALE (ConfigError)."""
    if not (math.isfinite(time_scale) and 0.0 < time_scale <= MAX_TIME_SCALE):
        raise ConfigError(
            f"{time_scale} is not a time scale",
            where="--time-scale",
            fix=f"give the replay's speedup K, a number in (0, {MAX_TIME_SCALE:g}] (1: the trace's own times)",
        )


def _cutoff(text: str, workload: Workload) -> float:
    """``job:N`` (the N-th job in submit order, as ``--window N:COUNT``) or a submit time in s."""
    if text.startswith("job:"):
        try:
            index = int(text.removeprefix("job:"))
        except ValueError:
            index = -1
        if not 0 <= index < len(workload):
            raise ConfigError(
                f"bad job {text!r}",
                where="--before",
                fix=f"give job:N with 0 <= N < {len(workload)} (jobs in submit order, as --window N:COUNT)",
            )
        return float(workload.submit[index])
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(
            f"bad cutoff {text!r}",
            where="--before",
            fix="give a submit time of the trace in seconds (>= 0) or job:N (the N-th job in submit order)",
        )
    return value
