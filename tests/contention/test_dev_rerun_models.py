"""The study's development tooling with another model (``RUSH_DEV_MODELS``, round six's changes n
and o): a directory of present-state-labelled models, as ``dev/present_label.py`` writes it (the
model named ``all``, its card saying ``label: present-state``), runs under a policy of that label
(RUSH-PRESENT-LABEL, RUSH-MOVE-PRESENT-LABEL), and a policy of the other label stops naming those.

The model is the committed one of change o (``sim/variability/present-label``), copied with its
campaign's bar; the trial is a real one of the study, scaled down to a few jobs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.script_module import load_script

STUDY = Path(__file__).resolve().parents[2] / "sim" / "variability"


@pytest.fixture
def trial_cell(monkeypatch):
    monkeypatch.syspath_prepend(str(STUDY / "dev"))
    return load_script(STUDY / "dev" / "trial_cell.py", "trial_cell")


def _dev_models(tmp_path: Path, monkeypatch, label: str | None) -> Path:
    """A copy of the committed present-label models with the card's ``label`` set (None: absent,
    as in every card before round six)."""
    home = tmp_path / "plab" / "paper"
    shutil.copytree(STUDY / "present-label" / "paper" / "models", home / "models")
    card_path = home / "models" / "variability-all.joblib.json"
    card = json.loads(card_path.read_text())
    card.pop("label", None)
    card_path.write_text(json.dumps(card | ({"label": label} if label else {}), indent=2, sort_keys=True))
    monkeypatch.setenv("RUSH_DEV_MODELS", str(home))
    return home


@pytest.mark.parametrize("policy", ["RUSH-PRESENT-LABEL", "RUSH-MOVE-PRESENT-LABEL"])
def test_a_present_state_model_runs_under_the_policy_of_its_label(tmp_path, monkeypatch, trial_cell, policy):
    import rush.contention.experiment as ex

    _dev_models(tmp_path, monkeypatch, "present-state")
    cell = trial_cell.cell("paper", "ADAA", 0, policy) | {"scale": 0.03}
    assert list(cell["models"]) == ["present-all"]
    with trial_cell.without_attribution():
        rows = ex.run_trial(cell)
    jobs = [r for r in rows if r["kind"] == "job"]
    assert len(jobs) == round(190 * 0.03) and all(r["end"] > r["start"] for r in jobs)
    # The diagnostics and the baseline run no model: the same directory serves them.
    assert trial_cell.cell("paper", "ADAA", 0, "FCFS+EASY")["thresholds"] == cell["thresholds"]


def test_a_policy_of_the_other_label_stops_naming_the_policies_that_run_the_model(
    tmp_path, monkeypatch, trial_cell
):
    _dev_models(tmp_path, monkeypatch, "present-state")
    for policy in ("RUSH", "RUSH-MOVE"):
        with pytest.raises(SystemExit) as stop:
            trial_cell.cell("paper", "ADAA", 0, policy)
        assert "RUSH-PRESENT-LABEL" in str(stop.value) and "RUSH-MOVE-PRESENT-LABEL" in str(stop.value)


def test_a_card_without_label_still_runs_as_rush(tmp_path, monkeypatch, trial_cell):
    """Round six ran the model of o as RUSH when its card had no label: such a card learned
    ``variation`` and keeps its name."""
    from rush.contention.labels import check_model_label

    _dev_models(tmp_path, monkeypatch, None)
    cell = trial_cell.cell("paper", "ADAA", 0, "RUSH")
    assert list(cell["models"]) == ["all"]
    check_model_label(Path(cell["models"]["all"]["path"]), "RUSH")
    with pytest.raises(SystemExit):
        trial_cell.cell("paper", "ADAA", 0, "RUSH-PRESENT-LABEL")
