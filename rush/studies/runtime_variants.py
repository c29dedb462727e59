"""The runtime-class scheduling variants, as simulator inputs for the shared core.

========================== ===========================================================
variant                    what the core gets
========================== ===========================================================
base                       the policy alone
classification             predicted classes; small queue first, then large (plain)
classification-idempotent  as above, plus false-small kills at the divider
class-clairvoyant          the true classes (runtime <= divider), with kills
runtime-clairvoyant        actual runtimes as the estimates
========================== ===========================================================

Predictions come from the walk-forward loop (week 1: all large; then weekly retraining),
or from a trained model file. The divider in force for a job is the one of the week it
was predicted in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rush.errors import RushError
from rush.simulator.engine import SimInputs
from rush.workload.model import Trace, Workload

VARIANTS = ("base", "classification", "classification-idempotent", "class-clairvoyant", "runtime-clairvoyant")
# ``rush simulate --classes`` names.
CLI_VARIANTS = {
    "plain": "classification",
    "idempotent": "classification-idempotent",
    "clairvoyant": "class-clairvoyant",
}


def _walkforward(trace: Trace, workload: Workload, model: Path | None, mode: str):
    from rush.models.walkforward import (
        DEFAULT_MAX_TRAIN_JOBS,
        default_classifier,
        predict_classes_walkforward,
    )

    return predict_classes_walkforward(
        workload,
        trace.header,
        mode=mode,
        model_path=model,
        estimator=default_classifier(),
        max_train_jobs=DEFAULT_MAX_TRAIN_JOBS,
    )


def variant_inputs(
    variant: str,
    trace: Trace,
    workload: Workload,
    model: Path | None = None,
    *,
    mode: str = "weekly",
    walkforward=None,
) -> tuple[SimInputs | None, dict, dict | None]:
    """(simulator inputs, CoreConfig keyword arguments, classification quality) for a variant.

    ``walkforward`` reuses an earlier walk-forward result (one per trace, many policies).
    """
    if variant not in VARIANTS:
        raise RushError(
            f"unknown variant {variant!r}", where="variant", fix=f"use one of: {', '.join(VARIANTS)}"
        )
    if variant == "base":
        return None, {}, None
    if variant == "runtime-clairvoyant":
        return SimInputs(estimate=workload.runtime.astype(np.float64)), {}, None
    wf = walkforward if walkforward is not None else _walkforward(trace, workload, model, mode)
    divider = wf.divider_or_first()
    if variant == "class-clairvoyant":
        runtime_class = np.where(np.minimum(workload.runtime, workload.requested_time) <= divider, 0, 1)
    elif variant == "classification-idempotent":
        # Jobs that may be killed are judged at the classifier's idempotent threshold.
        runtime_class = np.asarray(wf.for_idempotent().predicted_class, dtype=np.int64)
    else:
        runtime_class = np.asarray(wf.predicted_class, dtype=np.int64)
    kills = variant in ("classification-idempotent", "class-clairvoyant")
    inputs = SimInputs(runtime_class=runtime_class.astype(np.int64), divider=divider)
    config = {"use_classes": True, "kill_false_small": kills, "divider": float(np.median(divider))}
    return inputs, config, wf.summary()


def class_inputs(trace: Trace, workload: Workload, classes: str, model: Path | None):
    """``rush simulate --classes`` glue: (inputs, config kwargs, classification block), with
    the issue-13 classifier's live walk-forward (features at each submission, as the daemon)."""
    return variant_inputs(CLI_VARIANTS[classes], trace, workload, model, mode="live")
