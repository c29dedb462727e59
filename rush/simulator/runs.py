"""Run directories: the saved simulations that ``rush report`` plots.

A run directory holds, for each labelled run (e.g. ``SPF-easy``):

* ``<label>.jobs.csv``: the per-job records (:data:`rush.simulator.result.JOBS_CSV_HEADER`), times
  relative to the trace's first submit (never-started jobs keep ``start = end = -1 - origin``,
  which is before their submit, so they stay recognisable);
* ``<label>.json``: the metrics dict of :func:`rush.simulator.metrics.compute_metrics` plus
  ``"info"``: the run's description (policy, backfill, threshold, trace, machine_procs, drops,
  ...) and ``time_origin``, the absolute time subtracted from the CSV times.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from rush.errors import RushError
from rush.simulator.result import JOBS_CSV_HEADER, SimResult, atomic_write
from rush.workload.limits import MAX_PROCS as MAX_MACHINE_PROCS

JOBS_SUFFIX = ".jobs.csv"
META_SUFFIX = ".json"
MAKE_RUNS = "run `rush compare TRACE --out RUN_DIR` (or `rush simulate TRACE --out RUN_DIR`) first"


def jsonable(obj):
    """numpy scalars/arrays to Python, NaN/inf to None (JSON has no NaN)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _check_label(label: str) -> None:
    if not label or label.startswith(".") or any(c in label for c in "/\\\0") or label.endswith(".jobs"):
        raise RushError(
            f"run label {label!r} cannot be a file name",
            where="run label",
            fix="use letters, digits, '-', '_' or '.', e.g. SPF-easy",
        )


def save_run(run_dir: str | Path, label: str, result: SimResult, metrics: dict) -> tuple[Path, Path]:
    """Write ``<label>.jobs.csv`` and ``<label>.json`` into ``run_dir`` (created if needed)."""
    _check_label(label)
    run_dir = Path(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RushError(f"cannot create the run directory: {exc.strerror}", where=str(run_dir)) from exc
    started = result.start >= result.submit
    origin = float(result.submit[started].min()) if started.any() else 0.0
    jobs_path = run_dir / f"{label}{JOBS_SUFFIX}"
    meta_path = run_dir / f"{label}{META_SUFFIX}"
    info = dict(result.info) | {"machine_procs": int(result.machine_procs), "time_origin": origin}
    document = jsonable(metrics) | {"info": jsonable(info)}
    # Records first, metadata last: a run is listed by its json, so an interrupted save
    # leaves no half run; each file is replaced atomically.
    result.write_jobs_csv(jobs_path, time_origin=origin)
    with atomic_write(meta_path) as fh:
        fh.write(json.dumps(document, indent=1, sort_keys=True, default=str) + "\n")
    return jobs_path, meta_path


def load_metrics(run_dir: str | Path) -> dict[str, dict]:
    """``{label: json document}`` (metrics plus ``"info"``) for every run in ``run_dir``."""
    run_dir = _existing_dir(run_dir)
    out: dict[str, dict] = {}
    for meta_path in sorted(run_dir.glob(f"*{META_SUFFIX}")):
        label = meta_path.name[: -len(META_SUFFIX)]
        out[label] = _read_meta(meta_path)
    if not out:
        raise RushError(
            "no runs in this directory (no <label>.json files)", where=str(run_dir), fix=MAKE_RUNS
        )
    return out


def load_runs(run_dir: str | Path) -> dict[str, SimResult]:
    """``{label: SimResult}`` read back from ``run_dir``, labels sorted.

    Times are relative to the trace's first submit as in the CSV; ``info`` is the saved
    ``"info"`` plus ``"metrics"`` (the rest of the json document).
    """
    documents = load_metrics(run_dir)
    run_dir = Path(run_dir)
    runs: dict[str, SimResult] = {}
    for label, document in documents.items():
        meta_path = run_dir / f"{label}{META_SUFFIX}"
        info = document.get("info")
        procs = info.get("machine_procs") if isinstance(info, dict) else None
        # bool is an int to Python (`true` would be 1 processor); the bound keeps the Gantt
        # chart's per-processor rows within memory.
        if isinstance(procs, bool) or not isinstance(procs, int) or not 0 < procs <= MAX_MACHINE_PROCS:
            raise RushError(
                f"the run has no info.machine_procs between 1 and {MAX_MACHINE_PROCS} (got {procs!r})",
                where=str(meta_path),
                fix="re-create the run with `rush compare ... --out RUN_DIR`",
            )
        jobs_path = run_dir / f"{label}{JOBS_SUFFIX}"
        columns = _read_jobs(jobs_path)
        procs_column = columns["procs"]
        bad = np.flatnonzero(
            (procs_column < 1) | (procs_column > procs) | (procs_column != np.floor(procs_column))
        )
        if len(bad):
            raise RushError(
                f"job {columns['job_id'][bad[0]]:.0f} has {procs_column[bad[0]]:g} processors, "
                f"the machine {procs} ({len(bad)} such jobs)",
                where=str(jobs_path),
                fix="re-create the run with `rush compare ... --out RUN_DIR`",
            )
        metrics = {k: v for k, v in document.items() if k != "info"}
        runs[label] = SimResult(
            job_id=columns["job_id"].astype(np.int64),
            submit=columns["submit"],
            start=columns["start"],
            end=columns["end"],
            procs=columns["procs"].astype(np.int64),
            requested_time=columns["requested_time"],
            runtime=columns["runtime"],
            backfilled=columns["backfilled"] != 0,
            killed=columns["killed"] != 0,
            machine_procs=procs,
            info=dict(info) | {"metrics": metrics},
        )
    return runs


def _existing_dir(run_dir: str | Path) -> Path:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        what = "is not a directory" if run_dir.exists() else "does not exist"
        raise RushError(f"the run directory {what}", where=str(run_dir), fix=MAKE_RUNS)
    return run_dir


def _read_meta(path: Path) -> dict:
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise RushError(
            f"invalid JSON: {exc.msg}",
            where=f"{path}:{exc.lineno}",
            fix="delete the file and re-create the run with `rush compare ... --out RUN_DIR`",
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RushError(f"cannot read the run's metadata: {exc}", where=str(path)) from exc
    if not isinstance(document, dict):
        raise RushError("a run's json must hold an object", where=str(path), fix=MAKE_RUNS)
    return document


def _read_jobs(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise RushError(
            f"the run's per-job records {path.name} are missing",
            where=str(path.parent),
            fix=f"re-create the run (each <label>.json needs its <label>{JOBS_SUFFIX}); " + MAKE_RUNS,
        )
    try:
        with open(path, newline="") as fh:
            header = next(csv.reader(fh), None)
            if header is None or tuple(h.strip() for h in header) != JOBS_CSV_HEADER:
                raise RushError(
                    f"unexpected header {header}; expected {','.join(JOBS_CSV_HEADER)}",
                    where=f"{path}:1",
                    fix="the file must be written by rush (SimResult.write_jobs_csv)",
                )
            numbered = [(n, line) for n, line in enumerate(fh, start=2) if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise RushError(f"cannot read the per-job records: {exc}", where=str(path)) from exc
    width = len(JOBS_CSV_HEADER)
    if not numbered:
        return {name: np.zeros(0) for name in JOBS_CSV_HEADER}
    try:
        table = np.loadtxt([line for _, line in numbered], delimiter=",", ndmin=2, dtype=np.float64)
        # loadtxt reads "nan" and "inf"; rush never writes them, and they would poison every plot.
        if table.shape[1] != width or not np.isfinite(table).all():
            raise ValueError
    except ValueError as exc:
        number, line = _first_bad(numbered, width)
        raise RushError(
            f"malformed per-job record {line.strip()[:120]!r} (expected {width} numbers)",
            where=f"{path}:{number}",
            fix="the file must be written by rush (SimResult.write_jobs_csv); re-create the run",
        ) from exc
    return {name: table[:, i] for i, name in enumerate(JOBS_CSV_HEADER)}


def _first_bad(numbered: list[tuple[int, str]], width: int) -> tuple[int | str, str]:
    # Only on the error path: find the offending line to name it.
    for number, line in numbered:
        fields = line.strip().split(",")
        try:
            ok = len(fields) == width and all(math.isfinite(float(f)) for f in fields)
        except ValueError:
            ok = False
        if not ok:
            return number, line
    return "?", ""
