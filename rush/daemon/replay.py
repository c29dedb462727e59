"""Replay mode: drive a real RJMS with a trace window and compare it with the simulator.

1. cut and scale a window of the trace (:mod:`rush.daemon.replay_window`);
2. submit its jobs as ``sleep p/K`` jobs at their scaled submit times;
3. optionally run daemon cycles meanwhile (``cycle``: a callable, e.g. the daemon's one cycle);
4. wait until every job has finished and read the outcome back from the RJMS;
5. simulate the same jobs, with the submit times the RJMS recorded, under the same policy;
6. return the fidelity report (per-job start differences and metric differences).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from rush.core.config import CoreConfig
from rush.daemon.replay_window import Observed, Window, fidelity_report, scale_window
from rush.errors import RJMSError
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
    backend: RJMSBackend, workload: Workload, partition: str = ""
) -> tuple[float, dict[int, int]]:
    """Submit the scaled jobs at their submit times; return (replay start, id mapping)."""
    t0 = time.time()
    ids: dict[int, int] = {}
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
) -> dict:
    """Run the replay and return the fidelity report."""
    cpus = backend.read_state().total_procs
    scaled = scale_window(workload, window, speedup, cpus)
    t0, ids = submit_window(backend, scaled, partition)
    wait_until_done(backend, set(ids.values()), timeout, cycle)
    observed = collect_outcome(backend, t0, ids)
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
