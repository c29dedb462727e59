"""sim/runtime_predictions/live_bias.py: the signed-error summary of the live estimates and of
their off-line reconstructions (the reconstruction itself needs each window's model: its
figures are the committed table's, written by the script)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(ROOT / "sim" / "runtime_predictions" / "live_bias.py", "live_bias_study")


def _row(job: int, cls: str, live: float, deployed: float | None, real: float) -> dict:
    row = {"job": job, "wait_class": cls, "live": live}
    row.update({v: deployed for v in script.VARIANTS})
    row["running: real"] = real
    return row


def test_signed_error_late_share_and_agreement_with_live_per_class():
    rows = [
        _row(1, ">1h", 600.0, 660.0, 60.0),
        _row(2, ">1h", 1200.0, 1080.0, -60.0),
        _row(3, ">1h", -300.0, None, 0.0),  # no reconstructed estimate: left out of its mean
        _row(4, "<10min", 30.0, 30.0, 30.0),
    ]
    table = {(t["wait"], t["variant"]): t for t in script.summary("W", "slurm", rows)}
    assert {t["wait"] for t in table.values()} == {">1h", "<10min"}
    live = table[(">1h", "live")]
    assert live["jobs"] == 3 and math.isclose(live["mean_signed_min"], 1500 / 3 / 60)
    assert math.isclose(live["late"], 2 / 3)
    deployed = table[(">1h", "deployed")]
    assert deployed["jobs"] == 2 and math.isclose(deployed["mean_signed_min"], 870 / 60)
    assert math.isclose(deployed["agree_with_live_min"], (60 + 120) / 2 / 60)
    real = table[(">1h", "running: real")]
    assert math.isclose(real["mean_signed_min"], 0.0) and math.isclose(real["mean_abs_min"], 40 / 60)
    assert math.isclose(real["late"], 1 / 3)
    assert table[(">1h", "all real")]["agree_with_live_min"] is None
    # rule L2, deployed since round 12: its agreement with the live estimates is given too
    assert math.isclose(table[(">1h", "queue: L2")]["agree_with_live_min"], (60 + 120) / 2 / 60)


def _kept(tmp_path, monkeypatch, w, rjms: str, files: dict[str, str]) -> None:
    """Point live_windows at ``tmp_path`` and write the run CSVs ``files`` (folder/stem suffix ->
    content) of window ``w`` under ``rjms``."""
    lw = script.live_windows
    monkeypatch.setattr(lw, "RESULTS", tmp_path)
    monkeypatch.setattr(lw, "REPEATS", tmp_path / "repeats")
    monkeypatch.setattr(lw, "BEFORE_L2", tmp_path / "before_l2")
    stem = lw.csv_path(lw.RUNS[rjms][0], rjms, w).stem
    for where, text in files.items():
        folder, _, suffix = where.partition(":")
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / f"{stem}{suffix}.csv").write_text(text)


def test_every_kept_run_is_replayed_and_the_current_one_only_when_it_is_not_a_copy(tmp_path, monkeypatch):
    lw = script.live_windows
    ctc = next(w for w in lw.WINDOWS if w.name == "CTC")
    _kept(
        tmp_path,
        monkeypatch,
        ctc,
        "fluxion",
        {"before_l2:": "a", "repeats:-rep1": "b", "repeats:-rep2": "c", ".:": "c"},
    )
    assert [s for s, _ in script.kept_runs(ctc, "fluxion")] == ["before L2", "rep1", "rep2"]
    (tmp_path / f"{lw.csv_path(lw.RUNS['fluxion'][0], 'fluxion', ctc).stem}.csv").write_text("d")
    kept = script.kept_runs(ctc, "fluxion")
    assert [s for s, _ in kept] == ["before L2", "rep1", "rep2", "current"]
    assert kept[-1][1] == lw.csv_path(lw.RUNS["fluxion"][0], "fluxion", ctc)


def test_recorded_runs_put_the_runs_since_l2_first_and_filter_by_source(tmp_path, monkeypatch):
    lw = script.live_windows
    ctc = next(w for w in lw.WINDOWS if w.name == "CTC")
    _kept(tmp_path, monkeypatch, ctc, "fluxion", {"before_l2:": "a", "repeats:-rep1": "b", ".:": "b"})
    models = ["--models", str(tmp_path / "models")]
    _, runs = script.recorded_runs([*models, "--window", "CTC"], "")
    assert [(w.name, rjms, source) for w, rjms, _, source in runs] == [
        ("CTC", "fluxion", "rep1"),
        ("CTC", "fluxion", "before L2"),
    ]
    _, runs = script.recorded_runs([*models, "--window", "CTC", "--runs", "latest"], "")
    assert [(source, path.parent) for *_, path, source in runs] == [("current", tmp_path)]
    _, runs = script.recorded_runs([*models, "--runs", "before L2"], "")
    assert [source for *_, source in runs] == ["before L2"]
    with pytest.raises(SystemExit):
        script.recorded_runs([*models, "--window", "NOPE"], "")


def test_rows_are_ordered_by_window_run_and_kept_run():
    rows = [
        {"window": "KTH", "run": "flux", "source": "rep1"},
        {"window": "CTC", "run": "flux", "source": "current"},
        {"window": "CTC", "run": "flux", "source": "rep10"},
        {"window": "CTC", "run": "flux", "source": "rep2"},
        {"window": "CTC", "run": "flux", "source": "before L2"},
        {"window": "SDSC", "run": "slurm", "source": "rep1"},
    ]
    got = [(r["window"], r["source"]) for r in script.in_order(rows)]
    assert got == [
        ("SDSC", "rep1"),
        ("CTC", "before L2"),
        ("CTC", "rep2"),
        ("CTC", "rep10"),
        ("CTC", "current"),
        ("KTH", "rep1"),
    ]


def test_recomputed_rows_are_kept_by_the_runs_content_and_computed_once(tmp_path, monkeypatch):
    lw = script.live_windows
    ctc = next(w for w in lw.WINDOWS if w.name == "CTC")
    model = tmp_path / "model.joblib"
    model.write_text("m")
    run = tmp_path / "run.csv"
    run.write_text("a")
    run.with_suffix(".json").write_text("{}")
    calls = []

    def fake(w, rjms, m, moments=None, variants=script.VARIANTS, path=None):
        calls.append((rjms, path, moments))
        return [{"job": len(calls), "wait_class": ">1h", "live": 1.5, "deployed": None}]

    monkeypatch.setattr(script, "model_path", lambda w, models: model)
    monkeypatch.setattr(script, "reconstruct", fake)
    first = script.reconstructed(tmp_path, ctc, "flux", run)
    assert (
        script.reconstructed(tmp_path, ctc, "flux", run)
        == first
        == [{"job": 1, "wait_class": ">1h", "live": 1.5, "deployed": None}]
    )
    assert len(calls) == 1
    script.reconstructed(tmp_path, ctc, "flux", run, [(1.0, 7, "rjms")], ("deployed",))  # other moments
    run.write_text("b")  # the run's CSV changed
    script.reconstructed(tmp_path, ctc, "flux", run)
    model.write_text("m2")  # the model changed
    script.reconstructed(tmp_path, ctc, "flux", run)
    assert len(calls) == 4
