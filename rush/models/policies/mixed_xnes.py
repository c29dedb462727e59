"""XNES (exponential natural evolution strategy) for the mixed-policy study, via ``pypop7``.

pypop7's :class:`pypop7.optimizers.nes.xnes.XNES` calls the objective one candidate at a
time, so a whole XNES run is one sweep cell (:func:`rush.studies.mixed_weeks.xnes_rows`, dispatched by
:func:`rush.studies.mixed_weeks.task`): the weeks run in parallel on Dask, each week's run in one
worker. The search mirrors the CMA-ES path: an unconstrained z, the policy w = z / ||z||_1
(signs free), fitness = the mean over the cell's weeks of the weekly mean bsld
(:func:`rush.studies.mixed_weeks.evaluate`); the start is evaluated first and the best vector evaluated
is returned, so XNES is never worse than its start.

XNES has no global step size: its search distribution starts as N(mean, I). The start mean is
``ones(d)`` (the same policy as CMA-ES's start 1/d, since w is normalised), so the initial
step relative to the mean (1) equals CMA-ES's sigma0 / x0 = (1/d) / (1/d).
"""

from __future__ import annotations

import math

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
