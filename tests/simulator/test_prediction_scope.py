"""Online predictions given to the backfill only (SimInputs.prediction_scope="backfill";
rush.core.runtime_predictions.order_takes_prediction): the queue order keeps the request, the
backfill scan, the backfill test and the head's reservation take the prediction
(sim/runtime_predictions, H19)."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.errors import RushError
from rush.simulator.engine import SimInputs, simulate
from tests.simulator.user_workloads import users_workload

# On 3 processors user 1 finishes two 1 s runs (A0, A1), so EASY++ online predicts its later jobs
# 1 s; B fills the machine 10-110. Then X (50 s, request 50, new user: predicted 50), Y (1 s,
# request 60, user 1: predicted 1), W1 (30 s, request 70, new user: predicted 70) and W2 (30 s,
# request 80, user 1: predicted 1) wait for B.
JOBS = [
    (0, 2, 1, 1000, 1),  # A0
    (0, 1, 1, 1000, 1),  # A1
    (10, 3, 100, 100, 2),  # B
    (20, 2, 50, 50, 3),  # X
    (21, 2, 1, 60, 1),  # Y
    (22, 1, 30, 70, 4),  # W1
    (23, 1, 30, 80, 1),  # W2
]
X, Y, W1, W2 = 3, 4, 5, 6


def _spf(inputs: SimInputs):
    config = CoreConfig.from_names("SPF", "easy", None, "SPF", prediction_correction="stepwise")
    return simulate(users_workload(3, JOBS), config, inputs)


def test_order_on_the_request_scan_and_reservation_on_the_prediction() -> None:
    # Order on the request: X (request 50) starts at 110 and Y (60) is the head, reserved at X's
    # predicted end, 160, with one processor to spare. The scan on the predictions takes W2
    # (predicted 1) before W1 (70) into the free processor; W1 backfills when W2 ends at 140.
    scoped = _spf(SimInputs(online_prediction="easy++-online", prediction_scope="backfill"))
    assert scoped.attributes["estimate"][X:].tolist() == [50.0, 1.0, 70.0, 1.0]
    assert scoped.start[X:].tolist() == [110.0, 160.0, 140.0, 110.0]
    assert scoped.backfilled[W1] and scoped.backfilled[W2]
    # Without predictions the scan goes by request: W1 first, W2 at 140.
    plain = _spf(SimInputs())
    assert plain.start[X:].tolist() == [110.0, 160.0, 110.0, 140.0]
    # With the predictions ordering the queue too, Y and W2 (predicted 1) go first, X at 111.
    everywhere = _spf(SimInputs(online_prediction="easy++-online"))
    assert everywhere.start[X:].tolist() == [111.0, 110.0, 140.0, 110.0]


def test_ranking_keys_order_the_queue_under_the_backfill_scope() -> None:
    # rank_estimate (e.g. requests with ties broken by a seed) keys the order; the scan still
    # takes the predictions. Ranking Y before X: Y starts at 110, X is the head at 111.
    rank = np.array([1000.0, 1000.0, 100.0, 50.0, 40.0, 70.0, 80.0])
    ranked = _spf(
        SimInputs(online_prediction="easy++-online", prediction_scope="backfill", rank_estimate=rank)
    )
    assert ranked.start[X:].tolist() == [111.0, 110.0, 140.0, 110.0]


@pytest.mark.parametrize(
    ("inputs", "config", "message"),
    [
        (
            {"online_prediction": "easy++-online", "prediction_scope": "scan"},
            None,
            "unknown prediction scope",
        ),
        ({"prediction_scope": "backfill"}, None, "without online predictions"),
        ({"online_prediction": "easy++-online", "prediction_scope": "backfill"}, ("SAF", "easy"), None),
        (
            {"online_prediction": "easy++-online", "prediction_scope": "backfill"},
            ("WFP3", "easy"),
            "keeps its own key",
        ),
    ],
)
def test_bad_prediction_scope_is_refused(inputs: dict, config: tuple | None, message: str | None) -> None:
    w = users_workload(3, JOBS)
    run = CoreConfig.from_names(*(config or ("SPF", "easy")), None)
    if message is None:  # a time-independent order other than SPF is accepted
        assert simulate(w, run, SimInputs(**inputs)).start.min() == 0.0
        return
    with pytest.raises(RushError) as err:
        simulate(w, run, SimInputs(**inputs))
    assert err.value.where == "SimInputs.prediction_scope"
    assert message in str(err.value)
