"""Mixed policies (rush.models.policies.mixed, rush.studies.mixed) at tiny sizes, on real simulations.

The traces are small SWF files written here (a few dozen jobs a week on 16 processors, one week
left empty); every number comes from the real simulator through ``rush.studies.sweep.run_sweep``
(``cluster="serial"``: this process, except the one test that runs on a real LocalCluster).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rush.cli.main import app
from rush.errors import RushError
from rush.models.policies.mixed import (
    FEATURES_3,
    FEATURES_6,
    INDEX_POLICIES,
    MIXED,
    SIGNS,
    THRESHOLD,
    VERTEX_POLICIES,
    linear_weights,
    normalise,
    simplex_grid,
)
from rush.studies.mixed import StudyConfig, pure_ranking, run_study
from rush.studies.mixed_weeks import evaluate, load_trace_weeks, task
from rush.workload.model import Trace
from rush.workload.resample import WEEK
from rush.workload.swf import write_swf

PROCS = 16


def tiny_trace(path: Path, weeks: tuple[int, ...] = (0, 2, 3), jobs: int = 40, seed: int = 7) -> Path:
    """Bursty weeks (jobs in the weeks listed, none in the others) on a 16-processor machine."""
    rng = np.random.default_rng(seed)
    submit = np.concatenate([w * WEEK + np.sort(rng.uniform(0, 2 * 86400, jobs)) for w in weeks])
    n = len(submit)
    runtime = np.round(rng.lognormal(7.5, 1.2, n))
    req = np.round(runtime * rng.uniform(1.0, 4.0, n)) + 60
    procs = rng.choice([1, 2, 4, 8, 16], n, p=[0.35, 0.2, 0.2, 0.15, 0.1])
    trace = Trace.from_columns(
        n,
        job_id=np.arange(1, n + 1),
        submit=np.round(submit),
        runtime=runtime,
        alloc_procs=procs,
        req_procs=procs,
        req_time=req,
        user=rng.integers(1, 6, n),
        status=np.ones(n),
    )
    trace.header["MaxProcs"] = str(PROCS)
    write_swf(trace, path)
    return path


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    return tiny_trace(tmp_path / "tiny.swf")


def config(trace: Path, **kwargs) -> StudyConfig:
    base = dict(traces=[str(trace)], grid_steps=2, cma_generations=2, cma_popsize=4, cluster="serial")
    return StudyConfig(**(base | kwargs))


def test_simplex_grid_has_every_vertex_first_and_sums_to_one() -> None:
    grid = simplex_grid(3, 10)
    assert grid.shape == (66, 3)
    assert np.allclose(grid.sum(axis=1), 1.0) and (grid >= 0).all()
    assert {tuple(p) for p in grid[:3]} == {(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)}
    assert len({tuple(p) for p in grid}) == len(grid)
    with pytest.raises(RushError, match="grid"):
        simplex_grid(3, 0)


def test_normalise_keeps_signs_and_refuses_zero_or_nan() -> None:
    w = normalise([2.0, -1.0, 1.0])
    assert np.allclose(w, [0.5, -0.25, 0.25]) and math.isclose(np.abs(w).sum(), 1.0)
    assert np.allclose(normalise([-3.0]), [-1.0])
    for bad in ([0.0, 0.0, 0.0], [1.0, math.nan, 0.0], [math.inf, 1.0, 0.0], []):
        with pytest.raises(RushError, match="normalised"):
            normalise(bad)


def test_scaling_is_a_positive_rescaling_of_linear_weights(trace_file: Path) -> None:
    tw = load_trace_weeks(str(trace_file))
    raw = linear_weights([1.0, 2.0, 1.0], FEATURES_3, tw.scales)
    # LINEAR over (q, p, wait, rho, expansion, area, r, fairshare): weight/scale with the feature's sign.
    assert raw[0] == pytest.approx(0.25 / tw.scales.q)
    assert raw[1] == pytest.approx(0.5 / tw.scales.p)
    assert raw[2] == pytest.approx(-0.25 / tw.scales.wait)
    assert raw[3:] == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert tw.scales.wait == tw.scales.p  # wait is scaled by the requested-time scale
    with pytest.raises(RushError, match="features"):
        linear_weights([1.0], ["walltime"], tw.scales)


def test_each_vertex_is_its_pure_index_policy(trace_file: Path) -> None:
    """+-e_i over the 6 features order jobs like the 12 index policies (same weekly bsld)."""
    tw = load_trace_weeks(str(trace_file))
    weeks = [k for k in range(len(tw.weeks)) if tw.jobs(k)]
    seen = set()
    for i, feature in enumerate(FEATURES_6):
        for sign, name in zip((1.0, -1.0), VERTEX_POLICIES[feature], strict=True):
            w = np.zeros(6)
            w[i] = sign
            cell = {"trace": "t", "weeks": weeks, "policy": MIXED, "features": ",".join(FEATURES_6)}
            mixed = task(cell | {"weights": w.tolist(), "threshold": THRESHOLD}, {"t": tw})
            pure = task(cell | {"policy": name, "weights": [], "threshold": THRESHOLD}, {"t": tw})
            assert [r["mean_bsld"] for r in mixed] == pytest.approx([r["mean_bsld"] for r in pure]), name
            seen.add(name)
    assert seen == set(INDEX_POLICIES)
    assert set(SIGNS) == set(FEATURES_6)


def test_empty_week_is_skipped_with_its_reason(trace_file: Path) -> None:
    tw = load_trace_weeks(str(trace_file))
    assert tw.jobs(1) == 0 and tw.jobs(0) > 0
    from rush.core.policies import Policy

    rows = evaluate(tw, [0, 1], Policy("SAF"), THRESHOLD, 10.0)
    assert rows[1] == {"week": 1, "jobs": 0, "mean_bsld": None, "skipped": "no jobs in this week"}
    assert rows[0]["mean_bsld"] >= 1.0
    result = run_study(config(trace_file, methods=("grid",), weeks=99))  # capped at the trace's 4 weeks
    data = result["traces"][str(trace_file)]
    assert data["weeks_in_trace"] == data["weeks_selected"] == 4
    assert data["skipped_weeks"] == [{"week": 1, "reason": "no jobs in this week"}]
    assert [w["week"] for w in data["weeks"]] == [0, 2, 3]
    with pytest.raises(RushError, match="outside the trace"):
        evaluate(tw, [9], Policy("SAF"), THRESHOLD, 10.0)


def test_a_single_week_has_no_training_half_and_no_crash(trace_file: Path) -> None:
    result = run_study(config(trace_file, methods=("grid", "cmaes3"), weeks=1))
    data = result["traces"][str(trace_file)]
    assert data["train_weeks"] == [] and data["test_weeks"] == [0]
    for method in ("grid", "cmaes3"):
        summary = data["summary"][method]
        assert summary["w_train"] is None and math.isnan(summary["test_mean_bsld_train"])
        assert summary["mean_bsld_star"] >= 1.0


def test_grid_finds_the_best_point_of_each_week(trace_file: Path) -> None:
    result = run_study(config(trace_file, methods=("grid",), grid_steps=3))
    data = result["traces"][str(trace_file)]
    tw = load_trace_weeks(str(trace_file))
    grid = simplex_grid(3, 3)
    for week in data["weeks"]:
        k = week["week"]
        values = []
        for w in grid:
            cell = {
                "trace": "t",
                "weeks": [k],
                "policy": MIXED,
                "features": "q,p,wait",
                "weights": w.tolist(),
            }
            values.append(task(cell | {"threshold": THRESHOLD}, {"t": tw})[0]["mean_bsld"])
        m = week["methods"]["grid"]
        assert m["bsld_star"] == pytest.approx(min(values))
        assert m["w_star"] == pytest.approx(grid[int(np.argmin(values))].tolist())
        # The vertices are SQF, SPF and FCFS: the grid is never worse than the best of them.
        assert values[:3] == pytest.approx([week["pure"][n] for n in ("SQF", "SPF", "FCFS")])
        assert m["bsld_star"] <= min(week["pure"][n] for n in ("SQF", "SPF", "FCFS")) + 1e-9
        assert week["best_pure_bsld"] == min(week["pure"].values())
    # w*_train is the grid point best on average over the training weeks; greedy = last week's w*.
    weeks = data["weeks"]
    assert data["train_weeks"] == [0] and data["test_weeks"] == [2, 3]
    assert weeks[0]["methods"]["grid"]["bsld_train"] == pytest.approx(
        weeks[0]["methods"]["grid"]["bsld_star"]
    )
    assert math.isnan(weeks[0]["methods"]["grid"]["bsld_greedy"])


def test_cmaes_is_never_worse_than_its_start(trace_file: Path) -> None:
    result = run_study(config(trace_file, methods=("cmaes3", "cmaes6"), seed=3))
    data = result["traces"][str(trace_file)]
    tw = load_trace_weeks(str(trace_file))
    for method, features in (("cmaes3", FEATURES_3), ("cmaes6", FEATURES_6)):
        start = np.full(len(features), 1.0 / len(features))
        for week in data["weeks"]:
            cell = {"trace": "t", "weeks": [week["week"]], "policy": MIXED, "features": ",".join(features)}
            value = task(cell | {"weights": start.tolist(), "threshold": THRESHOLD}, {"t": tw})[0][
                "mean_bsld"
            ]
            m = week["methods"][method]
            assert m["bsld_star"] <= value + 1e-9
            assert math.isclose(np.abs(m["w_star"]).sum(), 1.0)
            assert len(m["w_star"]) == len(features)
        summary = data["summary"][method]
        assert summary["weeks"] == 3 and summary["features"] == list(features)
        assert summary["w_train"] is not None and math.isclose(np.abs(summary["w_train"]).sum(), 1.0)


def test_seeded_study_is_reproducible(trace_file: Path) -> None:
    a = run_study(config(trace_file, methods=("cmaes3",), seed=5))
    b = run_study(config(trace_file, methods=("cmaes3",), seed=5))
    assert a["traces"] == b["traces"]


def test_local_dask_cluster_gives_the_serial_results(trace_file: Path, tmp_path: Path) -> None:
    """The same study on a real LocalCluster (one worker), its sweep table kept and resumed."""
    serial = run_study(config(trace_file, methods=("grid",)))
    table = tmp_path / "sweep"
    dask = run_study(config(trace_file, methods=("grid",), cluster="local:1", sweep_dir=table))
    assert dask["traces"] == serial["traces"]
    assert (table / "sweep.csv").exists()
    resumed = run_study(config(trace_file, methods=("grid",), cluster="serial", sweep_dir=table))
    assert resumed["traces"] == serial["traces"]
    assert resumed["settings"]["sweep_cells_computed"] == 0


def test_ranking_lists_the_twelve_index_policies(trace_file: Path) -> None:
    result = pure_ranking(config(trace_file))
    ranking = result["ranking"][str(trace_file)]
    assert sorted(r["policy"] for r in ranking) == sorted(INDEX_POLICIES)
    assert [r["rank"] for r in ranking] == list(range(1, 13))
    values = [r["mean_bsld"] for r in ranking]
    assert values == sorted(values) and values[0] >= 1.0
    assert result["settings"]["threshold_days"] == pytest.approx(2.31)


def _cli(args: list[str]):
    return CliRunner().invoke(app, ["experiment", "mixed", *args])


def test_cli_json_shape_and_out_dir(trace_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--trace", str(trace_file), "--weeks", "all", "--method", "grid,cmaes3", "--grid-steps", "2"]
    args += [
        "--cma-generations",
        "1",
        "--cma-popsize",
        "3",
        "--cluster",
        "serial",
        "--json",
        "--out",
        str(out),
    ]
    result = _cli(args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"settings", "traces"}
    assert data["settings"]["methods"] == ["grid", "cmaes3"] and data["settings"]["threshold_days"] == 2.31
    trace = data["traces"][str(trace_file)]
    assert set(trace["summary"]) == {"grid", "cmaes3"}
    assert trace["skipped_weeks"] == [{"week": 1, "reason": "no jobs in this week"}]
    assert "week 1 skipped: no jobs in this week" in result.stderr
    week = trace["weeks"][0]
    assert set(week) >= {"week", "jobs", "split", "pure", "best_pure", "saf_bsld", "methods"}
    assert set(week["methods"]["grid"]) == {"w_star", "bsld_star", "bsld_train", "bsld_greedy"}
    assert week["methods"]["grid"]["bsld_greedy"] is None  # JSON null for "no previous week"
    for name in ("summary.json", "weekly.csv", "pure_weekly.csv", "summary.csv"):
        assert (out / "results" / name).stat().st_size > 0
    assert (out / "plots" / "tiny.swf_weekly_bsld.png").stat().st_size > 1000
    lines = (out / "results" / "weekly.csv").read_text().splitlines()
    assert len(lines) == 1 + 3 * 2  # header + 3 weeks x 2 methods

    ranking = _cli(["--ranking", "--trace", str(trace_file), "--cluster", "serial", "--json"])
    assert ranking.exit_code == 0, ranking.output
    assert len(json.loads(ranking.stdout)["ranking"][str(trace_file)]) == 12


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["--weeks", "0"], "--weeks"),
        (["--weeks", "abc"], "--weeks"),
        (["--weeks", "-3"], "--weeks"),
        (["--method", "xnes"], "--method"),
        (["--method", ""], "--method"),
        (["--seed", "-1"], "--seed"),
        (["--grid-steps", "0"], "--grid-steps"),
        (["--grid-steps", "100000"], "--grid-steps"),
        (["--cma-generations", "0"], "--cma-generations"),
        (["--cma-popsize", "1"], "--cma-popsize"),
        (["--threshold", "nan"], "--threshold"),
        (["--threshold", "soon"], "--threshold"),
        (["--tau", "0"], "--tau"),
        (["--procs", "0"], "--procs"),
        (["--cluster", "moon"], "cluster"),
        (["--workers", "0"], "workers"),
    ],
)
def test_bad_flags_are_errors_naming_the_flag_before_any_work(
    trace_file: Path, tmp_path: Path, args: list[str], where: str
) -> None:
    out = tmp_path / "out"
    result = _cli(["--trace", str(trace_file), "--cluster", "serial", "--out", str(out), *args])
    assert result.exit_code != 0
    assert isinstance(result.exception, RushError), result.output
    assert where in str(result.exception)
    assert not out.exists()


def test_missing_trace_exits_2_with_a_message(tmp_path: Path) -> None:
    """Through the real entry point: a RushError is exit status 2 and a message, no traceback."""
    env = os.environ | {"RUSH_TRACE_MIRROR": str(tmp_path)}
    missing = tmp_path / "none.swf"
    proc = subprocess.run(
        [sys.executable, "-m", "rush", "experiment", "mixed", "--trace", str(missing), "--cluster", "serial"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "no such trace" in proc.stderr and "Traceback" not in proc.stderr


# --- XNES (pypop7) -------------------------------------------------------------------------


def _start_value(tw, week: int, features: tuple[str, ...]) -> float:
    start = np.full(len(features), 1.0 / len(features))
    cell = {"trace": "t", "weeks": [week], "policy": MIXED, "features": ",".join(features)}
    return task(cell | {"weights": start.tolist(), "threshold": THRESHOLD}, {"t": tw})[0]["mean_bsld"]


def test_xnes_is_never_worse_than_its_start(trace_file: Path) -> None:
    pytest.importorskip("pypop7", reason="XNES needs pypop7 (pip install --no-deps pypop7==0.0.82)")
    result = run_study(config(trace_file, methods=("xnes3", "xnes6"), seed=3))
    data = result["traces"][str(trace_file)]
    tw = load_trace_weeks(str(trace_file))
    for method, features in (("xnes3", FEATURES_3), ("xnes6", FEATURES_6)):
        for week in data["weeks"]:
            m = week["methods"][method]
            assert m["bsld_star"] <= _start_value(tw, week["week"], features) + 1e-9
            assert math.isclose(np.abs(m["w_star"]).sum(), 1.0) and len(m["w_star"]) == len(features)
            # w* is a real policy: re-simulating it gives the value XNES reported.
            cell = {"trace": "t", "weeks": [week["week"]], "policy": MIXED, "features": ",".join(features)}
            again = task(cell | {"weights": m["w_star"], "threshold": THRESHOLD}, {"t": tw})[0]
            assert again["mean_bsld"] == pytest.approx(m["bsld_star"])
        summary = data["summary"][method]
        assert summary["weeks"] == 3 and summary["features"] == list(features)
        assert summary["w_train"] is not None and math.isclose(np.abs(summary["w_train"]).sum(), 1.0)
    assert result["settings"]["xnes_evaluations"] == {"3": 2 * 4, "6": 2 * 4}  # generations x popsize


def test_xnes_results_do_not_depend_on_the_other_methods_chosen(trace_file: Path) -> None:
    pytest.importorskip("pypop7", reason="XNES needs pypop7 (pip install --no-deps pypop7==0.0.82)")
    alone = run_study(config(trace_file, methods=("xnes3",), seed=5))["traces"][str(trace_file)]
    mixed = run_study(config(trace_file, methods=("grid", "xnes3"), seed=5))["traces"][str(trace_file)]
    assert [w["methods"]["xnes3"] for w in alone["weeks"]] == [w["methods"]["xnes3"] for w in mixed["weeks"]]


def test_xnes_runs_resume_from_the_sweep_table(trace_file: Path, tmp_path: Path) -> None:
    """A whole XNES run is one sweep cell: its best w comes back from the kept table, not rerun."""
    pytest.importorskip("pypop7", reason="XNES needs pypop7 (pip install --no-deps pypop7==0.0.82)")
    first = run_study(config(trace_file, methods=("xnes3",), sweep_dir=tmp_path / "sweep"))
    again = run_study(config(trace_file, methods=("xnes3",), sweep_dir=tmp_path / "sweep"))
    assert again["traces"] == first["traces"]
    assert first["settings"]["sweep_cells_computed"] > 0 and again["settings"]["sweep_cells_computed"] == 0


def test_run_xnes_keeps_the_start_on_a_flat_objective_and_spends_its_budget() -> None:
    pytest.importorskip("pypop7", reason="XNES needs pypop7 (pip install --no-deps pypop7==0.0.82)")
    from rush.models.policies.mixed_xnes import run_xnes

    calls: list[np.ndarray] = []

    def flat(w: np.ndarray) -> float:
        calls.append(w)
        return 4.0

    w, value, done = run_xnes(flat, 3, 12, 4, seed=1)
    assert value == 4.0 and np.allclose(w, [1 / 3, 1 / 3, 1 / 3])  # ties keep the start
    assert done == len(calls) == 13  # the start + the budget
    with pytest.raises(RushError, match="XNES budget"):
        run_xnes(flat, 3, 0, 4, seed=1)


def test_cli_tiny_xnes3_run(trace_file: Path, tmp_path: Path) -> None:
    pytest.importorskip("pypop7", reason="XNES needs pypop7 (pip install --no-deps pypop7==0.0.82)")
    out = tmp_path / "out"
    args = ["--trace", str(trace_file), "--method", "xnes3", "--cma-generations", "2", "--cma-popsize", "3"]
    result = _cli([*args, "--cluster", "serial", "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["settings"]["methods"] == ["xnes3"] and data["settings"]["xnes_evaluations"]["3"] == 6
    trace = data["traces"][str(trace_file)]
    assert set(trace["summary"]) == {"xnes3"}
    assert all(set(w["methods"]) == {"xnes3"} for w in trace["weeks"])
    lines = (out / "results" / "weekly.csv").read_text().splitlines()
    assert len(lines) == 1 + 3 and all(",xnes3," in line for line in lines[1:])


def _rush_without_pypop7(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    # pypop7 is installed here, so its absence is made by hiding it from the import system
    # (sys.modules[name] = None makes ``import`` raise ImportError) in a real rush process.
    code = (
        "import runpy, sys; sys.modules['pypop7'] = None; "
        f"sys.argv = ['rush', 'experiment', 'mixed', *{args!r}]; runpy.run_module('rush', run_name='__main__')"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=os.environ | {"RUSH_TRACE_MIRROR": str(tmp_path)},
        timeout=300,
    )


def test_missing_pypop7_exits_2_naming_the_install_and_other_methods_still_run(
    trace_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    base = ["--trace", str(trace_file), "--cluster", "serial", "--cma-generations", "1", "--cma-popsize", "3"]
    proc = _rush_without_pypop7([*base, "--method", "grid,xnes6", "--out", str(out)], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "pip install --no-deps pypop7==0.0.82" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()  # refused before any simulation or output
    ok = _rush_without_pypop7([*base, "--method", "grid,cmaes3", "--grid-steps", "2", "--json"], tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert set(json.loads(ok.stdout)["traces"][str(trace_file)]["summary"]) == {"grid", "cmaes3"}
