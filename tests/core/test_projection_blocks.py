"""The start projection in blocks with fit bounds (rush.core.free_profile, rush.core.fit_bounds)
against the flat-array projection it replaced, on random queues: the same start for every job,
and the same "waits behind" for every job estimated to start later.

The reference is the previous kernel, kept here as it was: a flat sorted profile, each fit
scanned from the first time the job's size was last found free
(rush.core.conservative.fit_from), and the previous Python loop for "waits behind"."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.conservative import MIN_DURATION, _breakpoint, _occupy, fit_from
from rush.core.fit_bounds import MAX_DURATION_CLASSES, MAX_SIZE_CLASSES
from rush.core.free_profile import BLOCK
from rush.core.schedule import _waits_behind
from rush.core.start_estimates import EstimateInputs, estimate_starts, predicted_durations, project_starts

INF = np.inf


def flat_projection(now, free, running_end, running_procs, order, procs, duration, in_order):
    """The previous project_starts (flat profile, first-free scan per size), uncompiled, given
    the running ends sorted as they are once those past their end are moved to now + 1 (it
    took them sorted before the move, which unsorts them when another ends within that second)."""
    moved = np.where(running_end > now, running_end, now + 1.0)
    by_end = np.argsort(moved, kind="stable")
    running_end, running_procs = moved[by_end], running_procs[by_end]
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
    first_free: dict[int, float] = {}
    lo = 0
    for j in order:
        need = int(procs[j])
        if need > total:
            continue
        d = max(duration[j], MIN_DURATION)
        p = max(lo, int(np.searchsorted(ptime[:n], first_free.get(need, now))))
        while p < n and pavail[p] < need:
            p += 1
        if p == n:
            continue
        first_free[need] = ptime[p]
        i = fit_from(ptime, pavail, n, need, d, p)
        if i < 0:
            continue
        starts[j] = ptime[i]
        n = _occupy(ptime, pavail, n, ptime[i], d, -need)
        if in_order:
            lo, n = _breakpoint(ptime, pavail, n, starts[j])
    return starts


def loop_behind(e: EstimateInputs, start: np.ndarray, ends: np.ndarray, dur: np.ndarray) -> dict:
    """The previous _behind: a dict of end times filled in order, first one kept."""
    ending: dict[float, tuple[str, int]] = {}
    nr = len(e.running_start)
    for k, t in enumerate(ends.tolist()):
        ending.setdefault(
            t if t > e.now else e.now + 1.0, ("running", k) if k < nr else ("pending", int(e.started[k - nr]))
        )
    later = np.flatnonzero(np.isfinite(start) & (start > e.now))
    for j, t in zip(
        later.tolist(), (start[later] + np.maximum(dur[later], MIN_DURATION)).tolist(), strict=True
    ):
        ending.setdefault(t, ("pending", j))
    return {j: ending[t] for j, t in zip(later.tolist(), start[later].tolist(), strict=True) if t in ending}


def random_queue(seed: int, jobs: int, in_order: bool) -> tuple:
    """A machine, running jobs and a queue with ties (few sizes and durations, running jobs
    ending together, some already past their end), zero-length jobs, jobs wider than the
    machine and unlimited ones (inf)."""
    rng = np.random.default_rng(seed)
    machine = int(rng.integers(4, 300))
    running = int(rng.integers(0, 40))
    running_procs = rng.integers(1, machine // 3 + 2, running).astype(np.int64)
    running_end = np.sort(
        90.0 + rng.choice([0.0, 10.0, 50.0, 300.0, 1000.0], running) + rng.integers(0, 4, running)
    )
    free = max(machine - int(running_procs.sum()), 0)
    sizes = [1, 2, 3, 4, 8, machine // 2, machine - 1, machine, machine + 1, 2 * machine]
    if rng.random() < 0.5:  # many distinct sizes and durations: the quantile classes
        procs = rng.integers(1, machine + 2, jobs).astype(np.int64)
        duration = np.round(rng.uniform(0.0, 5000.0, jobs), int(rng.integers(0, 3)))
    else:
        procs = rng.choice(sizes, jobs).astype(np.int64)
        duration = rng.choice([0.0, 1.0, 10.0, 60.0, 60.0, 300.0, 3600.0], jobs)
    duration[rng.random(jobs) < 0.05] = 0.0
    duration[rng.random(jobs) < 0.01] = INF
    order = rng.permutation(jobs).astype(np.int64)
    return (100.0, free, running_end, running_procs, order, procs, duration, in_order)


@pytest.mark.parametrize("in_order", [False, True])
def test_the_same_starts_as_the_flat_profile(in_order: bool) -> None:
    seen_wider = seen_never_finite = False
    for seed in range(120):
        jobs = int(np.random.default_rng(seed).integers(1, 400))
        args = random_queue(seed, jobs, in_order)
        expected = flat_projection(*args)
        assert np.array_equal(project_starts(*args), expected), seed
        seen_wider |= bool(np.any(args[5] > args[1] + args[3].sum()))
        seen_never_finite |= bool(np.any(~np.isfinite(expected)))
    assert seen_wider and seen_never_finite


@pytest.mark.parametrize("in_order", [False, True])
def test_the_same_starts_on_queues_larger_than_the_classes_and_blocks(in_order: bool) -> None:
    # More distinct sizes and durations than there are exact classes, more breakpoints than
    # a block holds: the quantile bounds and block splits are on the path.
    rng = np.random.default_rng(7)
    jobs = 3 * MAX_SIZE_CLASSES
    machine = 4 * MAX_SIZE_CLASSES
    procs = rng.integers(1, machine + 2, jobs).astype(np.int64)
    duration = rng.uniform(0.0, 10_000.0, jobs)
    assert len(np.unique(procs)) > MAX_SIZE_CLASSES and len(np.unique(duration)) > MAX_DURATION_CLASSES
    running_end = np.sort(rng.uniform(50.0, 5000.0, 3 * BLOCK))
    running_procs = np.full(3 * BLOCK, machine // (3 * BLOCK), dtype=np.int64)
    free = machine - int(running_procs.sum())
    order = rng.permutation(jobs).astype(np.int64)
    args = (100.0, free, running_end, running_procs, order, procs, duration, in_order)
    assert np.array_equal(project_starts(*args), flat_projection(*args))


@pytest.mark.parametrize("mode", ["easy", "none", "conservative"])
def test_the_same_estimates_and_waits_behind(mode: str) -> None:
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        now, free, _, _, order, procs, duration, _ = random_queue(seed, int(rng.integers(1, 200)), False)
        nr = int(rng.integers(0, 30))
        started = order[: int(rng.integers(0, min(len(order), 5) + 1))]
        inputs = EstimateInputs(
            now=now,
            free=free + int(procs[started].sum()),
            mode=mode,
            order=order,
            procs=procs,
            est=duration,
            runtime_class=rng.integers(0, 2, len(procs)),
            divider=float(rng.choice([INF, 600.0])),
            started=started,
            reserved={int(j): now + float(rng.choice([10.0, 60.0])) for j in order[len(started) :][:5]},
            running_start=now - rng.choice([0.0, 50.0, 500.0], nr),
            running_est=rng.choice([60.0, 100.0, 1000.0], nr),
            running_procs=rng.integers(1, 8, nr).astype(np.int64),
            running_class=rng.integers(0, 2, nr),
        )
        got = estimate_starts(inputs)
        ends = _ends(inputs)
        dur = _durations(inputs)
        assert got.behind == loop_behind(inputs, got.start, ends, dur), seed
        if mode == "none":  # EASY's replay is checked against the simulator (test_easy_replay_estimates.py)
            waiting = np.setdiff1d(order, started)
            alone = flat_projection(*_projection_args(inputs, ends, dur, waiting))
            assert np.array_equal(got.start[waiting], alone[waiting]), seed


@pytest.mark.parametrize("seed", range(6))
def test_waits_behind_by_id_from_arrays_equals_the_lookup_job_by_job(seed: int) -> None:
    # The pass publishes whom each job waits behind by job id (rush.core.schedule): from whole
    # arrays, against the per-job lookup it replaced, in the same order.
    rng = np.random.default_rng(seed)
    n, nr = int(rng.integers(1, 300)), int(rng.integers(0, 40))
    pending_ids = rng.permutation(np.arange(1, 5 * n + 1))[:n].astype(np.int64)
    running_ids = rng.permutation(np.arange(10_000, 10_000 + 5 * nr + 1))[:nr].astype(np.int64)
    behind = {}
    for j in rng.permutation(n)[: int(rng.integers(0, n + 1))].tolist():
        running = nr > 0 and bool(rng.integers(0, 2))
        behind[j] = ("running", int(rng.integers(0, nr))) if running else ("pending", int(rng.integers(0, n)))
    ids, running = pending_ids.tolist(), running_ids.tolist()
    want = {ids[j]: (running[k] if kind == "running" else ids[k]) for j, (kind, k) in behind.items()}
    got = _waits_behind(behind, pending_ids, running_ids)
    assert list(got.items()) == list(want.items())
    assert all(type(k) is int and type(v) is int for k, v in got.items())


def _durations(e: EstimateInputs) -> np.ndarray:
    if e.mode == "conservative":
        return np.asarray(e.est, dtype=np.float64)
    return predicted_durations(e.est, e.runtime_class, None, e.divider)


def _ends(e: EstimateInputs) -> np.ndarray:
    if e.mode == "conservative":
        run_dur = np.asarray(e.running_est, dtype=np.float64)
    else:
        run_dur = predicted_durations(e.running_est, e.running_class, e.now - e.running_start, e.divider)
    new_end = e.now + np.maximum(_durations(e)[e.started], MIN_DURATION)
    return np.concatenate([e.running_start + run_dur, new_end])


def _projection_args(e: EstimateInputs, ends: np.ndarray, dur: np.ndarray, waiting: np.ndarray) -> tuple:
    end_procs = np.concatenate([e.running_procs, e.procs[e.started]])
    by_end = np.argsort(ends, kind="stable")
    in_queue = np.isin(e.order, waiting)
    free = max(int(e.free) - int(e.procs[e.started].sum()), 0)
    return (e.now, free, ends[by_end], end_procs[by_end], e.order[in_queue], e.procs, dur, e.mode == "none")


def test_a_job_past_its_end_frees_its_processors_after_one_ending_within_the_second() -> None:
    # Job A is past its predicted end (expected one second from now), job B ends half a second
    # from now: B's processors come first, then A's, whatever order the ends came in.
    now = 100.0
    running_end = np.array([50.0, 100.5])
    running_procs = np.array([4, 4], dtype=np.int64)
    procs = np.array([4, 8], dtype=np.int64)
    duration = np.array([10.0, 10.0])
    starts = project_starts(now, 0, running_end, running_procs, np.array([0, 1]), procs, duration, False)
    assert starts[0] == 100.5  # B's processors
    assert starts[1] == 110.5  # all eight: A's from 101 on, B's once job 0 ends
    starts = project_starts(
        now, 0, running_end[::-1].copy(), running_procs, np.array([1, 0]), procs, duration, False
    )
    assert starts[1] == 101.0
    assert starts[0] == 111.0
