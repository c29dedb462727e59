"""``run_sweep``: run ``task`` on every cell, stream the rows into a table, resume from it.

Contract:

* ``task(cell, resources) -> dict | list[dict]`` is a top-level importable function (Dask
  sends it to workers by reference); ``cell`` is a JSON-able dict of parameters; a row is a
  dict of result fields (numbers, strings, booleans, None; lists and dicts become JSON).
* Each row of the table is ``key`` (16 hex of the sha256 of the cell's canonical JSON, or of
  its ``key_fields``), the cell's parameters, the result fields, then ``part``/``parts`` (the
  row's index among its cell's rows) and ``error_type``/``error``.
* A cell whose task raises gets one row with the exception's type and message and no result
  fields; the sweep goes on. :attr:`SweepRows.failed` counts such cells.
* Resume: a cell whose key already has all its rows in ``out`` and no error is not run
  again; its rows are returned as read back. Failed cells and cells with a torn row run again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rush.errors import ConfigError
from rush.studies.sweep.clusters import SerialExecutor, check_cluster, open_executor
from rush.studies.sweep.keys import ERROR, ERROR_TYPE, KEY, PART, PARTS, RESERVED, cell_key, check_cell
from rush.studies.sweep.options import SweepOptions
from rush.studies.sweep.resources import WorkerResources, loader_token
from rush.studies.sweep.table import Table, paths, read_description, write_description

# A sweep above this many cells is a mistake in a grid, not a study (and the cells alone fill memory).
MAX_CELLS = 1_000_000
MAX_MESSAGE = 500
# Automatic batching (Batches): cells of a few milliseconds (weekly simulations) go several to
# a Dask task, whose own cost is a round trip through the scheduler.
TARGET_TASK_SECONDS = 0.25
AUTO_BATCH_MAX = 64  # characters of an error message kept in the table


class SweepRows(list):
    """The rows of a sweep (cell order), with counts: ``cells``, ``computed``, ``reused``, ``failed``."""

    cells: int = 0
    computed: int = 0
    reused: int = 0
    failed: int = 0
    table: str | None = None


def task_name(task: Callable) -> str:
    return f"{getattr(task, '__module__', '?')}:{getattr(task, '__qualname__', repr(task))}"


def _result_rows(value: Any) -> list[dict]:
    rows = [value] if isinstance(value, dict) else value
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TypeError(f"the task returned a {type(value).__name__}; return a dict or a list of dicts")
    if not rows:
        raise ValueError("the task returned no rows")
    plain = []
    for row in rows:
        for name in row:
            if not isinstance(name, str) or not name:
                raise TypeError(f"a result field name is {name!r}; use non-empty strings")
            if name in RESERVED:
                raise ValueError(f"the result field {name!r} is the sweep's own column; rename it")
        plain.append({name: _plain(value) for name, value in row.items()})
    return plain


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists (the table writes Python values)."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__ == "numpy":
        return tolist()
    return value


def run_cells(
    args: tuple[Callable, list[tuple[str, dict]], dict[str, Callable], dict[str, str]],
) -> list[tuple[str, list[dict] | None, str | None, str | None, float]]:
    """Worker side: run a batch of cells; each gives (key, rows, None, None, seconds) or
    (key, None, error type, message, seconds)."""
    task, batch, loaders, tokens = args
    resources = WorkerResources(loaders, tokens)
    out = []
    for key, cell in batch:
        start = time.perf_counter()
        try:
            rows = _result_rows(task(dict(cell), resources))
            clash = sorted({n for row in rows for n in row} & set(cell))
            if clash:
                raise ValueError(f"result fields {clash} repeat cell parameters; rename them")
            out.append((key, rows, None, None, time.perf_counter() - start))
        except Exception as exc:  # a failing cell is recorded, the sweep goes on
            message = str(exc) or repr(exc)
            out.append((key, None, type(exc).__name__, message[:MAX_MESSAGE], time.perf_counter() - start))
    return out


class Batches:
    """The cells cut into Dask tasks, sized as the sweep goes (the executor asks for the next
    batch only when a task ends, so sizes follow the measured cell durations).

    A fixed ``size`` is used as is. Automatic: 1 cell per task until a cell's duration is
    known, then enough cells for about TARGET_TASK_SECONDS per task (Dask's cost per task is a
    few milliseconds on an idle machine, tens on a loaded one), at most AUTO_BATCH_MAX, and
    never so many that a worker would get fewer than 4 of the remaining tasks (balance).
    """

    def __init__(self, todo: list[tuple[str, dict]], size: int | None, workers: int) -> None:
        self.todo = todo
        self.size = size
        self.workers = max(1, workers)
        self.durations: list[float] = []
        self.sizes: list[int] = []

    def observe(self, seconds: list[float]) -> None:
        self.durations.extend(seconds)
        del self.durations[:-256]  # the recent cells: a sweep's later cells may be slower

    def next_size(self, remaining: int) -> int:
        if self.size is not None:
            return self.size
        if not self.durations:
            return 1
        typical = statistics.median(self.durations)  # the median ignores a first cell's resource load
        wanted = int(TARGET_TASK_SECONDS / max(typical, 1e-6))
        balance = remaining // (4 * self.workers)
        return max(1, min(wanted, AUTO_BATCH_MAX, balance))

    def __iter__(self):
        at = 0
        while at < len(self.todo):
            size = self.next_size(len(self.todo) - at)
            self.sizes.append(size)
            yield self.todo[at : at + size]
            at += size


def _prepare(cells: Iterable[dict], options: SweepOptions) -> list[tuple[str, dict]]:
    keyed: list[tuple[str, dict]] = []
    seen: dict[str, int] = {}
    for index, cell in enumerate(cells):
        if index >= MAX_CELLS:
            raise ConfigError(
                f"more than {MAX_CELLS} cells", where="cells", fix="split the sweep or coarsen the grid"
            )
        check_cell(cell, index)
        key = cell_key(cell, options.key_fields)
        if key in seen:
            raise ConfigError(
                f"the same key as cell {seen[key]} (the same parameters)",
                where=f"cell {index}",
                fix="list each cell once" + (", or widen key_fields" if options.key_fields else ""),
            )
        seen[key] = index
        keyed.append((key, cell))
    return keyed


def check_options(options: SweepOptions) -> dict[str, str]:
    check_cluster(options)
    batch = options.batch
    if batch is not None and (
        isinstance(batch, bool) or not isinstance(batch, int) or not 0 < batch <= 10_000
    ):
        raise ConfigError(
            f"batch must be 1 to 10000 (or None: automatic), got {batch!r}", where="batch", fix="e.g. 1"
        )
    if not isinstance(options.resources, dict):
        raise ConfigError("resources must be a dict name -> loader", where="resources")
    return {name: loader_token(name, loader) for name, loader in options.resources.items()}


@contextlib.contextmanager
def _bar(options: SweepOptions, total: int, initial: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr (rich, as the CLI's help and tables); yields ``advance(n)``."""
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(file=sys.stderr), transient=True, disable=not options.progress) as bar:
        task = bar.add_task("cells", total=total, completed=initial)
        yield lambda n: bar.advance(task, n)


def run_sweep(
    task: Callable[[dict, Any], dict | list[dict]], cells: Iterable[dict], options: SweepOptions | None = None
) -> SweepRows:
    """Run ``task`` on every cell (module docstring); the rows in cell order."""
    options = options or SweepOptions()
    tokens = check_options(options)
    keyed = _prepare(cells, options)
    params = list(dict.fromkeys(name for _, cell in keyed for name in cell))
    name = task_name(task)
    table = description_path = None
    done: dict[str, list[dict]] = {}
    if options.out is not None:
        table_path, description_path = paths(options.out)
        previous = read_description(description_path) if options.resume else None
        if previous is not None and previous.get("task") not in (None, name):
            raise ConfigError(
                f"{options.out} holds a sweep of {previous.get('task')}, not of {name}",
                where=str(options.out),
                fix="use another out directory, or resume=False (--no-resume) to replace it",
            )
        fields = list(options.key_fields) if options.key_fields is not None else None
        if (
            previous is not None
            and previous.get("task") == name
            and previous.get("key_fields", fields) != fields
        ):
            raise ConfigError(
                f"{options.out} was keyed by {previous.get('key_fields')}, not {fields}: no cell would be found",
                where=str(options.out),
                fix="give the same key_fields, or resume=False (--no-resume) to replace the table",
            )
        table = Table(table_path, [KEY, *params, PART, PARTS, ERROR_TYPE, ERROR])
        if options.resume:
            loaded = table.load()
            done = _finished(loaded)
            kept = [row for rows in done.values() for row in rows]
            if len(kept) != len(loaded):  # failed or torn cells: their old rows go, they run again
                table.keep(kept)
        table.start(fresh=not options.resume)
    by_key = dict(keyed)
    done = {k: v for k, v in done.items() if k in by_key}
    todo = [(k, c) for k, c in keyed if k not in done]
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    description = {
        "task": name,
        "table": table.path.name if table else None,
        "cells": len(keyed),
        "parameters": params,
        "key_fields": list(options.key_fields) if options.key_fields is not None else None,
        "resources": sorted(options.resources),
        "started": started,
        "finished": None,
    } | options.description
    if description_path is not None:
        write_description(description_path, description | {"cluster": str(options.cluster)})
    fresh: dict[str, list[dict]] = {}
    failed = 0
    clock = time.perf_counter()
    try:
        with _executor(options, bool(todo)) as executor, _bar(options, len(keyed), len(done)) as bar:
            if todo:
                description["cluster"] = executor.name
            plan = Batches(todo, options.batch, executor.workers)
            batches = ((task, batch, options.resources, tokens) for batch in plan)
            for results in executor.run(run_cells, batches, lost=_lost):
                plan.observe([seconds for *_, seconds in results])
                for key, rows, error_type, message, _ in results:
                    cell = by_key[key]
                    if rows is None:
                        failed += 1
                        rows = [{ERROR_TYPE: error_type, ERROR: message}]
                    full = [
                        {KEY: key} | cell | row | {PART: i, PARTS: len(rows)} for i, row in enumerate(rows)
                    ]
                    if table is not None:
                        table.append(full)
                    fresh[key] = full
                    bar(1)
    finally:
        if table is not None:
            table.close()
        if description_path is not None:
            description |= {
                "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "computed": len(fresh),
                "reused": len(done),
                "failed": failed,
                "complete": len(fresh) + len(done) == len(keyed),
                "seconds": round(time.perf_counter() - clock, 3),
                "columns": table.columns if table is not None else None,
                "batch": options.batch or "auto",
            }
            write_description(description_path, description)
    out = SweepRows()
    for key, cell in keyed:
        rows = fresh.get(key) or [{KEY: key} | cell | _result_part(r, cell) for r in done[key]]
        out.extend(rows)
    out.cells, out.computed, out.reused, out.failed = len(keyed), len(fresh), len(done), failed
    out.table = str(table.path) if table is not None else None
    return out


def _lost(batch: tuple, error: BaseException) -> list[tuple[str, None, str, str, float]]:
    """Every cell of a task Dask gave up on (its worker died) fails with Dask's reason."""
    message = (str(error) or repr(error))[:MAX_MESSAGE]
    return [(key, None, type(error).__name__, message, 0.0) for key, _ in batch[1]]


def _executor(options: SweepOptions, needed: bool):
    """The cluster when there is work; nothing to start when every cell is already done."""
    return open_executor(options) if needed else contextlib.nullcontext(SerialExecutor())


def _result_part(row: dict, cell: dict) -> dict:
    """A read-back row's results: without key, parameters (the cell's own values replace them)
    and the empty fields of other rows' columns."""
    return {
        k: v for k, v in row.items() if k != KEY and k not in cell and (v is not None or k in (PART, PARTS))
    }


def _finished(rows: list[dict]) -> dict[str, list[dict]]:
    """Keys whose rows are all present and error-free, with their rows in part order."""
    by_key: dict[str, list[dict]] = {}
    for row in rows:
        by_key.setdefault(str(row.get(KEY)), []).append(row)
    done = {}
    for key, group in by_key.items():
        parts = {r.get(PART) for r in group}
        total = group[0].get(PARTS)
        # len first: a hostile "parts" of 10**12 must not build a range of that size
        if not isinstance(total, int) or len(group) != total or parts != set(range(total)):
            continue
        if any(r.get(ERROR_TYPE) is not None for r in group):
            continue
        done[key] = sorted(group, key=lambda r: r[PART])
    return done
