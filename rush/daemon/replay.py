"""Replay mode: drive a real RJMS with a trace window and compare it with the simulator.

1. cut and scale a window of the trace (:mod:`rush.daemon.replay_window`);
2. submit its jobs as ``sleep p/K`` jobs at their scaled submit times;
3. optionally run daemon cycles meanwhile (``cycle``: a callable, e.g. the daemon's one cycle);
4. wait until every job has finished and read the outcome back from the RJMS (on a
   timeout, an RJMS failure or Ctrl-C, cancel every job submitted so far, by id);
5. simulate the same jobs, with the submit times the RJMS recorded, under the same policy;
6. return the fidelity report (per-job start differences and metric differences).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from rush.core.config import CoreConfig
from rush.daemon.replay_window import Observed, Window, fidelity_report, scale_window
from rush.errors import RJMSError, RushError
from rush.rjms.base import RJMSBackend
from rush.sim.engine import simulate
from rush.workload.model import Workload

log = logging.getLogger(__name__)
LIVE_STATES = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING")


@dataclass
class ReplayPlan:
    workload: Workload  # the scaled window
    speedup: float
    job_ids: dict[int, int]  # trace job id -> RJMS job id


def submit_window(
    backend: RJMSBackend, workload: Workload, partition: str = "", ids: dict[int, int] | None = None
) -> tuple[float, dict[int, int]]:
    """Submit the scaled jobs at their submit times; return (replay start, id mapping).

    ``ids`` (trace job id -> RJMS job id) is filled as jobs are submitted, so a caller that
    is interrupted half-way still knows every job it has to cancel.
    """
    t0 = time.time()
    ids = {} if ids is None else ids
    for k in range(len(workload)):
        delay = t0 + float(workload.submit[k]) - time.time()
        if delay > 0:
            time.sleep(delay)
        trace_id = int(workload.job_id[k])
        ids[trace_id] = backend.submit(
            name=f"rush-replay-{trace_id}",
            procs=int(workload.procs[k]),
            time_limit=float(workload.requested_time[k]),
            command=["sleep", f"{float(workload.runtime[k]):.3f}"],
            comment=f"rush-replay:{trace_id}",
            partition=partition,
        )
    return t0, ids


def cancel_submitted(backend: RJMSBackend, rjms_ids: list[int]) -> str:
    """Cancel, by id, every submitted job still live; return what was done, for the user."""
    if not rjms_ids:
        return "no job had been submitted"
    try:
        live = {j.job_id for j in backend.read_state().jobs if j.state in LIVE_STATES}
        targets = [j for j in rjms_ids if j in live]
    except RJMSError:  # cannot see the queue: cancel them all, finished ones refuse harmlessly
        targets = list(rjms_ids)
    failed = []
    for job_id in targets:
        try:
            if not backend.cancel(job_id).ok:
                failed.append(job_id)
        except RJMSError:
            failed.append(job_id)
    text = (
        f"cancelled {len(targets) - len(failed)} of the {len(rjms_ids)} submitted jobs that were still live"
    )
    if failed:
        text += (
            f"; could not cancel {len(failed)} (cancel them by hand: scancel {' '.join(map(str, failed))})"
        )
    return text


def wait_until_done(
    backend: RJMSBackend,
    rjms_ids: set[int],
    timeout: float,
    cycle: Callable[[], object] | None = None,
    poll: float = 1.0,
) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cycle is not None:
            cycle()
        try:
            state = backend.read_state()
        except RJMSError as exc:
            log.warning("replay: RJMS read failed, retrying: %s", exc)
            time.sleep(poll)
            continue
        # Finished jobs stay listed for a while (MinJobAge): wait only for live ones.
        if not any(job.job_id in rjms_ids and job.state in LIVE_STATES for job in state.jobs):
            return
        time.sleep(poll)
    raise RJMSError(
        f"replayed jobs still not finished after {timeout:.0f} s",
        where="replay",
        fix="use a higher --speedup or a smaller --window, or raise --timeout",
    )


def collect_outcome(backend: RJMSBackend, t0: float, ids: dict[int, int]) -> list[Observed]:
    records = {int(r["job_id"]): r for r in backend.accounting(list(ids.values()))}
    observed = []
    for trace_id, rjms_id in ids.items():
        record = records.get(rjms_id)
        if record is None or record.get("start") is None or record.get("end") is None:
            continue
        observed.append(
            Observed(
                job_id=trace_id,
                submit=float(record["submit"]) - t0,
                start=float(record["start"]) - t0,
                end=float(record["end"]) - t0,
            )
        )
    return observed


def replay(
    backend: RJMSBackend,
    workload: Workload,
    window: Window,
    speedup: float,
    config: CoreConfig,
    *,
    cycle: Callable[[], object] | None = None,
    timeout: float = 3600.0,
    partition: str = "",
    tau: float = 10.0,
    say: Callable[[str], object] = log.warning,
) -> dict:
    """Run the replay and return the fidelity report.

    On a timeout, an RJMS failure or Ctrl-C every job submitted so far is cancelled by id
    (and ``say`` tells the user) before the error propagates: nothing is left behind.
    """
    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise RushError(f"invalid timeout {timeout!r}", where="--timeout", fix="seconds > 0, e.g. 3600")
    cpus = backend.read_state().total_procs
    if cpus <= 0:
        raise RJMSError("the RJMS reports no CPUs", where="replay", fix="check the partitions' nodes (sinfo)")
    scaled = scale_window(workload, window, speedup, cpus)
    ids: dict[int, int] = {}
    try:
        t0, _ = submit_window(backend, scaled, partition, ids)
        wait_until_done(backend, set(ids.values()), timeout, cycle)
    except (Exception, KeyboardInterrupt) as exc:
        done = cancel_submitted(backend, list(ids.values()))
        say(f"replay stopped ({type(exc).__name__}): {done}")
        if isinstance(exc, RushError):
            raise type(exc)(f"{exc.message}; {done}", where=exc.where, fix=exc.fix) from exc
        raise
    observed = collect_outcome(backend, t0, ids)
    if not observed:
        raise RJMSError(
            f"none of the {len(ids)} replayed jobs has a start and an end the RJMS reports: "
            "nothing can be compared",
            where="replay",
            fix="raise MinJobAge in slurm.conf or set rjms.options.jobcomp_file so finished jobs stay visible",
        )
    # Simulate the jobs as the RJMS saw them: its recorded submit times, the same limits.
    seen = {o.job_id: o.submit for o in observed}
    keep = [k for k in range(len(scaled)) if int(scaled.job_id[k]) in seen]
    as_seen = scaled.subset(keep)
    as_seen.submit = as_seen.submit.copy()
    for k, job_id in enumerate(as_seen.job_id):
        as_seen.submit[k] = max(0.0, seen[int(job_id)])
    order = sorted(range(len(as_seen)), key=lambda k: (as_seen.submit[k], as_seen.job_id[k]))
    as_seen = as_seen.subset(order)
    simulated = simulate(as_seen, config)
    report = fidelity_report(simulated, observed, tau=tau)
    report["window"] = {"start": window.start, "count": window.count, "speedup": speedup, "cpus": cpus}
    report["rjms_job_ids"] = {str(k): v for k, v in ids.items()}
    report["unfinished"] = len(scaled) - len(observed)
    return report
