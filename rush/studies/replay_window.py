"""Replay mode's trace side: cut a window, scale it to the test cluster, compare outcomes.

A replayed job must mean the same thing to Slurm and to the simulator, so the window is
transformed once and both sides get the transformed jobs:

* submit times are relative to the window's first submit and divided by the speedup K;
* runtimes are divided by K (the job is ``sleep p/K``);
* requested times are divided by K and rounded **up to the RJMS's time-limit granularity**:
  whole minutes for Slurm, whose limits have minute granularity, whole seconds for Flux
  (durations in seconds); the simulator uses the same rounded limits;
* processors are mapped to the cluster's CPUs: q' = ceil(q * cpus / machine_procs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rush.errors import RushError
from rush.simulator.result import SimResult
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


def scale_window(
    workload: Workload, window: Window, speedup: float, cpus: int, limit_granularity: float = 60.0
) -> Workload:
    """The transformed window (see module docstring), as a workload on a ``cpus`` machine;
    limits are rounded up to multiples of ``limit_granularity`` seconds (Slurm: 60)."""
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
    limit_steps = np.maximum(1, np.ceil(part.requested_time / speedup / limit_granularity))
    return Workload(
        job_id=part.job_id,
        submit=(part.submit - part.submit[0]) / speedup,
        runtime=runtime,
        procs=procs,
        requested_time=limit_steps * float(limit_granularity),
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
    # When the RJMS gave its resources back to the scheduler, where it says (Flux: the job's
    # inactive time, after cleanup); else the end.
    released: float | None = None

    @property
    def occupied(self) -> float:
        """How long the job held its processors: what the scheduler saw as its run."""
        return max((self.released if self.released is not None else self.end) - self.start, 0.0)


def order_inversions(
    sim_start: np.ndarray, real_start: np.ndarray, tolerance: float = 0.0
) -> tuple[int, list[tuple[int, int]]]:
    """Pairs of jobs started in the opposite order: simulated more than ``tolerance`` seconds
    before the other, really strictly after it.

    Starts the simulator puts within ``tolerance`` of each other (the RJMS's timing
    granularity) may come in either order. Returns the count and up to 10 pairs as indices
    (the one simulated first, then the other). O(n log n): a Fenwick tree over the real
    starts' ranks, filled in decreasing simulated order.
    """
    n = len(sim_start)
    order = np.argsort(sim_start, kind="stable")
    sim = sim_start[order].astype(float)
    real = real_start[order].astype(float)
    values = np.unique(real)
    rank = np.searchsorted(values, real) + 1  # 1-based ranks, equal starts share one
    tree = [0] * (len(values) + 1)
    count, examples, added = 0, [], n  # items [added, n) are in the tree
    members: list[int] = []  # for examples only: the first few items added
    for i in range(n - 1, -1, -1):
        while added > 0 and sim[added - 1] > sim[i] + tolerance:
            added -= 1
            k = int(rank[added])
            while k < len(tree):
                tree[k] += 1
                k += k & -k
            if len(members) < 64:
                members.append(added)
        k, smaller = int(rank[i]) - 1, 0  # later-simulated jobs that really started before i
        while k > 0:
            smaller += tree[k]
            k -= k & -k
        count += smaller
        if smaller and len(examples) < 10:
            for j in members:
                if sim[j] > sim[i] + tolerance and real[j] < real[i] and len(examples) < 10:
                    examples.append((int(order[i]), int(order[j])))
    return count, examples


def kendall_tau(sim_start: np.ndarray, real_start: np.ndarray) -> float:
    """Kendall's tau-b of the simulated and the real start times (1.0 for a single job)."""
    from scipy.stats import kendalltau  # scikit-learn's dependency; imported when a report is made

    if len(sim_start) < 2:
        return 1.0
    tau = kendalltau(sim_start, real_start).statistic
    return float(tau) if np.isfinite(tau) else 1.0


def fidelity_report(
    simulated: SimResult,
    observed: list[Observed],
    tau: float = 10.0,
    rjms: str = "slurm",
    granularity: float = 5.0,
) -> dict:
    """Per-job start-time differences, start order and metric differences, simulator vs reality.

    ``rjms`` names the real side in ``metrics``; ``granularity`` (seconds) is the RJMS's timing
    granularity, the bound of ``within_granularity`` (Slurm schedules each second or so; 5 s
    covers its measured latency).
    """
    from rush.simulator.metrics import compute_metrics

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
    # Start order: on the real clock, with the simulated starts on the real submit's clock.
    inversions, pairs = order_inversions(simulated.start, real.start, tolerance=granularity)
    # The first job, in simulated start order, whose wait differs by more than the granularity.
    beyond = [k for k in np.argsort(simulated.start, kind="stable") if abs(diff[k]) > granularity]
    first = (
        {"job_id": int(simulated.job_id[beyond[0]]), "sim_start": float(simulated.start[beyond[0]]),
         "difference": float(diff[beyond[0]])}
        if beyond else None
    )  # fmt: skip
    return {
        "jobs": len(simulated),
        "start_difference": {
            "mean_abs": float(np.mean(np.abs(diff))),
            "median_abs": float(np.median(np.abs(diff))),
            "p90_abs": float(np.percentile(np.abs(diff), 90)),
            "max_abs": float(np.max(np.abs(diff))),
            "within_5s": float(np.mean(np.abs(diff) <= 5.0)),
            "granularity": float(granularity),
            "within_granularity": float(np.mean(np.abs(diff) <= granularity)),
            "first_beyond_granularity": first,
        },
        "start_order": {
            "same": inversions == 0,
            # Kendall's tau-b of the two start orders (1: the same order; ties count as ties).
            "kendall_tau": kendall_tau(simulated.start, real.start),
            "tolerance": float(granularity),
            "inversions": inversions,
            "pairs": len(simulated) * (len(simulated) - 1) // 2,
            "examples": [[int(simulated.job_id[a]), int(simulated.job_id[b])] for a, b in pairs],
        },
        # Times since the replay's start: where a schedule first departs from the simulator's.
        "per_job": [
            {
                "job_id": int(j),
                "sim_wait": float(s),
                "real_wait": float(r),
                "difference": float(d),
                "real_submit": float(rs),
                "sim_start": float(ss),
                "real_start": float(rt),
                "real_end": float(re),
            }
            for j, s, r, d, rs, ss, rt, re in zip(
                simulated.job_id,
                simulated.start - simulated.submit,
                real.start - real.submit,
                diff,
                real.submit,
                simulated.start,
                real.start,
                real.end,
                strict=True,
            )
        ],
        "metrics": {k: {"simulator": sim_metrics.get(k), rjms: real_metrics.get(k)} for k in keys},
        "submit_latency": float(np.mean(real.submit - simulated.submit)),
    }
