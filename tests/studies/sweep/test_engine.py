"""run_sweep on a real LocalCluster (and in-process): rows, table, per-worker resources, failures."""

from __future__ import annotations

import csv
import functools
import json
from pathlib import Path

import pytest

from rush.errors import ConfigError
from rush.studies.sweep import SweepOptions, cell_key, run_sweep
from tests.studies.sweep import tasks

pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install 'rush[dask]')")


def read_table(out: Path) -> list[dict]:
    with (out / "sweep.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_local_cluster_loads_each_resource_once_per_worker(tmp_path: Path) -> None:
    log = tmp_path / "loads.log"
    unused = tmp_path / "unused.log"
    cells = [{"x": i} for i in range(24)]
    rows = run_sweep(
        tasks.use_resource,
        cells,
        SweepOptions(
            out=tmp_path / "out",
            cluster="local:2",
            progress=False,
            resources={
                "counter": functools.partial(tasks.record_load, str(log)),
                "unused": functools.partial(tasks.record_load, str(unused)),
            },
        ),
    )
    loads = log.read_text().split()
    assert rows.failed == 0 and rows.computed == 24 and len(rows) == 24
    assert len(loads) == len(set(loads)) <= 2  # one load per worker process, not per task
    assert {str(r["loaded_in"]) for r in rows} == set(loads)
    assert all(r["loaded_in"] == r["ran_in"] for r in rows)  # the task saw its own worker's copy
    assert not unused.exists()  # lazily: a resource no task asks for is never loaded
    assert [r["double"] for r in rows] == [2 * c["x"] for c in cells]  # rows in cell order


def test_table_and_description(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cells = [{"x": i, "name": f"c{i}"} for i in range(6)]
    rows = run_sweep(tasks.square, cells, SweepOptions(out=out, cluster="local:1", progress=False))
    table = read_table(out)
    assert [r["key"] for r in table if r["part"] == "0"] != []
    assert sorted(r["key"] for r in table) == sorted(cell_key(c) for c in cells)
    header = list(table[0])
    assert header[:3] == ["key", "x", "name"] and header[-4:] == ["part", "parts", "error_type", "error"]
    assert {r["square"] for r in table} == {str(i * i) for i in range(6)}
    description = json.loads((out / "sweep.json").read_text())
    assert description["task"] == "tests.studies.sweep.tasks:square"
    assert description["cells"] == 6 and description["computed"] == 6 and description["failed"] == 0
    assert description["complete"] is True and description["cluster"] == "local:1"
    assert rows[2] == {
        "key": cell_key(cells[2]),
        "x": 2,
        "name": "c2",
        "square": 4,
        "label": "x=2",
        "part": 0,
        "parts": 1,
    }


def test_failing_cells_are_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rows = run_sweep(
        tasks.flaky, [{"x": i} for i in range(11)], SweepOptions(out=out, cluster="serial", progress=False)
    )
    assert rows.failed == 3 and rows.computed == 11
    failed = [r for r in rows if r.get("error_type")]
    assert [r["x"] for r in failed] == [0, 5, 10]
    assert failed[0]["error_type"] == "ValueError" and "multiple of 5" in failed[0]["error"]
    assert "square" not in failed[0]
    table = read_table(out)
    assert len(table) == 11  # one row per cell, the message's line break escaped
    assert {r["error"] for r in table if r["error_type"]} == {
        f"x = {x} is a multiple of 5\\nsecond line" for x in (0, 5, 10)
    }
    assert json.loads((out / "sweep.json").read_text())["failed"] == 3


def test_bad_task_results_fail_their_cell(tmp_path: Path) -> None:
    rows = run_sweep(tasks.bad_return, [{"x": 0}, {"x": 1}], SweepOptions(cluster="serial", progress=False))
    assert rows.failed == 2
    assert rows[0]["error_type"] == "TypeError" and "return a dict" in rows[0]["error"]
    assert rows[1]["error_type"] == "ValueError" and "repeat cell parameters" in rows[1]["error"]


def test_multi_row_cells_resume_with_their_types(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cells = [{"x": i} for i in range(4)]
    first = run_sweep(tasks.per_week, cells, SweepOptions(out=out, cluster="serial", progress=False))
    assert len(first) == 12 and [r["part"] for r in first[:3]] == [0, 1, 2]
    again = run_sweep(tasks.per_week, cells, SweepOptions(out=out, cluster="serial", progress=False))
    assert again.reused == 4 and again.computed == 0
    strip = [{k: v for k, v in r.items() if v is not None} for r in first]
    assert list(again) == strip  # ints, floats, booleans and lists come back as they were


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ([{"x": 1}, {"x": 1}], "same key"),
        ([{"x": float("nan")}], "nan"),
        ([{"x": object()}], "not JSON"),
        ([{"key": 1}], "sweep's own column"),
        (["x"], "a cell is a str"),
    ],
)
def test_bad_cells_are_refused_before_anything_runs(tmp_path: Path, cells: list, message: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=message):
        run_sweep(tasks.square, cells, SweepOptions(out=out, cluster="serial", progress=False))
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cluster": "locale"}, "unknown cluster"),
        ({"cluster": "local:0"}, "bad worker count"),
        ({"workers": 0}, "workers must be"),
        ({"batch": 0}, "batch must be"),
        ({"resources": {"r": 3}}, "not a loader"),
        ({"resources": {"r": lambda: open(__file__)}}, None),  # a lambda is fine (cloudpickle)
    ],
)
def test_bad_options(tmp_path: Path, options: dict, message: str | None) -> None:
    opts = SweepOptions(out=tmp_path / "out", progress=False, **({"cluster": "serial"} | options))
    if message is None:
        assert run_sweep(tasks.square, [{"x": 1}], opts)[0]["square"] == 1
        return
    with pytest.raises(ConfigError, match=message):
        run_sweep(tasks.square, [{"x": 1}], opts)
    assert not (tmp_path / "out").exists()


def test_key_fields(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cells = [{"x": i, "note": "a"} for i in range(3)]
    run_sweep(tasks.square, cells, SweepOptions(out=out, cluster="serial", progress=False, key_fields=["x"]))
    renamed = [{"x": i, "note": "b"} for i in range(3)]  # not part of the key: same cells
    again = run_sweep(
        tasks.square, renamed, SweepOptions(out=out, cluster="serial", progress=False, key_fields=["x"])
    )
    assert again.reused == 3 and [r["note"] for r in again] == ["b"] * 3
    with pytest.raises(ConfigError, match="no 'y'"):
        run_sweep(tasks.square, cells, SweepOptions(cluster="serial", key_fields=["y"]))


def test_another_task_in_the_same_out_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_sweep(tasks.square, [{"x": 1}], SweepOptions(out=out, cluster="serial", progress=False))
    with pytest.raises(ConfigError, match="holds a sweep of tests.studies.sweep.tasks:square"):
        run_sweep(tasks.flaky, [{"x": 1}], SweepOptions(out=out, cluster="serial", progress=False))
    fresh = run_sweep(
        tasks.flaky, [{"x": 1}], SweepOptions(out=out, cluster="serial", progress=False, resume=False)
    )
    assert fresh.computed == 1 and len(read_table(out)) == 1


def test_resuming_with_other_key_fields_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_sweep(tasks.square, [{"x": 1}], SweepOptions(out=out, cluster="serial", progress=False))
    with pytest.raises(ConfigError, match="was keyed by None"):
        run_sweep(tasks.square, [{"x": 1}], SweepOptions(out=out, cluster="serial", key_fields=["x"]))


@pytest.mark.timeout(300)  # a nanny that cannot restart its worker would hang here
def test_a_cell_that_kills_its_worker_fails_alone(tmp_path: Path) -> None:
    # Dask reruns the task on a fresh worker up to distributed.scheduler.allowed-failures (3)
    # times, then gives up on it (KilledWorker): only that cell fails.
    rows = run_sweep(
        tasks.crash, [{"x": i} for i in range(5)], SweepOptions(cluster="local:1", progress=False, batch=1)
    )
    assert rows.failed == 1 and rows[2]["error_type"] == "KilledWorker"
    assert [r.get("square") for r in rows] == [0, 1, None, 9, 16]


def test_automatic_batches_follow_cell_durations() -> None:
    from rush.studies.sweep.engine import AUTO_BATCH_MAX, Batches

    todo = [(str(i), {"x": i}) for i in range(10_000)]
    plan = Batches(todo, None, workers=2)
    sizes = iter(plan)
    assert len(next(sizes)) == 1  # nothing measured yet
    plan.observe([5.0, 0.01, 0.01])  # a first cell that loaded its resource, then fast cells
    assert len(next(sizes)) == 25  # 0.25 s of work at 10 ms a cell
    plan.observe([1e-5] * 10)
    assert len(next(sizes)) == AUTO_BATCH_MAX
    plan.observe([3.0] * 300)  # slow cells: one a task
    assert len(next(sizes)) == 1
    tail = Batches(todo[:40], None, workers=2)
    tail.observe([1e-4])
    assert max(len(b) for b in tail) <= 40 // 8  # every worker keeps several of the remaining tasks
    assert sum(len(b) for b in Batches(todo[:17], 5, workers=2)) == 17


def test_the_progress_bar_changes_no_row(capsys):
    cells = [{"x": i} for i in range(4)]
    shown = run_sweep(tasks.square, cells, SweepOptions(cluster="serial", progress=True))
    quiet = run_sweep(tasks.square, cells, SweepOptions(cluster="serial", progress=False))
    assert [r["x"] for r in shown] == [0, 1, 2, 3]
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in shown] == [
        {k: v for k, v in r.items() if k != "seconds"} for r in quiet
    ]
    assert capsys.readouterr().out == ""  # the bar goes to stderr, never into piped output
