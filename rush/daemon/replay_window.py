"""Replay mode's trace side: cut a window, scale it to the test cluster, compare outcomes.

A replayed job must mean the same thing to Slurm and to the simulator, so the window is
transformed once and both sides get the transformed jobs:

* submit times are relative to the window's first submit and divided by the speedup K;
* runtimes are divided by K (the job is ``sleep p/K``);
* requested times are divided by K and rounded **up to whole minutes**, because Slurm's
  time limits have minute granularity; the simulator uses the same rounded limits;
* processors are mapped to the cluster's CPUs: q' = ceil(q * cpus / machine_procs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rush.errors import RushError
from rush.sim.result import SimResult
from rush.workload.model import Workload


@dataclass(frozen=True)
class Window:
    start: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Window:
        first, sep, count = text.partition(":")
        try:
            window = cls(int(first), int(count))
        except ValueError:
            raise RushError(
                f"bad window {text!r}",
                where="--window",
                fix="write START:N, e.g. 0:50 (jobs in submit order)",
            ) from None
        if window.start < 0 or window.count <= 0 or not sep:
            raise RushError(f"bad window {text!r}", where="--window", fix="START >= 0 and N > 0, e.g. 100:50")
        return window


def scale_window(workload: Workload, window: Window, speedup: float, cpus: int) -> Workload:
    """The transformed window (see module docstring), as a workload on a ``cpus`` machine."""
    if not (isinstance(speedup, int | float) and math.isfinite(speedup) and speedup > 0):
        raise RushError(
            f"speedup must be a positive number, not {speedup!r}",
            where="--speedup",
            fix="e.g. --speedup 1000",
        )
    if window.start >= len(workload):
        raise RushError(
            f"window starts at job {window.start} but the trace has {len(workload)} jobs", where="--window"
        )
    index = np.arange(window.start, min(window.start + window.count, len(workload)))
    part = workload.subset(index)
    procs = np.ceil(part.procs * cpus / workload.machine_procs).astype(np.int64)
    procs = np.clip(procs, 1, cpus)
    runtime = part.runtime / speedup
    limit_minutes = np.maximum(1, np.ceil(part.requested_time / speedup / 60.0))
    return Workload(
        job_id=part.job_id,
        submit=(part.submit - part.submit[0]) / speedup,
        runtime=runtime,
        procs=procs,
        requested_time=limit_minutes * 60.0,
        user=part.user,
        machine_procs=int(cpus),
        name=f"{workload.name}[{window.start}:{window.start + len(index)}]/{speedup:g}",
        dropped=dict(workload.dropped),
        extra=dict(part.extra),
    )


@dataclass
class Observed:
    """What the RJMS reports for one replayed job (seconds since the replay's start)."""

    job_id: int
    submit: float
    start: float
    end: float


def fidelity_report(simulated: SimResult, observed: list[Observed], tau: float = 10.0) -> dict:
    """Per-job start-time differences and metric differences, simulator vs reality."""
    from rush.sim.metrics import compute_metrics

    if len(simulated) == 0:
        # No job to compare: any "fraction within 5 s" would be vacuous.
        raise RushError(
            "no replayed job finished: nothing can be compared",
            where="replay",
            fix="check that the jobs ran (MinJobAge, jobcomp file) and raise --timeout",
        )
    by_id = {o.job_id: o for o in observed}
    missing = [int(j) for j in simulated.job_id if int(j) not in by_id]
    if missing:
        raise RushError(
            f"{len(missing)} replayed jobs have no outcome from the RJMS (e.g. {missing[:5]})",
            where="replay",
            fix="raise MinJobAge in slurm.conf so finished jobs stay visible, or enable accounting",
        )
    real = SimResult(
        job_id=simulated.job_id,
        submit=np.array([by_id[int(j)].submit for j in simulated.job_id]),
        start=np.array([by_id[int(j)].start for j in simulated.job_id]),
        end=np.array([by_id[int(j)].end for j in simulated.job_id]),
        procs=simulated.procs,
        requested_time=simulated.requested_time,
        runtime=simulated.runtime,
        backfilled=np.zeros(len(simulated), dtype=bool),
        killed=np.zeros(len(simulated), dtype=bool),
        machine_procs=simulated.machine_procs,
    )
    # Compare waits, so the submit latency of the replay driver does not count as a difference.
    diff = (real.start - real.submit) - (simulated.start - simulated.submit)
    sim_metrics = compute_metrics(simulated, tau=tau)
    real_metrics = compute_metrics(real, tau=tau)
    keys = ("mean_wait", "mean_bounded_slowdown", "mean_response_time", "utilization", "makespan", "max_wait")
    return {
        "jobs": len(simulated),
        "start_difference": {
            "mean_abs": float(np.mean(np.abs(diff))),
            "median_abs": float(np.median(np.abs(diff))),
            "p90_abs": float(np.percentile(np.abs(diff), 90)),
            "max_abs": float(np.max(np.abs(diff))),
            "within_5s": float(np.mean(np.abs(diff) <= 5.0)),
        },
        "per_job": [
            {"job_id": int(j), "sim_wait": float(s), "real_wait": float(r), "difference": float(d)}
            for j, s, r, d in zip(
                simulated.job_id,
                simulated.start - simulated.submit,
                real.start - real.submit,
                diff,
                strict=True,
            )
        ],
        "metrics": {k: {"simulator": sim_metrics.get(k), "slurm": real_metrics.get(k)} for k in keys},
        "submit_latency": float(np.mean(real.submit - simulated.submit)),
    }
