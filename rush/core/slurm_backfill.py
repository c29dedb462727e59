"""Slurm's scheduler as a site configures it: the main scheduler and ``sched/backfill``.

What makes Slurm differ from the simulator's EASY on processor counts (docs/admin-slurm.md,
"Replay"), each read from the site's slurm.conf (:class:`SlurmScheduler`):

* **Nodes.** Jobs get CPUs on nodes (``select/cons_tres``, ``CR_CPU``: several jobs share a
  node); a job's CPUs are taken node by node, lowest node first.
* **The main scheduler** (:func:`main_pass`) runs when a job is submitted or ends: it starts
  jobs in priority order while they fit and stops at the first that does not (FCFS per
  partition); it knows nothing of backfill's plan.
* **Backfill** (:func:`backfill_pass`) runs every ``bf_interval`` seconds when something
  changed. It tests jobs in priority order (at most ``bf_max_job_test``) against a plan: a
  running job holds its CPUs until its start plus its time limit; a job that cannot start now
  is given the earliest time it fits (:func:`will_run`: cons_tres's will-run test, running
  jobs taken away in batches) and, unless ``bf_job_part_count_reserve`` reservations
  are already made, a reservation of the **whole nodes** it would use, from that time rounded
  down to ``bf_resolution`` to its end rounded up (``backfill.c``'s ``_set_slot_time``). A
  later job starts now only on nodes no reservation holds during its own time limit. No
  reservation past ``bf_window``.
* **The tick.** slurmctld records times in whole seconds, backfill runs on its interval (the
  cycle of the tick at or after a change, :func:`backfill_tick`), and a finished job's CPUs
  return at the next one-second tick (:func:`next_tick`). The shell
  (``rush.simulator.slurm_mode``) keeps the clock.

Everything here is pure Python on small arrays (one entry per node): a replay window or a
partition of tens of nodes, not a whole machine of thousands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rush.errors import PolicyError

# slurm.conf(5) 25.11 defaults (backfill.c: BACKFILL_INTERVAL, _RESOLUTION, _WINDOW,
# DEF_BF_MAX_JOB_TEST; job_scheduler.c: sched_interval).
DEFAULT_BF_INTERVAL = 30.0
DEFAULT_BF_RESOLUTION = 60.0
DEFAULT_BF_WINDOW = 1440.0 * 60.0
DEFAULT_BF_MAX_JOB_TEST = 500
DEFAULT_SCHED_INTERVAL = 60.0


@dataclass(frozen=True)
class SlurmScheduler:
    """A Slurm partition and its scheduler settings (seconds; counts), as slurm.conf gives them.

    ``nodes`` and ``cpus_per_node``: the partition's nodes (one size: the replay and test
    clusters' layout). ``bf_job_part_count_reserve`` 0 means a reservation for every tested
    job (Slurm's default). ``tick``: the clock slurmctld records times on (1 s).
    """

    nodes: int
    cpus_per_node: int
    bf_interval: float = DEFAULT_BF_INTERVAL
    bf_resolution: float = DEFAULT_BF_RESOLUTION
    bf_window: float = DEFAULT_BF_WINDOW
    bf_max_job_test: int = DEFAULT_BF_MAX_JOB_TEST
    bf_job_part_count_reserve: int = 0
    sched_interval: float = DEFAULT_SCHED_INTERVAL
    tick: float = 1.0

    def __post_init__(self) -> None:
        counts = {
            "nodes": self.nodes,
            "cpus_per_node": self.cpus_per_node,
            "bf_max_job_test": self.bf_max_job_test,
        }
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PolicyError(f"{name} must be an integer >= 1, not {value!r}", where=f"slurm.{name}")
        if (
            isinstance(self.bf_job_part_count_reserve, bool)
            or not isinstance(self.bf_job_part_count_reserve, int)
            or self.bf_job_part_count_reserve < 0
        ):
            raise PolicyError(
                f"bf_job_part_count_reserve must be an integer >= 0, not {self.bf_job_part_count_reserve!r}",
                where="slurm.bf_job_part_count_reserve",
            )
        for name in ("bf_interval", "bf_resolution", "bf_window", "sched_interval", "tick"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise PolicyError(
                    f"{name} must be a finite number of seconds > 0, not {value!r}", where=f"slurm.{name}"
                )

    @property
    def cpus(self) -> int:
        return self.nodes * self.cpus_per_node


@dataclass
class RunningJob:
    """A started job as backfill plans with it: its CPUs per node until start + time limit."""

    job: int
    alloc: np.ndarray  # CPUs per node
    limit_end: float


@dataclass(frozen=True)
class PendingJob:
    job: int
    procs: int
    limit: float  # seconds


@dataclass
class Reservation:
    """Whole nodes held for a pending job over [start, end) (rounded to bf_resolution)."""

    nodes: np.ndarray  # bool per node
    start: float
    end: float


@dataclass
class BackfillPlan:
    """One backfill cycle's plan: its reservations and the start times it predicts."""

    reservations: list[Reservation] = field(default_factory=list)
    planned_start: dict[int, float] = field(default_factory=dict)


def next_tick(at: float, step: float) -> float:
    """The first tick of a ``step``-second clock strictly after ``at`` (epoch seconds).

    Slurm decides on such ticks: a backfill cycle every ``bf_interval``; and a finished job's
    CPUs are seen free at slurmctld's next one-second tick after the job ends, so a chain of
    sub-second jobs on the same CPUs costs about a second per job (measured on replays,
    docs/admin-slurm.md "The Slurm mode")."""
    return (math.floor(at / step) + 1) * step


def backfill_tick(changed: float, step: float, last_cycle: float = -math.inf) -> float:
    """When the backfill cycle that sees a change at ``changed`` runs (epoch seconds): the first
    tick of the ``step``-second clock (``bf_interval``) at or after it, one cycle per tick (a
    tick whose cycle already ran at ``last_cycle`` passes to the next).

    backfill.c's ``backfill_agent`` wakes every ``bf_interval`` seconds and runs a cycle when
    ``_more_work``: a job or node update stamped, in whole seconds, no earlier than the last
    cycle's end; it waits ``bf_interval`` after a cycle. A submit or an end that slurmctld
    records in second T is therefore seen by that second's cycle, not only by the next one:
    Slurm backfills jobs in their submit's second behind a waiting job (sim/slurm_mode/README.md,
    H2). Within a microsecond of a tick counts as on it (the replay's clock is a float)."""
    tick = max(math.ceil(changed / step - 1e-6 / step) * step, changed)
    if tick <= last_cycle + 1e-6:
        tick = next_tick(last_cycle, step)
    return tick


def place(free: np.ndarray, procs: int, usable: np.ndarray | None = None) -> np.ndarray | None:
    """CPUs per node for a job of ``procs`` CPUs on the free CPUs of the usable nodes, lowest
    node first; None when they do not fit."""
    avail = free if usable is None else np.where(usable, free, 0)
    if int(avail.sum()) < procs:
        return None
    alloc = np.zeros_like(free)
    left = procs
    for node in range(len(avail)):
        take = min(int(avail[node]), left)
        if take > 0:
            alloc[node] = take
            left -= take
            if left == 0:
                break
    return alloc


def main_pass(free: np.ndarray, pending: list[PendingJob]) -> list[tuple[PendingJob, np.ndarray]]:
    """The main scheduler: start jobs in priority order while they fit; stop at the first that
    does not (its partition is then blocked for lower priorities). ``free`` is updated."""
    started = []
    for job in pending:
        alloc = place(free, job.procs)
        if alloc is None:
            break
        free -= alloc
        started.append((job, alloc))
    return started


def _free_at(t: float, capacity: np.ndarray, running: list[RunningJob]) -> np.ndarray:
    """Free CPUs per node at ``t`` by the plan: running jobs end at their limits."""
    free = capacity.copy()
    for run in running:
        if run.limit_end > t:
            free -= run.alloc
    return free


def _usable(reservations: list[Reservation], start: float, end: float, nodes: int) -> np.ndarray:
    """Nodes no reservation holds during [start, end] (a reservation beginning at ``end``
    counts, as backfill.c's ``begin_time <= end_time``)."""
    usable = np.ones(nodes, dtype=bool)
    for resv in reservations:
        if resv.end > start and resv.start <= end:
            usable &= ~resv.nodes
    return usable


def will_run(
    t: float, usable: np.ndarray, capacity: np.ndarray, running: list[RunningJob], procs: int
) -> tuple[float, np.ndarray] | None:
    """When and where a job of ``procs`` CPUs could start at ``t`` or later on the usable nodes,
    as cons_tres's will-run test finds it (``_future_run_test``): running jobs are taken away
    in batches, all those ending within a window (from the first end rounded up to a 30 s
    barrier, the window doubling after each miss) at once, those with no CPUs on the usable
    nodes never; the job is placed on what is then free, lowest node first, and starts at the
    end of the last removed job on its nodes."""
    # A running job with no CPUs on the usable nodes is skipped ("job has no usable nodes"): it
    # is never removed, and the 30 s barrier is aligned on the first job that is.
    ending = sorted(
        (run for run in running if run.limit_end > t and (run.alloc[usable] > 0).any()),
        key=lambda run: run.limit_end,
    )
    free = _free_at(t, capacity, running)
    alloc = place(free, procs, usable)
    if alloc is not None:
        return t, alloc
    if not ending:
        return None
    window = 30.0
    barrier = ending[0].limit_end + (window - ending[0].limit_end % window)
    removed: list[RunningJob] = []
    k = 0
    while k < len(ending):
        while k < len(ending) and (not removed or ending[k].limit_end <= barrier + window):
            free = free + ending[k].alloc
            removed.append(ending[k])
            k += 1
        alloc = place(free, procs, usable)
        if alloc is not None:
            on_nodes = [run.limit_end for run in removed if (run.alloc[alloc > 0] > 0).any()]
            return max(on_nodes, default=removed[-1].limit_end), alloc
        while k < len(ending) and ending[k].limit_end > barrier + window:
            window *= 2
    return None


def backfill_pass(
    now: float,
    free: np.ndarray,
    running: list[RunningJob],
    pending: list[PendingJob],
    config: SlurmScheduler,
) -> tuple[list[tuple[PendingJob, np.ndarray]], BackfillPlan]:
    """One backfill cycle at ``now`` (epoch seconds: the plan's rounding is on Slurm's clock).

    ``free`` is the CPUs free per node now (updated for the jobs started), ``running`` the
    running jobs (extended with those started), ``pending`` the waiting jobs in priority
    order. Returns the jobs to start now and the plan (reservations, predicted starts).
    """
    capacity = np.full(config.nodes, config.cpus_per_node, dtype=np.int64)
    res = config.bf_resolution
    window_end = math.floor((now + config.bf_window) / res) * res
    plan = BackfillPlan()
    started: list[tuple[PendingJob, np.ndarray]] = []
    reserved = 0
    for job in pending[: config.bf_max_job_test]:
        may_reserve = config.bf_job_part_count_reserve == 0 or reserved < config.bf_job_part_count_reserve
        # Candidate starts: now, then each moment the plan frees something.
        moments = {run.limit_end for run in running if run.limit_end > now}
        moments |= {resv.end for resv in plan.reservations if resv.end > now}
        found: tuple[float, np.ndarray] | None = None
        for t in [now, *sorted(moments)]:
            if t > window_end:
                break
            usable = _usable(plan.reservations, t, t + job.limit, config.nodes)
            if t == now:
                alloc = place(free, job.procs, usable)
                if alloc is not None:
                    found = (t, alloc)
                    break
                if not may_reserve:
                    break  # TEST_NOW_ONLY: only a start now matters
                # backfill.c's first _try_sched is from now: cons_tres's will-run takes the
                # running jobs away in batches from now, not from each one's end in turn.
            when = will_run(t, usable, capacity, running, job.procs)
            if when is None:
                continue
            start, alloc = when
            # The nodes chosen must be free of reservations over the job's own time.
            if (
                start <= window_end
                and not (
                    _usable(plan.reservations, start, start + job.limit, config.nodes) < (alloc > 0)
                ).any()
            ):
                found = (start, alloc)
                break
        if found is None:
            continue
        t, alloc = found
        if t == now:
            free -= alloc
            running.append(RunningJob(job.job, alloc, now + job.limit))
            started.append((job, alloc))
            continue
        plan.planned_start[job.job] = t
        if may_reserve:
            start = math.floor(t / res) * res
            end = math.floor((t + job.limit + res - 1) / res) * res
            plan.reservations.append(Reservation(alloc > 0, start, end))
            reserved += 1
    return started, plan
