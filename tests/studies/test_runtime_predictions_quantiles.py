"""rush-Q beside Table 6.6 (issue 29): the schedulers of
``rush.studies.runtime_predictions_quantiles`` on a small synthetic trace: one EASY-FCFS base for
all, kills only of jobs called small that outran the divider, and fewer jobs called small under
the kill budget than at rush's idempotent threshold."""

from __future__ import annotations

import numpy as np

from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_walkforward import predict_quantiles_walkforward
from rush.studies.runtime_predictions_quantiles import (
    SCHEDULERS,
    kill_budget_threshold,
    quantile_rows,
    scheduler_inputs,
)
from tests.models.fixtures import HEADER, synthetic_workload


def test_schedulers_share_a_base_and_kill_only_false_smalls() -> None:
    workload = synthetic_workload(700)
    wf = predict_quantiles_walkforward(
        workload, HEADER, RuntimeQuantileRegressor(max_iter=10, min_samples_leaf=5)
    )
    rows = quantile_rows("synthetic", "full", workload, wf)
    assert [r["scheduler"] for r in rows] == list(SCHEDULERS)
    assert len({r["base_bsld"] for r in rows}) == 1
    everyone = np.arange(len(workload))
    divider = wf.class_walkforward().divider_or_first()
    for r in rows:
        inputs, _ = scheduler_inputs(r["scheduler"], wf, everyone, 0.1)
        false_small = (inputs.runtime_class == 0) & (
            np.minimum(workload.runtime, workload.requested_time) > divider
        )
        assert r["false_small_kills"] <= false_small.sum(), r["scheduler"]
        if r["scheduler"].startswith("rush-Q"):  # predictions in force, never above the request
            assert np.all(inputs.estimate <= workload.requested_time + 1e-6)
    budget = kill_budget_threshold(wf)
    assert np.all((budget >= 0.05) & (budget <= 0.95))
    called = {
        r["scheduler"]: scheduler_inputs(r["scheduler"], wf, everyone, 0.1)[0].runtime_class for r in rows
    }
    assert (called["rush-Q (kill budget)"] == 0).sum() <= (called["rush-Q"] == 0).sum() or np.all(
        budget <= 0.1
    )
