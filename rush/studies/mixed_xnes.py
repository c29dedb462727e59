"""XNES (exponential natural evolution strategy) for the mixed-policy study, via ``pypop7``.

pypop7's :class:`pypop7.optimizers.nes.xnes.XNES` calls the objective one candidate at a
time, so a whole XNES run is one sweep cell (:func:`xnes_rows`, dispatched by
:func:`rush.models.policies.mixed.task`): the weeks run in parallel on Dask, each week's run in one
worker. The search mirrors the CMA-ES path: an unconstrained z, the policy w = z / ||z||_1
(signs free), fitness = the mean over the cell's weeks of the weekly mean bsld
(:func:`rush.models.policies.mixed.evaluate`); the start is evaluated first and the best vector evaluated
is returned, so XNES is never worse than its start.

XNES has no global step size: its search distribution starts as N(mean, I). The start mean is
``ones(d)`` (the same policy as CMA-ES's start 1/d, since w is normalised), so the initial
step relative to the mean (1) equals CMA-ES's sigma0 / x0 = (1/d) / (1/d).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rush.errors import BackendUnavailableError, RushError

PYPOP7_VERSION = "0.0.82"
INSTALL = f"pip install --no-deps pypop7=={PYPOP7_VERSION}"
MAX_EVALUATIONS = 1_000_000  # the CLI's bound (generations x population) is far below


def load_xnes():
    """pypop7's XNES class, or a clear error naming the install line."""
    try:
        from pypop7.optimizers.nes.xnes import XNES
    except ImportError as exc:
        raise BackendUnavailableError(
            f"XNES needs the package pypop7 ({exc})",
            where="--method xnes3/xnes6",
            fix=f"{INSTALL} (its declared dependencies are not needed by XNES); other methods run without it",
        ) from None
    return XNES


def popsize(d: int, given: int | None) -> int:
    """The population of a run: ``given``, else cma's default 4 + floor(3 ln d) (7 for 3, 9 for 6)."""
    return int(given) if given is not None else 4 + int(3 * math.log(d))


def run_xnes(
    objective, d: int, evaluations: int, population: int, seed: int
) -> tuple[np.ndarray, float, int]:
    """Minimise ``objective(w)`` over w = z / ||z||_1 from z = ones(d) with XNES.

    ``evaluations`` candidates after the start (the start is evaluated first and kept if no
    candidate beats it). Returns (best w, its value, objective calls).
    """
    from rush.models.policies.mixed import normalise

    if not 1 <= evaluations <= MAX_EVALUATIONS or population < 2:
        raise RushError(
            f"XNES budget of {evaluations} evaluations, population {population}",
            where="XNES",
            fix=f"1 to {MAX_EVALUATIONS} evaluations and a population of at least 2",
        )
    xnes_class = load_xnes()
    x0 = np.ones(d)
    start = normalise(x0)
    best = {"w": start, "value": objective(start), "calls": 1}

    def fitness(z: np.ndarray) -> float:
        try:
            w = normalise(z)
        except RushError:
            return 1e300  # z = 0 has no policy: the worst value, never the best
        value = objective(w)
        best["calls"] += 1
        if value < best["value"]:  # strict: the first of equal values (the start first) stays
            best["w"], best["value"] = w, value
        return value if math.isfinite(value) else 1e300

    problem = {
        "fitness_function": fitness,
        "ndim_problem": d,
        # Only used by pypop7 when no mean is given; the mean is given.
        "lower_boundary": -10.0 * np.ones(d),
        "upper_boundary": 10.0 * np.ones(d),
    }
    options = {
        "max_function_evaluations": evaluations,
        "n_individuals": population,
        "seed_rng": seed,
        "mean": x0.copy(),
        "verbose": False,
        "saving_fitness": 0,
    }
    xnes_class(problem, options).optimize()
    return best["w"], float(best["value"]), int(best["calls"])


def xnes_rows(cell: Mapping[str, Any], tw: Any) -> list[dict]:
    """One XNES run over the cell's weeks: one row with the best w and its value."""
    from rush.models.policies.mixed import check_features, evaluate, linear_policy

    features = check_features([f for f in str(cell.get("features", "")).split(",") if f])
    weeks = [int(k) for k in cell["weeks"]]
    threshold = cell.get("threshold")
    tau = float(cell.get("tau", 10.0))
    d = len(features)

    def objective(w: np.ndarray) -> float:
        rows = evaluate(tw, weeks, linear_policy(w, features, tw.scales), threshold, tau)
        values = [r["mean_bsld"] for r in rows if r["mean_bsld"] is not None]
        return float(np.mean(values)) if values else math.nan

    w, value, calls = run_xnes(
        objective,
        d,
        int(cell["evaluations"]),
        popsize(d, cell.get("population")),
        int(cell["seed"]),
    )
    return [
        {
            "week": weeks[0] if len(weeks) == 1 else -2,  # -2: the mean over several weeks
            "jobs": sum(tw.jobs(k) for k in weeks),
            "mean_bsld": value,
            "w_best": [float(x) for x in w],
            "evaluations_done": calls,
            "skipped": None,
        }
    ]
