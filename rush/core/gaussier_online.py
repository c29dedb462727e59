"""Gaussier, Glesser, Reis & Trystram's online runtime prediction (SC'15), as their simulator ran it.

The rule behind ``--runtime-prediction gaussier-online`` (``SimInputs.online_prediction``): a
linear model over degree-2 products of 19 features known at a job's submission, predicted at
each arrival and updated at each finished run by one step of normalised adaptive gradient
(NAG; Ross, Mineiro & Langford, UAI 2013) on their E-Loss. Read from their simulator
``predictsim`` (``predictors/predictor_sgdlinear.py``, ``valopt/algos/nag.py``,
``valopt/losses/composite.py``) with the configuration of their cross-validated triple
(``sim/runtime_predictions/README.md``, "Gaussier et al. learning online inside the replay",
gives every source line and every ambiguity resolved):

* :func:`gaussier_features`: x0 = 1; x1..x3 the user's last three finished jobs, each
  min(request, now - that job's submission), as their code reads (the request when missing);
  x4 the request; x5, x6 the means of two and three (``0.33 *`` the sum); x7 the user's mean
  runtime; x8 seconds since the user's last end; x9 processors over the user's mean; x10..x13
  the user's jobs running now (processors, summed elapsed time, count, longest elapsed);
  x14..x17 cos/sin of the time of day and of the week; x18 processors.
* :func:`expand_features`: those 19, the products of the pairs among x1..x16 and the squares of
  x1..x18 (:data:`N_INPUTS` = 157 inputs).
* :func:`gaussier_prediction`: |w . x| truncated to whole seconds, floored at 1 s, through
  :func:`rush.core.runtime_predictions.predicted_runtime`'s guard (capped by the request).
* :func:`eloss_slope` and :func:`nag_step`: the E-Loss (overprediction squared, underprediction
  linear, each job weighted 1 + ln(processors x runtime), threshold 0) plus an L2 term
  (:data:`L2`), minimised online by NAG with learning rate :data:`ETA`.
* :func:`composite_slope` and :func:`loss_weight`: their whole composite loss, of which the E-Loss
  is one point (:data:`CV_LOSS`): any of their curves on either side, a threshold, any of their
  weights. The other points are a study's sensitivity grid only (``sim/runtime_predictions``,
  round 26; ``SimInputs.gaussier_loss``).

The simulator's loop only carries a :class:`GaussierState` and calls :func:`gaussier_arrival`
at each arrival and :func:`gaussier_completion` at each finished run.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from rush.core.runtime_predictions import (
    ONLINE_GAUSSIER_NO_RUNNING,
    ONLINE_GAUSSIER_RIDGE_LOSS,
    predicted_runtime,
)
from rush.errors import PolicyError

N_BASE = 19  # their make_x: x[0..18]
N_PAIRS = 120  # itertools.combinations(x[1:17], 2)
N_INPUTS = N_BASE + N_PAIRS + 18  # + the squares of x[1..18]
ETA = 5000.0  # "eta": 5000
L2 = 4.0e9  # "regularization": "l2", "lambda": 4000000000
NAG_START = 1e-9  # s, G and N start at 0.000000001; n at 1
RIDGE_UNDERPREDICTION_COST = 10.0  # D-g1's variant: the weekly ridge's asymmetry (gaussier.py)
# Their composite loss as six numbers (``experiments/experiment_dicts.py`` of predictsim): the
# overprediction ("right") curve and its parameter, the underprediction ("left") curve and its
# parameter, the threshold (seconds) and the weight's code.
EL_RIGHT, EL_RIGHT_PARAM, EL_LEFT, EL_LEFT_PARAM, EL_THRESHOLD, EL_WEIGHT = range(6)
CURVES: dict[str, int] = {"abs": 0, "square": 1, "exp": 2}
CURVE_ABS, CURVE_SQUARE, CURVE_EXP = CURVES["abs"], CURVES["square"], CURVES["exp"]
WEIGHTS: dict[str, int] = {"1": 0, "5+log(r/m)": 1, "5+log(m/r)": 2, "11+log(1/(r*m))": 3, "1+log(m*r)": 4}
WEIGHT_LOG_MR = WEIGHTS["1+log(m*r)"]
# Their cross-validated triple's loss: overprediction squared, underprediction linear, threshold 0,
# weight 1 + ln(m r) (the E-Loss of the committed online column).
CV_LOSS = np.array([CURVE_SQUARE, 1.0, CURVE_ABS, 1.0, 0.0, WEIGHT_LOG_MR], dtype=np.float64)
DAY = 86400.0
WEEK = 7.0 * 86400.0

# Per-user history columns: the last three finished jobs (submission, runtime; NaN: none yet),
# the count, the sums of runtimes and processors, the last end (0: none, as their code tests).
H_SUBMIT = 0  # columns 0, 2, 4: submissions of the last, second and third last
H_RUN = 1  # columns 1, 3, 5: their runtimes
H_COUNT = 6
H_RUN_SUM = 7
H_PROCS_SUM = 8
H_LAST_END = 9
H_COLUMNS = 10

# Model columns: w, s, G (N_INPUTS each), then N and n.
M_N = 3 * N_INPUTS
M_SIZE = 3 * N_INPUTS + 2


def composite_loss(
    right: str, right_param: float, left: str, left_param: float, threshold: float, weight: str
) -> np.ndarray:
    """One of their composite losses as the six numbers the loop carries (``EL_*`` columns):
    ``right`` and ``left`` curves (:data:`CURVES`) with their parameters, the ``threshold`` in
    seconds and the ``weight`` expression (:data:`WEIGHTS`). A PolicyError for a name their code
    does not offer or a parameter that is not a finite number >= 0."""
    for side, name in (("right", right), ("left", left)):
        if name not in CURVES:
            raise PolicyError(
                f"unknown loss curve {name!r}",
                where=f"gaussier_loss {side}",
                fix=f"use one of: {', '.join(CURVES)}",
            )
    if weight not in WEIGHTS:
        raise PolicyError(
            f"unknown loss weight {weight!r}",
            where="gaussier_loss weight",
            fix=f"use one of: {', '.join(WEIGHTS)}",
        )
    return checked_loss(
        np.array(
            [CURVES[right], right_param, CURVES[left], left_param, threshold, WEIGHTS[weight]],
            dtype=np.float64,
        ),
        "gaussier_loss",
    )


def checked_loss(loss: np.ndarray, where: str) -> np.ndarray:
    """``loss`` if it is six numbers the loop can learn on (``EL_*`` columns: curve and weight
    codes of :data:`CURVES` and :data:`WEIGHTS`, parameters and threshold finite and >= 0), else a
    PolicyError naming ``where``: a NaN or negative parameter would make every prediction NaN or
    reverse the loss."""
    if loss.shape != CV_LOSS.shape:
        raise PolicyError(
            f"a loss must be {CV_LOSS.size} numbers, got shape {loss.shape}",
            where=where,
            fix="build it with rush.core.gaussier_online.composite_loss",
        )
    codes_ok = {loss[EL_RIGHT], loss[EL_LEFT]} <= set(CURVES.values()) and loss[EL_WEIGHT] in WEIGHTS.values()
    numbers = (float(loss[EL_RIGHT_PARAM]), float(loss[EL_LEFT_PARAM]), float(loss[EL_THRESHOLD]))
    if not codes_ok or not all(math.isfinite(v) and v >= 0.0 for v in numbers):
        raise PolicyError(
            f"loss parameters and threshold must be finite and >= 0 and its curve and weight codes "
            f"known, got {loss.tolist()}",
            where=where,
            fix="give their grid's values (parameters 0.0001-10000, threshold 0, 60 or 600) "
            "through rush.core.gaussier_online.composite_loss",
        )
    return loss


class GaussierState(NamedTuple):
    """What the loop carries for gaussier-online: the per-user history (``H_*`` columns), the
    model (w, s, G, N, n), each job's 19 features as at its arrival (the target of its update at
    its end), the rule's code (:data:`rush.core.runtime_predictions.ONLINE_RULES`: theirs, or
    a study variant without the running-job features or with the ridge's loss) and the composite
    loss it learns on (``EL_*`` columns; :data:`CV_LOSS`, theirs, unless a study's grid says)."""

    history: np.ndarray
    model: np.ndarray
    features: np.ndarray
    rule: int
    loss: np.ndarray


@njit(cache=True)
def new_gaussier_state(users: int, jobs: int, rule: int, loss: np.ndarray) -> GaussierState:
    """Nothing seen: no user history, w = 0, NAG's accumulators at their start."""
    history = np.zeros((users, H_COLUMNS))
    history[:, : 2 * 3] = np.nan  # no last three jobs yet
    return GaussierState(history, new_model(), np.zeros((jobs, N_BASE)), rule, loss.copy())


@njit(cache=True)
def new_model() -> np.ndarray:
    """w = 0; s_i = G_i = N = 1e-9, n = 1 (their NAG's start)."""
    model = np.zeros(M_SIZE)
    model[N_INPUTS:M_N] = NAG_START
    model[M_N] = NAG_START
    model[M_N + 1] = 1.0
    return model


@njit(cache=True)
def user_running(
    user_of: np.ndarray, procs: np.ndarray, start: np.ndarray, running: np.ndarray, user: int, now: float
) -> np.ndarray:
    """The user's jobs among ``running`` (job indices) at ``now``: (processors, summed elapsed
    seconds, count, longest elapsed); zeros for an unknown user (-1)."""
    out = np.zeros(4)
    if user < 0:
        return out
    for k in range(len(running)):
        j = running[k]
        if user_of[j] != user:
            continue
        elapsed = now - start[j]
        out[0] += procs[j]
        out[1] += elapsed
        out[2] += 1.0
        out[3] = max(out[3], elapsed)
    return out


@njit(cache=True)
def _lag(history: np.ndarray, user: int, k: int, now: float, requested: float) -> float:
    """x[1 + k]: min(request, L) with L as their code reads it (the request when missing)."""
    if user < 0 or history[user, 2 * k] != history[user, 2 * k]:
        return requested
    submitted = history[user, 2 * k]
    runtime = history[user, 2 * k + 1]
    last = runtime if submitted + runtime > now else now - submitted
    return min(requested, last)


@njit(cache=True)
def gaussier_features(
    history: np.ndarray,
    user: int,
    now: float,
    requested: float,
    procs: float,
    running: np.ndarray,
    out: np.ndarray,
) -> None:
    """Their ``make_x`` (x[0..18], module docstring) for a job of ``user`` (-1: unknown, no
    history) submitted at ``now``; ``running`` is :func:`user_running`'s four figures."""
    out[0] = 1.0
    for k in range(3):
        out[1 + k] = _lag(history, user, k, now, requested)
    out[4] = requested
    seen = 0
    if user >= 0:
        for k in range(3):
            if history[user, 2 * k] == history[user, 2 * k]:
                seen = k + 1
    if seen == 3:
        out[6] = 0.33 * (out[1] + out[2] + out[3])
        out[5] = 0.5 * (out[1] + out[2])
    elif seen == 2:
        out[5] = 0.5 * (out[1] + out[2])
        out[6] = out[5]
    elif seen == 1:
        out[5] = out[1]
        out[6] = out[5]
    else:
        out[5] = requested
        out[6] = requested
    count = history[user, H_COUNT] if user >= 0 else 0.0
    out[7] = history[user, H_RUN_SUM] / count if count != 0.0 else 0.0
    last_end = history[user, H_LAST_END] if user >= 0 else 0.0
    out[8] = now - last_end if last_end != 0.0 else 0.0
    out[9] = procs / (history[user, H_PROCS_SUM] / count) if count != 0.0 else 0.0
    out[10] = running[0]
    out[11] = running[1]
    out[12] = running[2]
    out[13] = running[3]
    day = 2.0 * math.pi * (now % DAY) / DAY
    week = 2.0 * math.pi * (now % WEEK) / WEEK
    out[14] = math.cos(day)
    out[15] = math.sin(day)
    out[16] = math.cos(week)
    out[17] = math.sin(week)
    out[18] = procs


@njit(cache=True)
def expand_features(base: np.ndarray) -> np.ndarray:
    """The 157 inputs: the 19 features, x_a x_b for 1 <= a < b <= 16, then x_k^2 for k = 1..18
    (their ``quadratic`` expansion, in its order)."""
    x = np.empty(N_INPUTS)
    x[:N_BASE] = base
    i = N_BASE
    for a in range(1, 17):
        for b in range(a + 1, 17):
            x[i] = base[a] * base[b]
            i += 1
    for k in range(1, N_BASE):
        x[i] = base[k] * base[k]
        i += 1
    return x


@njit(cache=True)
def gaussier_prediction(model: np.ndarray, x: np.ndarray, requested: float) -> float:
    """Their ``predict``: |w . x| truncated to whole seconds, at least 1, capped by the request
    (:func:`predicted_runtime`'s guard: the request for NaN or infinite)."""
    p = abs(np.dot(model[:N_INPUTS], x))
    if not np.isfinite(p):
        return requested
    return predicted_runtime(max(1.0, math.floor(p)), requested)


@njit(cache=True)
def job_weight(procs: float, runtime: float) -> float:
    """The E-Loss weight "1+log(m*r)" (m processors, r runtime); ln(max(m r, 1)) where their code
    would fail on a zero product."""
    return 1.0 + math.log(max(procs * runtime, 1.0))


@njit(cache=True)
def loss_weight(code: int, procs: float, runtime: float) -> float:
    """Their weight expression ``code`` (:data:`WEIGHTS`) for m = ``procs`` processors and r =
    ``runtime`` seconds, evaluated literally (three of them are negative for many jobs, and so used);
    r at least 1 s where their ``math.log`` would fail on a zero runtime. "1+log(m*r)" is
    :func:`job_weight`."""
    if code == WEIGHT_LOG_MR:
        return job_weight(procs, runtime)
    if code == 0:
        return 1.0
    r = max(runtime, 1.0)
    if code == 1:
        return 5.0 + math.log(r / procs)
    if code == 2:
        return 5.0 + math.log(procs / r)
    return 11.0 + math.log(1.0 / (r * procs))


@njit(cache=True)
def _curve_slope(curve: float, gamma: float, d: float) -> float:
    """Their loss curve's derivative at distance ``d`` >= 0 past the threshold: abs gamma, square
    2 gamma d, exp gamma exp(gamma d) (infinite on overflow, where their Python would raise)."""
    if curve == CURVE_ABS:
        return gamma
    if curve == CURVE_SQUARE:
        return gamma * 2.0 * d
    return gamma * math.exp(gamma * d)


@njit(cache=True)
def composite_slope(loss: np.ndarray, predicted: float, target: float, weight: float) -> float:
    """d loss / d p of their CompositeLoss (``loss``: ``EL_*`` columns) at prediction ``predicted``
    (p = w . x) for a run of ``target`` seconds: with e = p - y and t the threshold, g times the
    right curve's slope at e - t when e > t (overprediction), 0 at e = t, minus g times the left
    curve's slope at t - e otherwise. The gradient in w_i is this times x_i."""
    e = predicted - target
    threshold = loss[EL_THRESHOLD]
    if e > threshold:
        return weight * _curve_slope(loss[EL_RIGHT], loss[EL_RIGHT_PARAM], e - threshold)
    if e == threshold:
        return 0.0
    return -weight * _curve_slope(loss[EL_LEFT], loss[EL_LEFT_PARAM], threshold - e)


@njit(cache=True)
def eloss_slope(predicted: float, target: float, weight: float) -> float:
    """d loss / d p of the E-Loss (their C-V triple's, :data:`CV_LOSS`) at prediction ``predicted``
    for a run of ``target`` seconds: overprediction squared (2 g e, e = p - y > 0), underprediction
    linear of slope 1 (-g), 0 at e = 0."""
    return composite_slope(CV_LOSS, predicted, target, weight)


@njit(cache=True)
def ridge_slope(predicted: float, target: float, weight: float) -> float:
    """D-g1's variant loss (post hoc, a study's): our weekly ridge's asymmetry, squared on both
    sides, underprediction :data:`RIDGE_UNDERPREDICTION_COST` times costlier: 2 g e for e > 0,
    2 g c e for e < 0 (e = p - y)."""
    e = predicted - target
    return weight * 2.0 * e * (1.0 if e >= 0.0 else RIDGE_UNDERPREDICTION_COST)


@njit(cache=True)
def nag_step(
    model: np.ndarray,
    x: np.ndarray,
    target: float,
    weight: float,
    ridge_loss: bool = False,
    loss: np.ndarray = CV_LOSS,
) -> None:
    """One update of their NAG (``valopt/algos/nag.py``) on ``loss`` (the E-Loss unless a study's
    grid gives another of their composite losses; D-g1's ridge loss with ``ridge_loss``) plus ``L2`` w_i: rescale
    the weights of inputs larger than seen so far, N += sum x_i^2 / s_i^2, then
    w_i -= ETA d_i / (sqrt(N G_i / n) s_i) with d_i = slope x_i + L2 w_i and G_i += d_i^2; n += 2."""
    w = model[:N_INPUTS]
    s = model[N_INPUTS : 2 * N_INPUTS]
    g = model[2 * N_INPUTS : M_N]
    for i in range(N_INPUTS):
        ax = abs(x[i])
        if ax > s[i]:
            w[i] = w[i] * (s[i] / ax)
            s[i] = ax
    total = 0.0
    for i in range(N_INPUTS):
        total += x[i] * x[i] / (s[i] * s[i])
    model[M_N] += total
    p = np.dot(w, x)
    slope = ridge_slope(p, target, weight) if ridge_loss else composite_slope(loss, p, target, weight)
    big_n = model[M_N]
    n = model[M_N + 1]
    for i in range(N_INPUTS):
        d = slope * x[i] + L2 * w[i]
        g[i] += d * d
        w[i] -= ETA * d / (math.sqrt(big_n * g[i] / n) * s[i])
    model[M_N + 1] = n + 2.0


@njit(cache=True)
def gaussier_arrival(
    state: GaussierState, job: int, user: int, now: float, requested: float, procs: float, running: np.ndarray
) -> float:
    """Job ``job`` arrives: its features are made (and kept for its update) and its prediction
    returned."""
    base = state.features[job]
    if state.rule == ONLINE_GAUSSIER_NO_RUNNING:
        running = np.zeros(4)  # D-g1's variant: what a log walk-forward could know
    gaussier_features(state.history, user, now, requested, procs, running, base)
    return gaussier_prediction(state.model, expand_features(base), requested)


@njit(cache=True)
def gaussier_completion(
    state: GaussierState, job: int, user: int, submitted: float, ran: float, procs: float, now: float
) -> None:
    """Job ``job`` of ``user`` (-1: unknown, no history kept) finished at ``now`` after running
    ``ran`` seconds: one NAG step on the features it arrived with, and it becomes the user's last
    job. A NaN, infinite or negative run length says nothing and changes nothing."""
    if not (ran >= 0.0) or ran == np.inf:
        return
    x = expand_features(state.features[job])
    weight = loss_weight(int(state.loss[EL_WEIGHT]), procs, ran)
    nag_step(state.model, x, ran, weight, state.rule == ONLINE_GAUSSIER_RIDGE_LOSS, state.loss)
    if user < 0:
        return
    h = state.history
    for c in (4, 5):  # the second last becomes the third last, the last the second
        h[user, c] = h[user, c - 2]
        h[user, c - 2] = h[user, c - 4]
    h[user, H_SUBMIT] = submitted
    h[user, H_RUN] = ran
    h[user, H_COUNT] += 1.0
    h[user, H_RUN_SUM] += ran
    h[user, H_PROCS_SUM] += procs
    h[user, H_LAST_END] = now
