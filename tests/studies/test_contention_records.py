"""The variability study's report written again from its committed run records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rush.errors import ConfigError
from rush.studies.contention import JOB_COLUMNS, PREDICTION_COLUMNS, _write_csv
from rush.studies.contention_records import read_rows, rewrite_report, write_report_files
from tests.studies.contention_rows import ask, job, trials


def _study_folder(tmp_path: Path, with_predictions: bool = True) -> tuple[Path, dict]:
    """A folder as run_study leaves it: the records, summary.json and tables.md."""
    rows = trials() + [job("RUSH-MOVE", t, job_id=k, limit_hit=k == 0) for t in (0, 1) for k in range(4)]
    rows[0] = dict(rows[0], variation=True, cause="noise", decisive="noise", avoidable=True, best_delay=60.0)
    preds = [ask("RUSH", True, True, job_id=1, t=10.0), ask("RUSH", False, True, job_id=1, t=20.0)]
    _write_csv(tmp_path / "runs.csv.gz", rows, JOB_COLUMNS)
    if with_predictions:
        _write_csv(tmp_path / "predictions.csv.gz", preds, PREDICTION_COLUMNS)
    head = {"scenarios": ["ADAA"], "campaign": {"paper": {"runs": 3}}, "results": None, "runner": "test"}
    return tmp_path, write_report_files(tmp_path, rows, preds, head)


def test_the_records_give_back_the_report_byte_for_byte(tmp_path: Path) -> None:
    folder, summary = _study_folder(tmp_path)
    tables = (folder / "tables.md").read_bytes()
    (folder / "tables.md").write_text("stale")
    again = rewrite_report(folder)
    assert (folder / "tables.md").read_bytes() == tables
    assert again == json.loads((folder / "summary.json").read_text()) == summary
    assert list(again) == ["scenarios", "campaign", "results", "runner", "causes", "ladder"]  # kept in place
    moved = again["results"]["experiments"]["paper"]["ADAA"]["RUSH-MOVE"]
    assert (moved["flagged_starts_per_trial"], moved["starts_at_limit_per_trial"]) == (1.0, 0.0)
    assert again["causes"]["paper"]["ADAA"]["avoidable_by_delay"] == 0.5
    back = read_rows(folder / "runs.csv.gz")
    assert back[0]["cause"] == "noise" and back[0]["avoidable"] is True and back[0]["best_delay"] == 60.0
    assert back[1]["limit_hit"] is False and back[1]["trial"] == 0 and back[1]["cause"] is None


def test_a_folder_without_its_questions_keeps_the_agreement_it_reported(tmp_path: Path) -> None:
    folder, summary = _study_folder(tmp_path, with_predictions=False)
    assert summary["results"]["agreement"]["paper"]["ADAA"]["RUSH"]["asked"] == 2
    again = rewrite_report(folder)
    assert again["results"]["agreement"] == summary["results"]["agreement"]
    assert "| paper | ADAA | RUSH | 2 |" in (folder / "tables.md").read_text()


def test_a_folder_without_records_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        rewrite_report(tmp_path)
    assert "runs.csv.gz" in str(info.value)
    assert not (tmp_path / "tables.md").exists()
