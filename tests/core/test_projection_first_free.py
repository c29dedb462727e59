"""The projection's scan starts, for each job size, where the last job of that size found free
processors (rush.core.start_estimates.project_starts): the same starts as scanning the whole
booked profile from the beginning for every job, which this test does with the same profile
kernels, on random queues (EASY's projection and list scheduling's, in order)."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.conservative import MIN_DURATION, _breakpoint, _occupy, fit_from
from rush.core.start_estimates import project_starts

INF = np.inf


def scanned_from_the_start(now, free, running_end, running_procs, order, procs, duration, in_order):
    """project_starts as it was: every fit scanned from the first breakpoint (or the in-order bound)."""
    capacity = 2 * (len(running_end) + 2 * len(order)) + 4
    ptime, pavail = np.empty(capacity), np.empty(capacity, dtype=np.int64)
    ptime[0], pavail[0], n = now, free, 1
    for e, p in zip(running_end, running_procs, strict=True):
        e = e if e > now else now + 1.0
        if e == ptime[n - 1]:
            pavail[n - 1] += p
        else:
            ptime[n], pavail[n], n = e, pavail[n - 1] + p, n + 1
    total = pavail[n - 1]
    starts = np.full(len(procs), INF)
    lo = 0
    for j in order:
        if procs[j] > total:
            continue
        d = max(duration[j], MIN_DURATION)
        i = fit_from(ptime, pavail, n, procs[j], d, lo)
        if i < 0:
            continue
        starts[j] = ptime[i]
        n = _occupy(ptime, pavail, n, ptime[i], d, -procs[j])
        if in_order:
            lo, n = _breakpoint(ptime, pavail, n, starts[j])
    return starts


@pytest.mark.parametrize("in_order", [False, True])
def test_the_same_starts_as_scanning_from_the_start(in_order: bool) -> None:
    for seed in range(60):
        rng = np.random.default_rng(seed)
        machine = int(rng.integers(4, 64))
        running = int(rng.integers(0, 12))
        running_procs = rng.integers(1, machine // 2 + 1, running).astype(np.int64)
        running_end = np.sort(
            100.0 + rng.choice([0.0, 50.0, 300.0, 1000.0], running) + rng.integers(0, 5, running)
        )
        free = max(machine - int(running_procs.sum()), 0)
        jobs = int(rng.integers(1, 120))
        procs = rng.choice([1, 2, 4, machine // 2, machine, machine + 1], jobs).astype(np.int64)
        duration = rng.choice([0.0, 10.0, 60.0, 300.0, 3600.0], jobs)
        order = rng.permutation(jobs).astype(np.int64)
        args = (100.0, free, running_end, running_procs, order, procs, duration, in_order)
        expected = scanned_from_the_start(*args)
        assert np.array_equal(project_starts(*args), expected), seed
        assert np.isfinite(expected).any()
