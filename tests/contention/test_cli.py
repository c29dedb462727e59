"""``rush experiment variability`` end to end (tiny sizes) and its hostile input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rush.contention.experiment import POLICIES

# One model kind with few rounds keeps the test's training short (the published four are the default).
QUICK = ("--train-models", "adaboost", "--estimators", "10")


def rush(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rush", "experiment", "variability", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NICE": "10"},
        timeout=timeout,
    )


def test_tiny_experiment_end_to_end(tmp_path) -> None:
    """A short campaign, both models trained, one paired trial of ADAA and PDPA at 10 % size.

    Sizes are tiny so the suite stays short; the figures come from the full command (sim/variability).
    """
    out = tmp_path / "study"
    proc = rush(
        "--scenario", "ADAA,PDPA", "--trials", "1", "--seed", "3", "--campaign-hours", "0.3",
        "--scale", "0.1", "--json", "--out", str(out), *QUICK,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["scenarios"] == ["ADAA", "PDPA"] and summary["trials"] == 1
    assert summary["campaign"]["runs"] > 50
    assert set(summary["training"]) == {"all", "other4"}
    for name in ("all", "other4"):
        assert summary["training"][name]["cv_table"]
    for scenario, n_apps, n_jobs in (("ADAA", 7, 19), ("PDPA", 3, 15)):
        by_policy = summary["results"][scenario]
        assert set(by_policy) == set(POLICIES) >= {"FCFS+EASY", "RUSH", "RUSH-L", "NOISE-ORACLE", "RUSH-V"}
        for res in by_policy.values():
            assert res["trials"] == 1 and res["runs"] == n_jobs
            assert len(res["makespans"]) == 1 and res["makespan_mean"] > 0
            assert len(res["apps"]) == n_apps
            for app in res["apps"].values():
                assert set(app) >= {"runs", "runs_with_variation", "runtime_mean", "runtime_max", "wait_mean"}
                assert app["runtime_max"] >= app["runtime_mean"] > 0
    assert "| RUSH-L |" in (out / "results" / "tables.md").read_text()
    for name in ("variation_runs.png", "runtimes.png", "makespans.png", "waits.png"):
        assert (out / "plots" / name).stat().st_size > 1000
    runs = (out / "results" / "runs.csv").read_text().splitlines()
    assert runs[0].startswith("scenario,policy,trial,job_id") and len(runs) == 1 + len(POLICIES) * (19 + 15)
    # The campaign follows the records contract and the models carry cards.
    first = json.loads((out / "campaign" / "records.jsonl").read_text().splitlines()[0])
    assert first["format"] == "rush-campaign/1" and first["seed"] == 3
    assert (out / "models" / "variability-all.joblib.json").is_file()
    # A second run reuses the campaign, models and finished trials.
    again = rush(
        "--scenario", "ADAA", "--trials", "1", "--seed", "3", "--campaign-hours", "0.3",
        "--scale", "0.1", "--json", "--out", str(out), *QUICK,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["results"]["ADAA"] == summary["results"]["ADAA"]


@pytest.mark.parametrize(
    "args, where",
    [
        (("--scenario", "XYZ"), "--scenario"),
        (("--scenario", ""), "--scenario"),
        (("--trials", "0"), "--trials"),
        (("--trials", "1000000"), "--trials"),
        (("--campaign-hours", "1e9"), "--campaign-hours"),
        (("--campaign-hours", "nan"), "--campaign-hours"),
        (("--scale", "50"), "--scale"),
        (("--scale", "0"), "--scale"),
        (("--seed", "-1"), "--seed"),
        (("--train-models", "nope"), "--train-models"),
        (("--estimators", "0"), "--estimators"),
        (("--estimators", "100000000"), "--estimators"),
    ],
)
def test_bad_input_exits_2_before_any_work(tmp_path, args, where) -> None:
    out = tmp_path / "o"
    proc = rush(*args, "--out", str(out), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert where in proc.stderr and "fix:" in proc.stderr
    assert not out.exists()  # nothing written
