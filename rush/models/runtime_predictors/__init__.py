"""Runtime predictors: models that predict each job's runtime at submission.

The interface is :mod:`rush.models.runtime_predictors.protocol` (``observe``, ``fit``,
``predict``); :func:`predict_walkforward` drives one over a trace for the simulator; the core
guards and corrects predictions (:mod:`rush.core.runtime_predictions`). Predictors by name
(``rush simulate --runtime-prediction NAME``): :data:`PREDICTORS`.

scikit-learn (with scipy and joblib, ~0.9 s of CPU) is imported only when a predictor that
uses it is made or the walk-forward is used: the live shells import this package for every
configuration, and EASY++ or no prediction needs none of it (issue 31, start-up).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rush.errors import ModelError
from rush.models.runtime_predictors.easy_plus_plus import EasyPlusPlusPredictor
from rush.models.runtime_predictors.protocol import RuntimeJobs, RuntimePredictor, usable_history

if TYPE_CHECKING:
    from rush.models.runtime_predictors.gaussier import GaussierPredictor
    from rush.models.runtime_predictors.walkforward import RuntimePredictions, predict_walkforward

# Names of this package imported from their module at first use (they import scikit-learn).
_LAZY = {
    "GaussierPredictor": "rush.models.runtime_predictors.gaussier",
    "RuntimePredictions": "rush.models.runtime_predictors.walkforward",
    "predict_walkforward": "rush.models.runtime_predictors.walkforward",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _gaussier() -> RuntimePredictor:
    """Gaussier et al.'s regression (scikit-learn), imported on use."""
    from rush.models.runtime_predictors.gaussier import GaussierPredictor

    return GaussierPredictor()


def _runtime_quantiles() -> RuntimePredictor:
    """rush's own quantile model (rush.models.runtime_quantiles), its mean as the prediction;
    imported on use (it is the heaviest of the three)."""
    from rush.models.runtime_quantiles_predictor import RuntimeQuantilePredictor

    return RuntimeQuantilePredictor()


# name -> factory of a fresh predictor
PREDICTORS: dict[str, Callable[[], RuntimePredictor]] = {
    "easy++": EasyPlusPlusPredictor,
    "gaussier": _gaussier,
    "runtime-quantiles": _runtime_quantiles,
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
