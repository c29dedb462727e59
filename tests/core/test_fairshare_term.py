"""LINEAR's fairshare term: the site's fair-share factor orders the queue, in the live core
and the simulator alike, and a factor outside [0, 1] is refused."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.policies import Policy, parse_policy
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, Snapshot
from rush.errors import RushError
from rush.simulator.engine import SimInputs, simulate
from rush.workload.model import Workload


def _snapshot(fairshare: tuple[float | None, ...]) -> Snapshot:
    pending = tuple(
        PendingJob(job_id=k + 1, submit=float(k), procs=4, requested_time=100.0, fairshare=f)
        for k, f in enumerate(fairshare)
    )
    return Snapshot(now=1000.0, total_procs=4, free_procs=0, pending=pending)


def test_a_higher_fairshare_runs_first_with_a_negative_weight() -> None:
    config = CoreConfig(policy=parse_policy("LINEAR:r=1,fairshare=-1e6"))
    decided = schedule(_snapshot((0.1, 0.9, None)), config)
    # 0.9 first, then the unknown (neutral 0.5), then 0.1; FCFS's r term alone says 1, 2, 3.
    assert decided.order == [2, 3, 1]
    assert decided.priority[2] > decided.priority[3] > decided.priority[1]


def test_without_the_term_the_factor_changes_nothing() -> None:
    config = CoreConfig(policy=parse_policy("LINEAR:r=1"))
    assert schedule(_snapshot((0.1, 0.9, 0.5)), config).order == [1, 2, 3]


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_a_factor_outside_the_unit_interval_is_refused(bad: float) -> None:
    config = CoreConfig(policy=parse_policy("LINEAR:r=1,fairshare=-1"))
    with pytest.raises(RushError, match="fair-share factor") as info:
        schedule(_snapshot((0.5, bad)), config)
    assert "job 2" in info.value.where


def test_the_simulator_orders_by_the_same_term() -> None:
    # One machine-wide job runs; three wait behind it and start in fair-share order.
    workload = Workload(
        job_id=np.arange(1, 5),
        submit=np.array([0.0, 1.0, 2.0, 3.0]),
        runtime=np.array([100.0] * 4),
        requested_time=np.array([100.0] * 4),
        procs=np.array([4, 4, 4, 4]),
        user=np.full(4, -1),
        machine_procs=4,
    )
    config = CoreConfig(policy=parse_policy("LINEAR:r=1,fairshare=-1e6"))
    result = simulate(workload, config, inputs=SimInputs(fairshare=np.array([0.5, 0.2, 0.3, 0.9])))
    assert np.argsort(result.start).tolist() == [0, 3, 2, 1]
    with pytest.raises(RushError, match="outside"):
        simulate(workload, config, inputs=SimInputs(fairshare=np.array([0.5, 2.0, 0.3, 0.9])))


def test_priority_weight_scales_the_values_and_keeps_the_order() -> None:
    snapshot = _snapshot((0.1, 0.9, 0.5, 0.3))
    full = schedule(snapshot, CoreConfig(policy=parse_policy("LINEAR:r=1,fairshare=-1e6")))
    weighed = schedule(
        snapshot, CoreConfig(policy=parse_policy("LINEAR:r=1,fairshare=-1e6"), priority_weight=1000)
    )
    assert weighed.order == full.order
    values = [weighed.priority[j] for j in weighed.order]
    assert values == sorted(values, reverse=True)
    assert all(1 <= v <= 1000 for v in values)
    # Not starved, so band 1: a third of the range up to two thirds.
    assert all(333 <= v <= 667 for v in values)


@pytest.mark.parametrize("bad", [0, -5, 2**31, 1.5])
def test_a_priority_weight_that_overflows_the_site_factor_is_refused(bad) -> None:
    with pytest.raises(RushError, match="priority_weight"):
        CoreConfig(priority_weight=bad)


def test_linear_weights_must_cover_every_feature() -> None:
    # The compiled pass reads the fairshare weight by index: a short tuple is refused up front.
    with pytest.raises(RushError, match="one per feature"):
        Policy("LINEAR", (1.0,) * 7)
