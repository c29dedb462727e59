"""The simulator with runtime predictions (issue 29): predictions move starts, kills stay at
the request, expired predictions are corrected at the moment a job outlives them (an event),
and the shortest predicted job is backfilled first."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.simulator.engine import SimInputs, simulate
from rush.workload.model import workload_from_trace
from tests.core.helpers import workload
from tests.core.real_traces import MIRROR
from tests.simulator.user_workloads import users_workload


def _run(w, estimate=None, **config):
    return simulate(w, CoreConfig.from_names(threshold=None, **config), SimInputs(estimate=estimate))


def test_predictions_change_starts_and_kills_stay_at_the_request() -> None:
    # (submit, procs, runtime, request) on 2 processors: A runs, B (the head) needs both,
    # C could backfill if it ended before A.
    w = workload(2, [(0, 1, 100, 1000), (1, 2, 10, 10), (2, 1, 50, 2000)])
    limits = _run(w)
    # On the requests C ends (2002) after the head's reservation (A's 1000): it waits.
    assert limits.start[2] == pytest.approx(110.0)
    # Predicted: A 100 s, C 30 s (it will run 50: underpredicted, not killed).
    predicted = _run(w, np.array([100.0, 10.0, 30.0]), prediction_correction="stepwise")
    assert predicted.start[2] == 2.0 and predicted.backfilled[2]
    assert predicted.end[2] == 52.0 and not predicted.killed.any()
    # A job running past its request is still killed there, predictions or not.
    w2 = workload(2, [(0, 1, 500, 300)])
    cut = _run(w2, np.array([60.0]), prediction_correction="stepwise")
    assert cut.killed[0] and cut.end[0] == 300.0


@pytest.mark.parametrize(
    ("correction", "c_start"), [("none", 310.0), ("stepwise", 100.0), ("request", 100.0)]
)
def test_expired_prediction_is_corrected_at_expiry(correction: str, c_start: float) -> None:
    # A is predicted 50 s but runs 300 s. At t=100 C (5 s) arrives behind the head B.
    # Uncorrected, A's expired estimate puts the head's reservation at "now": C may not
    # backfill. Corrected at t=50 (50 + 60 s stepwise, or the request), the reservation is
    # later than C's end: C backfills at once.
    w = workload(2, [(0, 1, 300, 5000), (1, 2, 10, 10), (100, 1, 5, 100)])
    result = _run(w, np.array([50.0, 10.0, 5.0]), prediction_correction=correction)
    assert result.start[2] == c_start
    assert result.start[1] == 300.0  # the head starts when A really ends
    assert not result.killed.any()


def test_shortest_predicted_job_backfilled_first() -> None:
    # One processor free until the head's reservation at 1000; C (predicted 500) and D
    # (predicted 100) both fit in time, only one fits in space.
    w = workload(2, [(0, 1, 1000, 1000), (1, 2, 10, 10), (2, 1, 500, 900), (2, 1, 100, 900)])
    estimate = np.array([1000.0, 10.0, 500.0, 100.0])
    fcfs_scan = _run(w, estimate, prediction_correction="stepwise")
    sjbf = _run(w, estimate, backfill_policy="SPF", prediction_correction="stepwise")
    assert fcfs_scan.start[2] == 2.0 and fcfs_scan.start[3] > 2.0
    assert sjbf.start[3] == 2.0 and sjbf.start[2] > 2.0


def test_correction_without_predictions_changes_nothing_on_a_real_trace() -> None:
    # Estimates are the requests: a run never outlives its estimate, so no correction fires.
    path = MIRROR / "KTH-SP2-1996-2.1-cln.swf.gz"
    if not path.exists():
        pytest.skip(f"trace {path} not available: set RUSH_TRACE_MIRROR to the traces directory")
    from rush.workload.swf import read_swf

    w = workload_from_trace(read_swf(path)).subset(np.arange(3000))
    plain = _run(w, backfill_policy="SPF")
    corrected = _run(w, backfill_policy="SPF", prediction_correction="stepwise")
    assert np.array_equal(plain.start, corrected.start)


def test_fractional_predictions_on_fractional_clocks_finish() -> None:
    # start + estimate - start can round below the estimate: the correction must still move
    # the estimate forward (it once re-armed the same expiry for ever).
    rng = np.random.default_rng(11)
    n = 400
    submit = np.sort(rng.uniform(0, 50_000, n)) + 1e9 / 3
    runtime = rng.uniform(1, 3000, n)
    w = workload(
        16,
        [
            (float(s), int(q), float(r), 4000.0)
            for s, q, r in zip(submit, rng.integers(1, 9, n), runtime, strict=True)
        ],
    )
    estimate = runtime * rng.uniform(0.1, 1.5, n) + 1 / 3
    for correction in ("stepwise", "request"):
        result = _run(w, estimate, backfill_policy="SPF", prediction_correction=correction)
        assert (result.start >= 0).all()
        assert np.allclose(result.end - result.start, np.minimum(w.runtime, w.requested_time))
        assert not result.killed.any()


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--runtime-prediction", "oracle"], "--runtime-prediction"),
        (["--prediction-correction", "stepwise"], "--prediction-correction"),
        (["--runtime-prediction", "easy++", "--prediction-correction", "double"], "--prediction-correction"),
        (["--runtime-prediction", "easy++", "--classes", "plain"], "--runtime-prediction"),
    ],
)
def test_bad_prediction_flags_are_configuration_errors(flags: list[str], named: str) -> None:
    from typer.testing import CliRunner

    from rush.cli.main import app
    from rush.errors import ConfigError

    result = CliRunner().invoke(app, ["simulate", "lublin:50:16", *flags])
    assert isinstance(result.exception, ConfigError), (result.output, result.exception)
    assert result.exception.where == named


@pytest.mark.parametrize("predictor", ["easy++", "gaussier", "easy++-online", "gaussier-online"])
def test_simulate_with_runtime_predictions_reports_them(predictor: str) -> None:
    import json

    from typer.testing import CliRunner

    from rush.cli.main import app

    result = CliRunner().invoke(
        app, ["simulate", "lublin:300:32:3", "--runtime-prediction", predictor, "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    block = out["runtime_prediction"]
    assert block["predictor"] == predictor and block["jobs"] == out["jobs"]
    assert out["settings"]["backfill_policy"] == "SPF"  # shortest predicted job backfilled first
    assert out["settings"]["label"] == f"FCFS-easy+SPF-{predictor}"


def _ranked(w, rank, **config):
    return simulate(w, CoreConfig.from_names(threshold=None, **config), SimInputs(rank_estimate=rank))


def test_ranking_predictions_order_the_queue_and_the_plan_stays_on_limits() -> None:
    # Round 13 (H13a): predictions that only rank. On 1 processor A runs 0-100; C (request
    # 500, runs 50) and D (request 900, runs 10) wait. SPF on the requests runs C first;
    # ranked on predictions (C 400, D 10) D goes first.
    w = workload(1, [(0, 1, 100, 1000), (1, 1, 50, 500), (2, 1, 10, 900)])
    assert _run(w, policy="SPF").start.tolist() == [0.0, 100.0, 150.0]
    ranked = _ranked(w, np.array([100.0, 400.0, 10.0]), policy="SPF")
    assert ranked.start.tolist() == [0.0, 110.0, 100.0]
    # The guard: a NaN prediction ranks D by its request (900 > C's 400): C first again.
    assert _ranked(w, np.array([100.0, 400.0, np.nan]), policy="SPF").start.tolist() == [0.0, 100.0, 150.0]
    # The backfill scan ranks on them too: C (1000) and D (100) both fit by the head's
    # reservation at 1000 on the requests, one processor is free: D first.
    w2 = workload(2, [(0, 1, 1000, 1000), (1, 2, 10, 10), (2, 1, 500, 900), (2, 1, 100, 950)])
    scan = _ranked(w2, np.array([1000.0, 10.0, 800.0, 50.0]), policy="SPF")
    assert scan.start[3] == 2.0 and scan.start[2] > 2.0


def test_ranking_predictions_never_plan_a_backfill() -> None:
    # The first test's jobs: C (request 2000) backfills at 2 when predicted 30 s as its
    # estimate; as a ranking prediction it still ends after the head's reservation on the
    # requests (A's 1000), so it waits for the head, as on limits.
    w = workload(2, [(0, 1, 100, 1000), (1, 2, 10, 10), (2, 1, 50, 2000)])
    predicted = np.array([100.0, 10.0, 30.0])
    assert _run(w, predicted, policy="SPF", prediction_correction="request").start[2] == 2.0
    ranked = _ranked(w, predicted, policy="SPF")
    assert ranked.start[2] == pytest.approx(110.0) and not ranked.backfilled[2]


def test_ranking_predictions_need_a_time_independent_order() -> None:
    from rush.errors import RushError

    w = workload(1, [(0, 1, 100, 1000), (1, 1, 50, 500)])
    with pytest.raises(RushError, match="time-independent") as info:
        _ranked(w, np.array([10.0, 10.0]), policy="WFP3")
    assert info.value.where == "SimInputs.rank_estimate"
    with pytest.raises(RushError, match="rank_estimate has shape"):
        _ranked(w, np.array([10.0]), policy="SPF")


# EASY++ predicting from the replay's own completions (issue 29 item 1 of round 23;
# SimInputs.online_prediction, rush.core.runtime_predictions.last_two_prediction).
def _easy_pp(w, inputs):
    config = CoreConfig.from_names(threshold=None, backfill_policy="SPF", prediction_correction="stepwise")
    return simulate(w, config, inputs)


def test_online_history_is_the_replays_completion_order_not_the_logs() -> None:
    from rush.models.runtime_predictors import make_predictor, predict_walkforward

    # On 3 processors A (user 2) fills the machine until 100; B and C (user 1) ended at 51 and 52
    # in the log but run 100-150 in the replay; the head H (3 processors) waits behind them;
    # D (user 1) arrives at 120 with one processor free; E (user 1) at 170.
    w = users_workload(
        3,
        [
            (0, 3, 100, 100, 2),  # A
            (1, 1, 50, 1000, 1),  # B
            (2, 1, 50, 1000, 1),  # C
            (110, 3, 10, 100, 2),  # H
            (120, 1, 20, 1000, 1),  # D
            (170, 1, 5, 1000, 1),  # E
        ],
    )
    # From the log, D's user has finished B and C by 120: D is predicted 50 s, backfills at 120.
    logged = predict_walkforward(w, make_predictor("easy++")).predicted
    # E: the log's last two of user 1 by 170 are D (ended at 140) and C: (20 + 50) / 2.
    assert logged.tolist() == [100.0, 1000.0, 1000.0, 100.0, 50.0, 35.0]
    from_log = _easy_pp(w, SimInputs(estimate=logged))
    assert from_log.start.tolist() == [0.0, 100.0, 100.0, 150.0, 120.0, 170.0]
    # In the replay nothing of user 1 has finished by 120: D gets its request, 120 + 1000 passes
    # the head's reservation (B and C's predicted ends, 1100): it waits for H (150-160). At 170
    # the replay has ended B and C (at 150), not D (160-180): E is predicted (50 + 50) / 2.
    online = _easy_pp(w, SimInputs(online_prediction="easy++-online"))
    assert online.attributes["estimate"].tolist() == [100.0, 1000.0, 1000.0, 100.0, 1000.0, 50.0]
    assert online.start.tolist() == [0.0, 100.0, 100.0, 150.0, 160.0, 170.0]


def test_online_equals_log_history_when_the_log_is_the_replays_schedule() -> None:
    from rush.models.runtime_predictors import make_predictor, predict_walkforward

    # Random jobs of 5 users, runtime <= request. The online replay's own waits written as
    # the log's: the log's completions are then the replay's, in its order, so the log-history
    # predictions must be the online ones and replaying them must give the same schedule.
    rng = np.random.default_rng(29)
    n = 400
    submit = np.sort(rng.uniform(0, 200_000, n))
    procs = rng.integers(1, 9, n)
    request = rng.choice([600.0, 3600.0, 14_400.0], n)
    runtime = request * rng.uniform(0.01, 1.0, n)
    user = rng.integers(0, 5, n)
    jobs = list(zip(submit, procs, runtime, request, user, strict=True))
    online = _easy_pp(users_workload(16, jobs), SimInputs(online_prediction="easy++-online"))
    assert not online.killed.any() and online.backfilled.any()
    replayed_log = users_workload(16, jobs, wait=online.start - online.submit)
    logged = predict_walkforward(replayed_log, make_predictor("easy++")).predicted
    predicted = online.attributes["estimate"]
    assert (predicted < request).sum() > n // 2  # most jobs predicted, not on their request
    assert np.array_equal(predicted, logged)
    again = _easy_pp(replayed_log, SimInputs(estimate=logged))
    assert np.array_equal(again.start, online.start)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"online_prediction": "gaussier-offline"}, "unknown online prediction source"),
        ({"online_prediction": "gaussier-online", "rank_estimate": np.ones(2)}, "not both"),
        ({"online_prediction": "easy++-online", "estimate": np.ones(2)}, "not both"),
    ],
)
def test_bad_online_prediction_inputs_are_refused(inputs: dict, message: str) -> None:
    from rush.errors import RushError

    w = users_workload(2, [(0, 1, 10, 100, 1), (1, 1, 10, 100, 1)])
    with pytest.raises(RushError) as err:
        _easy_pp(w, SimInputs(**inputs))
    assert err.value.where == "SimInputs.online_prediction"
    assert message in str(err.value) or message in (err.value.fix or "")


def test_unknown_runtime_prediction_names_every_choice_and_exits_2() -> None:
    from tests.rush_cli import rush

    done = rush("simulate", "lublin:50:16", "--runtime-prediction", "easy++-offline")
    assert done.returncode == 2, done.stderr
    assert "--runtime-prediction" in done.stderr
    assert "easy++, gaussier" in done.stderr and "easy++-online" in done.stderr
    assert "gaussier-online" in done.stderr


# Gaussier et al.'s regression learning online in the replay (round 24;
# SimInputs.online_prediction="gaussier-online", rush.core.gaussier_online).
def _gaussier_trace(a_runtime: float):
    """On 3 processors, never full (every job starts at its arrival): A and B (user 1) at 0 and
    10, B ends at 60 when C (user 2) arrives, A ends at ``a_runtime``, D (user 1) at 200, E
    (user 2) at 230."""
    jobs = [
        (0, 1, a_runtime, 1e6, 1),  # A
        (10, 1, 50, 1e6, 1),  # B
        (60, 1, 80, 1e6, 2),  # C
        (200, 1, 20, 1e6, 1),  # D
        (230, 1, 5, 1e6, 2),  # E
    ]
    return jobs, users_workload(3, jobs)


def _predictsim_at_arrivals(jobs: list[tuple]) -> list[float]:
    """Their predictor (tests/core/predictsim_transcription.py) driven through the same
    schedule: every job runs from its arrival; ends before arrivals at a tie."""
    from tests.core.predictsim_transcription import Job, replay

    both = [Job(u, float(s), float(r), p, q) for s, p, r, q, u in jobs]
    events = [("submit", k, j.submit_time) for k, j in enumerate(both)]
    events += [("end", k, j.submit_time + j.actual_run_time) for k, j in enumerate(both)]
    events.sort(key=lambda e: (e[2], e[0] == "submit"))
    got, want, _, _ = replay(events, both)
    assert got == want
    return want


def test_gaussier_online_predicts_at_arrival_as_their_simulator() -> None:
    jobs, w = _gaussier_trace(100.0)
    result = _easy_pp(w, SimInputs(online_prediction="gaussier-online"))
    assert result.start.tolist() == [0.0, 10.0, 60.0, 200.0, 230.0]
    predicted = result.attributes["estimate"].tolist()
    # Nothing finished before B: w = 0 predicts |0|, floored at 1 s.
    assert predicted[:2] == [1.0, 1.0]
    assert predicted == _predictsim_at_arrivals(jobs)
    assert len(set(predicted[2:])) == 3  # learnt: C, D and E each their own


def test_gaussier_online_sees_only_runs_finished_before_the_arrival() -> None:
    # A's length changes nothing it could not have seen: C arrives (60) before A ends either
    # way, with A running 60 s; D (200) sees A finished after 100 s, or after 150 s, or running.
    runs = {}
    for a in (100.0, 150.0, 500.0):
        jobs, w = _gaussier_trace(a)
        runs[a] = _easy_pp(w, SimInputs(online_prediction="gaussier-online")).attributes["estimate"].tolist()
        assert runs[a] == _predictsim_at_arrivals(jobs)
    assert runs[100.0][:3] == runs[150.0][:3] == runs[500.0][:3]
    assert len({runs[100.0][3], runs[150.0][3], runs[500.0][3]}) == 3


def test_gaussier_study_variant_without_running_features_changes_only_those() -> None:
    # D-g1: C arrives (60) while A runs; without the running-job features its prediction differs.
    _, w = _gaussier_trace(100.0)
    full = _easy_pp(w, SimInputs(online_prediction="gaussier-online")).attributes["estimate"]
    bare = _easy_pp(w, SimInputs(online_prediction="gaussier-online (no running features)"))
    assert bare.attributes["estimate"][:2].tolist() == full[:2].tolist() == [1.0, 1.0]
    assert bare.attributes["estimate"][2] != full[2]


# The study's jitter of online predictions inside the loop and Gaussier et al.'s other losses
# (round 26; SimInputs.prediction_jitter_seed, SimInputs.gaussier_loss).
def _random_users_jobs(n: int = 400) -> list[tuple]:
    rng = np.random.default_rng(29)
    submit = np.sort(rng.uniform(0, 200_000, n))
    request = rng.choice([600.0, 3600.0, 14_400.0], n)
    runtime = np.floor(request * rng.uniform(0.01, 1.0, n))
    return list(zip(submit, rng.integers(1, 9, n), runtime, request, rng.integers(0, 5, n), strict=True))


def test_jitter_off_leaves_both_online_rules_exactly_as_their_oracles() -> None:
    from rush.models.runtime_predictors import make_predictor, predict_walkforward

    # EASY++: with the seed at 0 the online predictions are exactly the log-history rule's on the
    # replay's own schedule (as without the field); a jitter applied when off would move them.
    jobs = _random_users_jobs()
    off = _easy_pp(
        users_workload(16, jobs), SimInputs(online_prediction="easy++-online", prediction_jitter_seed=0)
    )
    replayed = users_workload(16, jobs, wait=off.start - off.submit)
    assert np.array_equal(
        off.attributes["estimate"], predict_walkforward(replayed, make_predictor("easy++")).predicted
    )
    # Gaussier et al.: equal to the transcription of their simulator.
    trace_jobs, w = _gaussier_trace(100.0)
    off = _easy_pp(w, SimInputs(online_prediction="gaussier-online", prediction_jitter_seed=0))
    assert off.attributes["estimate"].tolist() == _predictsim_at_arrivals(trace_jobs)


def test_jitter_moves_each_prediction_by_its_own_draw_and_repeats() -> None:
    from rush.core.runtime_predictions import PREDICTION_JITTER, jittered_prediction

    # The Gaussier trace never fills the machine: the schedule, and so every prediction before the
    # jitter, is the same with and without it; each estimate is its prediction moved by its draw.
    _, w = _gaussier_trace(100.0)
    plain = _easy_pp(w, SimInputs(online_prediction="gaussier-online")).attributes["estimate"]
    for seed in (1, 2):
        moved = _easy_pp(w, SimInputs(online_prediction="gaussier-online", prediction_jitter_seed=seed))
        got = moved.attributes["estimate"]
        want = [jittered_prediction(p, 1e6, seed, j) for j, p in enumerate(plain)]
        assert got.tolist() == want
        assert np.all(np.abs(got / plain - 1.0) <= PREDICTION_JITTER * (1 + 1e-9))
        # C and D lie between the 1 s floor and the request, so both always move; the guard may
        # hold the others (a draw below 1 s, or above E's request)
        assert np.all(got[2:4] != plain[2:4]) and 1.0 < plain[2] < 1e6 and 1.0 < plain[3] < 1e6
    # On a loaded machine the same seed replays the same schedule; the jitter moves some starts.
    jobs = _random_users_jobs()
    runs = [
        _easy_pp(users_workload(16, jobs), SimInputs(online_prediction=src, prediction_jitter_seed=seed))
        for src in ("easy++-online", "gaussier-online")
        for seed in (0, 3, 3)
    ]
    for off, one, again in (runs[:3], runs[3:]):
        assert np.array_equal(one.start, again.start)
        assert np.array_equal(one.attributes["estimate"], again.attributes["estimate"])
        assert not np.array_equal(one.attributes["estimate"], off.attributes["estimate"])
        assert np.all(one.attributes["estimate"] <= one.requested_time)


def test_the_default_loss_is_their_cv_triple_and_another_loss_learns_otherwise() -> None:
    from rush.core.gaussier_online import composite_loss

    _, w = _gaussier_trace(100.0)
    default = _easy_pp(w, SimInputs(online_prediction="gaussier-online")).attributes["estimate"]
    cv = composite_loss("square", 1, "abs", 1, 0, "1+log(m*r)")
    same = _easy_pp(w, SimInputs(online_prediction="gaussier-online", gaussier_loss=cv))
    assert same.attributes["estimate"].tolist() == default.tolist()
    # Another curve under (squared, the C-V weight) and another weight (the C-V curves) each learn
    # otherwise: the loop hands the whole loss to the learner, not only its weight.
    for other in (
        composite_loss("square", 1, "square", 1, 0, "1+log(m*r)"),
        composite_loss("square", 1, "abs", 1, 0, "1"),
    ):
        moved = _easy_pp(w, SimInputs(online_prediction="gaussier-online", gaussier_loss=other))
        assert moved.attributes["estimate"][:2].tolist() == [1.0, 1.0]  # nothing learnt yet
        assert moved.attributes["estimate"][2:].tolist() != default[2:].tolist()


@pytest.mark.parametrize(
    ("inputs", "where"),
    [
        ({"prediction_jitter_seed": 1}, "SimInputs.prediction_jitter_seed"),  # no online source
        (
            {"online_prediction": "easy++-online", "prediction_jitter_seed": -1},
            "SimInputs.prediction_jitter_seed",
        ),
        (
            {"online_prediction": "easy++-online", "prediction_jitter_seed": 1.5},
            "SimInputs.prediction_jitter_seed",
        ),
        (  # beyond the 64-bit counter hash's seed
            {"online_prediction": "easy++-online", "prediction_jitter_seed": 2**64},
            "SimInputs.prediction_jitter_seed",
        ),
        ({"online_prediction": "easy++-online", "gaussier_loss": np.zeros(6)}, "SimInputs.gaussier_loss"),
        ({"online_prediction": "gaussier-online", "gaussier_loss": np.zeros(5)}, "SimInputs.gaussier_loss"),
        # Six numbers, but not a loss the loop can learn on: NaN, negative or infinite parameters,
        # unknown curve or weight codes (a raw array skips composite_loss's own checks).
        *(
            (
                {"online_prediction": "gaussier-online", "gaussier_loss": np.array(bad, float)},
                "SimInputs.gaussier_loss",
            )
            for bad in (
                [1, np.nan, 0, 1, 0, 4],
                [1, 1, 0, -1, 0, 4],
                [1, 1, 0, 1, np.inf, 4],
                [7, 1, 0, 1, 0, 4],
                [1, 1, 0.5, 1, 0, 4],
                [1, 1, 0, 1, 0, 9],
            )
        ),
    ],
)
def test_bad_study_knobs_are_refused(inputs: dict, where: str) -> None:
    from rush.errors import RushError

    w = users_workload(2, [(0, 1, 10, 100, 1), (1, 1, 10, 100, 1)])
    with pytest.raises(RushError) as err:
        _easy_pp(w, SimInputs(**inputs))
    assert err.value.where == where
