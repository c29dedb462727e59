"""rush's runtime-quantile predictor as simulator inputs: runtime classes and estimates.

The simulator takes runtime classes and estimates through :class:`SimInputs`; these adapters
fill them from the quantile predictor's weekly walk-forward
(:func:`~rush.models.runtime_quantiles_walkforward.predict_quantiles_walkforward`):

* :func:`quantile_class_inputs`: classes from P(runtime <= divider) (``rush simulate --classes
  plain|idempotent|clairvoyant --class-model quantiles``), the same variants as the classifier's
  (:mod:`rush.studies.runtime_variants`);
* :func:`quantile_estimate_inputs`: each job's estimate is a number of its predicted distribution
  (the mean by default), as the core's runtime predictions are (kills stay at the request).
"""

from __future__ import annotations

import numpy as np

from rush.simulator.engine import SimInputs
from rush.workload.model import Trace, Workload

CLASS_MODELS = ("classifier", "quantiles")


def quantile_walkforward(trace: Trace, workload: Workload):
    from rush.models.runtime_quantiles_walkforward import predict_quantiles_walkforward

    return predict_quantiles_walkforward(workload, trace.header)


def quantile_class_inputs(trace: Trace, workload: Workload, classes: str, walkforward=None):
    """(inputs, CoreConfig keyword arguments, classification quality) for a ``--classes`` variant."""
    from rush.studies.runtime_variants import CLI_VARIANTS, variant_inputs

    wf = walkforward if walkforward is not None else quantile_walkforward(trace, workload)
    return variant_inputs(CLI_VARIANTS[classes], trace, workload, walkforward=wf.class_walkforward())


def quantile_estimate_inputs(
    trace: Trace, workload: Workload, statistic: str | float = "mean", walkforward=None
) -> SimInputs:
    """Estimates from the predicted distributions: ``"mean"`` or a predicted quantile level;
    week 0 (no model yet) keeps the request."""
    wf = walkforward if walkforward is not None else quantile_walkforward(trace, workload)
    values = wf.mean() if statistic == "mean" else wf.quantile(float(statistic))
    request = np.asarray(workload.requested_time, dtype=np.float64)
    estimate = np.where(np.isfinite(values) & (values > 0), np.minimum(values, request), request)
    return SimInputs(estimate=estimate)
