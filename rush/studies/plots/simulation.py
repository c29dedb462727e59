"""PNG plots of the runs in a run directory (``rush report RUN_DIR``).

* ``cumulative_bsld.png``: for each label, the mean bounded slowdown of all jobs submitted up
  to the end of each week (:func:`rush.simulator.metrics.cumulative_bounded_slowdown`).
* ``wait_vs_runtime.png``: jobs binned by runtime ``p = end - start`` in geometric bins
  ``[2^k, 2^(k+1))`` seconds (``p < 1 s`` goes to the first bin); per bin and label the median
  wait and its 10th-90th percentile range, unjoined (bins are categories); a lower panel gives
  the jobs per bin, and bins with fewer than :data:`MIN_BIN_JOBS` jobs show a hollow median
  without percentiles.
* ``utilization.png``: busy processors / machine size, averaged per hour (per day when the run
  spans more than 60 days), from the exact "processors in use" step function.
* ``gantt_<label>.png``: the jobs of one run in a time window. The simulator does not record
  which processors a job used, so rows are a reconstruction: jobs are placed in start order
  on the first contiguous block of free processor rows (lowest-numbered free rows when no
  block is free). Any placement is valid because at most ``machine_procs`` processors are busy
  at once; the picture shows packing and holes, not the real node map. Backfilled jobs are
  hatched.

Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot global state).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from rush.errors import RushError
from rush.simulator.metrics import WINDOW, cumulative_bounded_slowdown, started_mask, utilization_profile
from rush.simulator.result import SimResult, atomic_write
from rush.simulator.runs import load_runs

FIGSIZE = (10.0, 6.0)
DPI = 100
HOUR = 3600.0
DAY = 86400.0
LONG_RUN = 60 * DAY  # beyond this span, utilization is averaged per day
MIN_BIN_JOBS = 20  # fewer jobs than this in a runtime bin: no percentiles drawn


def _colors(labels: list[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(labels) <= 10 else "tab20"]
    return {label: cmap(i % cmap.N) for i, label in enumerate(labels)}


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    with atomic_write(path, "wb") as fh:  # no half-written PNG if drawing fails
        fig.savefig(fh, dpi=DPI, format="png")
    return path


def plot_cumulative_bsld(runs: dict[str, SimResult], path: Path, tau: float = 10.0) -> Path:
    fig = Figure(figsize=FIGSIZE)
    ax = fig.add_subplot()
    colors = _colors(list(runs))
    for label, result in runs.items():
        times, values = cumulative_bounded_slowdown(result, tau)
        if len(times):
            ax.plot(times / (7 * DAY), values, marker=".", color=colors[label], label=label)
    ax.set_xlabel("time since the first submit [weeks]")
    ax.set_ylabel(f"mean bounded slowdown so far [-] (tau = {tau:g} s)")
    ax.set_title("Cumulative mean bounded slowdown")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return _save(fig, path)


@dataclass
class WaitByRuntime:
    """Wait statistics per geometric runtime bin ``[2^k, 2^(k+1))`` seconds."""

    k: np.ndarray  # bin exponents with at least one job
    median: np.ndarray
    p10: np.ndarray
    p90: np.ndarray
    count: np.ndarray


def wait_by_runtime(result: SimResult) -> WaitByRuntime:
    ran = started_mask(result)
    run = result.end[ran] - result.start[ran]
    wait = result.start[ran] - result.submit[ran]
    if len(run) == 0:
        empty = np.zeros(0)
        return WaitByRuntime(np.zeros(0, dtype=np.int64), empty, empty, empty, np.zeros(0, dtype=np.int64))
    k = np.floor(np.log2(np.maximum(run, 1.0))).astype(np.int64)
    order = np.argsort(k, kind="stable")
    k, wait = k[order], wait[order]
    bins, first, count = np.unique(k, return_index=True, return_counts=True)
    stats = np.array(
        [np.percentile(wait[f : f + c], (50, 10, 90)) for f, c in zip(first, count, strict=True)]
    )
    return WaitByRuntime(bins, stats[:, 0], stats[:, 1], stats[:, 2], count)


def plot_wait_vs_runtime(runs: dict[str, SimResult], path: Path, min_jobs: int = MIN_BIN_JOBS) -> Path:
    return _save(wait_vs_runtime_figure(runs, min_jobs), path)


def wait_vs_runtime_figure(runs: dict[str, SimResult], min_jobs: int = MIN_BIN_JOBS) -> Figure:
    """Median wait per runtime bin (10th-90th percentile bars) above the job count per bin.

    Bins are separate categories, so points are not joined by lines. A bin with fewer than
    ``min_jobs`` jobs has no meaningful percentiles: its median is a hollow marker without
    bars, and the count panel shows how many jobs every point stands for.
    """
    fig = Figure(figsize=FIGSIZE)
    ax, counts_ax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": (3, 1)})
    colors = _colors(list(runs))
    n = len(runs)
    width = 0.8 / max(n, 1)
    sparse_shown = False
    for i, (label, result) in enumerate(runs.items()):
        stats = wait_by_runtime(result)
        if len(stats.k) == 0:
            continue
        # Geometric bin centre, nudged per label so the error bars do not hide each other.
        offset = (i - (n - 1) / 2) * width
        x = 2.0 ** (stats.k + 0.5 + offset)
        full = stats.count >= min_jobs
        yerr = np.vstack((stats.median - stats.p10, stats.p90 - stats.median))
        ax.errorbar(
            x[full],
            stats.median[full],
            yerr=yerr[:, full],
            fmt="o",
            linestyle="none",
            ms=4,
            capsize=3,
            color=colors[label],
            label=label,
        )
        if (~full).any():
            sparse_shown = True
            ax.plot(
                x[~full],
                stats.median[~full],
                "o",
                linestyle="none",
                ms=5,
                markerfacecolor="none",
                color=colors[label],
                label=None if full.any() else label,
            )
        left = 2.0 ** (stats.k + 0.5 + offset - width / 2)  # centred under the points
        counts_ax.bar(
            left,
            stats.count,
            width=left * (2.0**width - 1.0),
            align="edge",
            color=colors[label],
            alpha=0.8,
        )
    ax.set_xscale("log", base=2)
    # symlog: many jobs wait 0 s under backfilling, the rest spread over decades.
    ax.set_yscale("symlog", linthresh=60.0)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("wait [s]: median, 10th-90th percentile")
    note = f"; hollow: bins with < {min_jobs} jobs, median only" if sparse_shown else ""
    ax.set_title(f"Wait versus runtime (geometric runtime bins [2^k, 2^(k+1)) s{note})", fontsize="medium")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(loc="best", fontsize="small")
    counts_ax.set_yscale("log")
    counts_ax.axhline(min_jobs, color="grey", lw=0.8, ls="--")
    counts_ax.set_ylabel("jobs per bin [jobs]")
    counts_ax.set_xlabel("runtime [s] (bins of powers of 2)")
    counts_ax.grid(True, alpha=0.3, which="major")
    return fig


def utilization_bin(runs: dict[str, SimResult]) -> float:
    spans = [float(r.end.max() - r.submit.min()) for r in runs.values() if started_mask(r).any()]
    return DAY if spans and max(spans) > LONG_RUN else HOUR


def plot_utilization(runs: dict[str, SimResult], path: Path) -> Path:
    fig = Figure(figsize=FIGSIZE)
    ax = fig.add_subplot()
    colors = _colors(list(runs))
    bin_seconds = utilization_bin(runs)
    unit = DAY if bin_seconds == DAY else HOUR
    origin = min((float(r.submit.min()) for r in runs.values() if len(r)), default=0.0)
    for label, result in runs.items():
        starts, util = utilization_profile(result, bin_seconds, origin=origin)
        if len(starts):
            ax.step(
                (starts - origin) / unit,
                util,
                where="post",
                lw=0.8,
                alpha=0.85,
                color=colors[label],
                label=label,
            )
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(f"time since the first submit [{'days' if unit == DAY else 'hours'}]")
    ax.set_ylabel(f"busy processors / machine size [0-1] ({'daily' if unit == DAY else 'hourly'} mean)")
    ax.set_title("Utilization over time")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return _save(fig, path)


@dataclass
class GanttBars:
    """Rectangles of a reconstructed processor map: job index, first row, rows, start, end."""

    job: np.ndarray
    row: np.ndarray
    rows: np.ndarray
    start: np.ndarray
    end: np.ndarray
    overcommitted: int  # jobs that found fewer free rows than processors (inconsistent input)


def gantt_bars(result: SimResult, w0: float, w1: float) -> GanttBars:
    """Place the jobs running in ``[w0, w1)`` on processor rows (see the module docstring)."""
    machine = int(result.machine_procs)
    ran = started_mask(result) & (result.start < w1) & (result.end > w0) & (result.end > result.start)
    index = np.flatnonzero(ran)
    index = index[np.lexsort((result.end[index], result.start[index]))]
    # Rows in use never exceed the window's jobs' processors: memory follows the jobs drawn,
    # not the machine size (a run may claim 2^31 processors).
    free_at = np.full(min(machine, int(result.procs[index].sum())), -np.inf)
    bars: list[tuple[int, int, int, float, float]] = []
    overcommitted = 0
    for j in index:
        start, end, q = float(result.start[j]), float(result.end[j]), int(result.procs[j])
        free = free_at <= start
        rows = _first_block(free, q)
        if rows is None:
            rows = np.flatnonzero(free)[:q]
            if len(rows) < q:
                overcommitted += 1
                busy = np.argsort(free_at, kind="stable")
                rows = np.sort(np.concatenate((rows, busy[~free[busy]][: q - len(rows)])))
        free_at[rows] = end
        # One rectangle per contiguous run of rows.
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        for run in np.split(rows, breaks):
            bars.append((int(j), int(run[0]), len(run), start, end))
    if not bars:
        z = np.zeros(0)
        return GanttBars(z.astype(np.int64), z.astype(np.int64), z.astype(np.int64), z, z, 0)
    arr = np.array(bars, dtype=np.float64)
    return GanttBars(
        arr[:, 0].astype(np.int64),
        arr[:, 1].astype(np.int64),
        arr[:, 2].astype(np.int64),
        arr[:, 3],
        arr[:, 4],
        overcommitted,
    )


def _first_block(free: np.ndarray, q: int) -> np.ndarray | None:
    """Rows of the first run of ``q`` consecutive free rows, or None."""
    padded = np.concatenate(([False], free, [False])).astype(np.int8)
    edges = np.diff(padded)
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    fits = np.flatnonzero(stops - starts >= q)
    if len(fits) == 0:
        return None
    first = starts[fits[0]]
    return np.arange(first, first + q)


def plot_gantt(result: SimResult, label: str, path: Path, w0: float, hours: float) -> Path:
    w1 = w0 + hours * HOUR
    bars = gantt_bars(result, w0, w1)
    fig = Figure(figsize=FIGSIZE)
    ax = fig.add_subplot()
    if len(bars.job):
        from matplotlib import colormaps

        x0 = (np.maximum(bars.start, w0) - w0) / HOUR
        x1 = (np.minimum(bars.end, w1) - w0) / HOUR
        y0, y1 = bars.row.astype(float), (bars.row + bars.rows).astype(float)
        verts = np.stack([np.column_stack(c) for c in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))], axis=1)
        cmap = colormaps["tab20"]
        colors = cmap((result.job_id[bars.job] % 20) / 20.0)
        filled = ~result.backfilled[bars.job]
        for mask, hatch in ((filled, None), (~filled, "///")):
            if mask.any():
                ax.add_collection(
                    PolyCollection(
                        verts[mask], facecolors=colors[mask], edgecolors="black", linewidths=0.2, hatch=hatch
                    )
                )
    ax.set_xlim(0, hours)
    ax.set_ylim(0, result.machine_procs)
    ax.set_xlabel(f"time since t0 = {w0:.0f} s after the first submit [hours]")
    ax.set_ylabel("processor row (reconstructed) [processors]")
    extra = f", {bars.overcommitted} overcommitted" if bars.overcommitted else ""
    ax.set_title(f"{label}: {len(np.unique(bars.job))} jobs (hatched: backfilled{extra})")
    return _save(fig, path)


def _safe_name(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)


def write_report(
    runs: dict[str, SimResult],
    out_dir: str | Path,
    *,
    tau: float = 10.0,
    gantt_label: str | None = None,
    gantt_start: float | None = None,
    gantt_hours: float = 24.0,
) -> list[Path]:
    """Write the four plots into ``out_dir``; return their paths.

    Times in ``runs`` are those of the run directory (relative to the first submit).
    ``gantt_start`` (seconds, same clock) defaults to the start of the 15 %-85 % window.
    """
    if not runs:
        raise RushError(
            "no runs to report", where="report", fix="run `rush compare TRACE --out RUN_DIR` first"
        )
    if not gantt_hours > 0:
        raise RushError(f"--gantt-hours must be positive, got {gantt_hours}", where="--gantt-hours")
    if gantt_label is None:
        gantt_label = next(iter(runs))
    if gantt_label not in runs:
        raise RushError(
            f"no run labelled {gantt_label!r}", where="--gantt-label", fix=f"use one of: {', '.join(runs)}"
        )
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RushError(f"cannot create the output directory: {exc.strerror}", where=str(out_dir)) from exc
    chosen = runs[gantt_label]
    if gantt_start is None:
        gantt_start = _default_gantt_start(chosen)
    return [
        plot_cumulative_bsld(runs, out_dir / "cumulative_bsld.png", tau),
        plot_wait_vs_runtime(runs, out_dir / "wait_vs_runtime.png"),
        plot_utilization(runs, out_dir / "utilization.png"),
        plot_gantt(
            chosen, gantt_label, out_dir / f"gantt_{_safe_name(gantt_label)}.png", gantt_start, gantt_hours
        ),
    ]


def _default_gantt_start(result: SimResult) -> float:
    ran = started_mask(result)
    if not ran.any():
        return 0.0
    submit = result.submit[ran]
    return float(submit.min() + WINDOW[0] * (submit.max() - submit.min()))


def report_run_dir(run_dir: str | Path, out_dir: str | Path | None = None, **options) -> list[Path]:
    """Load ``run_dir`` (see :mod:`rush.simulator.runs`) and write its plots (default ``RUN_DIR/plots``)."""
    runs = load_runs(run_dir)
    return write_report(runs, Path(run_dir) / "plots" if out_dir is None else out_dir, **options)
