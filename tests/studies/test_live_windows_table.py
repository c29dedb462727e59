"""sim/runtime_predictions/live_windows.py: the committed table is what the committed runs give,
and its figures are the replay's own summary (rush.studies.estimate_accuracy) of each run."""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(ROOT / "sim" / "runtime_predictions" / "live_windows.py", "live_windows_study")
COMMITTED = ROOT / "sim" / "runtime_predictions" / "results" / "live_windows.csv"


def _committed() -> list[dict]:
    with open(COMMITTED, newline="") as f:
        return list(csv.DictReader(f))


def _same(a, b) -> bool:
    if a in ("", None) or b in ("", None):
        return a in ("", None) and b in ("", None)
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    except ValueError:
        return str(a) == str(b)


RUNS = [(w, rjms) for w in script.WINDOWS for rjms in w.runs]


def test_the_committed_table_is_what_the_committed_runs_give():
    again = []
    for w, rjms in RUNS:
        path = script.csv_path(script.RUNS[rjms][0], rjms, w)
        if path.exists():
            again += script.table_rows(rjms, script.read_rows(path), w.name)
    committed = _committed()
    assert again and len(again) == len(committed)
    for mine, theirs in zip(again, committed, strict=True):
        assert all(_same(mine[k], theirs[k]) for k in theirs), (mine, theirs)


@pytest.mark.parametrize(("w", "rjms"), RUNS, ids=[f"{w.name}-{rjms}" for w, rjms in RUNS])
def test_each_runs_figures_are_the_replays_own_summary(w, rjms):
    kind = script.RUNS[rjms][0]
    path = script.csv_path(kind, rjms, w)
    if not path.exists():
        pytest.skip(f"{w.name} {rjms}: not run ({path.name} absent)")
    report = json.loads(path.with_suffix(".json").read_text())["start_estimates"]
    rows = script.table_rows(rjms, script.read_rows(path), w.name)
    names = {v: k for k, v in script.OWN.items()}
    for row in (r for r in rows if r["jobs_of"] == "all"):
        theirs = report["first"][names[row["estimator"]]][row["wait"]]
        for key in ("jobs", "estimated", "coverage", "within_10pct", "within_1min", "mean_abs_error"):
            assert _same(row[key], theirs[key]), (rjms, row["estimator"], row["wait"], key)


def test_signed_error_and_share_late_follow_the_sign_of_estimate_minus_start():
    rows = [
        {"trace_job_id": str(i), "estimator": "rush", "wait_class": ">1h", "wait": 7200.0,
         "error": e, "halfway_error": None}
        for i, e in enumerate([600.0, -300.0, 900.0, None])
    ]  # fmt: skip
    (row,) = script.table_rows("slurm", rows, "W")
    assert row["window"] == "W" and row["jobs"] == 4 and row["estimated"] == 3
    assert math.isclose(row["mean_signed_error"], 400.0) and row["median_signed_error"] == 600.0
    assert math.isclose(row["late"], 2 / 3) and math.isclose(row["mean_abs_error"], 600.0)


def test_unknown_windows_or_runs_are_refused_with_exit_2(capsys):
    for flag, name in (("--window", "NOPE"), ("--rjms", "pbs")):
        with pytest.raises(SystemExit) as stop:
            script.main([flag, name])
        assert stop.value.code == 2
        assert f"argument {flag}: '{name}' is not one of" in capsys.readouterr().err


def test_kept_runs_are_listed_before_l2_first_then_by_repeat_number(tmp_path, monkeypatch):
    w = script.WINDOWS[1]
    kind = script.RUNS["flux"][0]
    monkeypatch.setattr(script, "REPEATS", tmp_path / "repeats")
    monkeypatch.setattr(script, "BEFORE_L2", tmp_path / "before_l2")
    assert script.repeat_sources(kind, "flux", w) == []
    stem = script.csv_path(kind, "flux", w).stem
    for folder, name in (("repeats", f"{stem}-rep10"), ("repeats", f"{stem}-rep2"), ("before_l2", stem)):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / f"{name}.csv").write_text("")
    assert [s for s, _ in script.repeat_sources(kind, "flux", w)] == ["before L2", "rep2", "rep10"]


def test_the_spread_is_over_the_repeats_only():
    def row(source, mae):
        return {"window": "CTC", "run": "flux", "wait": ">1h", "jobs_of": "all", "estimator": "rush",
                "source": source, "mean_abs_error": mae, "estimated": 3}  # fmt: skip

    text = script.spread_markdown([row("before L2", 6000.0), row("rep1", 600.0), row("rep2", 1500.0)])
    line = next(x for x in text.splitlines() if x.startswith("| CTC"))
    assert line == "| CTC | flux | >1h | all | rush | 100.0 (3) | 10.0 (3) | 25.0 (3) | 15.0 |"
    one = script.spread_markdown([row("before L2", 6000.0), row("rep1", 600.0)])
    assert next(x for x in one.splitlines() if x.startswith("| CTC")).endswith("| 10.0 (3) | - |")


def test_the_committed_repeats_table_is_what_the_kept_runs_give():
    with open(COMMITTED.with_name("live_windows_repeats.csv"), newline="") as f:
        committed = list(csv.DictReader(f))
    again = script.repeat_table()
    assert again and len(again) == len(committed)
    for mine, theirs in zip(again, committed, strict=True):
        assert all(_same(mine[k], theirs[k]) for k in theirs), (mine, theirs)


def test_runs_share_the_models_directory_the_recomputations_read(tmp_path, monkeypatch):
    ctc = next(w for w in script.WINDOWS if w.name == "CTC")
    argvs = []

    class Done:
        returncode = 1  # stop after the first run: nothing to keep

    def fake_run(argv, cwd=None):
        argvs.append(argv)
        return Done()

    monkeypatch.setattr(script.subprocess, "run", fake_run)
    monkeypatch.setattr(script.tempfile, "tempdir", str(tmp_path))  # the fresh directory below
    assert script.run(ctc, ["fluxion"], True, tmp_path / "models") == 1
    model = tmp_path / "models" / "model-CTC-44051_60-K60.joblib"
    assert argvs[0][-1] == str(model) and model.parent.is_dir()
    assert script.model_file(ctc, tmp_path) == tmp_path / "model-CTC-44051_60-K60.joblib"
    script.run(ctc, ["fluxion"], True)  # without a directory: a fresh one
    assert argvs[1][-1] != str(model) and argvs[1][-1].endswith("quantiles.joblib")
    assert argvs[1][-1].startswith(str(tmp_path))


def test_choose_prints_each_candidates_window_or_that_none_qualifies(monkeypatch, capsys):
    # Round 16's candidates are chosen by their own rule (here on a tiny trace: see
    # window_choice_trace): one that qualifies is printed with its jobs at the blocked head,
    # one that cannot is printed as the rule's own "no window" error, and --choose still exits 0.
    import rush.workload.model
    import rush.workload.swf
    from rush.studies.live_window_choice import WindowRule
    from tests.studies.window_choice_trace import RULE, tiny_trace

    monkeypatch.setattr(rush.workload.swf, "read_swf", lambda path: path)
    monkeypatch.setattr(rush.workload.model, "workload_from_trace", lambda trace: tiny_trace())
    monkeypatch.setattr(script, "WINDOWS", ())
    found = WindowRule(**{**RULE.__dict__, "min_long": 4, "min_head": 3, "head_seconds": 120.0})
    monkeypatch.setattr(
        script,
        "CANDIDATES",
        {"T": ("t.swf", found), "U": ("u.swf", WindowRule(**{**found.__dict__, "min_head": 4}))},
    )
    assert script.main(["--choose"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(
        "T: t.swf 18:6: 5 simulated waits over 1 h (3 at the blocked head >= 120 wall s)"
    )
    assert out[1].startswith("U: u.swf: ") and "no window of 6 jobs" in out[1]


def test_a_run_that_wrote_its_results_is_kept_even_if_its_script_then_fails(tmp_path, monkeypatch):
    # run_live.py can exit 1 after writing the run's CSV and JSON (Flux's shutdown timing out):
    # that run is kept as the next repeat; one that wrote nothing stops --run with its code.
    ctc = next(w for w in script.WINDOWS if w.name == "CTC")
    monkeypatch.setattr(script, "ROOT", tmp_path)
    monkeypatch.setattr(script, "RESULTS", tmp_path)
    monkeypatch.setattr(script, "REPEATS", tmp_path / "repeats")
    monkeypatch.setattr(script, "BEFORE_L2", tmp_path / "before_l2")
    out = script.csv_path("fluxion-nodes", "fluxion", ctc)
    writes = []

    class Failed:
        returncode = 1

    def fake_run(argv, cwd=None):
        if writes.pop(0):
            out.write_text("trace_job_id\n")
            out.with_suffix(".json").write_text("{}")
        return Failed()

    monkeypatch.setattr(script.subprocess, "run", fake_run)
    writes[:] = [True]
    assert script.run(ctc, ["fluxion"], True, tmp_path / "models") == 0
    assert (tmp_path / "repeats" / f"{out.stem}-rep1.csv").read_text() == "trace_job_id\n"
    for old in (out, out.with_suffix(".json")):  # the old CSV is still there, from an hour ago
        os.utime(old, (old.stat().st_mtime - 3600,) * 2)
    writes[:] = [False]
    assert script.run(ctc, ["fluxion"], True, tmp_path / "models") == 1
    assert not (tmp_path / "repeats" / f"{out.stem}-rep2.csv").exists()
