"""``rush sweep run``: a grid of real simulations, and hostile grid files (exit 2, nothing written)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from tests.studies.sweep.helpers import run, write_swf


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_swf(tmp_path / "tiny.swf")


def test_grid_runs_and_resumes(tmp_path: Path, trace: Path, capsys, monkeypatch) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'traces = ["{trace}"]\nslice = "week"\npolicies = ["FCFS", "SPF"]\n'
        'backfill = ["easy", "none"]\nthresholds = [200000, "none"]\n'
    )
    out = tmp_path / "out"
    code, stdout, err = run(
        ["sweep", "run", str(grid), "--out", str(out), "--cluster", "serial", "--json"], capsys, monkeypatch
    )
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["cells"] == 2 * 2 * 2 * 2 and summary["computed"] == 16 and summary["failed"] == 0
    with (out / "sweep.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["week"] for r in rows} == {"0", "2"}  # the empty week 1 is left out by "all"
    assert {r["jobs"] for r in rows if r["week"] == "0"} == {"4"}
    assert all(float(r["mean_bounded_slowdown"]) >= 1 for r in rows)
    fcfs = {(r["week"], r["backfill"]): r["mean_wait"] for r in rows if r["policy"] == "FCFS"}
    assert len(fcfs) == 4
    code, stdout, _ = run(
        ["sweep", "run", str(grid), "--out", str(out), "--cluster", "serial", "--json"], capsys, monkeypatch
    )
    assert code == 0 and json.loads(stdout)["reused"] == 16 and json.loads(stdout)["computed"] == 0


def test_whole_trace_json_grid_on_a_local_cluster(tmp_path: Path, trace: Path, capsys, monkeypatch) -> None:
    pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install 'rush[dask]')")
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"traces": [str(trace)], "policies": ["FCFS", "SAF"], "procs": 16}))
    out = tmp_path / "out"
    code, stdout, err = run(
        ["sweep", "run", str(grid), "--out", str(out), "--cluster", "local:2"], capsys, monkeypatch
    )
    assert code == 0, err
    assert "FCFS" in stdout and "cells 2: computed 2" in stdout
    description = json.loads((out / "sweep.json").read_text())
    assert description["cluster"] == "local:2" and description["grid"] == str(grid)
    with (out / "sweep.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["jobs"] for r in rows] == ["6", "6"] and {r["procs"] for r in rows} == {"16"}


HOSTILE = [
    (
        'traces = ["{t}"]\npolicies = ["FCFS"]\npolicy = "SPF"\n',
        "unknown key 'policy'",
        "did you mean 'policies'",
    ),
    ('traces = ["{t}"]\npolicies = []\n', "'policies': is empty", None),
    ('traces = []\npolicies = ["FCFS"]\n', "'traces': is empty", None),
    ('policies = ["FCFS"]\n', "missing key 'traces'", None),
    ('traces = ["{t}"]\npolicies = 3\n', "bad value 3 for 'policies[0]'", None),
    ('traces = ["{t}"]\npolicies = ["NOPE"]\n', "policies[0]", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\nbackfill = ["easyy"]\n', "unknown backfilling", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\nthresholds = [nan]\n', "thresholds[0]", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\nthresholds = [true]\n', "thresholds[0]", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\nthresholds = [-5]\n', "thresholds[0]", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\ntau = "x"\n', "bad value 'x' for 'tau'", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\nprocs = 0\n', "bad value 0 for 'procs'", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\nweeks = [0]\n', "weeks needs slice", None),
    (
        'traces = ["{t}"]\npolicies = ["FCFS"]\nslice = "week"\nweeks = [true]\n',
        "bad value True for 'weeks[0]'",
        None,
    ),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\nslice = "week"\nweeks = [1]\n', "week 1 of", "has no jobs"),
    (
        'traces = ["{t}"]\npolicies = ["FCFS"]\nslice = "week"\nweeks = [9]\n',
        "week 9 of",
        "outside the trace",
    ),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\nslice = "month"\n', "bad value 'month' for 'slice'", None),
    ('traces = ["{t}", "{t}"]\npolicies = ["FCFS"]\n', "lists an entry twice", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\n[slurm]\nqueue = 3\n', "bad value 3 for 'slurm.queue'", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"]\n[slurm]\ncpus = 3\n', "unknown key 'slurm.cpus'", None),
    ('traces = ["{t}"]\npolicies = ["FCFS"\n', "grid.toml", None),  # TOML syntax
    ('traces = ["/nonexistent/x.swf"]\npolicies = ["FCFS"]\n', "x.swf", None),
]


@pytest.mark.parametrize(("text", "message", "also"), HOSTILE)
def test_hostile_grid_is_refused_with_nothing_written(
    tmp_path: Path, trace: Path, capsys, monkeypatch, text: str, message: str, also: str | None
) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(text.replace("{t}", str(trace)))
    out = tmp_path / "out"
    code, stdout, err = run(
        ["sweep", "run", str(grid), "--out", str(out), "--cluster", "serial"], capsys, monkeypatch
    )
    assert code == 2, err
    assert message in err and (also is None or also in err)
    assert "fix:" in err or "No such file" in err or "not found" in err
    assert not out.exists() and stdout == ""


def test_product_over_the_cap_is_refused_before_any_work(
    tmp_path: Path, trace: Path, capsys, monkeypatch
) -> None:
    grid = tmp_path / "grid.json"
    policies = [f"LINEAR:q={i}" for i in range(1, 1001)]
    grid.write_text(
        json.dumps({"traces": [str(trace)], "policies": policies, "thresholds": list(range(1001))})
    )
    out = tmp_path / "out"
    code, _, err = run(["sweep", "run", str(grid), "--out", str(out)], capsys, monkeypatch)
    assert code == 2 and "1001000 cells, over the cap of 1000000" in err and not out.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2]", "a grid is an object"),
        (b"{" * 100_000, "not a JSON grid"),
        (b'{"traces": ["\xff"]}', "not a JSON grid"),
        (b"", "not a JSON grid"),
    ],
)
def test_hostile_json_grid(tmp_path: Path, capsys, monkeypatch, content: bytes, message: str) -> None:
    grid = tmp_path / "grid.json"
    grid.write_bytes(content)
    out = tmp_path / "out"
    code, _, err = run(["sweep", "run", str(grid), "--out", str(out)], capsys, monkeypatch)
    assert code == 2 and message in err and not out.exists()


def test_bad_command_line(tmp_path: Path, trace: Path, capsys, monkeypatch) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(f'traces = ["{trace}"]\npolicies = ["FCFS"]\n')
    taken = tmp_path / "file"
    taken.write_text("x")
    for argv, message in [
        (["--out", str(taken)], "is not a directory"),
        (["--out", str(tmp_path / "o"), "--cluster", "locl"], "unknown cluster"),
        (["--out", str(tmp_path / "o"), "--workers", "0"], "workers must be"),
        (["--out", str(tmp_path / "o"), "--batch", "0"], "batch must be"),
        (["--out", str(tmp_path / "o"), "--slurm-jobs", "0"], "bad value 0 for 'slurm.jobs'"),
    ]:
        code, _, err = run(["sweep", "run", str(grid), *argv], capsys, monkeypatch)
        assert code == 2 and message in err, (argv, err)
    assert not (tmp_path / "o").exists() and taken.read_text() == "x"


def test_grid_directory_and_fifo(tmp_path: Path, capsys, monkeypatch) -> None:
    fifo = tmp_path / "grid.toml"
    os.mkfifo(fifo)
    for path in (tmp_path, fifo):
        code, _, err = run(["sweep", "run", str(path), "--out", str(tmp_path / "o")], capsys, monkeypatch)
        assert code == 2 and "fix:" in err
    assert not (tmp_path / "o").exists()
