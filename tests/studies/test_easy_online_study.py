"""``sim/runtime_predictions/easy_online.py`` (round 23): a run of some traces keeps the committed
rows of the others, refuses an unknown trace (exit 2, naming --traces), and its log-history
run must be ``run.py``'s committed EASY++ row."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.script_module import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "easy_online.py"


def _rows(trace: str, log_bsld: float) -> list[dict]:
    common = {"trace": trace, "jobs": 3, "mean_wait": 1.0, "log_mean_wait": 2.0, "killed": 0, "backfilled": 1}
    accuracy = {"median_absolute_error": 5.0, "underpredicted": 0.5, "mean_accuracy": 0.6}
    return [
        common
        | {"scheduler": "EASY-FCFS", "mean_bounded_slowdown": 10.0, "improvement_over_easy_fcfs_pct": 0.0},
        common
        | accuracy
        | {"scheduler": "easy++", "mean_bounded_slowdown": log_bsld, "improvement_over_easy_fcfs_pct": 30.0}
        | {"predicted_as_log_history": 1.0},
        common
        | accuracy
        | {"scheduler": "easy++-online", "mean_bounded_slowdown": 6.5, "improvement_over_easy_fcfs_pct": 35.0}
        | {"predicted_as_log_history": 0.8},
    ]


def test_a_run_keeps_the_rows_of_traces_it_did_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rush.studies.runtime_predictions as study

    script = load_script(SCRIPT, "easy_online_under_test")
    monkeypatch.setattr(script, "OUT", tmp_path)
    out = tmp_path / "published"
    out.mkdir()
    with open(out / "schedulers.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["trace", "scheduler", "mean_bounded_slowdown"])
        writer.writeheader()
        writer.writerow({"trace": "CTC-SP2", "scheduler": "easy++", "mean_bounded_slowdown": 7.0})
        writer.writerow({"trace": "KTH-SP2", "scheduler": "easy++", "mean_bounded_slowdown": 7.0})
    # The simulations are the study's (tested in tests/simulator); here only the tables.
    monkeypatch.setattr(study, "run_online", lambda trace, job_set: _rows(trace, 7.0))
    script.run(["CTC-SP2", "KTH-SP2"], "published")
    script.run(["CTC-SP2"], "published")
    table = list(csv.DictReader((out / "easy_online.csv").open()))
    assert [r["trace"] for r in table] == ["KTH-SP2", "CTC-SP2"]  # KTH-SP2's row kept, in table order
    assert table[1]["online - log"] == "+5.00" and table[1]["Tsafrir et al."] == "[37]"
    runs = list(csv.DictReader((out / "easy_online_runs.csv").open()))
    assert [r["trace"] for r in runs] == ["KTH-SP2"] * 3 + ["CTC-SP2"] * 3
    # A log-history run that is not run.py's committed row stops the script before it writes.
    monkeypatch.setattr(study, "run_online", lambda trace, job_set: _rows(trace, 7.5))
    with pytest.raises(SystemExit, match="run.py committed 7.0"):
        script.run(["KTH-SP2"], "published")


def test_an_unknown_trace_is_refused_naming_the_flag(capsys: pytest.CaptureFixture) -> None:
    script = load_script(SCRIPT, "easy_online_under_test")
    with pytest.raises(SystemExit) as done:
        script.main(["--traces", "KTH-SP2,LANL-CM5"])
    assert done.value.code == 2
    assert "--traces" in capsys.readouterr().err
