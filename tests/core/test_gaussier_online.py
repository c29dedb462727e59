"""Gaussier et al.'s online regression in the core (rush.core.gaussier_online): the E-Loss
gradient and one NAG step against hand-computed values, and many steps against an independent
transcription of their simulator's formulas (predictsim: predictor_sgdlinear.make_x, valopt's
NAG.fit, CompositeLoss with the abs and square curves, RegularizedLoss with L2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core import gaussier_online as g
from tests.core.predictsim_transcription import Job, replay


def test_eloss_slope_is_squared_over_and_linear_under() -> None:
    # e = p - y; overprediction: 2 g e; underprediction: -g (slope 1); exact: 0.
    assert g.eloss_slope(130.0, 100.0, 2.0) == 2.0 * 2.0 * 30.0
    assert g.eloss_slope(70.0, 100.0, 2.0) == -2.0
    assert g.eloss_slope(7000.0, 100.0, 1.0) == 2.0 * 6900.0  # grows with the error
    assert g.eloss_slope(-5000.0, 100.0, 1.0) == -1.0  # does not
    assert g.eloss_slope(100.0, 100.0, 3.0) == 0.0
    assert g.job_weight(4.0, 250.0) == pytest.approx(1.0 + math.log(1000.0))
    assert g.job_weight(1.0, 0.0) == 1.0  # ln(max(m r, 1)): their ln(0) would fail


def test_one_nag_step_by_hand() -> None:
    # x = (1, 2, 0, ...), target 3, weight 1, from w = 0, s = G = N = 1e-9, n = 1.
    model = g.new_model()
    x = np.zeros(g.N_INPUTS)
    x[0], x[1] = 1.0, 2.0
    g.nag_step(model, x, 3.0, 1.0)
    w, s, G = model[: g.N_INPUTS], model[g.N_INPUTS : 2 * g.N_INPUTS], model[2 * g.N_INPUTS : g.M_N]
    assert s[0] == 1.0 and s[1] == 2.0 and s[2] == g.NAG_START  # the largest |x_i| seen
    big_n = 1e-9 + 1.0 + 1.0  # N += sum x_i^2 / s_i^2
    assert model[g.M_N] == pytest.approx(big_n, rel=1e-15)
    # p = 0 < 3: underprediction, slope -1, d_i = -x_i (w = 0: no L2 part); G_i = 1e-9 + d_i^2.
    assert G[0] == pytest.approx(1e-9 + 1.0) and G[1] == pytest.approx(1e-9 + 4.0)
    # w_i = -eta d_i / (sqrt(N G_i / n) s_i), n = 1.
    assert w[0] == pytest.approx(5000.0 / math.sqrt(big_n * (1e-9 + 1.0)), rel=1e-12)
    assert w[1] == pytest.approx(5000.0 * 2.0 / (math.sqrt(big_n * (1e-9 + 4.0)) * 2.0), rel=1e-12)
    assert w[0] == pytest.approx(3535.5339, rel=1e-7) and w[1] == pytest.approx(1767.7670, rel=1e-7)
    assert not w[2:].any() and model[g.M_N + 1] == 3.0  # zero inputs never move; n += 2
    # Second step, x_1 doubled: w_1 is first rescaled by s_1 / |x_1| = 1/2, then p = 3535.5 +
    # 4 * 883.9 = 7071.1 > 3: overprediction, d_i = 2 (p - 3) x_i + 4e9 w_i.
    x[1] = 4.0
    w0, w1 = w[0], w[1] / 2.0
    p = w0 + 4.0 * w1
    big_n2 = big_n + 1.0 + 1.0
    d0, d1 = 2.0 * (p - 3.0) * 1.0 + 4e9 * w0, 2.0 * (p - 3.0) * 4.0 + 4e9 * w1
    g0, g1 = 1e-9 + 1.0 + d0 * d0, 1e-9 + 4.0 + d1 * d1
    g.nag_step(model, x, 3.0, 1.0)
    assert model[0] == pytest.approx(w0 - 5000.0 * d0 / (math.sqrt(big_n2 * g0 / 3.0) * 1.0), rel=1e-12)
    assert model[1] == pytest.approx(w1 - 5000.0 * d1 / (math.sqrt(big_n2 * g1 / 3.0) * 4.0), rel=1e-12)
    assert model[g.M_N + 1] == 5.0


def test_many_steps_match_predictsims_formulas() -> None:
    rng = np.random.default_rng(24)
    n = 60
    submit = np.sort(rng.uniform(0, 50_000, n)).round()
    jobs = [
        Job(
            int(rng.integers(0, 3)),
            float(submit[k]),
            float(rng.integers(1, 3000)),
            int(rng.integers(1, 9)),
            1e6,
        )
        for k in range(n)
    ]
    events = [("submit", k, jobs[k].submit_time) for k in range(n)]
    events += [("end", k, jobs[k].submit_time + jobs[k].actual_run_time) for k in range(n)]  # no waits
    events.sort(key=lambda e: (e[2], e[0] == "submit"))  # ends first at a tie
    got, want, ours, ref = replay(events, jobs)
    assert got == want  # every prediction, to the second
    assert len(set(want)) > 40  # and they vary (a request of 1e6 s caps none after the first)
    assert np.allclose(ours.model[: g.N_INPUTS], ref.w[: g.N_INPUTS], rtol=1e-9, atol=0.0)
    assert not any(ref.w[g.N_INPUTS :])  # their 242 extra slots stay 0


def test_features_of_a_user_with_history_and_running_jobs() -> None:
    state = g.new_gaussier_state(2, 4, 2, g.CV_LOSS)
    # User 0: job 0 (4 procs) submitted at 100, ran 300, ended at 500; job 1 (2 procs) submitted
    # at 200, ran 50, ended at 600.
    g.gaussier_completion(state, 0, 0, 100.0, 300.0, 4.0, 500.0)
    g.gaussier_completion(state, 1, 0, 200.0, 50.0, 2.0, 600.0)
    running = g.user_running(
        np.array([0, 0, 1, 0]),
        np.array([4, 2, 8, 3]),
        np.array([0.0, 0.0, 650.0, 700.0]),
        np.array([2, 3]),
        0,
        1000.0,
    )
    assert running.tolist() == [3.0, 300.0, 1.0, 300.0]  # job 3 only (job 2 is user 1's)
    x = np.zeros(g.N_BASE)
    g.gaussier_features(state.history, 0, 1000.0, 700.0, 6.0, running, x)
    # x1, x2: min(request, now - that job's submission), as their code reads: 800 (job 1), 900 -> 700.
    assert x[:10].tolist() == [1.0, 700.0, 700.0, 700.0, 700.0, 700.0, 700.0, 175.0, 400.0, 2.0]
    assert x[10:14].tolist() == [3.0, 300.0, 1.0, 300.0] and x[18] == 6.0
    g.gaussier_features(state.history, 0, 1000.0, 5000.0, 6.0, running, x)
    assert x[1:7].tolist() == [800.0, 900.0, 5000.0, 5000.0, 850.0, 850.0]  # two seen: x6 = x5
    g.gaussier_features(state.history, -1, 1000.0, 5000.0, 6.0, np.zeros(4), x)  # unknown user
    assert x[1:10].tolist() == [5000.0] * 6 + [0.0, 0.0, 0.0]
    e = g.expand_features(np.arange(19.0))
    assert len(e) == 157 and e[19] == 1.0 * 2.0 and e[19 + 119] == 15.0 * 16.0 and e[-1] == 18.0**2


def test_ridge_slope_is_the_weekly_ridges_asymmetry() -> None:
    # D-g1's study variant: squared both sides, underprediction 10 times costlier.
    assert g.ridge_slope(130.0, 100.0, 2.0) == 2.0 * 2.0 * 30.0
    assert g.ridge_slope(70.0, 100.0, 2.0) == 2.0 * 2.0 * -30.0 * 10.0
    assert g.ridge_slope(100.0, 100.0, 2.0) == 0.0
    on, off = g.new_model(), g.new_model()
    x = np.zeros(g.N_INPUTS)
    x[0] = 1e5  # a large input: a small weight, so that L2 (4e9 w) does not drown the loss
    g.nag_step(on, x, 3.0, 1.0, True)
    g.nag_step(off, x, 3.0, 1.0)
    # The first step from w = 0 is normalised (|d| cancels but for G's 1e-9 start); they part after.
    assert on[0] == pytest.approx(off[0], rel=1e-8)
    g.nag_step(on, x, 1e6, 1.0, True)  # p = 5000 < 1e6: underprediction, where they differ
    g.nag_step(off, x, 1e6, 1.0)
    assert on[0] != pytest.approx(off[0], rel=1e-3)


def test_composite_slope_is_their_curves_threshold_and_weights() -> None:
    # Their CompositeLoss (valopt/losses/composite.py) with losscurves abs, square and exp: with
    # e = p - y and threshold t, g right'(e - t) past it, 0 at it, -g left'(t - e) below it.
    loss = g.composite_loss("square", 3.0, "abs", 5.0, 60.0, "1")
    assert g.composite_slope(loss, 200.0, 100.0, 2.0) == 2.0 * 3.0 * 2.0 * 40.0  # e - t = 40
    assert g.composite_slope(loss, 160.0, 100.0, 2.0) == 0.0  # e = t
    assert g.composite_slope(loss, 150.0, 100.0, 2.0) == -2.0 * 5.0  # below the threshold: left
    loss = g.composite_loss("abs", 7.0, "exp", 0.01, 0.0, "1")
    assert g.composite_slope(loss, 130.0, 100.0, 1.5) == 1.5 * 7.0
    assert g.composite_slope(loss, 70.0, 100.0, 1.5) == pytest.approx(-1.5 * 0.01 * math.exp(0.01 * 30.0))
    loss = g.composite_loss("exp", 0.0001, "square", 2.0, 0.0, "1")
    assert g.composite_slope(loss, 130.0, 100.0, 1.0) == pytest.approx(0.0001 * math.exp(0.0001 * 30.0))
    assert g.composite_slope(loss, 70.0, 100.0, 1.0) == -2.0 * 2.0 * 30.0
    # Their C-V triple is the E-Loss, to the bit.
    for p, y, w in ((130.0, 100.0, 2.0), (70.0, 100.0, 2.0), (1e6 + 0.1, 3.3, 17.7), (100.0, 100.0, 3.0)):
        assert g.composite_slope(g.CV_LOSS, p, y, w) == g.eloss_slope(p, y, w)
    assert g.composite_slope(g.CV_LOSS, 1e6 + 0.1, 3.3, 17.7) == 17.7 * 2.0 * (1e6 + 0.1 - 3.3)


def test_loss_weights_are_their_expressions_literally() -> None:
    m, r = 4.0, 250.0
    assert g.loss_weight(g.WEIGHTS["1"], m, r) == 1.0
    assert g.loss_weight(g.WEIGHTS["5+log(r/m)"], m, r) == pytest.approx(5.0 + math.log(r / m))
    assert g.loss_weight(g.WEIGHTS["5+log(m/r)"], m, r) == pytest.approx(5.0 + math.log(m / r))
    assert g.loss_weight(g.WEIGHTS["11+log(1/(r*m))"], m, r) == pytest.approx(11.0 + math.log(1.0 / (r * m)))
    assert g.loss_weight(g.WEIGHTS["1+log(m*r)"], m, r) == g.job_weight(m, r)
    assert g.loss_weight(g.WEIGHTS["5+log(m/r)"], 1.0, 3600.0) < 0.0  # negative, used as it is
    assert g.loss_weight(g.WEIGHTS["11+log(1/(r*m))"], 1.0, 0.0) == 11.0  # r at least 1 s


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("cube", 1, "abs", 1, 0, "1"), "gaussier_loss right"),
        (("abs", 1, "linear", 1, 0, "1"), "gaussier_loss left"),
        (("abs", 1, "abs", 1, 0, "2+log(m)"), "gaussier_loss weight"),
        (("abs", -1, "abs", 1, 0, "1"), "gaussier_loss"),
        (("abs", 1, "abs", 1, float("nan"), "1"), "gaussier_loss"),
    ],
)
def test_a_loss_their_code_does_not_offer_is_refused(args: tuple, where: str) -> None:
    from rush.errors import PolicyError

    with pytest.raises(PolicyError) as err:
        g.composite_loss(*args)
    assert err.value.where == where


def test_one_step_on_another_loss_moves_the_weights_by_its_slope() -> None:
    # From w = 0 (p = 0) toward a target of 3: the abs-abs loss with under parameter 4 steps with
    # slope -4 where the E-Loss steps with -1; NAG normalises the step by sqrt(G) = |d|, so the
    # first steps agree in size and sign, the accumulators G by the slope squared.
    x = np.zeros(g.N_INPUTS)
    x[0], x[1] = 1.0, 2.0
    cv, other = g.new_model(), g.new_model()
    g.nag_step(cv, x, 3.0, 1.0)
    g.nag_step(other, x, 3.0, 1.0, False, g.composite_loss("abs", 1, "abs", 4, 0, "1"))
    G_cv, G_other = cv[2 * g.N_INPUTS : g.M_N], other[2 * g.N_INPUTS : g.M_N]
    assert G_other[1] - 1e-9 == pytest.approx(16.0 * (G_cv[1] - 1e-9))
    assert np.sign(other[1]) == np.sign(cv[1]) == 1.0
