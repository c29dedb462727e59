"""Start-time estimate accuracy (rush/studies/estimate_accuracy.py), offline: the metrics on
hand values, the protocol's choice of prediction, and the parsers of the RJMSs' own estimates."""

from __future__ import annotations

import csv
from datetime import datetime

import pytest

from rush.errors import RJMSError, RushError
from rush.studies.estimate_accuracy import (
    EstimateRecorder,
    Sample,
    accuracy,
    parse_flux_estimates,
    parse_squeue_start,
    predictions,
    recorder_for,
    summarize,
    table,
    wait_class,
    write_csv,
)


def test_accuracy_on_hand_values():
    # errors (trace s): 30 within a minute and within 10 % of 600; -90 within 10 % of 1200
    # only; 500 neither; None: no estimate.
    acc = accuracy([30.0, -90.0, 500.0, None], [600.0, 1200.0, 1000.0, 50.0])
    assert acc["jobs"] == 4 and acc["estimated"] == 3 and acc["coverage"] == 0.75
    assert acc["within_1min"] == pytest.approx(1 / 3)
    assert acc["within_10pct"] == pytest.approx(2 / 3)
    assert acc["within_1min_of_all"] == 0.25
    assert acc["mean_abs_error"] == pytest.approx((30 + 90 + 500) / 3)


def test_accuracy_without_estimates_or_jobs():
    assert accuracy([None, None], [0.0, 10.0])["within_1min"] is None
    assert accuracy([], [])["coverage"] is None
    # A wait of 0: only an exact estimate is within 10 % of it.
    assert accuracy([0.0, 1.0], [0.0, 0.0])["within_10pct"] == 0.5
    with pytest.raises(ValueError):
        accuracy([1.0], [])


def test_wait_classes():
    assert [wait_class(w, 300.0) for w in (0.0, 300.0, 301.0, 599.0, 600.0, 3599.0, 3600.0)] == [
        "0", "0", "<10min", "<10min", "10min-1h", "10min-1h", ">1h",
    ]  # fmt: skip


def test_prediction_is_the_first_estimate_at_or_after_submit():
    # Job 7 (trace 1) submitted at 100, started at 160; speedup 10.
    samples = [
        Sample(95.0, 7, "rush", 150.0),  # before submit (an earlier job with the id? ignored)
        Sample(101.0, 7, "rush", None),  # no estimate yet
        Sample(102.0, 7, "rush", 158.0),  # the prediction: 2 s wall early = -20 trace s
        Sample(125.0, 7, "rush", 161.0),  # the last by submit + wait/2 = 130
        Sample(140.0, 7, "rush", 160.0),
        Sample(102.0, 7, "slurm", None),  # slurm never had one
        Sample(200.0, 7, "slurm", 160.0),  # after the start: not a prediction
    ]
    rows = predictions(samples, {7: (100.0, 160.0)}, {1: 7, 2: 8}, ["rush", "slurm"], 10.0, 5.0)
    assert len(rows) == 2  # job 8 has no outcome
    rush, slurm = rows
    assert rush.estimate == 158.0 and rush.estimated_at == 102.0 and rush.error == pytest.approx(-20.0)
    assert rush.halfway_estimate == 161.0 and rush.halfway_error == pytest.approx(10.0)
    assert rush.wait == 600.0 and rush.wait_class == "10min-1h" and rush.samples == 3
    assert slurm.estimate is None and slurm.error is None and slurm.samples == 0
    summary = summarize(rows, ["rush", "slurm"])
    assert summary["rush"]["all"]["within_1min"] == 1.0 and summary["rush"]["10min-1h"]["jobs"] == 1
    assert summary["slurm"]["all"]["coverage"] == 0.0 and summary["rush"][">1h"]["jobs"] == 0
    text = table(summary)
    assert "rush" in text and "10min-1h" in text and ">1h" not in text


def test_csv_has_one_row_per_job_and_estimator(tmp_path):
    samples = [Sample(101.0, 7, "rush", 130.0)]
    rows = predictions(samples, {7: (100.0, 130.0)}, {1: 7}, ["rush", "flux"], 1.0, 1.0)
    write_csv(rows, tmp_path / "p.csv")
    read = list(csv.DictReader(open(tmp_path / "p.csv")))
    assert [(r["estimator"], r["error"]) for r in read] == [("rush", "0.0"), ("flux", "")]


def test_squeue_start_parsing():
    when = datetime(2026, 11, 26, 6, 40, 0).timestamp()
    text = "12 2026-11-26T06:40:00\n13 N/A\n14 Unknown\n\n15\n"
    assert parse_squeue_start(text) == {12: when, 13: None, 14: None, 15: None}
    assert parse_squeue_start("") == {}


@pytest.mark.parametrize("text", ["abc 2026-11-26T06:40:00", "12 tomorrow", "12 N/A extra", "12_3 N/A"])
def test_squeue_start_garbage_is_an_error_naming_the_line(text):
    with pytest.raises(RJMSError) as err:
        parse_squeue_start("11 N/A\n" + text)
    assert "line 2" in err.value.message


def test_flux_estimates_parsing():
    text = "25585254400 1795675384.7740123\n30551310336 \n34812723200\n"
    assert parse_flux_estimates(text) == {
        25585254400: 1795675384.7740123,
        30551310336: None,
        34812723200: None,
    }


@pytest.mark.parametrize("text", ["ƒfyt7ks 1795675384.7", "12 soon", "12 nan", "12 1 2", "-3 5"])
def test_flux_estimates_garbage_is_an_error(text):
    with pytest.raises(RJMSError) as err:
        parse_flux_estimates(text)
    assert "line 1" in err.value.message


def test_recorder_reads_every_estimator_after_the_cycle_and_survives_a_failed_read():
    calls = []

    def broken():
        raise RJMSError("squeue timed out", where="squeue")

    recorder = EstimateRecorder(
        {"rush": lambda: {1: 50.0, 2: None}, "slurm": broken},
        cycle=lambda: calls.append("cycle"),
        clock=lambda: 10.0,
    )
    recorder()
    recorder()
    assert calls == ["cycle", "cycle"] and recorder.polls == 2
    assert recorder.samples[:2] == [Sample(10.0, 1, "rush", 50.0), Sample(10.0, 2, "rush", None)]
    assert len(recorder.samples) == 4 and recorder.failures == {"slurm": 2}


def test_recorder_needs_the_daemons_cycle(tmp_path):
    class Backend:
        name = "slurm"

    with pytest.raises(RushError) as err:
        recorder_for(Backend(), tmp_path / "j.sqlite", None)
    assert err.value.where == "replay --estimates"


@pytest.mark.parametrize(
    "extra, where",
    [
        ([], "--estimates"),  # no --config: no daemon journals rush's estimates
        # Scheduler mode reads the module's t_estimate, but the module still needs a rush.toml.
        (["--mode", "scheduler", "--rjms", "flux"], "--estimates"),
        (["--config", "rush.toml"], "--estimates"),  # a directory is no CSV path
    ],
)
def test_bad_estimates_flags_are_refused_before_any_job(extra, where, tmp_path):
    import subprocess
    import sys

    (tmp_path / "rush.toml").write_text("")
    target = tmp_path if "--config" in extra and "--mode" not in extra else tmp_path / "e.csv"
    argv = [sys.executable, "-m", "rush", "replay", "lublin:50:16:1", "--window", "0:5"]
    argv += ["--estimates", str(target), *extra]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert where in run.stderr and "Traceback" not in run.stderr
