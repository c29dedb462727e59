"""Runtime predictors: models that predict each job's runtime at submission.

The interface is :mod:`rush.models.runtime_predictors.protocol` (``observe``, ``fit``,
``predict``); :func:`predict_walkforward` drives one over a trace for the simulator; the core
guards and corrects predictions (:mod:`rush.core.runtime_predictions`). Predictors by name
(``rush simulate --runtime-prediction NAME``): :data:`PREDICTORS`.
"""

from __future__ import annotations

from collections.abc import Callable

from rush.errors import ModelError
from rush.models.runtime_predictors.easy_plus_plus import EasyPlusPlusPredictor
from rush.models.runtime_predictors.gaussier import GaussierPredictor
from rush.models.runtime_predictors.protocol import RuntimeJobs, RuntimePredictor, usable_history
from rush.models.runtime_predictors.walkforward import RuntimePredictions, predict_walkforward

# name -> factory of a fresh predictor
PREDICTORS: dict[str, Callable[[], RuntimePredictor]] = {
    "easy++": EasyPlusPlusPredictor,
    "gaussier": GaussierPredictor,
}


def make_predictor(name: str) -> RuntimePredictor:
    """A fresh predictor by name (a ModelError naming the known ones otherwise)."""
    if name not in PREDICTORS:
        raise ModelError(
            f"unknown runtime predictor {name!r}",
            where="--runtime-prediction",
            fix=f"use one of: {', '.join(PREDICTORS)}",
        )
    return PREDICTORS[name]()


__all__ = [
    "PREDICTORS",
    "EasyPlusPlusPredictor",
    "GaussierPredictor",
    "RuntimeJobs",
    "RuntimePredictions",
    "RuntimePredictor",
    "make_predictor",
    "predict_walkforward",
    "usable_history",
]
