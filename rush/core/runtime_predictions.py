"""Runtime predictions in the core: the prediction source's guard and the correction rule.

A runtime predictor (a model, :mod:`rush.models.runtime_predictors`) gives each pending job
a predicted runtime; the core schedules with it as the job's ``estimate`` (queue order of
SPF/SAF-like policies, backfilling, the head's reservation), while the job is still killed
only at its time limit (the user's request). Two rules live here, once, for the simulator's
event loop and the live pass:

* :func:`predicted_runtime`: what a prediction may be. NaN, infinite or non-positive
  predictions fall back to the request (the documented fallback, never an error in a pass);
  a prediction is capped by the request and floored at :data:`MIN_PREDICTION` (a zero would
  let a job "end" before it starts).
* :func:`running_estimate`: the estimated length of a run that has been running for
  ``elapsed`` seconds, from its prediction, under a correction rule (``CoreConfig.
  prediction_correction``, :data:`rush.core.names.PREDICTION_CORRECTIONS`):

  - ``none``: the prediction stays (an expired estimate counts as ending now, as before);
  - ``request``: once the prediction has expired, the request;
  - ``stepwise``: Tsafrir, Etsion & Feitelson's (TPDS 2007) correction, as Gaussier et al.'s
    simulator (predictsim, ``common_correctors.tsafrir``) implements it: the k-th correction
    predicts the original prediction plus the k-th amount of :data:`STEPWISE_INCREMENTS`
    (1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h, 100 h), never beyond the
    request; past the last amount, the request. The rule is stateless: the correction count
    follows from the prediction and the elapsed time, so a live shell needs no extra state.

The simulator applies the correction at the moment a running job outlives its estimate (an
event of its loop); the live pass at every pass, from ``now - start``.

EASY++ from the replay's own completions (:data:`ONLINE_PREDICTIONS`): the prediction rule
:func:`last_two_prediction` (the mean of the user's last two finished runs, through
:func:`predicted_runtime`'s guard; the request with fewer than two) and its state update
:func:`record_finished_run` are called by the simulator's loop, which only carries the per-user
state, at each arrival and each finished run; the offline predictor
(:mod:`rush.models.runtime_predictors.easy_plus_plus`) applies the same rule to the log's history.
Gaussier et al.'s regression learning online in the replay (``gaussier-online``) is
:mod:`rush.core.gaussier_online`, called the same way.

Backfill order: shortest predicted job backfilled first (SJBF, EASY++) is the EASY pass's
scan order with ``CoreConfig.backfill_policy`` SPF over the predicted estimates (SAF: by
predicted area); no separate rule is needed.

Ranking only (:func:`ranking_runtimes`): predictions may instead decide the order alone, the
queue order and the backfill scan of a time-independent policy (SPF, SAF, ...), while the
head's reservation and the backfill test keep the limits (the request; the divider for a
killable small job). Nothing planned can then expire, so no correction is needed: "rank on
predictions, plan on limits" (``sim/runtime_predictions``, round 13, H13a). Helpers shape
such keys: :func:`request_first_runtimes` (the request first, the prediction among equal requests;
H15), :func:`confident_ranking_runtimes` (the predictor's upper quantile only where it is at most a
fraction of the request, the request elsewhere; H17), :func:`confident_step_ranking_runtimes`
(H17's confident jobs moved one request step, no further; H18) and :func:`random_tie_breaks` (equal keys ordered by a seeded permutation of the jobs instead
of arrival, the same for every rule: the study's paired comparison over seeds, D15).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.names import PREDICTION_CORRECTIONS
from rush.core.slowdown_rank import quantile_table
from rush.errors import PolicyError

CORRECTION_NONE = 0
CORRECTION_REQUEST = 1
CORRECTION_STEPWISE = 2
_CODES = {"none": CORRECTION_NONE, "request": CORRECTION_REQUEST, "stepwise": CORRECTION_STEPWISE}
# Amounts added to the original prediction at the 1st, 2nd, ... correction (seconds).
STEPWISE_INCREMENTS = np.array(
    [60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 18000.0, 36000.0, 72000.0, 180000.0, 360000.0]
)
# A predicted runtime is at least one second.
MIN_PREDICTION = 1.0


def correction_code(name: str) -> int:
    """The compiled code of a correction rule's name (a PolicyError for an unknown one)."""
    if name not in _CODES:
        raise PolicyError(
            f"unknown prediction correction {name!r}",
            where="prediction_correction",
            fix=f"use one of: {', '.join(PREDICTION_CORRECTIONS)}",
        )
    return _CODES[name]


@njit(cache=True, inline="always")
def predicted_runtime(prediction: float, requested_time: float) -> float:
    """The prediction a pass may use: the request when the prediction is NaN, infinite or
    <= 0, else the prediction capped by the request and floored at one second (a request
    below one second, or none at all (inf), caps nothing else)."""
    if not (prediction > 0.0) or not np.isfinite(prediction):
        return requested_time
    p = prediction if prediction < requested_time else requested_time
    return p if p > MIN_PREDICTION else min(MIN_PREDICTION, requested_time)


@njit(cache=True)
def predicted_runtimes(predictions: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """:func:`predicted_runtime` for every job."""
    out = np.empty(len(predictions), dtype=np.float64)
    for k in range(len(predictions)):
        out[k] = predicted_runtime(predictions[k], requested_time[k])
    return out


@njit(cache=True)
def running_estimate(correction: int, predicted: float, elapsed: float, limit: float) -> float:
    """Estimated length of a run predicted to last ``predicted`` seconds (already capped by
    ``limit``, its time limit) that has run for ``elapsed`` seconds: ``predicted`` while it
    has not expired, then the correction rule's next value (> ``elapsed`` unless the limit
    is reached)."""
    if correction == CORRECTION_NONE or elapsed < predicted or predicted >= limit:
        return predicted
    if correction == CORRECTION_REQUEST:
        return limit
    for k in range(len(STEPWISE_INCREMENTS)):
        e = predicted + STEPWISE_INCREMENTS[k]
        if e >= limit:
            return limit
        if e > elapsed:
            return e
    return limit


@njit(cache=True)
def running_estimates(
    correction: int, predicted: np.ndarray, elapsed: np.ndarray, limit: np.ndarray
) -> np.ndarray:
    """:func:`running_estimate` for every running job (the live pass)."""
    out = np.empty(len(predicted), dtype=np.float64)
    for k in range(len(predicted)):
        out[k] = running_estimate(correction, predicted[k], elapsed[k], limit[k])
    return out


# Prediction sources computed inside the simulator's loop from the replay's own completions
# (``SimInputs.online_prediction``; ``rush simulate --runtime-prediction easy++-online``):
# the name a surface accepts -> the offline predictor whose rule it runs online.
ONLINE_PREDICTIONS: dict[str, str] = {"easy++-online": "easy++", "gaussier-online": "gaussier"}
# The loop's code of each online source: EASY++'s last two runs (:func:`last_two_prediction`) or
# Gaussier et al.'s online regression (:mod:`rush.core.gaussier_online`).
# Codes from ONLINE_GAUSSIER up are Gaussier et al.'s rule; the two after it are study variants
# (``sim/runtime_predictions``, D-g1: one part changed each), reachable through
# ``SimInputs.online_prediction`` only, not offered by the CLI.
ONLINE_LAST_TWO = 1
ONLINE_GAUSSIER = 2
ONLINE_GAUSSIER_NO_RUNNING = 3  # without the features of the user's running jobs
ONLINE_GAUSSIER_RIDGE_LOSS = 4  # with the weekly ridge's asymmetric squared loss instead of the E-Loss
ONLINE_RULES: dict[str, int] = {
    "easy++-online": ONLINE_LAST_TWO,
    "gaussier-online": ONLINE_GAUSSIER,
    "gaussier-online (no running features)": ONLINE_GAUSSIER_NO_RUNNING,
    "gaussier-online (ridge loss)": ONLINE_GAUSSIER_RIDGE_LOSS,
}


# Where an online prediction is used (``SimInputs.prediction_scope``): by default everywhere a
# runtime is assumed (the queue order's key, the backfill scan's key, the reservations and the
# backfill test); ``"backfill"`` (``sim/runtime_predictions``, H19) keeps the queue order on its
# own key (the request, or ``SimInputs.rank_estimate``) and gives the prediction to the backfill
# scan, the backfill test and the head's reservation only. Kills never take a prediction (they
# stay at the request and, for a killable job, at its class divider).
PREDICTION_SCOPES: dict[str, int] = {"order-and-backfill": 0, "backfill": 1}
SCOPE_BACKFILL = 1


@njit(cache=True, inline="always")
def order_takes_prediction(scope: int) -> bool:
    """Whether a job's queue-order key is computed from its online prediction at its arrival
    (:data:`PREDICTION_SCOPES`); the backfill scan's key and the reservation estimate always are."""
    return scope != SCOPE_BACKFILL


@njit(cache=True)
def record_finished_run(history: np.ndarray, user: int, runtime: float) -> None:
    """A job of ``user`` (-1: unknown, not recorded) finished after running ``runtime``
    seconds: it becomes the user's last run, the previous last the one before. A NaN,
    infinite or negative runtime says nothing and is not recorded (as the offline history's
    :func:`rush.models.runtime_predictors.protocol.usable_history`)."""
    if user < 0 or not (runtime >= 0.0) or runtime == np.inf:
        return
    history[user, 1] = history[user, 0]
    history[user, 0] = runtime


@njit(cache=True)
def last_two_prediction(history: np.ndarray, user: int, requested_time: float) -> float:
    """EASY++'s prediction (Tsafrir, Etsion & Feitelson, TPDS 2007) for a job of ``user``
    submitted now: the mean of the user's last two finished runtimes, through
    :func:`predicted_runtime`'s guard (capped by the request, floored at one second, the
    request for a zero mean); the request when the user has fewer than two finished runs or
    is unknown (-1)."""
    if user < 0:
        return requested_time
    a = history[user, 0]
    b = history[user, 1]
    if a != a or b != b:  # fewer than two seen (NaN != NaN)
        return requested_time
    return predicted_runtime(0.5 * (a + b), requested_time)


# A study's information-free jitter of online predictions (``SimInputs.prediction_jitter_seed``;
# ``sim/runtime_predictions``, round 26): each prediction moved by at most this share.
PREDICTION_JITTER = 1e-3
JITTER_OFF = 0  # the seed that leaves every prediction untouched (the default)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def _splitmix64(x: np.uint64) -> np.uint64:
    """SplitMix64's finaliser (Steele, Lea & Flood 2014): a bijective scramble of 64 bits."""
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


@njit(cache=True)
def jitter_draw(seed: int, job: int) -> float:
    """A uniform draw in [0, 1) that depends on ``seed`` and the job's index ``job`` only (a
    counter hash, not a stream): the same job gets the same draw whatever order it is met in."""
    x = _splitmix64(np.uint64(seed) * _GOLDEN + np.uint64(job))
    x = _splitmix64(x + _GOLDEN)
    return float(x >> np.uint64(11)) * (1.0 / 9007199254740992.0)  # the top 53 bits / 2**53


@njit(cache=True)
def jittered_prediction(prediction: float, requested_time: float, seed: int, job: int) -> float:
    """The online prediction of job ``job`` (its index in submit order) as it becomes the job's
    estimate under a study's jitter: with ``seed`` :data:`JITTER_OFF` the prediction itself, else
    the prediction times 1 + e, e = :data:`PREDICTION_JITTER` (2u - 1) with u :func:`jitter_draw`'s,
    through :func:`predicted_runtime`'s guard again (capped by the request, at least one second).
    The draw carries no information about the job; it measures how much a schedule moves under
    changes that say nothing (``sim/runtime_predictions``, round 26)."""
    if seed == JITTER_OFF:
        return prediction
    e = PREDICTION_JITTER * (2.0 * jitter_draw(seed, job) - 1.0)
    return predicted_runtime(prediction * (1.0 + e), requested_time)


# The scheduling side of a runtime predictor: (backfill order, correction rule). EASY++ and
# Gaussier et al. both backfill the shortest predicted job first (SJBF: the SPF scan over the
# predictions) and correct expired predictions stepwise; any other predictor gets the same.
PREDICTION_POLICIES: dict[str, tuple[str, str]] = {
    "easy++": ("SPF", "stepwise"),
    "easy++-online": ("SPF", "stepwise"),
    "gaussier": ("SPF", "stepwise"),
    "gaussier-online": ("SPF", "stepwise"),
}
DEFAULT_PREDICTION_POLICY = ("SPF", "stepwise")


def prediction_policy(predictor: str) -> tuple[str, str]:
    """(backfill order, correction rule) the core uses with a predictor's predictions."""
    return PREDICTION_POLICIES.get(predictor, DEFAULT_PREDICTION_POLICY)


def ranking_runtimes(rank: np.ndarray | None, estimate: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """The runtime each job is ranked by under a time-independent policy (its static key):
    ``estimate`` (what it is planned on) unless ranking predictions ``rank`` are given, which
    then pass :func:`predicted_runtime`'s guard (so a NaN or absurd prediction ranks the job
    by its request) and leave the plan on ``estimate``."""
    if rank is None:
        return estimate
    rank = np.ascontiguousarray(rank, dtype=np.float64)
    return predicted_runtimes(rank, np.ascontiguousarray(requested_time, dtype=np.float64))


def request_first_runtimes(predictions: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """Ranking keys (seconds, at most the request) that order jobs by their request first and, among
    equal requests, by their guarded prediction (:func:`predicted_runtime`): "the request first, the
    predictor only where the request says nothing" (``sim/runtime_predictions``, round 17, H15).

    A job's key is its request lowered by less than half the smallest gap between distinct finite
    requests, in proportion to ``1 - prediction / request``; so any two different requests keep
    their order and equal requests are ordered by prediction (equal predictions tie, as before). A
    job whose request is not finite and positive keeps its request as its key."""
    requested = np.ascontiguousarray(requested_time, dtype=np.float64)
    predictions = np.ascontiguousarray(predictions, dtype=np.float64)
    if predictions.shape != requested.shape or requested.ndim != 1:
        raise PolicyError(
            f"{predictions.shape} predictions for {requested.shape} requests",
            where="request_first_runtimes",
            fix="give one prediction (NaN for none) per request",
        )
    finite = np.isfinite(requested) & (requested > 0)
    out = requested.copy()
    if not finite.any():
        return out
    gaps = np.diff(np.unique(requested[finite]))
    shift = 0.5 * min(gaps.min() if len(gaps) else 1.0, 1.0)  # below half of every gap
    share = predicted_runtimes(predictions[finite], requested[finite]) / requested[finite]
    # The guarded prediction is at least min(MIN_PREDICTION, request), so a key never falls under
    # the guard's floor: ranking_runtimes leaves it unchanged.
    out[finite] = requested[finite] - shift * (1.0 - np.minimum(share, 1.0))
    return out


# H17's defaults (sim/runtime_predictions, round 20): the deployed predictor's highest quantile
# level, and the factor between a request and the next lower of the round values users pick.
CONFIDENT_LEVEL = 0.9
CONFIDENT_MARGIN = 2.0


def _confident_jobs(
    quantiles: np.ndarray,
    levels: np.ndarray,
    requested_time: np.ndarray,
    level: float,
    margin: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(requests, upper quantile, confident mask) of H17's gate, shared by H17 and H18: a job is
    confident when its predicted quantile at ``level`` is finite, non-negative and at most its
    (finite, positive) request divided by ``margin``. A PolicyError for a ``level`` the model does
    not predict, a ``margin`` below 1 or mismatched shapes."""
    q, lv, requested = quantile_table(quantiles, levels, requested_time, "confident_ranking_runtimes")
    at = np.flatnonzero(np.isclose(lv, level))
    if len(at) != 1:
        raise PolicyError(
            f"the model predicts no quantile at level {level} (its levels: {lv.tolist()})",
            where="confident_ranking_runtimes level",
            fix="give one of the model's levels, e.g. its highest",
        )
    if not (np.isfinite(margin) and margin >= 1.0):
        raise PolicyError(
            f"the confidence margin must be a number >= 1, got {margin}",
            where="confident_ranking_runtimes margin",
            fix="use 2 (the upper quantile at most half the request) or another factor >= 1",
        )
    upper = q[:, at[0]]
    usable = np.isfinite(upper) & (upper >= 0) & np.isfinite(requested) & (requested > 0)
    return requested, upper, usable & (upper * margin <= requested)


def confident_ranking_runtimes(
    quantiles: np.ndarray,
    levels: np.ndarray,
    requested_time: np.ndarray,
    level: float = CONFIDENT_LEVEL,
    margin: float = CONFIDENT_MARGIN,
) -> np.ndarray:
    """Ranking keys (seconds) that use the predictor only where it is confident
    (``sim/runtime_predictions``, round 20, H17): a job whose predicted quantile at ``level`` (its
    upper bound; ``quantiles`` (n, k) at ``levels`` (k,)) is at most its request divided by
    ``margin`` ranks on that quantile (floored at :data:`MIN_PREDICTION`); every other job, and one
    whose quantile or request is not finite and non-negative, ranks on its request, so equal
    requests keep their order (arrival, or a tie-break rule's). A PolicyError for a ``level`` the
    model does not predict, a ``margin`` below 1 or mismatched shapes."""
    requested, upper, confident = _confident_jobs(quantiles, levels, requested_time, level, margin)
    return _moved_keys(requested, confident, upper[confident])


def confident_step_ranking_runtimes(
    quantiles: np.ndarray,
    levels: np.ndarray,
    requested_time: np.ndarray,
    level: float = CONFIDENT_LEVEL,
    margin: float = CONFIDENT_MARGIN,
) -> np.ndarray:
    """Ranking keys (seconds) that move a confident job one request step and no further
    (``sim/runtime_predictions``, round 21, H18, post hoc): H17's gate decides which jobs are
    confident (:func:`confident_ranking_runtimes`), but a confident job ranks on its request
    divided by ``margin`` (one of the round request values' steps below what it asked for), not on
    its quantile; every other job ranks on its request. The predictor decides whether a job moves,
    never how far: a confident job passes only jobs whose request lies in (request / margin,
    request], and confident jobs keep their requests' order among themselves. The same
    PolicyErrors as H17's."""
    requested, _, confident = _confident_jobs(quantiles, levels, requested_time, level, margin)
    return _moved_keys(requested, confident, requested[confident] / margin)


def _moved_keys(requested: np.ndarray, confident: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The requests as ranking keys, the ``confident`` jobs' replaced by ``keys`` floored at
    :data:`MIN_PREDICTION` and capped by the request (a job never ranks behind what it asked)."""
    out = requested.copy()
    out[confident] = np.minimum(np.maximum(keys, MIN_PREDICTION), requested[confident])
    return out


def random_tie_breaks(keys: np.ndarray, seed: int) -> np.ndarray:
    """Ranking keys (seconds) ordering jobs as ``keys`` do, except that jobs with equal keys, which
    the queue orders by arrival, are ordered by one random permutation of all the jobs drawn from
    ``seed`` (``numpy.random.default_rng(seed).permutation``): the same seed gives every rule the
    same permutation, so two rules' runs with one seed differ in their keys only
    (``sim/runtime_predictions``, round 18, D15: the paired comparison of rules over seeds).

    ``keys`` are runtimes already through :func:`ranking_runtimes`' guard. A tied job's key is
    lowered by less than half the gap to the next lower distinct key (or to :data:`MIN_PREDICTION`),
    so different keys keep their order and every key stays a valid runtime above the guard's floor
    (the guard leaves it unchanged). Keys at or below the floor, or not finite, are left as they are
    (their ties stay by arrival). A PolicyError if a group of ties is too close to the key below it
    to be spread in floating point."""
    keys = np.ascontiguousarray(keys, dtype=np.float64)
    if keys.ndim != 1:
        raise PolicyError(
            f"keys of shape {keys.shape}", where="random_tie_breaks", fix="give one key per job (a 1-d array)"
        )
    out = keys.copy()
    tied = np.flatnonzero(np.isfinite(keys) & (keys > MIN_PREDICTION))
    if not len(tied):
        return out
    priority = np.random.default_rng(seed).permutation(len(keys))[tied]
    values, group, counts = np.unique(keys[tied], return_inverse=True, return_counts=True)
    below = np.maximum(np.concatenate(([MIN_PREDICTION], values[:-1])), MIN_PREDICTION)
    order = np.lexsort((priority, group))  # by key, then by the permutation
    place = np.empty(len(tied), dtype=np.int64)
    place[order] = np.arange(len(tied)) - (np.cumsum(counts) - counts)[group[order]]
    share = (counts[group] - 1 - place) / counts[group]  # 0 for the last of its ties
    out[tied] = values[group] - 0.5 * (values - below)[group] * share
    if np.any(np.diff(out[tied][order]) <= 0):
        raise PolicyError(
            "tied keys too close to the next lower key to be spread in floating point",
            where="random_tie_breaks",
            fix="round the keys (e.g. to milliseconds) before breaking their ties",
        )
    return out
