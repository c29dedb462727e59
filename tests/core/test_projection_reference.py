"""The start projection (rush.core.start_estimates.project_starts) against the rule written out
in plain Python, with no profile structure at all: free processors at a time are counted from
the running jobs' ends and the jobs already booked, and each job goes at the first time (now,
a running job's end or a booked job's end) from which its processors stay free for its
duration. Random queues with ties (running jobs ending together, equal requests), zero and
unlimited durations, jobs wider than the machine, and jobs that never fit because an unlimited
one holds processors for ever. The reference with one booking left out is checked to disagree,
so that a projection that drops a booking fails here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.conservative import MIN_DURATION
from rush.core.start_estimates import project_starts

INF = math.inf


def reference_starts(now, free, running_end, running_procs, order, procs, duration, in_order, drop=-1):
    """Each job's start by the rule, booking every job placed except the ``drop``-th one."""
    ends = [(e if e > now else now + 1.0, int(p)) for e, p in zip(running_end, running_procs, strict=True)]
    total = free + sum(p for _, p in ends)
    booked: list[tuple[float, float, int]] = []  # start, end, processors

    def free_at(t: float) -> int:
        released = sum(p for e, p in ends if e <= t)
        held = sum(k for s, e, k in booked if s <= t < e)
        return free + released - held

    starts = [INF] * len(procs)
    earliest = now
    for m, j in enumerate(order):
        need, d = int(procs[j]), max(float(duration[j]), MIN_DURATION)
        if need > total:
            continue
        times = sorted({now} | {e for e, _ in ends} | {e for _, e, _ in booked} | {s for s, _, _ in booked})
        for t in (t for t in times if earliest <= t < INF):
            window = [t] + [u for u in times if t < u < t + d]
            if all(free_at(u) >= need for u in window):
                starts[j] = t
                if m != drop:
                    booked.append((t, t + d, need))
                break
        if in_order:  # in order, a job that never starts holds back every later one
            earliest = starts[j]
    return np.array(starts)


def random_case(seed: int, in_order: bool) -> tuple:
    rng = np.random.default_rng(seed)
    machine = int(rng.integers(2, 24))
    running = int(rng.integers(0, 8))
    running_procs = rng.integers(1, machine // 2 + 2, running).astype(np.int64)
    running_end = 100.0 + rng.choice([-20.0, 0.0, 0.5, 10.0, 10.0, 60.0, 300.0], running)
    free = max(machine - int(running_procs.sum()), 0)
    jobs = int(rng.integers(1, 30))
    procs = rng.choice([1, 1, 2, 3, machine // 2 + 1, machine, machine + 1], jobs).astype(np.int64)
    duration = rng.choice([0.0, 5.0, 10.0, 10.0, 50.0, 300.0], jobs)
    duration[rng.random(jobs) < 0.05] = INF
    order = rng.permutation(jobs).astype(np.int64)
    return (100.0, free, running_end, running_procs, order, procs, duration, in_order)


@pytest.mark.parametrize("in_order", [False, True])
def test_every_start_is_the_rules(in_order: bool) -> None:
    never = wider = 0
    for seed in range(150):
        args = random_case(seed, in_order)
        expected = reference_starts(*args)
        assert np.array_equal(project_starts(*args), expected), seed
        wider += int(np.sum(args[5] > args[1] + args[3].sum()))
        never += int(np.sum(~np.isfinite(expected) & (args[5] <= args[1] + args[3].sum())))
    assert wider > 0 and never > 0  # both kinds of "no estimate" were on the path


def test_the_reference_tells_a_dropped_booking() -> None:
    # Leaving any one booking out changes some later start on these queues: a projection that
    # lost a booking would not pass the test above.
    caught = 0
    for seed in range(40):
        args = random_case(seed, False)
        full = reference_starts(*args)
        placed = [m for m, j in enumerate(args[4]) if np.isfinite(full[j])]
        if len(placed) >= 2:
            dropped = reference_starts(*args, drop=placed[0])
            caught += int(not np.array_equal(full, dropped))
    assert caught >= 10
