"""sim/runtime_predictions/live_sampled_estimates.py and live_bias's rules MR and M (round 31, D36):
the median over scenarios of the core's pass with the drawn runtimes given as estimates, against
the core's own L2 estimate and the conditional quantiles of one running job."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.remaining_runtime import conditional_quantile_runtime, quantile_knots
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, RuntimeQuantiles, Snapshot
from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
bias = load_script(ROOT / "sim" / "runtime_predictions" / "live_bias.py", "live_bias_study")
study = load_script(
    ROOT / "sim" / "runtime_predictions" / "live_sampled_estimates.py", "live_sampled_estimates_study"
)
LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
QUANTILES = RuntimeQuantiles(LEVELS, (600.0, 1200.0, 1800.0, 2400.0, 3000.0))
NOW = 1_000_900.0


def _scene():
    """32 processors: job 1 runs on all of them since 1 000 000 (request 7200); job 2 (32
    processors) waits for it, with quantiles of its own."""
    running = [RunningJob(1, 1_000_000.0, 32, 7200.0, 1800.0, runtime_quantiles=QUANTILES)]
    pending = [PendingJob(2, 1_000_500.0, 32, 3600.0, 1800.0)]
    return (NOW, 2, pending, running, 32), {2: QUANTILES}


def _config():
    return CoreConfig.from_names("FCFS", "easy", "none")


def test_at_the_median_level_mr_gives_the_cores_l2_estimate_back(monkeypatch):
    import rush.core.start_distribution as sd

    monkeypatch.setattr(sd, "scenario_levels", lambda seed, s, n: np.full((s, n), 0.5))
    scene, quantiles = _scene()
    now, job, pending, running, busy = scene
    queue = tuple(replace(p, runtime_quantiles=quantiles.get(p.job_id)) for p in pending)
    snap = Snapshot(now=now, total_procs=32, free_procs=32 - busy, pending=queue, running=tuple(running))
    l2 = schedule(snap, _config(), explain_priorities=False).estimated_start[job]
    assert l2 > now
    assert bias._sampled_start(scene, quantiles, _config(), False) == pytest.approx(l2, abs=1e-6)


@pytest.mark.parametrize("draw_queue", [False, True])
def test_one_running_job_ahead_the_median_start_is_its_conditional_median_end(draw_queue: bool):
    scene, quantiles = _scene()
    start = bias._sampled_start(scene, quantiles, _config(), draw_queue)
    q = np.minimum(np.array(QUANTILES.seconds), 7200.0)
    xs, ps = quantile_knots(np.log1p(q)[None, :], np.array(LEVELS), np.log1p([7200.0]))
    # 32 Latin-hypercube draws: their median lies between the 15/32 and 17/32 strata.
    low, high = (
        1_000_000.0 + conditional_quantile_runtime(xs[0], ps, NOW - 1_000_000.0, u)
        for u in (15 / 32, 17 / 32)
    )
    assert low <= start <= high
    assert start == bias._sampled_start(scene, quantiles, _config(), draw_queue)  # seeded: reproducible


def test_the_report_has_one_line_per_run():
    row = {"window": "CTC", "run": "flux", "source": "rep5", "jobs": 5, "rush_live": 58.1, "L2": 58.1, "MR": 64.2,
           "M": 70.1, "rjms": 26.0, "L2_signed": -58.1, "MR_signed": -64.2, "M_signed": -70.1, "valid": True}  # fmt: skip
    text = study.markdown([row, {**row, "source": "rep6", "valid": False}])
    assert (
        "| CTC | flux | rep5 | 5 | 58.1 | 58.1 | 64.2 | 70.1 | 26.0 | -58.1 | -64.2 | -70.1 | yes |" in text
    )
    assert text.count("| CTC |") == 2 and "| no |" in text
