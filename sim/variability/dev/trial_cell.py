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


def base(variant: str) -> Path:
    """The variant's study directory. Round six (changes n, o): another model of the paper variant
    (dev/window_model.py, dev/present_label.py), read from RUSH_DEV_MODELS."""
    if variant == "paper" and os.environ.get("RUSH_DEV_MODELS"):
        return Path(os.environ["RUSH_DEV_MODELS"])
    return BASE[variant]


def dev_models(models: dict[str, dict], policy: str) -> dict[str, dict]:
    """RUSH_DEV_MODELS' models under the names of the label their cards say they learned.

    dev/present_label.py writes its model as ``all`` (a card saying ``label: present-state``);
    the study runs a present-state model as ``present-all``, under a policy of that label
    (RUSH-PRESENT-LABEL, RUSH-MOVE-PRESENT-LABEL). A learned policy of the other label stops here,
    with the policies that run these models (the diagnostics and FCFS+EASY run no model)."""
    from rush.contention.experiment import LEARNED
    from rush.contention.labels import MODEL_PREFIX, POLICY_LABEL, card_label, policy_label

    named: dict[str, dict] = {}
    for name, model in models.items():
        prefix = MODEL_PREFIX.get(card_label(Path(model["path"])), "")
        named[name if name.startswith(prefix) else prefix + name] = model
    learned = {card_label(Path(m["path"])) for m in named.values()}
    if policy in LEARNED and policy_label(policy) not in learned:
        runs = [p for p, label in POLICY_LABEL.items() if label in learned] or ["RUSH", "RUSH-MOVE", "..."]
        raise SystemExit(
            f"RUSH_DEV_MODELS={os.environ['RUSH_DEV_MODELS']}: its models learned {sorted(learned)}, "
            f"which {policy} does not run; run them as {' or '.join(runs)}"
        )
    return named


def cell(variant: str, scenario: str, trial: int, policy: str) -> dict:
    """run_trial's cell for one trial and policy."""
    from rush.contention.spec import load_study_spec

    home = base(variant)
    meta = json.loads((home / "models" / "prepare.json").read_text())
    spec = load_study_spec(None).variant(variant)
    models = {k: m | {"path": str(home.parent / m["path"])} for k, m in meta["models"].items()}
    if home != BASE[variant]:
        models = dev_models(models, policy)
    return {
        "variant": variant,
        "scenario": scenario,
        "trial": trial,
        "policy": policy,
        "seed": 0,
        "scale": 1.0,
        "models": models,
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
