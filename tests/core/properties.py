"""Schedule properties checked on every simulated run in the core tests."""

from __future__ import annotations

import numpy as np

from rush.simulator.result import SimResult


def max_concurrent_procs(result: SimResult) -> int:
    """Peak processors in use; ends are processed before starts at the same instant."""
    ran = result.start >= 0
    times = np.concatenate([result.start[ran], result.end[ran]])
    delta = np.concatenate([result.procs[ran], -result.procs[ran]])
    # At equal times, releases (-q) come first.
    order = np.lexsort((delta, times))
    return int(np.cumsum(delta[order]).max()) if len(order) else 0


def assert_valid_schedule(result: SimResult) -> None:
    assert (result.start >= 0).all(), "every job is scheduled"
    assert max_concurrent_procs(result) <= result.machine_procs, "no over-allocation"
    assert (result.start >= result.submit).all(), "no start before submit"
    expected_length = np.minimum(result.runtime, result.requested_time)
    plain = result.requeues == 0
    assert np.allclose((result.end - result.start)[plain], expected_length[plain]), "runs last min(p, p~)"


def assert_reservations_kept(result: SimResult) -> None:
    """A job promised a start (EASY head's shadow time) never starts later than that."""
    promised = result.attributes["first_reservation"]
    has = np.isfinite(promised)
    late = has & (result.start > promised + 1e-9)
    assert not late.any(), f"{late.sum()} reservations delayed, e.g. job {result.job_id[late][:5]}"
