"""Replay mode: drive a real RJMS with a trace window and compare it with the simulator.

1. cut and scale a window of the trace (:mod:`rush.studies.replay_window`);
2. submit its jobs as ``sleep p/K`` jobs at their scaled submit times;
3. optionally run daemon cycles meanwhile (``cycle``: a callable, e.g. the daemon's one cycle);
4. wait until every job has finished and read the outcome back from the RJMS (on a
   timeout, an RJMS failure or Ctrl-C, cancel every job submitted so far, by id);
5. simulate the same jobs, with the submit times the RJMS recorded, under the same policy;
6. return the fidelity report (per-job start differences, start order, metric differences),
   and the same comparison against the simulator run with each job's measured occupation
   (``measured_runtimes``: the scheduler's decisions without the launch/teardown drift) and,
   on Slurm, with runtimes rounded up to Slurm's whole-second ticks (``whole_second_runtimes``);
   on Slurm the settings that make its backfill differ from EASY are reported and warned
   about before any job is submitted (``scheduler_differences``, :mod:`rush.studies.replay_slurm`).

Modes (Flux): ``priority``, rush sets priorities (daemon cycles with ``cycle``) and the
instance's own scheduler starts the jobs; ``scheduler``, rush's Flux scheduler module
(``rush/flux_module/sched-rush.py``) replaces the instance's scheduler for the replay
(:func:`flux_rush_scheduler`) and starts them itself. On Slurm only ``priority`` exists.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rush.core.config import CoreConfig
from rush.core.resources import Node
from rush.errors import RJMSError, RushError
from rush.rjms.base import RJMSBackend
from rush.rjms.flux import scheduler_swap
from rush.simulator.engine import simulate
from rush.studies.replay_slurm import (
    INHERENT,
    setting_differences,
    slurm_mode_report,
    slurm_scheduler,
    slurm_settings,
)
from rush.studies.replay_window import Observed, Window, fidelity_report, scale_window
from rush.workload.model import Workload

log = logging.getLogger(__name__)
LIVE_STATES = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING")
MODES = ("priority", "scheduler")
# The timing granularity a replay's waits are held to, per RJMS and mode (seconds): Slurm
# schedules about each second (5 s covers its measured latency); the rush module schedules
# at each Flux event, and a job starts one Flux state transition (alloc, start) later.
GRANULARITY = {"slurm": 5.0, "flux": 1.0}
# Seconds allowed for rush's Flux module to load and run its warm-up job (scheduler mode).
MODULE_LOAD = 900.0


@dataclass
class ReplayPlan:
    workload: Workload  # the scaled window
    speedup: float
    job_ids: dict[int, int]  # trace job id -> RJMS job id


def replay_comment(backend: RJMSBackend, trace_id: int, user: int) -> str:
    """A replayed job's comment. On Flux it carries the trace's user as the ``user`` tag: the
    replay submits every job as one account, and a runtime predictor keys its history by the
    user a job of rush's own account stands for (rush.planner.runtime_prediction). Slurm's
    job_submit plugin accepts only its documented keys: there, replays stay one user."""
    if backend.name == "flux" and user >= 0:
        return f"rush:user=trace-{user}"
    return f"rush-replay:{trace_id}"


def submit_window(
    backend: RJMSBackend,
    workload: Workload,
    partition: str = "",
    ids: dict[int, int] | None = None,
    cycle: Callable[[], object] | None = None,
    poll: float = 1.0,
) -> tuple[float, dict[int, int]]:
    """Submit the scaled jobs at their submit times; return (replay start, id mapping).

    ``ids`` (trace job id -> RJMS job id) is filled as jobs are submitted, so a caller that
    is interrupted half-way still knows every job it has to cancel. ``cycle`` (the daemon's)
    runs every ``poll`` seconds meanwhile, when the next submit leaves the time.
    """
    t0 = time.time()
    ids = {} if ids is None else ids
    last_cycle = t0
    for k in range(len(workload)):
        due = t0 + float(workload.submit[k])
        while (delay := due - time.time()) > 0:
            if cycle is not None and ids and time.time() - last_cycle >= poll:
                cycle()
                last_cycle = time.time()
                continue
            time.sleep(delay if cycle is None else min(delay, max(last_cycle + poll - time.time(), 0.01)))
        trace_id = int(workload.job_id[k])
        ids[trace_id] = backend.submit(
            name=f"rush-replay-{trace_id}",
            procs=int(workload.procs[k]),
            time_limit=float(workload.requested_time[k]),
            command=["sleep", f"{float(workload.runtime[k]):.3f}"],
            comment=replay_comment(backend, trace_id, int(workload.user[k])),
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
                released=float(record["released"]) - t0 if record.get("released") is not None else None,
            )
        )
    return observed


def flux_command() -> str:
    """The ``flux`` command of the bindings rush imports (else the one on PATH)."""
    try:
        import flux  # type: ignore[import-not-found]

        # PREFIX/lib/python3.X/site-packages/flux/__init__.py -> PREFIX/bin/flux
        beside = Path(flux.__file__).resolve().parents[4] / "bin" / "flux"
        if beside.is_file():
            return str(beside)
    except ImportError:
        pass
    found = shutil.which("flux")
    if found is None:
        raise RJMSError(
            "no flux command found",
            where="replay --mode scheduler",
            fix="install flux-core or put flux on PATH",
        )
    return found


def _flux(uri: str, *argv: str, check: bool = True, timeout: float = 120.0) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if uri:
        env["FLUX_URI"] = uri
    out = subprocess.run([flux_command(), *argv], env=env, capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise RJMSError(
            f"flux {' '.join(argv)} failed: {(out.stderr or out.stdout).strip()[-2000:]}",
            where="replay --mode scheduler",
            fix="the broker's python3 must import rush: set FLUX_PYTHONPATH_PREPEND to what "
            "`rush flux-module --pythonpath` prints when starting the instance",
        )
    return out


def _runner(uri: str, timeout: float = 120.0) -> Callable[..., str]:
    return lambda *argv: _flux(uri, *argv, timeout=timeout).stdout


def loaded_scheduler(uri: str) -> str | None:
    """The name of the module that provides the ``sched`` service (None: no scheduler)."""
    return scheduler_swap.loaded_scheduler(_runner(uri))


def _swap_scheduler(uri: str, load: tuple[str, ...] | None, check: bool = True) -> None:
    """Remove the loaded scheduler, wait for the broker's teardown of its process (flux-core
    0.88's double close, rush/rjms/flux/scheduler_swap.py), then ``flux module load *load``
    (None: none). ``check=False`` (restoring after a failure): errors are logged, not raised."""
    try:
        scheduler_swap.remove_schedulers(_runner(uri), timeout=MODULE_LOAD)
        if load is not None:
            _flux(uri, "module", "load", *load, timeout=MODULE_LOAD)
    except (RJMSError, RuntimeError, TimeoutError, subprocess.TimeoutExpired) as error:
        if check:
            raise RJMSError(
                f"replacing the instance's scheduler: {error}",
                where="replay --mode scheduler",
                fix="check `flux module list` and `flux dmesg` on the instance",
            ) from error
        log.warning("restoring the instance's scheduler: %s", error)


@contextmanager
def flux_rush_scheduler(uri: str, config_path: Path, module: Path | None = None) -> Iterator[str]:
    """Scheduler mode: rush's module replaces the instance's scheduler, restored afterwards.

    ``flux module remove`` the loaded scheduler, ``flux module load sched-rush.py
    config=PATH``; on exit the rush module is removed and the previous scheduler (if any) is
    loaded again, without the arguments it had. Yields the previous scheduler's name.
    """
    if module is None:
        import rush

        module = Path(rush.__file__).resolve().parent / "flux_module" / "sched-rush.py"
    if not module.is_file():
        raise RJMSError(
            f"rush's Flux scheduler module is missing: {module}",
            where="replay --mode scheduler",
            fix="reinstall rush (the module ships in rush/rjms/), or replay with --mode priority",
        )
    previous = loaded_scheduler(uri)
    restore = (previous,) if previous is not None else None
    try:
        # Loading runs the module's set-up: the models loaded and warmed, every kernel loaded
        # (minutes on a cold cache and a loaded host), all before the window's first submit.
        _swap_scheduler(uri, (str(module), f"config={Path(config_path).resolve()}"))
        # One job through the module first: its first pass loads rush's core (imports, compiled
        # kernels: 1.7 s measured), which would otherwise delay the window's first jobs.
        _flux(uri, "run", "-n1", "--job-name=rush-replay-warmup", "true", timeout=MODULE_LOAD)
    except RJMSError:
        if loaded_scheduler(uri) != previous:
            _swap_scheduler(uri, restore, check=False)
        raise
    try:
        yield previous or ""
    finally:
        if loaded_scheduler(uri) != previous:
            _swap_scheduler(uri, restore, check=False)


def scheduler_differences(backend: RJMSBackend, nodes: tuple[Node, ...], scaled: Workload) -> dict:
    """Slurm only: the settings that make its backfill differ from the simulator's EASY (each
    with its fix), the differences no setting removes, and the settings read."""
    if backend.name != "slurm":
        return {}
    settings = slurm_settings(backend)
    keys = ("bf_interval", "bf_resolution", "bf_window", "bf_job_part_count_reserve", "sched_interval",
            "batch_sched_delay", "PriorityType", "PriorityCalcPeriod", "PriorityWeightAge")  # fmt: skip
    max_limit = float(scaled.requested_time.max()) if len(scaled) else 0.0
    return {
        "settings": setting_differences(settings, nodes, max_limit),
        "inherent": list(INHERENT),
        "read": {k: settings[k] for k in keys if k in settings},
        "cores_per_node": sorted({node.cores for node in nodes}),
    }


@dataclass(frozen=True)
class ReplayOptions:
    """How a replay runs, beyond what it replays."""

    cycle: Callable[[], object] | None = None  # the daemon's cycle, run while waiting
    timeout: float = 3600.0  # seconds for the whole window to finish
    partition: str = ""
    tau: float = 10.0  # bounded-slowdown threshold of the report
    say: Callable[[str], object] = log.warning  # tells the user what was cancelled
    mode: str = "priority"  # only labels the report: the caller sets the scheduler up


def replay(
    backend: RJMSBackend,
    workload: Workload,
    window: Window,
    speedup: float,
    config: CoreConfig,
    options: ReplayOptions = ReplayOptions(),
) -> dict:
    """Run the replay and return the fidelity report.

    On a timeout, an RJMS failure or Ctrl-C every job submitted so far is cancelled by id
    (and ``options.say`` tells the user) before the error propagates: nothing is left behind.
    ``options.mode`` only labels the report: the caller sets the scheduler up
    (:func:`flux_rush_scheduler`).
    """
    cycle, timeout, partition, tau, say, mode = (
        options.cycle,
        options.timeout,
        options.partition,
        options.tau,
        options.say,
        options.mode,
    )
    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise RushError(f"invalid timeout {timeout!r}", where="--timeout", fix="seconds > 0, e.g. 3600")
    # The simulator replays every pass in full; the live passes are bounded (policy.max_jobs_considered,
    # 2000 by default), which decides the same while fewer jobs wait than the bound.
    config = replace(config, max_jobs_considered=None)
    if mode not in MODES:
        raise RushError(f"unknown replay mode {mode!r}", where="--mode", fix=f"one of: {', '.join(MODES)}")
    state = backend.read_state()
    cpus = state.total_procs
    if cpus <= 0:
        raise RJMSError("the RJMS reports no CPUs", where="replay", fix="check the partitions' nodes (sinfo)")
    # The RJMS's time-limit granularity (Slurm: minutes; Flux: seconds).
    limit_step = backend.capabilities.time_limit_granularity
    scaled = scale_window(workload, window, speedup, cpus, limit_granularity=limit_step)
    differences = scheduler_differences(backend, state.nodes, scaled)
    for text in differences.get("settings", []):
        say(f"replay: Slurm's backfill will differ from the simulator's EASY: {text}")
    ids: dict[int, int] = {}
    try:
        t0, _ = submit_window(backend, scaled, partition, ids, cycle)
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
    rjms = backend.name or "rjms"
    granularity = GRANULARITY.get(rjms, 5.0)
    report = fidelity_report(simulated, observed, tau=tau, rjms=rjms, granularity=granularity)
    # The scheduler's decisions alone: the simulator again, each job running as long as it
    # really held its processors (sleep p/K plus launch and teardown). Sub-second differences
    # in run lengths change EASY's later choices, so over a long window the trace's runtimes
    # compare end to end and these compare decision for decision.
    occupied = {o.job_id: o.occupied for o in observed}
    as_run = as_seen.subset(np.arange(len(as_seen)))
    as_run.runtime = np.array([occupied[int(j)] for j in as_run.job_id], dtype=np.float64)
    decided = fidelity_report(simulate(as_run, config), observed, tau=tau, rjms=rjms, granularity=granularity)
    report["measured_runtimes"] = {k: decided[k] for k in ("start_difference", "start_order", "metrics")}
    if rjms == "slurm":
        # Slurm on its whole-second ticks: each job holds its cores for whole seconds (at least
        # one), the time until the tick that sees it end. Slurm's schedule lies between the
        # simulator's and this one's (measured, docs/admin-slurm.md "Replay").
        on_ticks = as_seen.subset(np.arange(len(as_seen)))
        on_ticks.runtime = np.maximum(np.ceil(as_seen.runtime), 1.0)
        ticked = fidelity_report(
            simulate(on_ticks, config), observed, tau=tau, rjms=rjms, granularity=granularity
        )
        report["whole_second_runtimes"] = {
            k: ticked[k] for k in ("start_difference", "start_order", "metrics")
        }
        # The simulator's Slurm mode, from this Slurm's own settings, on its clock.
        scheduler, why_not = slurm_scheduler(backend, state.nodes)
        if scheduler is None:
            say(f"replay: no Slurm-mode prediction: {why_not}")
        else:
            report["slurm_mode"] = slurm_mode_report(
                as_seen, observed, scheduler, config, t0, tau=tau, granularity=granularity
            )
    report["rjms"], report["mode"] = rjms, mode
    # The replay's time 0 on the RJMS's clock (epoch seconds): where Slurm's ticks fell.
    report["clock_offset"] = t0
    report["window"] = {"start": window.start, "count": window.count, "speedup": speedup, "cpus": cpus}
    report["rjms_job_ids"] = {str(k): v for k, v in ids.items()}
    report["scheduler_differences"] = differences
    # Scaled limits rounded up to the RJMS's granularity: the estimates EASY had lost to scaling.
    report["limits_at_floor"] = float(np.mean(scaled.requested_time <= limit_step))
    # Slurm decides on whole-second ticks: a job shorter than one holds its cores about 1 s.
    report["sub_second_jobs"] = float(np.mean(scaled.runtime < 1.0)) if len(scaled) else 0.0
    report["unfinished"] = len(scaled) - len(observed)
    return report
