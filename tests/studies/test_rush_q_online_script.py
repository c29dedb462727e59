"""``sim/runtime_predictions/rush_q_online.py``: its flags and its verdicts (round 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.script_module import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "rush_q_online.py"


@pytest.mark.parametrize(
    "argv",
    [
        ["--traces", "FOO"],
        ["--job-set", "all"],
        ["--iterations", "0"],
        ["--out", "../elsewhere"],
        ["--until", "7pm"],
        ["--schedulers", "rush-Q,no such scheduler"],
        ["--schedulers", " , "],
    ],
)
def test_bad_flags_are_refused_with_exit_2_and_the_flag_named(argv, capsys) -> None:
    script = load_script(SCRIPT, "rush_q_online")
    with pytest.raises(SystemExit) as exit_:
        script.main(argv)
    assert exit_.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_an_unknown_scheduler_is_refused_before_any_trace_is_loaded(monkeypatch, capsys) -> None:
    from rush.workload import catalogue

    def no_load(*args, **kwargs):
        raise AssertionError("a trace was loaded before the flags were checked")

    monkeypatch.setattr(catalogue, "load_trace", no_load)
    script = load_script(SCRIPT, "rush_q_online")
    with pytest.raises(SystemExit) as exit_:
        script.main(["--traces", "KTH-SP2", "--schedulers", "rush-Q,SPF-CI (typo)"])
    assert exit_.value.code == 2
    said = capsys.readouterr().err
    assert "--schedulers" in said and "KTH-SP2 'SPF-CI (typo)'" in said and "'rush-Q'" not in said
    assert script.has_committed_row("KTH-SP2", "rush-Q")


def test_the_committed_rows_are_looked_up_in_the_job_sets_own_rush_q(monkeypatch, capsys) -> None:
    from rush.workload import catalogue

    def no_load(*args, **kwargs):
        raise AssertionError("a trace was loaded")

    monkeypatch.setattr(catalogue, "load_trace", no_load)
    script = load_script(SCRIPT, "rush_q_online")
    # SAF-CI has a committed CTC-SP2 row in the published set's rush_q.csv, none in the full set's.
    flags = ["--traces", "CTC-SP2", "--schedulers", "SAF-CI (classifier)"]
    with pytest.raises(SystemExit) as exit_:
        script.main(["--job-set", "full", *flags])
    assert exit_.value.code == 2
    assert "results/full/rush_q.csv" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="a trace was loaded"):
        script.main(flags)  # the default, published: the check passes and the trace is loaded
    with pytest.raises(AssertionError, match="a trace was loaded"):
        script.main(
            ["--job-set", "full", "--traces", "CTC-SP2", "--schedulers", "SPF-CI one step where confident"]
        )


def _run(iteration: int, figure: float, share: float = 0.55, **check) -> dict:
    return {
        "iteration": iteration,
        "improvement_over_easy_fcfs_pct": figure,
        "false_small_kills": 100,
        "within_factor_two": share,
        **{f"check_{k}": v for k, v in check.items()},
    }


def test_the_verdicts_are_the_designs_against_round_26s_noise() -> None:
    script = load_script(SCRIPT, "rush_q_online")
    sd = script.yardstick("KTH-SP2")
    assert sd == pytest.approx(2.00, abs=0.005)  # gaussier-online's, the larger of the two
    log = 63.0
    close = [
        _run(1, log),
        _run(2, log + 1.0),
        _run(3, log - 1.5),
        _run(4, log + 0.5, converged=False, exact_share=0.05),
    ]
    line = script.summary("KTH-SP2", "rush-Q", close)
    assert line["online mean - log"] == pytest.approx(0.0)
    assert line["HQ1 (not converged, prefix < 10 %)"] == "holds"
    assert line["HQ2 (each within 2 sd, mean within 1 sd)"] == "holds"
    assert line["HQ3 (range <= 2 sd)"] == "holds"
    far = [
        _run(1, log),
        _run(2, log + 2 * sd + 0.1),
        _run(3, log),
        _run(4, log, 0.50, converged=True, exact_share=1.0),
    ]
    line = script.summary("KTH-SP2", "rush-Q", far)
    assert line["HQ1 (not converged, prefix < 10 %)"] == "refuted"
    assert line["HQ2 (each within 2 sd, mean within 1 sd)"] == "refuted"
    assert line["HQ3 (range <= 2 sd)"] == "refuted"
    assert line["HQ4 (factor-2 share moves <= 2 points)"] == "refuted"


def test_the_full_job_set_reads_its_own_spf_ci_and_noise_and_writes_its_own_tables(
    monkeypatch, tmp_path
) -> None:
    import shutil

    script = load_script(SCRIPT, "rush_q_online")
    assert script.yardstick("KTH-SP2", "full") == pytest.approx(3.02, abs=0.005)  # easy++-online's
    assert script.yardstick("KTH-SP2") == pytest.approx(2.00, abs=0.005)
    for job_set in script.JOB_SETS:
        (tmp_path / job_set).mkdir()
        for name in ("rush_q.csv", "online_noise.csv"):
            shutil.copy(script.RESULTS / job_set / name, tmp_path / job_set / name)
    monkeypatch.setattr(script, "RESULTS", tmp_path)
    runs = [_run(1, 63.0), _run(2, 64.0), _run(3, 62.0, converged=False, exact_share=0.05)]
    for run in runs:
        run |= {"trace": "KTH-SP2", "scheduler": "SPF-CI one step where confident"}
    script.write({("KTH-SP2", "SPF-CI one step where confident"): runs}, "online_test", "full")
    assert not (tmp_path / "published" / "online_test.csv").exists()
    line = (tmp_path / "full" / "online_test.csv").read_text().splitlines()
    assert len(line) == 2 and "KTH-SP2,SPF-CI one step where confident" in line[1]
    full = script.summary("KTH-SP2", "SPF-CI one step where confident", runs, "full")
    assert full["SPF-CI (ours)"] == pytest.approx(63.504, abs=0.001)  # the full set's SPF-CI
    assert full["sd (round 26)"] == pytest.approx(3.02, abs=0.005)
    published = script.summary("KTH-SP2", "SPF-CI one step where confident", runs)
    assert published["SPF-CI (ours)"] == pytest.approx(64.69, abs=0.005)
