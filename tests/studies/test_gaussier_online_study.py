"""``sim/runtime_predictions/gaussier_online.py`` (round 24): a run of some traces keeps the
committed rows of the others, sets the online figures beside the committed weekly ones, refuses
an unknown trace (exit 2, naming --traces), and its EASY-FCFS must be ``run.py``'s committed row."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.script_module import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "gaussier_online.py"


def _rows(trace: str, base_bsld: float) -> list[dict]:
    common = {"trace": trace, "jobs": 3, "mean_wait": 1.0, "killed": 0, "backfilled": 1}
    accuracy = {"median_absolute_error": 5.0, "underpredicted": 0.9, "mean_accuracy": 0.1}
    accuracy |= {"predicted_1s": 0.2, "predicted_request": 0.01}
    return [
        common
        | {"scheduler": "EASY-FCFS", "correction": "none", "mean_bounded_slowdown": base_bsld}
        | {"improvement_over_easy_fcfs_pct": 0.0},
        common
        | accuracy
        | {"scheduler": "gaussier-online", "correction": "stepwise", "mean_bounded_slowdown": 6.0}
        | {"improvement_over_easy_fcfs_pct": 40.0},
        common
        | accuracy
        | {"scheduler": "gaussier-online (correct-to-request)", "correction": "request"}
        | {"mean_bounded_slowdown": 5.5, "improvement_over_easy_fcfs_pct": 45.0},
    ]


def test_a_run_keeps_the_rows_of_traces_it_did_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rush.studies.runtime_predictions as study

    script = load_script(SCRIPT, "gaussier_online_under_test")
    monkeypatch.setattr(script, "OUT", tmp_path)
    out = tmp_path / "published"
    out.mkdir()
    with open(out / "schedulers.csv", "w", newline="") as fh:
        fields = ["trace", "scheduler", "mean_bounded_slowdown", "improvement_over_easy_fcfs_pct"]
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        for trace in ("CTC-SP2", "KTH-SP2"):
            writer.writerow(dict(zip(fields, [trace, "EASY-FCFS", 10.0, 0.0], strict=True)))
            writer.writerow(dict(zip(fields, [trace, "gaussier", 7.0, 30.0], strict=True)))
            writer.writerow(
                dict(zip(fields, [trace, "gaussier (correct-to-request)", 6.8, 32.0], strict=True))
            )
    # The simulations are the study's (tested in tests/simulator); here only the tables.
    monkeypatch.setattr(study, "run_gaussier_online", lambda trace, job_set: _rows(trace, 10.0))
    script.run(["CTC-SP2", "KTH-SP2"], "published")
    script.run(["CTC-SP2"], "published")
    table = list(csv.DictReader((out / "gaussier_online.csv").open()))
    assert [r["trace"] for r in table] == ["KTH-SP2", "CTC-SP2"]  # KTH-SP2's row kept, in table order
    assert table[1]["Gaussier weekly"] == "30.00" and table[1]["Gaussier online"] == "40.00"
    assert table[1]["online - weekly"] == "+10.00" and table[1]["Gaussier et al."] == "[59]"
    assert table[1]["Gaussier online, correct to request"] == "45.00"
    runs = list(csv.DictReader((out / "gaussier_online_runs.csv").open()))
    assert [r["trace"] for r in runs] == ["KTH-SP2"] * 3 + ["CTC-SP2"] * 3
    # An EASY-FCFS that is not run.py's committed row stops the script before it writes.
    monkeypatch.setattr(study, "run_gaussier_online", lambda trace, job_set: _rows(trace, 10.5))
    with pytest.raises(SystemExit, match="run.py committed 10.0"):
        script.run(["KTH-SP2"], "published")


def test_an_unknown_trace_is_refused_naming_the_flag(capsys: pytest.CaptureFixture) -> None:
    script = load_script(SCRIPT, "gaussier_online_under_test")
    with pytest.raises(SystemExit) as done:
        script.main(["--traces", "KTH-SP2,LANL-CM5"])
    assert done.value.code == 2
    assert "--traces" in capsys.readouterr().err
