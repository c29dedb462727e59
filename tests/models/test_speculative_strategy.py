"""Speculative reservations: costs, optimal strategies, estimators and degenerate input."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from rush.errors import ConfigError
from rush.models.speculative.distributions import BoundedRuntime, bounded, distribution
from rush.models.speculative.strategy import (
    MAX_SUPPORT,
    CostModel,
    continuous_estimator,
    discrete_estimator,
    empirical_cost,
    estimate_strategy,
    expected_cost,
    mean_doubling_strategy,
    optimal_continuous,
    optimal_discrete,
    recurrence_strategy,
    upper_bound_strategy,
)
from rush.studies.speculative import ratio_task, reservation_inputs, summarise_ratios, trace_task
from rush.workload.model import Workload


def test_uniform_with_positive_lower_bound_reserves_the_upper_bound_once():
    # Two reservations (t, b) cost t + b(b - t)/(b - a), decreasing in t when a > 0:
    # the optimum is the single reservation b (Aupy et al., uniform case).
    law = bounded("u", stats.uniform(10.0, 10.0))
    best = optimal_continuous(law)
    assert best.reservations == (20.0,)
    assert expected_cost(best.reservations, law) == pytest.approx(20.0)


def test_uniform_from_zero_every_first_reservation_costs_the_same():
    law = bounded("u0", stats.uniform(0.0, 8.0))
    for t1 in (1.0, 4.0, 7.0):
        assert expected_cost((t1, 8.0), law) == pytest.approx(8.0)


def test_discrete_programme_matches_exhaustive_search():
    rng = np.random.default_rng(3)
    values = np.sort(rng.choice(np.arange(1, 60), size=7, replace=False)).astype(float)
    probs = rng.dirichlet(np.ones(7))
    cost = CostModel(1.0, 0.5, 2.0)

    def exact(seq):
        total = cost.beta * float(np.dot(values, probs))
        prev = 0.0
        for t in seq:
            total += (cost.alpha * t + cost.beta * prev + cost.gamma) * float(probs[values > prev].sum())
            prev = t
        return total

    best = min(
        exact((*combo, values[-1]))
        for r in range(len(values))
        for combo in itertools.combinations(values[:-1], r)
    )
    seq, c0 = optimal_discrete(values, probs, cost)
    assert seq[-1] == values[-1]
    assert exact(seq) == pytest.approx(best)
    assert c0 + cost.beta * float(np.dot(values, probs)) == pytest.approx(best)


@pytest.mark.parametrize("cost", [CostModel(), CostModel(1.0, 1.0, 0.0), CostModel(2.0, 0.5, 3.0)])
def test_expected_cost_agrees_with_monte_carlo(cost):
    law = distribution("lognormal")
    strategy = (15.0, 25.0, 40.0, law.upper)
    runs = law.sample(np.random.default_rng(7), 400_000)
    assert expected_cost(strategy, law, cost) == pytest.approx(empirical_cost(strategy, runs, cost), rel=0.01)


@pytest.mark.parametrize("name", ["exponential", "truncnormal"])
def test_recurrence_and_discretised_programme_agree(name):
    law = distribution(name)
    best = optimal_continuous(law)
    opt = expected_cost(best.reservations, law)
    via_recurrence = min(
        expected_cost(recurrence_strategy(law, float(t1)), law)
        for t1 in np.linspace(law.lower + 0.01, law.upper, 400)
    )
    assert via_recurrence == pytest.approx(opt, rel=0.005)


def test_strategy_not_covering_the_support_costs_infinity():
    law = distribution("uniform")
    assert expected_cost((12.0, 15.0), law) == np.inf


@pytest.mark.parametrize("estimator", ["discrete", "continuous"])
def test_estimators_approach_the_optimum_with_many_samples(estimator):
    law = distribution("truncnormal")
    _, opt = None, expected_cost(optimal_continuous(law).reservations, law)
    samples = law.sample(np.random.default_rng(11), 1000)
    strategy = estimate_strategy(estimator, samples, law.upper)
    assert strategy.reservations[-1] == law.upper
    assert expected_cost(strategy.reservations, law) / opt < 1.03


def test_baselines():
    assert upper_bound_strategy(100.0).reservations == (100.0,)
    # mean of the last 10 runs (the first two are ignored), doubled, closed at the bound
    doubling = mean_doubling_strategy([500.0, 500.0] + [10.0] * 10, 100.0)
    assert doubling.reservations == (10.0, 20.0, 40.0, 80.0, 100.0)
    assert mean_doubling_strategy([], 50.0).reservations == (50.0,)


@pytest.mark.parametrize("estimator", [discrete_estimator, continuous_estimator])
def test_degenerate_samples_give_one_reservation_at_that_value(estimator):
    s = estimator([30.0] * 8, 100.0)
    assert s.reservations == (30.0, 100.0)
    assert "all 8 samples equal 30" in s.note and "single reservation" in s.note
    assert estimator([30.0] * 8).reservations == (30.0,)
    one = estimator([42.0], 100.0)  # n = 1 is degenerate too
    assert one.reservations == (42.0, 100.0)


@pytest.mark.parametrize("estimator", [discrete_estimator, continuous_estimator])
def test_no_history(estimator):
    assert estimator([], 100.0).reservations == (100.0,)
    with pytest.raises(ConfigError, match="no past run and no upper bound"):
        estimator([])


@pytest.mark.parametrize("bad", [[10.0, 0.0], [10.0, -3.0], [10.0, float("nan")], [10.0, float("inf")]])
@pytest.mark.parametrize("estimator", ["discrete", "continuous", "mean-doubling"])
def test_non_positive_or_non_finite_samples_are_refused(bad, estimator):
    with pytest.raises(ConfigError, match="value #1") as info:
        estimate_strategy(estimator, bad, 100.0)
    assert info.value.where == "samples" and info.value.fix


@pytest.mark.parametrize("kwargs", [{"alpha": -1.0}, {"beta": -0.5}, {"gamma": float("nan")}, {"alpha": 0.0}])
def test_bad_cost_models_are_refused(kwargs):
    with pytest.raises(ConfigError, match="cost model|must be"):
        CostModel(**kwargs)


def test_bad_upper_bound_and_unknown_estimator():
    with pytest.raises(ConfigError, match="upper bound"):
        discrete_estimator([1.0, 2.0], -5.0)
    with pytest.raises(ConfigError, match="unknown estimator"):
        estimate_strategy("oracle", [1.0, 2.0], 5.0)
    with pytest.raises(ConfigError, match="unknown distribution"):
        distribution("cauchy")


def test_support_must_be_finite_and_positive():
    with pytest.raises(ConfigError, match="support"):
        BoundedRuntime("x", stats.uniform(0, 1), 5.0, 1.0)


def test_huge_history_is_binned_not_quadratic():
    samples = np.random.default_rng(5).lognormal(5.0, 1.0, 50_000)
    s = discrete_estimator(samples, float(samples.max()) * 2)
    assert "binned at" in s.note
    assert len(s) <= MAX_SUPPORT + 1


def test_ratio_task_rows_and_summary():
    cell = {"distribution": "exponential", "n": 10, "rep_start": 0, "rep_stop": 3, "seed": 1}
    rows = ratio_task(cell)
    assert len(rows) == 3 * 4
    assert {r["estimator"] for r in rows} == {"discrete", "continuous", "mean-doubling", "upper-bound"}
    assert all(r["ratio"] >= 0.999 for r in rows)  # the optimum is a lower bound (up to discretisation)
    assert rows == ratio_task(cell)  # seeded: the same draws again
    summary = summarise_ratios([r | {"distribution": "exponential", "n": 10} for r in rows])
    assert {s["repetitions"] for s in summary} == {3}


def test_reservation_inputs_use_only_runs_ended_before_submit():
    # One user, one walltime (so one application): runs end at 100, 300, 600; job 3 is submitted
    # at 650 and sees the three runs, job 1 (submitted at 50) sees none.
    w = Workload(
        job_id=np.arange(1, 5),
        submit=np.array([0.0, 50.0, 100.0, 650.0]),
        runtime=np.array([100.0, 250.0, 500.0, 80.0]),
        procs=np.ones(4, dtype=np.int64),
        requested_time=np.full(4, 1000.0),
        user=np.zeros(4, dtype=np.int64),
        machine_procs=4,
        extra={"wait": np.zeros(4), "app": np.full(4, -1)},
    )
    seq, counts, info = reservation_inputs(w, "discrete", history=20, min_history=2, granularity=1.0)
    # Empirical law {100, 250, 500}, bound 1000: (250, 500, 1000) costs 250 + 500/3, the least.
    assert counts.tolist() == [0, 0, 0, 3]
    assert seq[3, :3].tolist() == [250.0, 500.0, 1000.0]
    # The study simulates a Slurm site: each reservation held as whole minutes, rounded up.
    seq, _, _ = reservation_inputs(w, "discrete", history=20, min_history=2)
    assert seq[3, :3].tolist() == [300.0, 540.0, 1000.0]
    # The default minimum history (5) is not met by three runs.
    assert reservation_inputs(w, "discrete")[1].sum() == 0
    assert "requested time" in info["application_key"] and info["opted_in"] == 1
    seq, counts, _ = reservation_inputs(w, "walltime", history=20)
    assert counts.sum() == 0


def test_trace_task_measures_the_old_and_the_new_sample_rules():
    # One application (same user, same executable): 100, 110, 120 s completed, then three runs
    # "failed" at their 130 s walltime (SWF status 0: timeouts), then 900 s; job 7 (walltime
    # 1000) is submitted after all ended.
    runtime = [100.0, 110.0, 120.0, 130.0, 130.0, 130.0, 900.0, 50.0]
    walltime = [1000.0, 1000.0, 1000.0, 130.0, 130.0, 130.0, 1000.0, 1000.0]
    w = Workload(
        job_id=np.arange(1, 9),
        submit=np.array([0.0, 200, 400, 600, 800, 1000, 1200, 5000]),
        runtime=np.array(runtime),
        procs=np.ones(8, dtype=np.int64),
        requested_time=np.array(walltime),
        user=np.zeros(8, dtype=np.int64),
        machine_procs=4,
        extra={"wait": np.zeros(8), "app": np.full(8, 3), "status": np.array([1, 1, 1, 0, 0, 0, 1, 1])},
    )
    cell = {"trace": "hand", "jobs": 8, "estimator": "discrete", "history": 20, "granularity": 0.0}
    before = trace_task({**cell, "every_run_observed": True}, {"workload": w})
    after = trace_task(cell, {"workload": w})
    # Jobs 6 and 7 see the three cut runs below their 1000 s walltime.
    assert before["opted_in_with_censored"] == 0 and after["opted_in_with_censored"] == 2
    seq_before, _, _ = reservation_inputs(
        replace(w, extra={**w.extra, "status": np.ones(8, dtype=np.int64)}), "discrete", granularity=0.0
    )
    seq_after, _, _ = reservation_inputs(w, "discrete", granularity=0.0)
    # Before, the cut runs read as runs of 130 s: t1 = 130 covers 6 of 7. Kaplan-Meier gives
    # their mass to the 900 s run (P(X > 120) = 4/7), so 130 s covers no more than 120 s does.
    assert seq_before[7].tolist() == [130.0, 900.0, 1000.0]
    assert seq_after[7].tolist() == [120.0, 900.0, 1000.0]
