"""``sim/runtime_predictions/gaussier_grid_theirs.py`` (round 28): Gaussier et al.'s own runs of our
24 grid points read from their results format (the right scheduler, corrector and loss; a run that
stopped early kept but marked and left out), and the comparison with ours (Spearman over finished
points, distances, the C-V point's rank among theirs). Their files are synthetic here."""

from __future__ import annotations

from pathlib import Path

import pytest

from rush.studies.runtime_online_readings import GRID
from tests.script_module import load_script

HERE = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions"
NAMES = (
    "name length avgft maxft RMSFT avgstretch maxstretch RMSS avgbsld maxbsld RMSBSLD hash simultime "
    "scheduler corrector predictor prightside prightparam pleftside pleftparam pthreshold pweight"
).split()


def _line(i: int, scheduler: str, corrector: str, point: tuple | None, jobs: int, slowdown: float) -> str:
    cells = dict.fromkeys(NAMES, "NA") | {"name": f"run{i}", "length": str(jobs), "avgbsld": repr(slowdown)}
    cells |= {"scheduler": scheduler, "corrector": corrector}
    if point is not None:
        cells |= {"predictor": "predictor_sgdlinear"} | {
            k: str(v) for k, v in zip(NAMES[-6:], point, strict=True)
        }
    return " ".join([str(i), *(cells[n] for n in NAMES)])


def metrics_file(path: Path, figure, unfinished: set = frozenset()) -> Path:
    """EASY at AVEbsld 40 over 100 jobs; every grid point under both schedulers and three correctors,
    EASY-SJBF's at ``figure(point, corrector)`` % better than EASY; ``unfinished`` (point, corrector)
    runs end at job 60; a row with a missing cell is skipped as R writes none."""
    lines = [" " + " ".join(NAMES), _line(0, "easy_backfill_scheduler", "NA", None, 100, 40.0), "7 broken"]
    i = 1
    for k, point in enumerate(GRID, start=1):
        for corrector in ("tsafrir", "reqtime", "recursive_doubling"):
            for scheduler in ("easy_plus_plus_scheduler", "easy_prediction_backfill_scheduler"):
                f = figure(k, corrector) if scheduler == "easy_plus_plus_scheduler" else -50.0
                jobs = 60 if (k, corrector) in unfinished else 100
                lines.append(_line(i, scheduler, corrector, point, jobs, 40.0 * (1 - f / 100)))
                i += 1
    path.write_text("\n".join(lines) + "\n")
    return path


def test_their_runs_are_read_for_our_points_and_corrections(tmp_path: Path) -> None:
    script = load_script(HERE / "gaussier_grid_theirs.py", "gaussier_grid_theirs_under_test")
    figure = {
        "tsafrir": lambda k: 40.0 + k,
        "reqtime": lambda k: 20.0 - k,
        "recursive_doubling": lambda k: 0.0,
    }
    path = metrics_file(tmp_path / "m", lambda k, c: figure[c](k), unfinished={(1, "tsafrir")})
    rows = script.read_metrics(path)
    assert len(rows) == 1 + 24 * 6 and rows[0]["scheduler"] == "easy_backfill_scheduler"
    runs = script.extract("SDSC-BLUE", rows)
    assert [r["correction"] for r in runs] == ["stepwise"] * 24 + ["request"] * 24
    step = {r["point"]: r for r in runs if r["correction"] == "stepwise"}
    req = {r["point"]: r for r in runs if r["correction"] == "request"}
    assert step[2]["improvement"] == pytest.approx(42.0) and req[3]["improvement"] == pytest.approx(17.0)
    assert step[1]["finished"] == "no" and step[2]["finished"] == "yes" and req[1]["finished"] == "yes"
    assert step[1]["jobs"] == 60 and req[24]["loss"].startswith("over abs 100 / under abs 1")
    lines = path.read_text().splitlines()
    path.write_text("\n".join(line for line in lines if "reqtime" not in line or " run8 " in line) + "\n")
    with pytest.raises(ValueError, match="point 1 \\(reqtime\\): 0 rows"):
        script.extract("SDSC-BLUE", script.read_metrics(path))


def test_the_comparison_leaves_out_unfinished_runs_and_places_the_cv_point(tmp_path: Path) -> None:
    script = load_script(HERE / "gaussier_grid_theirs.py", "gaussier_grid_theirs_under_test")
    theirs, mine = [], {}
    for trace in script.TRACES:
        for correction in ("stepwise", "request"):
            for k in range(1, 25):
                f = 30.0 + k
                if trace == "SDSC-BLUE" and correction == "request" and k == 1:
                    f = 5.0  # their C-V run, low in their own grid
                finished = "no" if (trace, correction, k) == ("SDSC-BLUE", "stepwise", 1) else "yes"
                theirs.append(
                    {"trace": trace, "correction": correction, "point": str(k)}
                    | {"finished": finished, "improvement": str(f)}
                )
                mine[trace, correction, k] = 30.0 + k + (1.0 if k % 2 else -1.0)
    mine["SDSC-BLUE", "stepwise", 1] = 99.0  # against an unfinished run: left out
    table = {(r["trace"], r["correction"]): r for r in script.compare(theirs, mine)}
    blue, step = table["SDSC-BLUE", "request"], table["SDSC-BLUE", "stepwise"]
    assert blue["theirs C-V"] == "5.00" and blue["C-V rank in theirs (1 = lowest)"] == "1/24"
    assert blue["C-V |ours - theirs|"] == "27.00" and blue["max |ours - theirs|"] == "27.00"
    assert blue["median |ours - theirs|"] == "1.00" and blue["finished points"] == 24
    assert step["finished points"] == 23 and step["theirs C-V"] == "unfinished"
    assert step["max |ours - theirs|"] == "1.00" and step["C-V |ours - theirs|"] == ""
    assert float(table["KTH-SP2", "stepwise"]["Spearman"]) > 0.9
    assert table["KTH-SP2", "stepwise"]["theirs median"] == "42.50"


def test_a_metrics_dir_without_their_files_is_refused_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script(HERE / "gaussier_grid_theirs.py", "gaussier_grid_theirs_under_test")
    with pytest.raises(SystemExit):
        script.main(["--metrics-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert "--metrics-dir" in err and "KTH-SP2" in err


def test_our_runs_without_the_threshold_are_compared_where_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """D28: ``--no-starvation-threshold`` reads our ``*_nothreshold`` runs only, compares only the
    traces and corrections run, and writes its own table; with none, it is refused."""
    import csv

    script = load_script(HERE / "gaussier_grid_theirs.py", "gaussier_grid_theirs_under_test")
    monkeypatch.setattr(script, "OUT", tmp_path)
    with open(tmp_path / "gaussier_grid_theirs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trace", "correction", "point", "finished", "improvement"])
        for trace in script.TRACES:
            for k in range(1, 25):
                writer.writerow([trace, "request", k, "yes", 5.0 + k])
    with pytest.raises(SystemExit):
        script.main(["--no-starvation-threshold"])
    assert "(_nothreshold)" in capsys.readouterr().err
    with open(tmp_path / "gaussier_grid_request_nothreshold_runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trace", "point", "improvement_over_easy_fcfs_pct"])
        writer.writerow(["SDSC-BLUE", "", 0.0])  # EASY-FCFS's row
        writer.writerows([["SDSC-BLUE", k, 7.0 + k] for k in range(1, 25)])
    script.main(["--no-starvation-threshold"])
    table = list(csv.DictReader((tmp_path / "gaussier_grid_vs_theirs_nothreshold.csv").open()))
    assert [(r["trace"], r["correction"]) for r in table] == [("SDSC-BLUE", "request")]
    assert table[0]["C-V |ours - theirs|"] == "2.00" and float(table[0]["Spearman"]) == 1.0
    assert not (tmp_path / "gaussier_grid_vs_theirs.csv").exists()
    # D28b: a jitter seed's runs, into their own table; a negative seed is refused naming the flag.
    seeded = tmp_path / "gaussier_grid_request_nothreshold_seed2_runs.csv"
    seeded.write_text(
        (tmp_path / "gaussier_grid_request_nothreshold_runs.csv").read_text().replace(",8.0", ",30.0")
    )
    script.main(["--no-starvation-threshold", "--jitter-seed", "2"])
    table = list(csv.DictReader((tmp_path / "gaussier_grid_vs_theirs_nothreshold_seed2.csv").open()))
    assert table[0]["C-V |ours - theirs|"] == "24.00"
    with pytest.raises(SystemExit):
        script.main(["--jitter-seed", "-2"])
    assert "argument --jitter-seed: -2 is below 0" in capsys.readouterr().err
