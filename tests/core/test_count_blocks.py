"""The blocked count profile equals the flat one it replaces (issue 31).

:mod:`rush.core.count_blocks` keeps conservative backfilling on nodes' core and GPU count
profiles in blocks; the pass's decisions are the flat profile's only if every breakpoint, count
and count fit is. Random bookings (now and later, finite and endless, taken and given back) are
applied to both, the breakpoints compared after each, and random count fits (from random starts,
with and without a bound, with and without GPUs) compared between them: the flat side is
:func:`rush.core.conservative._occupy` and the pass's count fit as it was on the flat arrays
(:func:`rush.core.conservative.fit_before` on cores, then GPUs, until both agree).
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.core import count_blocks as cb
from rush.core.conservative import _breakpoint, _occupy, fit_before

NOW = 1_000.0


def _count_fit(cores, gpus, n: int, need: tuple[int, int], duration: float, span: tuple[int, float]) -> int:
    """The flat pass's count fit (the conservative node pass's own before the blocks): first
    breakpoint from ``span[0]`` on, before time ``span[1]``, from which both counts of ``need``
    stay free for ``duration`` (-1: none)."""
    i, bound = span
    while i >= 0:
        i = fit_before(cores[0], cores[1], n, need[0], duration, i, bound)
        if i < 0 or need[1] <= 0:
            return i
        g = fit_before(gpus[0], gpus[1], n, need[1], duration, i, bound)
        if g == i:
            return i
        i = g
    return -1


def _flat_profile(rng, capacity: int):
    """Flat profiles as the pass builds them from running jobs (counts rising at their ends):
    times and cores, times and GPUs (two time arrays, always equal)."""
    ptime, gtime = np.empty(capacity, dtype=np.float64), np.empty(capacity, dtype=np.float64)
    cores, gpus = np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int64)
    ptime[0] = gtime[0] = NOW
    cores[0], gpus[0] = 64, 8
    n = 1
    for _ in range(int(rng.integers(0, 200))):
        end = NOW + float(rng.integers(1, 500))
        c, g = int(rng.integers(1, 9)), int(rng.integers(0, 2))
        at, after = _breakpoint(ptime, cores, n, end)
        assert _breakpoint(gtime, gpus, n, end) == (at, after)
        n = after
        cores[:at] -= c
        gpus[:at] -= g
    return (ptime, cores), (gtime, gpus), n


def _place_index(p: cb.CountBlocks, place: tuple[int, int]) -> int:
    """The flat index of a blocked place (-1: none)."""
    h, k = place
    if h == cb.NONE:
        return -1
    return int(sum(p.size[p.order[x]] for x in range(h))) + k


def _same(p: cb.CountBlocks, flat: tuple) -> None:
    ptime, cores, gpus, n = flat
    times, c, g = cb.flat(p)
    assert times.tolist() == ptime[:n].tolist()
    assert c.tolist() == cores[:n].tolist()
    assert g.tolist() == gpus[:n].tolist()


@pytest.mark.parametrize("seed", range(30))
def test_blocked_profile_books_and_fits_as_the_flat_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    capacity = 2 * 1200 + 400
    (ptime, cores), (gtime, gpus), n = _flat_profile(rng, capacity)
    p = cb.blocks_from(ptime, (cores, gpus), n, capacity)
    _same(p, (ptime, cores, gpus, n))
    booked = []
    for _ in range(600):
        if booked and rng.random() < 0.2:  # give a booking back (a kept one taken out)
            t0, duration, c, g = booked.pop(int(rng.integers(len(booked))))
            c, g = -c, -g
        else:
            # Starts at existing breakpoints (as placements do) or anywhere later than now.
            t0 = (
                float(ptime[int(rng.integers(n))])
                if rng.random() < 0.6
                else NOW + float(rng.integers(0, 3000))
            )
            duration = np.inf if rng.random() < 0.02 else float(rng.integers(1, 800))
            c, g = -int(rng.integers(0, 9)), -int(rng.integers(0, 3)) * int(rng.random() < 0.5)
            booked.append((t0, duration, c, g))
        size = n
        n = _occupy(ptime, cores, size, t0, duration, c)
        assert _occupy(gtime, gpus, size, t0, duration, g) == n
        cb.occupy(p, t0, duration, (c, g))
        _same(p, (ptime, cores, gpus, n))
        for _ in range(3):
            since = -np.inf if rng.random() < 0.1 else NOW + float(rng.integers(-10, 3500))
            bound = np.inf if rng.random() < 0.6 else NOW + float(rng.integers(0, 4000))
            need = (int(rng.integers(-2, 70)), int(rng.integers(-1, 9)) * int(rng.random() < 0.5))
            span = float(rng.choice([1e-6, 1.0, 50.0, 400.0, 2000.0, np.inf]))
            lo = int(np.searchsorted(ptime[:n], since, side="left"))
            place = cb.place_at(p, since)
            assert _place_index(p, place) == (lo if lo < n else -1)
            want = _count_fit((ptime, cores), (gtime, gpus), n, need, span, (lo, bound))
            got = cb.count_fit(p, need, span, place, bound)
            assert _place_index(p, got) == want, (need, span, since, bound)
            if want >= 0:
                assert cb.time_at(p, got) == ptime[want]
                after = cb.next_place(p, got)
                assert _place_index(p, after) == (want + 1 if want + 1 < n else -1)
    assert p.count[0] > 4  # the profile grew over several blocks, split on the way
