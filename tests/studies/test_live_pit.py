"""sim/runtime_predictions/live_pit.py (diagnostic D9): the PIT bins and the runtime sums."""

from __future__ import annotations

import math
from pathlib import Path

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(ROOT / "sim" / "runtime_predictions" / "live_pit.py", "live_pit_study")


def test_pit_bins_and_sums_of_real_over_mean_and_over_l2():
    rows = [
        {"pit": 0.05, "real": 10.0, "mean": 20.0, "l2": 25.0},
        {"pit": 0.6, "real": 30.0, "mean": 20.0, "l2": 25.0},
        {"pit": 1.0, "real": 60.0, "mean": 10.0, "l2": 10.0},
        {"pit": 0.9, "real": 20.0, "mean": 10.0, "l2": 20.0},
    ]
    s = script.summary(rows)
    assert s["jobs"] == 4
    assert s["pit_shares"] == [0.25, 0.0, 0.0, 0.25, 0.0, 0.5]  # 0.9 and 1.0 fall above q0.9
    assert math.isclose(s["median_pit"], 0.75)
    assert math.isclose(s["real_over_mean"], 120.0 / 60.0) and math.isclose(s["real_over_l2"], 120.0 / 80.0)


def test_no_rows_give_no_ratio():
    s = script.summary([])
    assert s["jobs"] == 0 and s["real_over_mean"] is None and s["median_pit"] is None
