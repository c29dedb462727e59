"""Run directories (save/load) and the PNG report, on real simulator runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from typer.testing import CliRunner

from rush.cli.main import app
from rush.core.config import CoreConfig
from rush.errors import RushError
from rush.simulator.engine import simulate
from rush.simulator.metrics import compute_metrics
from rush.simulator.result import JOBS_CSV_HEADER, SimResult
from rush.simulator.runs import load_metrics, load_runs, save_run
from rush.studies.plots.simulation import DPI, FIGSIZE, gantt_bars, wait_by_runtime, write_report
from rush.workload.model import Trace, workload_from_trace

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _workload(n: int = 300, machine: int = 32, seed: int = 1, origin: float = 5_000.0):
    rng = np.random.default_rng(seed)
    trace = Trace.from_columns(
        n,
        job_id=np.arange(1, n + 1),
        submit=origin + np.sort(rng.integers(0, 10 * 86400, n)),
        alloc_procs=rng.integers(1, machine + 1, n),
        runtime=rng.integers(0, 30_000, n),
        req_time=rng.integers(30_000, 60_000, n),
    )
    trace.header["MaxProcs"] = str(machine)
    trace.name = f"synthetic-{seed}"
    return workload_from_trace(trace)


@pytest.fixture(scope="module")
def runs() -> dict[str, SimResult]:
    workload = _workload()
    return {
        f"{policy}-easy": simulate(workload, CoreConfig.from_names(policy, "easy", "200000"))
        for policy in ("FCFS", "SPF")
    }


@pytest.fixture()
def run_dir(tmp_path: Path, runs: dict[str, SimResult]) -> Path:
    for label, result in runs.items():
        save_run(tmp_path / "runs", label, result, compute_metrics(result))
    return tmp_path / "runs"


def test_round_trip(run_dir: Path, runs: dict[str, SimResult]) -> None:
    loaded = load_runs(run_dir)
    assert list(loaded) == ["FCFS-easy", "SPF-easy"]
    for label, original in runs.items():
        back = loaded[label]
        origin = float(original.submit.min())
        assert back.info["time_origin"] == origin
        np.testing.assert_array_equal(back.job_id, original.job_id)
        for name in ("submit", "start", "end"):
            np.testing.assert_allclose(getattr(back, name), getattr(original, name) - origin)
        np.testing.assert_array_equal(back.procs, original.procs)
        np.testing.assert_array_equal(back.backfilled, original.backfilled)
        np.testing.assert_array_equal(back.killed, original.killed)
        assert back.machine_procs == original.machine_procs == 32
        assert back.info["policy"] == original.info["policy"]
        assert back.info["backfill"] == "easy" and back.info["threshold"] == 200000.0
        # The saved metrics come back, and recomputing them from the CSV gives the same values
        # (every metric is invariant to the time shift).
        saved, again = back.info["metrics"], compute_metrics(back)
        for key in (
            "jobs",
            "mean_wait",
            "mean_bounded_slowdown",
            "utilization",
            "utilization_window",
            "awrt",
        ):
            assert again[key] == pytest.approx(saved[key]), key
    document = json.loads((run_dir / "FCFS-easy.json").read_text())
    assert document["info"]["machine_procs"] == 32 and "mean_bounded_slowdown" in document
    assert load_metrics(run_dir)["SPF-easy"]["jobs"] == len(runs["SPF-easy"])


def test_round_trip_keeps_unstarted_and_empty_runs(tmp_path: Path) -> None:
    jobs = SimResult(
        job_id=np.array([1, 2]),
        submit=np.array([10.0, 20.0]),
        start=np.array([10.0, -1.0]),
        end=np.array([15.0, -1.0]),
        procs=np.array([1, 1]),
        requested_time=np.array([10.0, 10.0]),
        runtime=np.array([5.0, 5.0]),
        backfilled=np.zeros(2, dtype=bool),
        killed=np.zeros(2, dtype=bool),
        machine_procs=2,
    )
    empty = SimResult(*(np.zeros(0) for _ in range(9)), machine_procs=2)
    save_run(tmp_path, "partial", jobs, compute_metrics(jobs))
    save_run(tmp_path, "empty", empty, compute_metrics(empty))
    loaded = load_runs(tmp_path)
    assert compute_metrics(loaded["partial"])["unstarted"] == 1
    assert len(loaded["empty"]) == 0 and loaded["empty"].info["metrics"]["mean_wait"] is None


def _expect(run_dir: Path, match: str) -> RushError:
    with pytest.raises(RushError, match=match) as info:
        load_runs(run_dir)
    assert info.value.fix  # every error says how to fix it
    return info.value


def test_load_errors(tmp_path: Path, run_dir: Path) -> None:
    _expect(tmp_path / "nowhere", "does not exist")
    (tmp_path / "empty").mkdir()
    _expect(tmp_path / "empty", "no runs")

    (run_dir / "SPF-easy.jobs.csv").unlink()
    assert "SPF-easy" in _expect(run_dir, "missing").message

    csv_path = run_dir / "FCFS-easy.jobs.csv"
    lines = csv_path.read_text().splitlines()
    (run_dir / "SPF-easy.json").unlink()
    csv_path.write_text("\n".join([lines[0], lines[1], "1,2,three,4,5,6,7,0,0"] + lines[2:]) + "\n")
    error = _expect(run_dir, "malformed")
    assert error.where.endswith("FCFS-easy.jobs.csv:3")

    csv_path.write_text("job,submit\n1,2\n")
    _expect(run_dir, "unexpected header")

    (run_dir / "FCFS-easy.json").write_text("{not json")
    _expect(run_dir, "invalid JSON")

    (run_dir / "FCFS-easy.json").write_text(json.dumps({"info": {"policy": "FCFS"}}))
    _expect(run_dir, "machine_procs")


def test_bad_label(tmp_path: Path, runs: dict[str, SimResult]) -> None:
    result = runs["FCFS-easy"]
    with pytest.raises(RushError, match="file name"):
        save_run(tmp_path, "a/b", result, compute_metrics(result))


def test_jobs_csv_header_is_the_shared_format(run_dir: Path) -> None:
    assert (run_dir / "FCFS-easy.jobs.csv").read_text().splitlines()[0] == ",".join(JOBS_CSV_HEADER)


def _check_png(path: Path) -> None:
    assert path.read_bytes()[:8] == PNG_MAGIC
    image = imread(path)
    assert image.shape[:2] == (int(FIGSIZE[1] * DPI), int(FIGSIZE[0] * DPI))
    # Something was drawn: the picture is not a single colour.
    assert image[..., :3].std() > 0.01


def test_report_writes_plots(tmp_path: Path, run_dir: Path) -> None:
    written = write_report(load_runs(run_dir), tmp_path / "plots", gantt_label="SPF-easy", gantt_hours=12)
    names = sorted(p.name for p in written)
    assert names == ["cumulative_bsld.png", "gantt_SPF-easy.png", "utilization.png", "wait_vs_runtime.png"]
    for path in written:
        _check_png(path)


def test_report_cli(tmp_path: Path, run_dir: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "report",
            str(run_dir),
            "--out",
            str(out),
            "--gantt-start",
            "86400",
            "--gantt-hours",
            "6",
            "--tau",
            "60",
        ],
    )
    assert result.exit_code == 0, result.output
    printed = result.output.split()
    assert len(printed) == 4 and all(Path(p).parent == out and Path(p).is_file() for p in printed)
    for p in printed:
        _check_png(Path(p))
    # Default output directory is RUN_DIR/plots.
    assert CliRunner().invoke(app, ["report", str(run_dir)]).exit_code == 0
    assert (run_dir / "plots" / "gantt_FCFS-easy.png").is_file()


def test_report_cli_fails_clearly(tmp_path: Path, run_dir: Path) -> None:
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "missing")])
    assert missing.exit_code != 0 and isinstance(missing.exception, RushError)
    assert "does not exist" in str(missing.exception)
    (tmp_path / "empty").mkdir()
    empty = CliRunner().invoke(app, ["report", str(tmp_path / "empty")])
    assert isinstance(empty.exception, RushError) and "no runs" in str(empty.exception)
    wrong = CliRunner().invoke(app, ["report", str(run_dir), "--gantt-label", "NOPE"])
    assert isinstance(wrong.exception, RushError) and "FCFS-easy" in str(wrong.exception)


def _overlaps(bars) -> bool:
    for a in range(len(bars.job)):
        for b in range(a + 1, len(bars.job)):
            rows = bars.row[a] < bars.row[b] + bars.rows[b] and bars.row[b] < bars.row[a] + bars.rows[a]
            time = bars.start[a] < bars.end[b] and bars.start[b] < bars.end[a]
            if rows and time:
                return True
    return False


def test_gantt_rows_of_a_real_schedule(runs: dict[str, SimResult]) -> None:
    result = runs["FCFS-easy"]
    w0 = float(result.submit.min()) + 86400
    bars = gantt_bars(result, w0, w0 + 12 * 3600)
    assert bars.overcommitted == 0 and len(bars.job) > 0
    assert not _overlaps(bars)
    # Each job gets exactly its processors, on rows inside the machine.
    for j in np.unique(bars.job):
        assert bars.rows[bars.job == j].sum() == result.procs[j]
    assert bars.row.min() >= 0 and (bars.row + bars.rows).max() <= result.machine_procs


def _schedule(machine: int, jobs: list[tuple[float, float, int]]) -> SimResult:
    n = len(jobs)
    start = np.array([j[0] for j in jobs], dtype=float)
    return SimResult(
        job_id=np.arange(n),
        submit=start,
        start=start,
        end=np.array([j[1] for j in jobs], dtype=float),
        procs=np.array([j[2] for j in jobs]),
        requested_time=np.full(n, 100.0),
        runtime=np.full(n, 10.0),
        backfilled=np.zeros(n, dtype=bool),
        killed=np.zeros(n, dtype=bool),
        machine_procs=machine,
    )


def test_gantt_prefers_a_contiguous_block_then_splits() -> None:
    # Placed in start order: A row 0 until 10, B row 1 until 20, C row 2 until 10, D row 3
    # until 20. E (2 procs) at 10 finds rows 0 and 2 free but not adjacent: two rectangles.
    split = gantt_bars(_schedule(4, [(0, 10, 1), (1, 20, 1), (2, 10, 1), (3, 20, 1), (10, 20, 2)]), 0, 30)
    assert split.row[split.job == 4].tolist() == [0, 2]
    assert split.rows[split.job == 4].tolist() == [1, 1]
    # Without D, rows 2-3 are a free block: E takes it in one rectangle.
    block = gantt_bars(_schedule(4, [(0, 10, 1), (1, 20, 1), (2, 10, 1), (10, 20, 2)]), 0, 30)
    assert block.row[block.job == 3].tolist() == [2] and block.rows[block.job == 3].tolist() == [2]
    # Jobs entirely outside the window are not drawn.
    assert len(gantt_bars(_schedule(4, [(0, 10, 1)]), 10, 20).job) == 0


def test_wait_by_runtime_bins() -> None:
    # runtimes 0.5 and 1 -> bin 0; 2 and 3 -> bin 1; 1024 -> bin 10
    runtimes = [0.5, 1.0, 2.0, 3.0, 1024.0]
    waits = [10.0, 30.0, 0.0, 100.0, 7.0]
    result = SimResult(
        job_id=np.arange(5),
        submit=np.zeros(5),
        start=np.array(waits),
        end=np.array(waits) + np.array(runtimes),
        procs=np.ones(5, dtype=np.int64),
        requested_time=np.full(5, 2000.0),
        runtime=np.array(runtimes),
        backfilled=np.zeros(5, dtype=bool),
        killed=np.zeros(5, dtype=bool),
        machine_procs=1,
    )
    stats = wait_by_runtime(result)
    assert stats.k.tolist() == [0, 1, 10] and stats.count.tolist() == [2, 2, 1]
    np.testing.assert_allclose(stats.median, [20.0, 50.0, 7.0])
    np.testing.assert_allclose(stats.p10, [12.0, 10.0, 7.0])
    np.testing.assert_allclose(stats.p90, [28.0, 90.0, 7.0])


def test_gantt_reports_inconsistent_input() -> None:
    # Three 1-processor jobs at once on a 2-processor machine cannot all be placed.
    bars = gantt_bars(_schedule(2, [(0, 10, 1), (0, 10, 1), (0, 10, 1)]), 0, 10)
    assert bars.overcommitted == 1 and len(np.unique(bars.job)) == 3


# ---------------------------------------------------------------- wait vs runtime: counts, sparse bins


def _runtimes_result(runtimes: list[float], waits: list[float]) -> SimResult:
    n = len(runtimes)
    return SimResult(
        job_id=np.arange(n),
        submit=np.zeros(n),
        start=np.array(waits, dtype=float),
        end=np.array(waits, dtype=float) + np.array(runtimes, dtype=float),
        procs=np.ones(n, dtype=np.int64),
        requested_time=np.full(n, 1e6),
        runtime=np.array(runtimes, dtype=float),
        backfilled=np.zeros(n, dtype=bool),
        killed=np.zeros(n, dtype=bool),
        machine_procs=1,
    )


def test_wait_vs_runtime_shows_counts_and_marks_sparse_bins() -> None:
    from matplotlib.container import ErrorbarContainer
    from matplotlib.patches import Rectangle

    from rush.studies.plots.simulation import MIN_BIN_JOBS, wait_vs_runtime_figure

    # Bin 4 ([16, 32) s) holds 30 jobs, bin 10 ([1024, 2048) s) one job.
    runtimes = [20.0] * 30 + [1500.0]
    waits = list(np.linspace(0.0, 2900.0, 30)) + [50_000.0]
    fig = wait_vs_runtime_figure({"X": _runtimes_result(runtimes, waits)})
    ax, counts_ax = fig.axes
    (errorbars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    data_line = errorbars.lines[0]
    # Only the full bin has percentile bars; its point sits in bin 4.
    assert len(data_line.get_xdata()) == 1 and 16 <= data_line.get_xdata()[0] < 32
    hollow = [line for line in ax.lines if line.get_markerfacecolor() == "none"]
    assert len(hollow) == 1 and 1024 <= hollow[0].get_xdata()[0] < 2048
    assert hollow[0].get_ydata()[0] == 50_000.0
    # No line joins bins: every plotted line is markers only.
    assert all(line.get_linestyle() == "None" for line in ax.lines if len(line.get_xdata()) > 0)
    heights = sorted(
        p.get_height() for p in counts_ax.patches if isinstance(p, Rectangle) and p.get_height() > 0
    )
    assert heights == [1, 30]
    assert f"< {MIN_BIN_JOBS} jobs" in ax.get_title() and "[s]" in counts_ax.get_xlabel()
    assert "[s]" in ax.get_ylabel()


# ---------------------------------------------------------------- atomic outputs, corrupt run directories


def test_jobs_csv_failure_keeps_the_old_file(tmp_path: Path, runs: dict[str, SimResult], monkeypatch) -> None:
    import rush.simulator.result as result_module

    path = tmp_path / "jobs.csv"
    path.write_text("previous\n")
    calls = {"n": 0}

    def failing_fmt(x: float) -> str:
        calls["n"] += 1
        if calls["n"] > 10:
            raise OSError(28, "No space left on device")
        return "0"

    monkeypatch.setattr(result_module, "_fmt", failing_fmt)
    with pytest.raises(RushError, match="No space left") as error:
        runs["FCFS-easy"].write_jobs_csv(path)
    assert error.value.where == str(path)
    assert path.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.csv"]  # no temporary file left


def test_save_run_into_a_file_fails_without_output(tmp_path: Path, runs: dict[str, SimResult]) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(RushError) as error:
        save_run(blocker / "runs", "FCFS-easy", runs["FCFS-easy"], {})
    assert str(blocker / "runs") in str(error.value)
    assert blocker.read_text() == "x"


CORRUPT_RUNS = [
    # (what is done to FCFS-easy's files, expected words in the error)
    ("json_list", "must hold an object"),
    ("procs_true", "machine_procs"),
    ("procs_huge", "machine_procs"),
    ("procs_float", "machine_procs"),
    ("csv_nan", "malformed"),
    ("csv_inf", "malformed"),
    ("csv_wide_job", "processors"),
    ("csv_zero_procs", "processors"),
    ("csv_binary", "cannot read"),
    ("json_binary", "cannot read"),
]


@pytest.mark.parametrize(("damage", "words"), CORRUPT_RUNS, ids=[c[0] for c in CORRUPT_RUNS])
def test_report_rejects_a_corrupt_run(tmp_path: Path, run_dir: Path, damage: str, words: str) -> None:
    meta = run_dir / "FCFS-easy.json"
    jobs = run_dir / "FCFS-easy.jobs.csv"
    document = json.loads(meta.read_text())
    lines = jobs.read_text().splitlines()
    fields = lines[1].split(",")
    if damage == "json_list":
        meta.write_text("[1, 2, 3]")
    elif damage.startswith("procs_"):
        document["info"]["machine_procs"] = {"procs_true": True, "procs_huge": 10**12, "procs_float": 32.5}[
            damage
        ]
        meta.write_text(json.dumps(document))
    elif damage in ("csv_nan", "csv_inf"):
        fields[2] = damage[4:]
        jobs.write_text("\n".join([lines[0], ",".join(fields), *lines[2:]]) + "\n")
    elif damage in ("csv_wide_job", "csv_zero_procs"):
        fields[4] = "33" if damage == "csv_wide_job" else "0"
        jobs.write_text("\n".join([lines[0], ",".join(fields), *lines[2:]]) + "\n")
    elif damage == "csv_binary":
        jobs.write_bytes(lines[0].encode() + b"\n\xff\xfe\x00garbage\n")
    elif damage == "json_binary":
        meta.write_bytes(b"\xff\xfe\x00")
    out = tmp_path / "plots"
    result = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(out)])
    assert isinstance(result.exception, RushError), result.output
    assert words in str(result.exception) and "FCFS-easy" in str(result.exception)
    assert not out.exists()  # nothing written for a run directory that cannot be read


def test_gantt_memory_follows_the_jobs_not_the_machine() -> None:
    # The chart allocates rows only for the jobs drawn: a per-processor array for 2^40
    # processors (8 TB) fails at once instead of quietly using memory out of proportion.
    bars = gantt_bars(_schedule(2**40, [(0, 10, 3), (5, 20, 2)]), 0, 30)
    assert bars.row.tolist() == [0, 3] and bars.rows.tolist() == [3, 2]


def test_atomic_write_refuses_a_device(tmp_path: Path, runs: dict[str, SimResult]) -> None:
    with pytest.raises(RushError, match="not a regular file"):
        runs["FCFS-easy"].write_jobs_csv("/dev/null")
    link = tmp_path / "link.csv"
    target = tmp_path / "target.csv"
    target.write_text("old\n")
    link.symlink_to(target)
    runs["FCFS-easy"].write_jobs_csv(link)  # written through the link, which stays a link
    assert link.is_symlink() and target.read_text().startswith("job_id,")
