"""Resume: a sweep killed mid-way, or with cells that failed, redoes only what is missing."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rush.studies.sweep import SweepOptions, cell_key, run_sweep
from tests.studies.sweep import tasks

REPO = Path(__file__).resolve().parents[3]


def data_lines(table: Path) -> list[str]:
    if not table.exists():
        return []
    return table.read_text().splitlines()[1:]


def keys_in(table: Path) -> list[str]:
    with table.open(newline="") as handle:
        return [row["key"] for row in csv.DictReader(handle)]


@pytest.mark.parametrize("cluster", ["serial", "local:1"])
def test_killed_sweep_resumes_without_recomputing(tmp_path: Path, cluster: str) -> None:
    if cluster != "serial":
        pytest.importorskip(
            "distributed", reason="dask.distributed is not installed (pip install 'rush[dask]')"
        )
    out = tmp_path / "out"
    table = out / "sweep.csv"
    n = 12
    code = f"from tests.studies.sweep.tasks import run_slow; run_slow({str(out)!r}, {n}, {cluster!r})"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, start_new_session=True, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 300  # a bound on a stuck start, not a timing assertion
        while len(data_lines(table)) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep ended before it could be interrupted"
        assert len(data_lines(table)) >= 3
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and the Dask processes it started
        proc.wait()
    finished = len(data_lines(table))
    assert 3 <= finished < n
    cells = [{"x": i, "sleep": 0.0} for i in range(n)]  # same keys: sleep is not part of the key
    rows = run_sweep(
        tasks.slow, cells, SweepOptions(out=out, cluster="serial", progress=False, key_fields=["x"])
    )
    assert rows.reused == finished and rows.computed == n - finished and rows.failed == 0
    assert sorted(keys_in(table)) == sorted(cell_key(c, ["x"]) for c in cells)  # each cell once


def test_torn_last_line_is_dropped_and_its_cell_rerun(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cells = [{"x": i} for i in range(5)]
    run_sweep(tasks.square, cells[:3], SweepOptions(out=out, cluster="serial", progress=False))
    table = out / "sweep.csv"
    with table.open("a") as handle:
        handle.write(f"{cell_key(cells[3])},3,9,x=")  # a crash in the middle of a write
    rows = run_sweep(tasks.square, cells, SweepOptions(out=out, cluster="serial", progress=False))
    assert rows.reused == 3 and rows.computed == 2
    assert table.read_text().endswith("\n")
    assert sorted(keys_in(table)) == sorted(cell_key(c) for c in cells)
    assert [r["square"] for r in rows] == [0, 1, 4, 9, 16]


def test_incomplete_multi_row_cell_is_rerun(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cells = [{"x": i} for i in range(3)]
    run_sweep(tasks.per_week, cells, SweepOptions(out=out, cluster="serial", progress=False))
    table = out / "sweep.csv"
    lines = table.read_text().splitlines(keepends=True)
    table.write_text("".join(lines[:-1]))  # cell 2 lost its last row
    rows = run_sweep(tasks.per_week, cells, SweepOptions(out=out, cluster="serial", progress=False))
    assert rows.reused == 2 and rows.computed == 1
    assert len(data_lines(table)) == 9


@pytest.mark.parametrize("cluster", ["serial", "local:2"])
def test_failed_cells_run_again_on_resume(tmp_path: Path, cluster: str) -> None:
    if cluster != "serial":
        pytest.importorskip(
            "distributed", reason="dask.distributed is not installed (pip install 'rush[dask]')"
        )
    out = tmp_path / "out"
    markers = tmp_path / "markers"
    markers.mkdir()
    cells = [{"x": i, "bad": [2, 7], "markers": str(markers)} for i in range(10)]
    options = SweepOptions(out=out, cluster=cluster, progress=False)
    first = run_sweep(tasks.fail_once, cells, options)
    assert first.failed == 2 and {r["x"] for r in first if r.get("error_type")} == {2, 7}
    second = run_sweep(tasks.fail_once, cells, options)
    assert second.failed == 0 and second.computed == 2 and second.reused == 8
    with (out / "sweep.csv").open(newline="") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 10 and not any(r["error_type"] for r in table)  # the error rows are gone
    assert [r["square"] for r in second] == [i * i for i in range(10)]


def test_no_resume_starts_afresh(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cells = [{"x": i} for i in range(3)]
    run_sweep(tasks.square, cells, SweepOptions(out=out, cluster="serial", progress=False))
    rows = run_sweep(
        tasks.square, cells, SweepOptions(out=out, cluster="serial", progress=False, resume=False)
    )
    assert rows.computed == 3 and rows.reused == 0 and len(data_lines(out / "sweep.csv")) == 3


def test_a_foreign_csv_is_not_taken_for_a_sweep(tmp_path: Path) -> None:
    from rush.errors import ConfigError

    out = tmp_path / "table.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match="not a rush sweep table"):
        run_sweep(tasks.square, [{"x": 1}], SweepOptions(out=out, cluster="serial", progress=False))
    assert out.read_text() == "a,b\n1,2\n"


def test_hostile_table_rows_are_recomputed_not_trusted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cells = [{"x": i} for i in range(3)]
    run_sweep(tasks.square, cells, SweepOptions(out=out, cluster="serial", progress=False))
    table = out / "sweep.csv"
    lines = table.read_text().splitlines()
    header = lines[0].split(",")
    forged = dict(zip(header, lines[1].split(","), strict=True)) | {"parts": str(10**12)}
    other = dict(zip(header, lines[2].split(","), strict=True)) | {"part": "x"}
    table.write_text("\n".join([lines[0], ",".join(forged.values()), ",".join(other.values()), lines[3], ""]))
    rows = run_sweep(tasks.square, cells, SweepOptions(out=out, cluster="serial", progress=False))
    assert rows.reused == 1 and rows.computed == 2 and [r["square"] for r in rows] == [0, 1, 4]
