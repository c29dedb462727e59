"""Load every compiled kernel a live pass can call, before the first pass needs it.

numba compiles (or loads from its cache) a kernel the first time it is called. A live shell
that warms only the pass it sees first pays for the others inside a later pass: the start-
estimate projection (:func:`rush.core.start_estimates.project_starts`) is called only once more
than :data:`~rush.core.start_estimates.EASY_REPLAY_MAX_JOBS` jobs wait, so the Flux module's
first pass over a long queue compiled it (41.8 s at load 11 on a cold kernel cache, measured with
``benchmarks/bench_flux_nodes.py`` at 10 000 jobs: the journal's first cycle over 3 741 pending
jobs; last round's 13.8 s pass on a quiet host came at the same place), and the module answered
nothing meanwhile. A pass on nodes, a bounded pass (:mod:`rush.core.pass_budget`) and list
scheduling take other branches of the same kind.

:func:`warm_live_pass` runs :func:`rush.core.schedule.schedule` over tiny snapshots along each of
those paths for one configuration: on a warm cache it costs milliseconds, on a cold one it
compiles at start-up (the Flux module's load, the daemon's start, ``rush warmup``) instead of
in a pass.

The daemon's service compiles them in a child process first (``rush.daemon.warm_child``), so
that it loads them here instead of keeping the compiler's state.
"""

from __future__ import annotations

import dataclasses

from rush.core.config import CoreConfig
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot

# Backfilling whose start estimates take the projection (project_starts) at any queue length.
_PROJECTING = "none"


def _snapshots(now: float) -> tuple[Snapshot, Snapshot]:
    """A machine on processor counts and one of two 2-core nodes, each with a running job,
    a job that fits and one that waits."""
    pending = (PendingJob(1, now - 2.0, 1, 60.0), PendingJob(2, now - 1.0, 4, 60.0))
    running = (RunningJob(3, now - 5.0, 1, 60.0),)
    procs = Snapshot(now=now, total_procs=4, free_procs=3, pending=pending, running=running)
    nodes = (Node("warm0", 2, free_cores=1), Node("warm1", 2))
    on_nodes = dataclasses.replace(
        procs,
        pending=(
            dataclasses.replace(pending[0], request=Request(1, 1)),
            dataclasses.replace(pending[1], request=Request(2, 2, exclusive=True)),
        ),
        running=(dataclasses.replace(running[0], allocation=(Slot(0, 1),)),),
        nodes=nodes,
    )
    return procs, on_nodes


def warm_live_pass(config: CoreConfig, now: float = 1_000_000.0) -> int:
    """Call every kernel a live pass under ``config`` can reach (processor counts and nodes,
    bounded or not, the EASY replay and the projection of start estimates); the passes run."""
    variants = {config.backfill, _PROJECTING}
    passes = 0
    for snapshot in _snapshots(now):
        for backfill in sorted(variants):
            for limit in (None, 1):
                schedule(snapshot, dataclasses.replace(config, backfill=backfill, max_jobs_considered=limit))
                passes += 1
    return passes
