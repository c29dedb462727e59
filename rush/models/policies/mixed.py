"""Mixed policies (Zrigui's thesis, ch. 5): a job's score is a weighted sum of scaled features.

A job's features are x = (q, p~, wait, rho = p~/q, expansion = (wait + p~)/p~, area = q p~);
the mixed score is ``sum_i w_i * sign_i * x_i / s_i``, **smallest first**, with ``||w||_1 = 1``.

* **Signs** make each positive unit vector a good pure policy: q -> SQF, p -> SPF,
  wait -> FCFS (sign -1: the longest wait first), rho -> SRF, expansion -> LEXP (sign -1: the
  largest expansion first), area -> SAF. A negative weight gives the opposite policy (LQF, LPF,
  LCFS, LRF, SEXP, LAF), so the 12 index policies are exactly the 12 vertices of the L1 sphere
  over the 6 features, and the 3-feature simplex (q, p, wait) has SQF, SPF and FCFS as vertices.
* **Scales** s_i are medians over every job of the trace (robust to the heavy tails of q and
  p~), not per week: a weight vector then means the same policy in every week, which
  ``w*_train`` and ``w_greedy`` (a vector learned on some weeks, used on others) need. The
  median of a two-year log is stable; knowing it in advance is a mild look-ahead, the same
  for every method compared. Wait has no static distribution before a schedule exists: its
  scale is the median requested time (a job that waited one typical requested time weighs as
  much as one typical requested time). Expansion's scale is its median value at that wait,
  ``median_j((s_wait + p~_j) / p~_j)``, with the kernel's guard p~ >= 1 s.
* Such a score is the core's ``LINEAR`` policy with raw weights ``sign_i * w_i / s_i``
  (:func:`linear_policy`); nothing here schedules: the simulator and the core do.

Learning the weights on a trace's weeks is the study's part: :mod:`rush.studies.mixed_weeks`
(evaluation, the sweep task) and :mod:`rush.models.policies.mixed_xnes` (the XNES search).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rush.core.names import LINEAR_FEATURES
from rush.errors import RushError

FEATURES_6: tuple[str, ...] = ("q", "p", "wait", "rho", "expansion", "area")
FEATURES_3: tuple[str, ...] = ("q", "p", "wait")
# +1: a small value runs first; -1: a large value runs first (longest wait, largest expansion).
SIGNS: dict[str, int] = {"q": 1, "p": 1, "wait": -1, "rho": 1, "expansion": -1, "area": 1}
# The pure policy at the vertex +e_i (sign +1) and -e_i (sign -1) of each feature.
VERTEX_POLICIES: dict[str, tuple[str, str]] = {
    "q": ("SQF", "LQF"),
    "p": ("SPF", "LPF"),
    "wait": ("FCFS", "LCFS"),
    "rho": ("SRF", "LRF"),
    "expansion": ("LEXP", "SEXP"),
    "area": ("SAF", "LAF"),
}
# The 12 index policies of the thesis's ranking.
INDEX_POLICIES: tuple[str, ...] = (
    "FCFS",
    "LCFS",
    "SPF",
    "LPF",
    "SQF",
    "LQF",
    "SAF",
    "LAF",
    "SRF",
    "LRF",
    "SEXP",
    "LEXP",
)
# The thesis's starvation threshold: 2.31 days (199 584 s, about rush's default of 200 000 s).
THRESHOLD_DAYS = 2.31
THRESHOLD = THRESHOLD_DAYS * 86400.0
MIXED = "MIXED"  # the cell's policy field for a weight vector


@dataclass(frozen=True)
class FeatureScales:
    """Robust scale of each feature (module docstring), in the feature's own unit."""

    q: float
    p: float
    wait: float
    rho: float
    expansion: float
    area: float

    def of(self, feature: str) -> float:
        return float(getattr(self, feature))

    def as_dict(self) -> dict[str, float]:
        return {f: self.of(f) for f in FEATURES_6}


def _positive(value: float) -> float:
    # A median of 0 (e.g. every p~ = 0) would divide by zero; 1 keeps the feature's raw unit.
    return float(value) if math.isfinite(value) and value > 0 else 1.0


def feature_scales(procs: np.ndarray, requested: np.ndarray) -> FeatureScales:
    """Medians over the jobs (q, p~ as the simulator sees them)."""
    if len(procs) == 0:
        raise RushError("no jobs to scale the features on", where="mixed policy scales")
    q = np.asarray(procs, dtype=np.float64)
    p = np.asarray(requested, dtype=np.float64)
    s_p = _positive(float(np.median(p)))
    guarded = np.maximum(p, 1.0)  # the kernel's guard for expansion
    return FeatureScales(
        q=_positive(float(np.median(q))),
        p=s_p,
        wait=s_p,
        rho=_positive(float(np.median(p / q))),
        expansion=_positive(float(np.median((s_p + guarded) / guarded))),
        area=_positive(float(np.median(p * q))),
    )


def check_features(features: Sequence[str]) -> tuple[str, ...]:
    names = tuple(features)
    unknown = [f for f in names if f not in SIGNS]
    if not names or unknown or len(set(names)) != len(names):
        raise RushError(
            f"bad mixed-policy features {list(names)}",
            where="features",
            fix=f"a non-empty list of distinct names among {', '.join(FEATURES_6)}",
        )
    return names


def normalise(weights: Sequence[float]) -> np.ndarray:
    """``w / ||w||_1`` (signs kept); a zero or non-finite vector is an error."""
    w = np.asarray(weights, dtype=np.float64)
    norm = float(np.abs(w).sum()) if w.size else 0.0
    if w.ndim != 1 or not np.all(np.isfinite(w)) or not math.isfinite(norm) or norm < 1e-300:
        raise RushError(
            f"weights {w.tolist()} cannot be normalised",
            where="mixed policy weights",
            fix="give finite weights, not all zero",
        )
    return w / norm


def linear_weights(weights: Sequence[float], features: Sequence[str], scales: FeatureScales) -> tuple:
    """Raw LINEAR weights (over ``LINEAR_FEATURES``) of the mixed score ``weights`` over ``features``."""
    names = check_features(features)
    w = normalise(weights)
    if len(w) != len(names):
        raise RushError(
            f"{len(w)} weights for {len(names)} features",
            where="mixed policy weights",
            fix="give one weight per feature",
        )
    raw = dict.fromkeys(LINEAR_FEATURES, 0.0)
    for name, value in zip(names, w, strict=True):
        raw[name] = SIGNS[name] * float(value) / scales.of(name)
    return tuple(raw[f] for f in LINEAR_FEATURES)


def linear_policy(weights: Sequence[float], features: Sequence[str], scales: FeatureScales):
    """The core's LINEAR policy equal to the mixed score (same order of any two jobs)."""
    from rush.core.policies import Policy

    return Policy("LINEAR", linear_weights(weights, features, scales))


def simplex_grid(dimensions: int, steps: int) -> np.ndarray:
    """Every w >= 0 with sum 1 whose entries are multiples of 1/steps (vertices first).

    ``C(steps + d - 1, d - 1)`` points: 66 for d = 3, steps = 10; 231 for steps = 20.
    """
    if not 1 <= dimensions <= 6 or not 1 <= steps <= 100:
        raise RushError(
            f"simplex grid of {dimensions} dimensions and {steps} steps",
            where="--grid-steps",
            fix="1 to 100 steps (e.g. 10) over 1 to 6 features",
        )
    points: list[tuple[int, ...]] = []

    def compose(prefix: tuple[int, ...], left: int, slots: int) -> None:
        if slots == 1:
            points.append((*prefix, left))
            return
        for k in range(left, -1, -1):
            compose((*prefix, k), left - k, slots - 1)

    compose((), steps, dimensions)
    grid = np.asarray(points, dtype=np.float64) / steps
    vertex = (grid == 1.0).any(axis=1)
    return np.concatenate([grid[vertex], grid[~vertex]])
