"""One trial of the variability study as ``rush experiment variability`` builds it, for the
development scripts (``move_diag.py``, ``rerun_policy.py``): the committed campaign's models and
bar (``sim/variability/paper`` or ``sim/variability/multipod/multipod``), the study file's machine
and noise for the variant."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = {"paper": ROOT / "paper", "multipod": ROOT / "multipod" / "multipod"}
# Round six (changes n, o): another model of the paper variant (dev/window_model.py,
# dev/present_label.py), read from RUSH_DEV_MODELS.
if os.environ.get("RUSH_DEV_MODELS"):
    BASE["paper"] = Path(os.environ["RUSH_DEV_MODELS"])


def cell(variant: str, scenario: str, trial: int, policy: str) -> dict:
    """run_trial's cell for one trial and policy."""
    from rush.contention.spec import load_study_spec

    meta = json.loads((BASE[variant] / "models" / "prepare.json").read_text())
    spec = load_study_spec(None).variant(variant)
    return {
        "variant": variant,
        "scenario": scenario,
        "trial": trial,
        "policy": policy,
        "seed": 0,
        "scale": 1.0,
        "models": {k: m | {"path": str(BASE[variant].parent / m["path"])} for k, m in meta["models"].items()},
        "thresholds": meta["thresholds"],
        "study_spec": {"machine": dict(spec.machine_args), "noise": dict(spec.noise_args)},
    }


@contextmanager
def without_attribution() -> Iterator[None]:
    """Trials run without the cause attribution (not needed by these scripts, and most of a
    trial's cost)."""
    import rush.contention.experiment as ex

    keep = ex.attribute_runs
    ex.attribute_runs = lambda *a, **k: {}
    try:
        yield
    finally:
        ex.attribute_runs = keep
