"""The data one scheduling pass reads and writes, as a few typed containers.

A pass (:func:`rush.core.scheduling_pass.scheduling_pass`) is called by the simulator's
event loop at every event and by the live entry point :func:`rush.core.schedule.schedule`
once per snapshot. Both hand it the same containers; the compiled kernels take them as
numba named tuples of arrays, so no kernel needs more than a handful of parameters.

Jobs are indexed ``0 .. n-1`` (the simulator: the workload in (submit, job_id) order; live:
the snapshot's pending jobs in that order). Per-job arrays are indexed by job, queues hold
job indices.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from rush.core.config import CoreConfig
from rush.core.names import BACKFILL_MODES
from rush.core.policies import Policy

MODE_EASY = 0
MODE_CONSERVATIVE = 1
MODE_NONE = 2
MODES = {"easy": MODE_EASY, "conservative": MODE_CONSERVATIVE, "none": MODE_NONE}
assert set(MODES) == set(BACKFILL_MODES)


class OrderPolicy(NamedTuple):
    """One priority order: the policy's code and weights, and precomputed keys for a
    time-independent policy (``use_static``; ``static_key`` per job)."""

    code: int
    weights: np.ndarray
    static_key: np.ndarray
    use_static: bool
    # Each job's rank by the RJMS's priority (0: highest), ordered before the policy
    # (rush.core.ordering); empty: no such order (the simulator, rush's policy alone).
    primary: np.ndarray


class PassConfig(NamedTuple):
    """What a pass is told besides the jobs: backfilling mode, the two orders (priority and
    backfill scan), starvation threshold (< 0: none), classes, wait quantum, skip limit."""

    mode: int
    order: OrderPolicy
    scan: OrderPolicy
    same_scan: bool
    threshold: float
    use_classes: bool
    wait_quantum: float
    time_origin: float
    skip_limit: int


class PassJobs(NamedTuple):
    """Per-job inputs of a pass. ``estimate`` orders the queue (the policy's p~); ``est`` is
    the reservation estimate (:func:`rush.core.job_rules.effective_estimate`: walltime or current
    speculative limit, and the divider for killable jobs)."""

    submit: np.ndarray
    procs: np.ndarray
    estimate: np.ndarray
    est: np.ndarray
    runtime_class: np.ndarray
    sensitive: np.ndarray
    # The site's fair-share factor per job in [0, 1] (LINEAR's ``fairshare`` term).
    fairshare: np.ndarray
    # The run's length at the latest: its time limit, the divider for a killable job
    # (rush.core.job_rules.limit_estimate). ``est`` when estimates are the requests; a starved
    # head is reserved on it (rush.core.starved_head).
    limit: np.ndarray


class PassState(NamedTuple):
    """What a pass carries to the next one, per job: skips so far (skip-with-limit), the
    standing conservative reservation (``inf``: none), the first promised start (evidence),
    and on nodes the row of ``NodeView.reserved`` holding the standing reservation's nodes
    (-1: none kept; the pass then re-places it from its time alone). The pass updates them
    in place."""

    skips: np.ndarray
    reserved_at: np.ndarray
    first_reservation: np.ndarray
    reserved_row: np.ndarray
    # Per node, what the last conservative pass on nodes left booked from now on (entries of
    # running and started jobs, the latest of their ends, usable 1/0, the hull of what it
    # freed): the next pass compares it with its running jobs to see what was freed since.
    # Shape (0, 5): unknown (every node counts as freed); live, rush.core.kept_nodes builds it.
    node_memory: np.ndarray
    # On nodes, the end of each kept reservation's window as the pass that placed it booked it
    # (``inf``: unknown): one whose window now ends before it (its estimate got shorter) is
    # searched from now, since it may fit where nothing was freed.
    reserved_end: np.ndarray


class RunningSet(NamedTuple):
    """Running jobs by estimated end (ascending), with their processors; ``count`` of them.
    ``limit_end``/``limit_procs``: the same jobs by the end of their limits (ascending), when
    each is surely gone (:attr:`PassJobs.limit`); the same arrays as ``end``/``procs`` when the
    estimates are the limits."""

    end: np.ndarray
    procs: np.ndarray
    count: int
    limit_end: np.ndarray
    limit_procs: np.ndarray


class PassQueues(NamedTuple):
    """The pending queue (job indices) in priority order and in backfill-scan order, with
    their (group, key) sort words, and a per-job scratch mask (all False between passes)."""

    queue: np.ndarray
    group: np.ndarray
    key: np.ndarray
    scan: np.ndarray
    scan_group: np.ndarray
    scan_key: np.ndarray
    taken: np.ndarray


class PassOut(NamedTuple):
    """Output buffers of one pass (sized for every job)."""

    start: np.ndarray
    backfilled: np.ndarray
    skip: np.ndarray
    reserved: np.ndarray
    reserved_at: np.ndarray


class PassMoment(NamedTuple):
    """The moment of a pass: time, free processors, queue length, whether sensitive jobs
    are predicted to vary now (live: each job's flag is already in ``sensitive``), and whether
    the pass counts the skips it makes (``rush.core.skip_with_limit.counts_skips``: an
    RJMS-event pass does, a periodic one does not)."""

    now: float
    free: int
    queued: int
    variable_now: bool
    counts_skips: bool = True


class PassResult(NamedTuple):
    """Counts written to :class:`PassOut`, and EASY's head, shadow time and extra processors."""

    started: int
    skipped: int
    reserved: int
    head: int
    shadow: float
    extra: int


@njit(cache=True)
def new_queues(n: int) -> PassQueues:
    """Empty queue buffers for ``n`` jobs."""
    return PassQueues(
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.float64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.float64),
        np.zeros(n, dtype=np.bool_),
    )


@njit(cache=True)
def new_out(n: int) -> PassOut:
    """Output buffers of a pass over at most ``n`` jobs."""
    return PassOut(
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.bool_),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.float64),
    )


def new_state(n: int, skips: np.ndarray | None = None, reserved_at: np.ndarray | None = None) -> PassState:
    return PassState(
        np.zeros(n, dtype=np.int64) if skips is None else np.array(skips, dtype=np.int64),
        np.full(n, np.inf) if reserved_at is None else np.array(reserved_at, dtype=np.float64),
        np.full(n, np.inf),
        np.full(n, -1, dtype=np.int64),
        np.zeros((0, 5), dtype=np.float64),
        np.full(n, np.inf),
    )


def order_policy(
    policy: Policy, static_key: np.ndarray | None = None, primary: np.ndarray | None = None
) -> OrderPolicy:
    """A policy as a pass sees it; ``static_key`` (one per job) for a time-independent policy
    whose keys were computed once (the simulator), else keys are computed at each pass;
    ``primary`` (one rank per job) orders before the policy (CoreConfig.rjms_priority_first)."""
    first = np.zeros(0, dtype=np.int64) if primary is None else primary
    if static_key is None:
        return OrderPolicy(policy.code, policy.weight_array(), np.zeros(1), False, first)
    return OrderPolicy(policy.code, policy.weight_array(), static_key, True, first)


def pass_config(config: CoreConfig, order: OrderPolicy, scan: OrderPolicy, time_origin: float) -> PassConfig:
    """The pass's view of a :class:`CoreConfig`, with its two orders already built."""
    return PassConfig(
        MODES[config.backfill],
        order,
        scan,
        config.scan_policy == config.policy,
        -1.0 if config.threshold is None else float(config.threshold),
        bool(config.use_classes),
        float(config.wait_quantum),
        float(time_origin),
        int(config.skip_limit),
    )
