"""``rush experiment variability`` end to end (tiny sizes) and its hostile input."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from rush.contention.experiment import POLICIES

# One model kind with few rounds keeps the test's training short (the published four are the default).
QUICK = ("--train-models", "adaboost", "--estimators", "10", "--reference-hours", "0.6")


def rush(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rush", "experiment", "variability", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NICE": "10"},
        timeout=timeout,
    )


def test_tiny_experiment_end_to_end(tmp_path) -> None:
    """A short campaign (one block), both models trained, one paired trial of ADAA and PDPA at
    10 % size, every policy.

    Sizes are tiny so the suite stays short; the figures come from the full command (sim/variability).
    """
    out = tmp_path / "study"
    proc = rush(
        "--scenario", "ADAA,PDPA", "--trials", "1", "--first-trial", "7", "--seed", "3",
        "--campaign-hours", "0.6", "--scale", "0.1", "--json", "--out", str(out), *QUICK,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["scenarios"] == ["ADAA", "PDPA"] and summary["trials"] == [7]
    camp = summary["campaign"]["paper"]
    assert camp["runs"] == 190 and camp["noise_episodes"] > 5
    training = summary["training"]["paper"]
    # RUSH-PRESENT-LABEL is among the policies: the present-state models are trained beside RUSH's.
    assert set(training) == {"all", "other4", "present-all", "present-other4"}
    for name in training:
        assert training[name]["cv_table"] and training[name]["scope"] in ("job", "all", "both")
        assert training[name]["label"] == ("present-state" if name.startswith("present-") else "variation")
    experiments = summary["results"]["experiments"]["paper"]
    for scenario, n_apps, n_jobs in (("ADAA", 7, 19), ("PDPA", 3, 15)):
        by_policy = experiments[scenario]
        assert set(by_policy) == set(POLICIES) >= {"FCFS+EASY", "RUSH", "RUSH-30", "RUSH-UNLIMITED",
                                                   "PRESENT-ORACLE", "NOISE-ORACLE"}  # fmt: skip
        for policy, res in by_policy.items():
            assert res["trials"] == 1 and res["runs"] == n_jobs
            assert len(res["makespans"]) == 1 and res["makespan_mean"] > 0
            assert len(res["apps"]) == n_apps
            assert res["diagnostic"] == policy.endswith("ORACLE")
            for app in res["apps"].values():
                assert app["runtime_max"] >= app["runtime_mean"] > 0
    # The flagging policies' answers sit beside the present-state oracle's.
    agreement = summary["results"]["agreement"]["paper"]["ADAA"]
    assert {"RUSH", "PRESENT-ORACLE"} <= set(agreement)
    assert agreement["PRESENT-ORACLE"]["fp"] == agreement["PRESENT-ORACLE"]["fn"] == 0
    tables = (out / "results" / "tables.md").read_text()
    assert "RUSH-30" in tables and "(diagnostic)" in tables
    # FCFS+EASY's runs with variation are attributed; the ladder sits beside them.
    assert set(summary["causes"]["paper"]) == {"ADAA", "PDPA"}
    assert {"FCFS+EASY", "CLAIRVOYANT-ORACLE", "PRESENT-ORACLE", "RUSH"} <= set(
        summary["ladder"]["paper"]["ADAA"]
    )
    for name in (
        "fig4_variation_runs.png",
        "fig5_runtimes.png",
        "fig6_makespan.png",
        "skip_limit.png",
        "ladder.png",
    ):
        assert (out / "plots" / name).stat().st_size > 1000
    runs = gzip.decompress((out / "results" / "runs.csv.gz").read_bytes()).decode().splitlines()
    assert runs[0].startswith("variant,scenario,policy,trial,job_id") and len(runs) == 1 + len(POLICIES) * (
        19 + 15
    )
    # The campaign follows the records contract with each run's own probe; the models carry cards.
    lines = (out / "paper" / "campaign" / "records.jsonl").read_text().splitlines()
    first, run = json.loads(lines[0]), json.loads(lines[1])
    assert first["format"] == "rush-campaign/1" and first["seed"] == 3
    assert set(run["probe"]) >= {"send_max", "recv_mean", "allreduce_mean"}
    card = json.loads((out / "paper" / "models" / "variability-all.joblib.json").read_text())
    assert "flag_threshold" in card
    assert card["label"] == "variation"
    present = json.loads((out / "paper" / "models" / "variability-present-all.joblib.json").read_text())
    assert present["label"] == "present-state"
    # RUSH-SIZE's thresholds: one per node count the campaign ran, passed to the trials.
    assert card["flag_threshold_by_size"] and set(card["flag_threshold_by_size"]) <= {"8", "16", "32"}
    # A second run reuses the campaign, models and finished trials.
    again = rush(
        "--scenario", "ADAA", "--trials", "1", "--first-trial", "7", "--seed", "3",
        "--campaign-hours", "0.6", "--scale", "0.1", "--json", "--out", str(out), *QUICK,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["results"]["experiments"]["paper"]["ADAA"] == experiments["ADAA"]


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
        (("--first-trial", "-3"), "--first-trial"),
        (("--variant", "fattree"), "--variant"),
        (("--train-models", "nope"), "--train-models"),
        (("--estimators", "0"), "--estimators"),
        (("--estimators", "100000000"), "--estimators"),
        (("--policy", "RUSH,FIFO"), "--policy"),
        (("--reference-hours", "nan"), "--reference-hours"),
        (("--label", "present"), "--label"),
        (("--label", ","), "--label"),
    ],
)
def test_bad_input_exits_2_before_any_work(tmp_path, args, where) -> None:
    out = tmp_path / "o"
    proc = rush(*args, "--out", str(out), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert where in proc.stderr and "fix:" in proc.stderr
    assert not out.exists()  # nothing written
