"""``sim/runtime_predictions/online_noise.py`` and ``gaussier_grid.py`` (round 26): the verdict rule
fixed before the runs (a gap exceeds the noise when |gap| > 2 sd), the paired reading, the check
that the unjittered run / the C-V grid point equals the committed single run, and the grid's
range against the authors' figure. The simulations are the study's (tested in tests/simulator)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.script_module import load_script

HERE = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions"


def _noise_rows(trace: str, easy: list[float], gaussier: list[float]) -> list[dict]:
    rows = [{"trace": trace, "scheduler": "EASY-FCFS", "seed": None, "mean_bounded_slowdown": 10.0}]
    for name, figures in (("easy++-online", easy), ("gaussier-online", gaussier)):
        for seed, f in enumerate(figures):
            row = {"trace": trace, "scheduler": name, "seed": seed, "improvement_over_easy_fcfs_pct": f}
            rows.append(row | {"mean_bounded_slowdown": 10.0 * (1 - f / 100)})
    return rows


def test_the_noise_verdicts_and_the_paired_reading(tmp_path: Path) -> None:
    script = load_script(HERE / "online_noise.py", "online_noise_under_test")
    assert script.verdict(4.1, 2.0) == "exceeds" and script.verdict(-4.1, 2.0) == "exceeds"
    assert script.verdict(3.9, 2.0) == "within" and script.verdict(-4.0, 2.0) == "within"
    # seed 0 first, then jittered seeds: EASY++ 30 +- ~1.3, Gaussier 5 above it, paired.
    easy = [31.0, 29.0, 31.0, 30.0, 28.0, 32.0, 30.0, 29.0, 31.0]
    gaussier = [36.0] + [e + 5.0 + d for e, d in zip(easy[1:], [0.5, -0.5] * 4, strict=True)]
    rows = _noise_rows("KTH-SP2", easy, gaussier)
    with open(tmp_path / "schedulers.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trace", "scheduler", "improvement_over_easy_fcfs_pct"])
        writer.writerows([["KTH-SP2", "easy++", 26.0], ["KTH-SP2", "gaussier", 34.9]])
    table = {r["scheduler"]: r for r in script.summary(tmp_path, rows[1:])}
    e, g = table["easy++-online"], table["gaussier-online"]
    assert e["jitter mean"] == "30.00" and e["jitter sd"] == "1.31" and e["unjittered"] == "31.00"
    assert e["gap to authors"] == "-6.00" and e["vs authors"] == "exceeds"  # [36], 2 sd = 2.62
    assert e["gap to log history"] == "+4.00" and e["vs log history"] == "exceeds"
    assert g["gap to authors"] == "-9.00" and g["gap to log history"] == "+0.10"
    assert g["vs log history"] == "within"
    pair = script.paired(rows[1:])
    assert pair["mean difference"] == "+5.00" and pair["reading"] == "above"
    assert pair["gaussier above in"] == "8/8" and pair["unjittered difference"] == "+5.00"


def test_an_unjittered_run_that_is_not_the_committed_one_stops_the_script(tmp_path: Path) -> None:
    script = load_script(HERE / "online_noise.py", "online_noise_under_test")
    with open(tmp_path / "easy_online_runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trace", "scheduler", "mean_bounded_slowdown"])
        writer.writerow(["KTH-SP2", "easy++-online", 7.0])
    rows = _noise_rows("KTH-SP2", [30.0, 29.0], [35.0, 34.0])
    script.check_unjittered(tmp_path, rows[1:])  # 10 (1 - 0.3) = 7.0: equal, passes
    rows[1]["mean_bounded_slowdown"] = 7.0001
    with pytest.raises(SystemExit, match="committed 7.0"):
        script.check_unjittered(tmp_path, rows[1:])


def test_the_grid_range_against_the_authors_figure_and_the_cv_check(tmp_path: Path) -> None:
    script = load_script(HERE / "gaussier_grid.py", "gaussier_grid_under_test")

    def grid(trace: str, figures: list[float]) -> list[dict]:
        base = {
            "trace": trace,
            "point": None,
            "mean_bounded_slowdown": 10.0,
            "improvement_over_easy_fcfs_pct": 0.0,
        }
        return [base] + [
            {"trace": trace, "point": k, "loss": f"loss {k}", "improvement_over_easy_fcfs_pct": f}
            | {"mean_bounded_slowdown": 10.0 * (1 - f / 100)}
            for k, f in enumerate(figures, start=1)
        ]

    row = script.summary(grid("SDSC-SP2", [25.0, 12.0, 30.0]))
    assert (row["min"], row["at"], row["max"], row["at "]) == ("12.00", 2, "30.00", 3)
    assert row["inside [min, max]"] == "yes" and row["points above C-V"] == 1
    assert script.summary(grid("SDSC-BLUE", [25.0, 12.0, 30.0]))["inside [min, max]"] == "no"  # [05]
    runs = grid("KTH-SP2", [30.0, 20.0, 31.0]) + grid("CTC-SP2", [40.0, 45.0, 41.0])
    lines = script.all_four(tmp_path, runs)
    assert lines[0].endswith(": 1.") and lines[-1].startswith("| 3 | loss 3 | +1.00 | +1.00 |")
    with open(tmp_path / "gaussier_online_runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trace", "scheduler", "mean_bounded_slowdown"])
        writer.writerow(["KTH-SP2", "gaussier-online", 7.5])
    with pytest.raises(SystemExit, match="grid point 1 gives 7.0"):
        script.check_cv_point(tmp_path, grid("KTH-SP2", [30.0, 20.0]))
    script.check_cv_point(tmp_path, grid("KTH-SP2", [25.0, 20.0]))  # 10 (1 - 0.25) = 7.5: passes


def test_the_job_set_flag_reads_and_writes_that_sets_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--job-set full`` runs the full set and writes ``results/full/`` only; the default stays the
    published set; a cell without a committed single run is named and its check skipped; a job set
    that is not one is refused by argparse, naming the flag. (The simulations are faked: the flag's
    plumbing is what is tested.)"""
    from rush.studies import runtime_online_readings

    script = load_script(HERE / "online_noise.py", "online_noise_under_test")
    monkeypatch.setattr(script, "OUT", tmp_path)
    asked = []

    def fake_runs(trace: str, job_set: str, seeds: list[int]) -> list[dict]:
        asked.append((trace, job_set, seeds))
        easy = [30.0 + (s % 3) for s in seeds]
        return _noise_rows(trace, easy, [e + 5.0 + (s % 2) for s, e in enumerate(easy)])

    monkeypatch.setattr(runtime_online_readings, "online_noise_runs", fake_runs)
    script.main(["--job-set", "full", "--traces", "KTH-SP2", "--seeds", "8"])
    assert asked == [("KTH-SP2", "full", list(range(9)))]
    tables = ["online_noise", "online_noise_paired", "online_noise_runs"]
    written = sorted(f"{t}.{ext}" for t in tables for ext in ("csv", "md"))
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == written
    assert not (tmp_path / "published").exists()
    said = capsys.readouterr().out
    for scheduler in ("easy++-online", "gaussier-online"):
        assert f"KTH-SP2 {scheduler}: seed-0 check skipped (full/" in said
    full_runs = (tmp_path / "full" / "online_noise_runs.csv").read_text()

    script.main(["--traces", "KTH-SP2", "--seeds", "8"])  # the default: the published set
    assert asked[-1][1] == "published"
    assert sorted(p.name for p in (tmp_path / "published").iterdir()) == written
    assert (tmp_path / "full" / "online_noise_runs.csv").read_text() == full_runs
    assert script.results_dir("full") == tmp_path / "full"
    with pytest.raises(ValueError, match="choose from published, full"):
        script.results_dir("fulll")
    with pytest.raises(SystemExit):
        script.main(["--job-set", "fulll"])
    assert "--job-set" in capsys.readouterr().err


def test_the_grid_flags_choose_the_job_set_and_the_correction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Round 28: ``--job-set full --correction request`` runs the full set under correction to the
    request and writes ``results/full/gaussier_grid_request*`` only, its point 1 checked against the
    committed correct-to-request run; the defaults stay round 26's (published set, stepwise, the
    ``gaussier_grid*`` files); values that are not choices are refused by argparse, naming the flag.
    (The simulations are faked: the flags' plumbing is what is tested.)"""
    from rush.studies import runtime_online_readings

    script = load_script(HERE / "gaussier_grid.py", "gaussier_grid_under_test")
    monkeypatch.setattr(script, "OUT", tmp_path)
    asked = []

    def fake_grid(
        trace: str,
        job_set: str,
        correction: str | None = None,
        threshold: float | None = 200_000.0,
        jitter_seed: int = 0,
    ) -> list[dict]:
        asked.append((trace, job_set, correction, threshold))
        rows = [{"trace": trace, "jobs": 5, "point": None, "loss": None, "mean_bounded_slowdown": 10.0}]
        for k, f in enumerate([25.0, 12.0, 30.0], start=1):
            rows.append({"trace": trace, "jobs": 5, "point": k, "loss": f"loss {k}"})
            rows[-1] |= {"mean_bounded_slowdown": 10.0 * (1 - f / 100), "improvement_over_easy_fcfs_pct": f}
        rows[0]["improvement_over_easy_fcfs_pct"] = 0.0
        return rows

    monkeypatch.setattr(runtime_online_readings, "gaussier_grid_runs", fake_grid)
    (tmp_path / "full").mkdir()
    with open(tmp_path / "full" / "gaussier_online_runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trace", "scheduler", "mean_bounded_slowdown"])
        writer.writerow(["SDSC-BLUE", "gaussier-online", 9.9])  # not the request run's: ignored
        writer.writerow(["SDSC-BLUE", "gaussier-online (correct-to-request)", 7.5])
    script.main(["--job-set", "full", "--correction", "request", "--traces", "SDSC-BLUE"])
    assert asked == [("SDSC-BLUE", "full", "request", 200_000.0)]
    stems = ["gaussier_grid_request", "gaussier_grid_request_runs"]
    written = sorted(
        [f"{t}.{ext}" for t in stems for ext in ("csv", "md")] + ["gaussier_grid_request_all_four.md"]
    )
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == sorted(
        [*written, "gaussier_online_runs.csv"]
    )
    assert not (tmp_path / "published").exists()
    assert "[05]" in (tmp_path / "full" / "gaussier_grid_request.md").read_text()

    with open(tmp_path / "full" / "gaussier_online_runs.csv", "a", newline="") as fh:
        csv.writer(fh).writerow(["KTH-SP2", "gaussier-online (correct-to-request)", 7.0])
    with pytest.raises(SystemExit, match="committed gaussier-online \\(correct-to-request\\) 7.0"):
        script.main(["--job-set", "full", "--correction", "request", "--traces", "KTH-SP2"])

    script.main(["--traces", "SDSC-BLUE"])  # the defaults: the published set, stepwise
    assert asked[-1] == ("SDSC-BLUE", "published", None, 200_000.0)
    assert sorted(p.name for p in (tmp_path / "published").iterdir()) == sorted(
        [f"{t}.{ext}" for t in ("gaussier_grid", "gaussier_grid_runs") for ext in ("csv", "md")]
        + ["gaussier_grid_all_four.md"]
    )
    for flag, value in (("--job-set", "fulll"), ("--correction", "requests")):
        with pytest.raises(SystemExit):
            script.main([flag, value])
        assert flag in capsys.readouterr().err


def test_no_starvation_threshold_runs_without_it_into_its_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """D28 (post hoc): ``--no-starvation-threshold`` asks for the grid with no threshold (None) and
    writes ``*_nothreshold*`` files beside the committed ones, which it leaves alone; point 1 has no
    committed run to be checked against, and the script says so."""
    from rush.studies import runtime_online_readings

    script = load_script(HERE / "gaussier_grid.py", "gaussier_grid_under_test")
    monkeypatch.setattr(script, "OUT", tmp_path)
    asked = []

    def fake_grid(
        trace: str, job_set: str, correction=None, threshold=200_000.0, jitter_seed=0
    ) -> list[dict]:
        asked.append((correction, threshold, jitter_seed))
        rows = [{"trace": trace, "point": None, "loss": None, "mean_bounded_slowdown": 10.0}]
        rows[0]["improvement_over_easy_fcfs_pct"] = 0.0
        return rows + [
            {"trace": trace, "point": k, "loss": f"loss {k}", "improvement_over_easy_fcfs_pct": 5.0 * k}
            | {"mean_bounded_slowdown": 10.0 - k / 2}
            for k in (1, 2)
        ]

    monkeypatch.setattr(runtime_online_readings, "gaussier_grid_runs", fake_grid)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "gaussier_grid_request.csv").write_text("kept\n")
    with open(tmp_path / "full" / "gaussier_online_runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trace", "scheduler", "mean_bounded_slowdown"])
        writer.writerow(["SDSC-BLUE", "gaussier-online (correct-to-request)", 3.0])  # would stop a check
    argv = ["--job-set", "full", "--correction", "request", "--traces", "SDSC-BLUE"]
    script.main([*argv, "--no-starvation-threshold"])
    assert asked == [("request", None, 0)]
    assert "point 1 not checked" in capsys.readouterr().out
    names = sorted(p.name for p in (tmp_path / "full").iterdir())
    assert "gaussier_grid_request_nothreshold_runs.csv" in names
    assert "gaussier_grid_request_nothreshold_all_four.md" in names
    assert (tmp_path / "full" / "gaussier_grid_request.csv").read_text() == "kept\n"
    with pytest.raises(SystemExit, match="committed gaussier-online \\(correct-to-request\\) 3.0"):
        script.main(argv)  # with the threshold, point 1 is checked
    assert asked[-1] == ("request", 200_000.0, 0)
    script.main([*argv, "--no-starvation-threshold", "--jitter-seed", "3"])  # D28b
    assert asked[-1] == ("request", None, 3)
    assert (tmp_path / "full" / "gaussier_grid_request_nothreshold_seed3_runs.csv").exists()
    with pytest.raises(SystemExit):
        script.main([*argv, "--jitter-seed", "-1"])
    assert "argument --jitter-seed: -1 is below 0" in capsys.readouterr().err


def test_the_grid_runs_pass_the_threshold_and_correction_to_both_schedulers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``gaussier_grid_runs(threshold=None)``: EASY-FCFS and every point's scheduler without a
    starvation threshold, the correction as asked; by default both keep Table 6.6's 200,000 s."""
    from rush.studies import runtime_online_readings as readings

    seen, jitter = [], []
    monkeypatch.setattr(readings, "load", lambda trace, job_set: "workload")
    monkeypatch.setattr(
        readings, "_easy_fcfs", lambda t, j, w, threshold: seen.append(("base", threshold)) or {}
    )
    monkeypatch.setattr(readings, "_predictions", lambda row, workload: None)
    monkeypatch.setattr(readings, "_against_easy_fcfs", lambda base, rows: None)

    def fake_row(trace, job_set, workload, label, config, online=None, study=None) -> dict:
        seen.append((config.threshold, config.prediction_correction))
        jitter.append(study.get("prediction_jitter_seed"))
        return {}

    monkeypatch.setattr(readings, "_row", fake_row)
    readings.gaussier_grid_runs(
        "SDSC-BLUE", "full", points=readings.GRID[:2], correction="request", threshold=None
    )
    assert seen == [("base", None), (None, "request"), (None, "request")]
    seen.clear()
    readings.gaussier_grid_runs("SDSC-BLUE", "full", points=readings.GRID[:1])
    assert seen == [("base", 200_000.0), (200_000.0, "stepwise")]
    assert jitter == [None, None, None]  # no jitter asked: none set
    readings.gaussier_grid_runs("SDSC-BLUE", "full", points=readings.GRID[:2], jitter_seed=4)
    assert jitter[-2:] == [4, 4]
