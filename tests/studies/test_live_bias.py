"""sim/runtime_predictions/live_bias.py: the signed-error summary of the live estimates and of
their off-line reconstructions (the reconstruction itself needs each window's model: its
figures are the committed table's, written by the script)."""

from __future__ import annotations

import math
from pathlib import Path

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(ROOT / "sim" / "runtime_predictions" / "live_bias.py", "live_bias_study")


def _row(job: int, cls: str, live: float, deployed: float | None, real: float) -> dict:
    row = {"job": job, "wait_class": cls, "live": live}
    row.update({v: deployed for v in script.VARIANTS})
    row["running: real"] = real
    return row


def test_signed_error_late_share_and_agreement_with_live_per_class():
    rows = [
        _row(1, ">1h", 600.0, 660.0, 60.0),
        _row(2, ">1h", 1200.0, 1080.0, -60.0),
        _row(3, ">1h", -300.0, None, 0.0),  # no reconstructed estimate: left out of its mean
        _row(4, "<10min", 30.0, 30.0, 30.0),
    ]
    table = {(t["wait"], t["variant"]): t for t in script.summary("W", "slurm", rows)}
    assert {t["wait"] for t in table.values()} == {">1h", "<10min"}
    live = table[(">1h", "live")]
    assert live["jobs"] == 3 and math.isclose(live["mean_signed_min"], 1500 / 3 / 60)
    assert math.isclose(live["late"], 2 / 3)
    deployed = table[(">1h", "deployed")]
    assert deployed["jobs"] == 2 and math.isclose(deployed["mean_signed_min"], 870 / 60)
    assert math.isclose(deployed["agree_with_live_min"], (60 + 120) / 2 / 60)
    real = table[(">1h", "running: real")]
    assert math.isclose(real["mean_signed_min"], 0.0) and math.isclose(real["mean_abs_min"], 40 / 60)
    assert math.isclose(real["late"], 1 / 3)
    assert table[(">1h", "all real")]["agree_with_live_min"] is None
