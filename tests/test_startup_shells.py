"""Start-up of the live shells (issue 31, item 4): the Flux scheduler module, the daemon and
``rush replay`` import scikit-learn (with scipy.stats and joblib, ~0.9 s of CPU per process)
only when the configuration names a model that uses it.

Each check runs in a fresh interpreter: what a module imports is only visible there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# What the predictors' and models' scikit-learn side brings in; no default configuration needs it.
LEARNING = ("sklearn", "scipy.stats", "joblib")


def loaded_after(code: str, names: tuple[str, ...] = LEARNING) -> list[str]:
    """The modules of ``names`` loaded once ``code`` has run in a fresh interpreter."""
    report = f"import json, sys\nprint(json.dumps([m for m in {names!r} if m in sys.modules]))\n"
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + report],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=900,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def flux_bindings_missing() -> bool:
    try:
        import flux  # noqa: F401  # type: ignore[import-not-found]
    except ImportError:
        return True
    return False


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(
            "rush.flux_module.scheduler",
            marks=pytest.mark.skipif(
                flux_bindings_missing(), reason="Flux's Python bindings are not importable"
            ),
        ),
        "rush.daemon.service",
        "rush.cli.replay, rush.studies.replay, rush.daemon.service",
    ],
)
def test_a_live_shells_entry_imports_no_scikit_learn(entry: str) -> None:
    assert loaded_after(f"import {entry}\n") == []


def write_config(tmp_path: Path, runtime_prediction: str | None) -> Path:
    policy = f'runtime_prediction = "{runtime_prediction}"\n' if runtime_prediction else ""
    path = tmp_path / "rush.toml"
    path.write_text(
        f'[daemon]\njournal = "{tmp_path / "journal.sqlite"}"\n\n'
        f'[policy]\npolicy = "FCFS"\nbackfill = "easy"\n{policy}\n[rjms]\nbackend = "slurm"\n'
    )
    return path


@pytest.mark.parametrize("runtime_prediction", [None, "easy++", "gaussier"])
def test_the_daemons_start_imports_scikit_learn_only_for_a_model_that_uses_it(
    tmp_path: Path, runtime_prediction: str | None
) -> None:
    # The daemon's whole start-up without a cycle: configuration, planner (its models), the
    # kernels' warm-up and the heap's freeze; the predictor the configuration names is made.
    config = write_config(tmp_path, runtime_prediction)
    loaded = loaded_after(
        f"""
        from rush.daemon.service import Daemon
        from rush.planner.config import load_config
        daemon = Daemon(load_config({str(config)!r}))
        made = type(daemon.runtime.predictor).__name__ if daemon.runtime else None
        assert made == {dict([(None, None), ("easy++", "EasyPlusPlusPredictor"), ("gaussier", "GaussierPredictor")])[runtime_prediction]!r}, made
        daemon.run(cycles=0)
        """,
        (*LEARNING, "requests"),
    )
    # requests (slurmrestd's client) only where rjms.options.rest_url is set.
    assert loaded == (["sklearn", "scipy.stats", "joblib"] if runtime_prediction == "gaussier" else [])


def test_the_predictors_package_still_names_every_predictor() -> None:
    # The lazy names resolve to the classes and functions they named before.
    from rush.models import runtime_predictors as package
    from rush.models.runtime_predictors.gaussier import GaussierPredictor
    from rush.models.runtime_predictors.walkforward import RuntimePredictions, predict_walkforward

    assert package.GaussierPredictor is GaussierPredictor
    assert package.predict_walkforward is predict_walkforward
    assert package.RuntimePredictions is RuntimePredictions
    assert isinstance(package.make_predictor("gaussier"), GaussierPredictor)
    assert set(package.PREDICTORS) == {"easy++", "gaussier", "runtime-quantiles"}
    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name  # noqa: B018
