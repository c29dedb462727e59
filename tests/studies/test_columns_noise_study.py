"""Round 28 of ``sim/runtime_predictions``: Table 6.6's columns over seeds on the full job set.

* ``paired_seeds.py --job-set full``: the full set's runs, checked against and written to
  ``results/full/`` only; the default (published) call unchanged; a wrong job set refused (exit 2);
* ``online_noise.py --columns log``: the regression columns' runs, their seed-0 check against
  ``schedulers.csv`` and their summary; ``jittered_log_predictions`` moves a job as the loop does;
* ``columns_noise.py``: each column's spread and its two verdicts against SPF-CI.

The simulations are faked where a script is tested (the study's own are tested in tests/simulator)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.script_module import load_script

HERE = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions"


def _write(path: Path, header: list[str], rows: list[list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def test_paired_seeds_full_job_set_reads_and_writes_results_full(tmp_path, monkeypatch, capsys) -> None:
    script = load_script(HERE / "paired_seeds.py", "paired_seeds_under_test")
    asked = []

    def rows(trace, seeds, rule, **kw):
        asked.append(kw)
        return [
            {"trace": trace, "scheduler": name, "tie_seed": s, "improvement_over_easy_fcfs_pct": v + k}
            | {"fcfs_ci_kills": 9}
            for k, s in enumerate(("arrival", 1, 2))
            for name, v in ((script.SPF_CI, 60.0), (rule, 61.0))
        ]

    monkeypatch.setattr(script, "HERE", tmp_path)
    monkeypatch.setattr(script, "run_trace", rows)
    rule = "SPF-CI one step where confident"
    argv = ["paired_seeds.py", "--traces", "KTH-SP2", "--seeds", "1-2", "--rule", rule, "--out", "p_h18"]
    monkeypatch.setattr("sys.argv", [*argv, "--job-set", "full"])
    script.main()
    assert asked == [{"job_set": "full"}]
    assert sorted(p.name for p in (tmp_path / "results" / "full").iterdir()) == ["p_h18.csv", "p_h18.md"]
    assert not (tmp_path / "results" / "published").exists()
    assert "| KTH-SP2 | 2 |" in (tmp_path / "results" / "full" / "p_h18.md").read_text()
    monkeypatch.setattr("sys.argv", argv)  # the default: the published set, called as before
    script.main()
    assert asked[-1] == {} and (tmp_path / "results" / "published" / "p_h18.csv").exists()
    # The full set's arrival runs are checked against its own rush_q.csv, not the published figures.
    _write(
        tmp_path / "results" / "full" / "rush_q.csv",
        ["trace", "scheduler", "improvement_over_easy_fcfs_pct"],
        [["KTH-SP2", script.SPF_CI, 63.5]],
    )
    assert script._committed("KTH-SP2", script.SPF_CI, "full") == 63.5
    assert script._committed("KTH-SP2", script.SPF_CI) == 64.69
    with pytest.raises(SystemExit, match="results/full/rush_q.csv"):
        script._committed("CTC-SP2", script.SPF_CI, "full")
    monkeypatch.setattr("sys.argv", [*argv, "--job-set", "fulll"])
    with pytest.raises(SystemExit) as exit_:
        script.main()
    assert exit_.value.code == 2 and "--job-set" in capsys.readouterr().err


def test_log_predictions_move_as_the_loop_moves_an_online_one() -> None:
    from rush.core.runtime_predictions import PREDICTION_JITTER, jittered_prediction
    from rush.studies.runtime_online_readings import jittered_log_predictions

    predicted = np.array([1.0, 50.0, 99.0, 100.0, 3600.0, 7.5])
    requested = np.array([100.0, 100.0, 100.0, 100.0, 7200.0, 10.0])
    assert jittered_log_predictions(predicted, requested, 0) is predicted
    moved = jittered_log_predictions(predicted, requested, 3)
    want = [
        jittered_prediction(p, r, 3, j) for j, (p, r) in enumerate(zip(predicted, requested, strict=True))
    ]
    assert moved.tolist() == want
    assert np.all(np.abs(moved / predicted - 1) <= PREDICTION_JITTER) and np.all(moved <= requested)
    assert not np.array_equal(moved, predicted)
    assert not np.array_equal(moved, jittered_log_predictions(predicted, requested, 4))


def _log_rows(trace: str, easy: list[float], gaussier: list[float]) -> list[dict]:
    rows = [{"trace": trace, "scheduler": "EASY-FCFS", "seed": None, "mean_bounded_slowdown": 10.0}]
    for name, figures in (("easy++", easy), ("gaussier", gaussier)):
        for seed, f in enumerate(figures):
            rows.append(
                {"trace": trace, "scheduler": name, "seed": seed, "improvement_over_easy_fcfs_pct": f}
                | {"mean_bounded_slowdown": 10.0 * (1 - f / 100)}
            )
    return rows


def test_the_log_columns_flag_checks_seed_0_and_writes_its_own_tables(tmp_path, monkeypatch, capsys) -> None:
    from rush.studies import runtime_online_readings

    script = load_script(HERE / "online_noise.py", "online_noise_under_test")
    monkeypatch.setattr(script, "OUT", tmp_path)
    easy = [30.0, 29.0, 31.0, 30.0, 28.0, 32.0, 30.0, 29.0, 31.0]
    gaussier = [20.0, 25.0, 26.0, 25.0, 24.0, 26.0, 25.0, 24.0, 25.0]
    monkeypatch.setattr(
        runtime_online_readings,
        "log_noise_runs",
        lambda trace, job_set, seeds: _log_rows(trace, easy, gaussier),
    )
    schedulers = tmp_path / "full" / "schedulers.csv"
    header = ["trace", "scheduler", "mean_bounded_slowdown"]
    _write(schedulers, header, [["KTH-SP2", "easy++", 7.0], ["KTH-SP2", "gaussier", 8.0]])
    script.main(["--job-set", "full", "--columns", "log", "--traces", "KTH-SP2", "--seeds", "8"])
    names = sorted(p.name for p in (tmp_path / "full").iterdir())
    assert names == [
        "log_noise.csv",
        "log_noise.md",
        "log_noise_runs.csv",
        "log_noise_runs.md",
        "schedulers.csv",
    ]
    table = {r["scheduler"]: r for r in csv.DictReader((tmp_path / "full" / "log_noise.csv").open())}
    e, g = table["easy++"], table["gaussier"]
    assert (e["jitter mean"], e["jitter sd"], e["unjittered - mean, sds"]) == ("30.00", "1.31", "+0.00")
    assert e["gap to authors"] == "-6.00" and e["vs authors"] == "exceeds"  # [36], 2 sd = 2.62
    assert g["unjittered - mean, sds"] == "-6.61" and g["gap to authors"] == "-19.00"  # [44]
    _write(schedulers, header, [["KTH-SP2", "easy++", 7.0001], ["KTH-SP2", "gaussier", 8.0]])
    with pytest.raises(SystemExit, match="KTH-SP2 easy\\+\\+: unjittered 7.0, committed 7.0001"):
        script.main(["--job-set", "full", "--columns", "log", "--traces", "KTH-SP2", "--seeds", "8"])
    _write(schedulers, header, [["KTH-SP2", "easy++", 7.0]])
    with pytest.raises(SystemExit, match="gaussier: no committed row"):
        script.main(["--job-set", "full", "--columns", "log", "--traces", "KTH-SP2", "--seeds", "8"])
    with pytest.raises(SystemExit):
        script.main(["--columns", "weekly"])
    assert "--columns" in capsys.readouterr().err


def _columns_files(out: Path, spf: list[float], h18: list[float], easy: list[float]) -> None:
    """Seed 0 / arrival first, then seeds 1..N; the jittered runs only for EASY++'s log column."""
    seeds = ["arrival", *range(1, len(spf))]
    paired = [
        ["KTH-SP2", name, s, v]
        for name, figures in (("SPF-CI (classifier)", spf), ("SPF-CI one step where confident", h18))
        for s, v in zip(seeds, figures, strict=True)
    ]
    _write(
        out / "paired_seeds_h18.csv",
        ["trace", "scheduler", "tie_seed", "improvement_over_easy_fcfs_pct"],
        paired,
    )
    header = ["trace", "scheduler", "seed", "improvement_over_easy_fcfs_pct"]
    log = [["KTH-SP2", "EASY-FCFS", "", 0.0]] + [["KTH-SP2", "easy++", s, v] for s, v in enumerate(easy)]
    _write(out / "log_noise_runs.csv", header, log)
    _write(out / "online_noise_runs.csv", header, [])
    _write(out / "table_6_6.csv", ["trace", "fcfs_ci_pct"], [["KTH-SP2", 55.0], ["CTC-SP2", 65.0]])


def test_columns_noise_reads_each_column_against_spf_ci_by_both_rules(tmp_path, capsys) -> None:
    script = load_script(HERE / "columns_noise.py", "columns_noise_under_test")
    spf = [63.5, 62.0, 64.0, 63.0, 61.0]  # arrival, then seeds 1-4: mean 62.5, sd 1.29
    h18 = [63.7, 62.5, 64.4, 63.6, 61.5]  # paired: +0.5 +0.4 +0.6 +0.5 (sd 0.08)
    easy = [34.6, 30.0, 33.0, 35.0, 31.0]
    _columns_files(tmp_path, spf, h18, easy)
    rows = {r["scheduler"]: r for r in script.table(tmp_path)}
    said = capsys.readouterr().out
    assert "KTH-SP2 Gaussier online: no seeded runs committed: skipped" in said
    assert "CTC-SP2: no SPF-CI seeds" in said
    assert list(rows) == ["SPF-CI", "EASY++ (log history)", "H18", "FCFS-CI"]
    s, h, e, f = rows["SPF-CI"], rows["H18"], rows["EASY++ (log history)"], rows["FCFS-CI"]
    assert (s["single run"], s["mean"], s["sd"], s["2-sd verdict"]) == ("63.50", "62.50", "1.29", "-")
    # A true pair: +0.5 with an sd of 0.08 is beyond both rules, though inside either column's sd.
    assert (h["minus SPF-CI: mean"], h["2-sd verdict"], h["t verdict"]) == ("+0.50", "above", "above")
    assert e["mean"] == "32.25" and e["2-sd verdict"] == "below" and e["single run"] == "34.60"
    # FCFS-CI has one run: its sd is 0, its differences carry SPF-CI's noise alone.
    assert (f["sd"], f["minus SPF-CI: mean"], f["sd of the differences"]) == ("0.00", "-7.50", "1.29")
    assert f["2-sd verdict"] == "below" and f["mechanism"] == "none (single run)"
    # Level under 2 sd, but the mean's interval excludes 0: the two rules can disagree.
    _columns_files(tmp_path, spf, [63.7, 63.0, 63.0, 64.0, 61.0], easy)  # +1 -1 +1 0: level both
    h = {r["scheduler"]: r for r in script.table(tmp_path)}["H18"]
    assert (h["2-sd verdict"], h["t verdict"]) == ("level", "level")
    assert script.verdicts([1.0, 2.0, 0.5, 2.5]) == ("[+0.05, +2.95]", "level", "above")
    assert script.verdicts([-5.0, -6.0, -5.0, -6.0])[1:] == ("below", "below")


def test_tie_breaks_leave_fcfs_ordered_runs_as_they_are_and_move_spf() -> None:
    """Why EASY-FCFS and FCFS-CI carry no seeded noise in round 28: D15's tie-breaks act through
    the ranking keys, which FCFS (queue and scan by arrival) never reads; under SPF they move the
    run on the same trace (so the check can fail)."""
    from rush.core.config import CoreConfig
    from rush.core.runtime_predictions import random_tie_breaks
    from rush.simulator.engine import SimInputs, simulate
    from rush.simulator.metrics import compute_metrics
    from tests.models.fixtures import synthetic_workload

    workload = synthetic_workload(700)
    keys = random_tie_breaks(np.asarray(workload.requested_time, dtype=np.float64), 1)

    def bsld(policy: str, rank: np.ndarray | None) -> float:
        run = simulate(
            workload, CoreConfig.from_names(policy, "easy", 200_000.0), SimInputs(rank_estimate=rank)
        )
        return compute_metrics(run, tau=10.0)["mean_bounded_slowdown"]

    assert bsld("FCFS", keys) == bsld("FCFS", None)
    assert bsld("SPF", keys) != bsld("SPF", None)
