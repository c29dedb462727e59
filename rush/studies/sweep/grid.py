"""Grid files of ``rush sweep run``: the product of traces, weeks and policy settings.

TOML or JSON, every key optional but ``traces`` and ``policies``::

    traces = ["SDSC-SP2", "runs/site.swf"]   # catalogue names, paths or lublin[:JOBS[:PROCS[:SEED]]]
    slice = "week"                           # "week": each week on its own; "none": whole traces
    weeks = [0, 1, 2]                        # or "all" (default): every week that has jobs
    policies = ["FCFS", "SPF", "LINEAR:q=1,wait=2"]
    backfill = ["easy", "none"]              # easy | conservative | none (default ["easy"])
    thresholds = [200000, "none"]            # starvation thresholds in seconds (default [200000])
    tau = 10                                 # bounded-slowdown tau (s)
    procs = 128                              # machine size (default: the trace's)

    [slurm]                                  # dask-jobqueue SLURMCluster options (--cluster slurm)
    queue = "batch"
    cores = 1
    memory = "2GB"
    walltime = "01:00:00"
    jobs = 4

Everything is checked before anything is written or started: an unknown key, a wrong type,
an unknown policy, an empty product, a product over :data:`MAX_CELLS`, a week outside a trace
or without jobs are :class:`~rush.errors.ConfigError` naming the file and key.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rush.errors import ConfigError, RushError
from rush.studies.sweep.engine import MAX_CELLS
from rush.studies.sweep.options import SlurmOptions

KEYS = ("traces", "slice", "weeks", "policies", "backfill", "thresholds", "tau", "procs", "slurm")
SLURM_KEYS = (
    "queue",
    "cores",
    "memory",
    "walltime",
    "jobs",
    "processes",
    "python",
    "account",
    "job_extra_directives",
)
MAX_LIST = 100_000  # entries of one list: far above any grid, far below a memory problem
MAX_GRID_BYTES = 1 << 20


@dataclass
class Grid:
    """A checked grid: the axes, and the traces to load (spec -> absolute path or name)."""

    source: str
    traces: list[str]
    slice: str
    weeks: list[int] | None  # None: all weeks with jobs
    policies: list[str]
    backfill: list[str]
    thresholds: list[float | str]
    tau: float
    procs: int | None
    slurm: dict[str, Any] = field(default_factory=dict)
    resolved: dict[str, str] = field(default_factory=dict)

    def axes_size(self) -> int:
        return len(self.traces) * len(self.policies) * len(self.backfill) * len(self.thresholds)


def read_grid(path: Path) -> Grid:
    """Parse and check a grid file (TOML, or JSON when it ends in .json)."""
    where = str(path)
    if path.suffix.lower() == ".json":
        doc = _read_json(path)
    else:
        from rush.config_file import read_toml

        doc = read_toml(path, example="the grid example in `rush sweep run --help`")
    if not isinstance(doc, dict):
        raise ConfigError("a grid is an object of axes", where=where, fix="see `rush sweep run --help`")
    return check_grid(doc, where)


def _read_json(path: Path) -> Any:
    where = str(path)
    try:
        if not path.is_file():
            raise ConfigError(
                "grid file not found or not a regular file", where=where, fix="give the path of a grid file"
            )
        if path.stat().st_size > MAX_GRID_BYTES:
            raise ConfigError(
                f"the grid file is over {MAX_GRID_BYTES} bytes",
                where=where,
                fix="a grid lists axes, not cells",
            )
        with path.open("rb") as handle:
            data = handle.read(MAX_GRID_BYTES + 1)
        return json.loads(data.decode("utf-8"))
    except ConfigError:
        raise
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, deep nesting
        raise ConfigError(
            f"not a JSON grid: {str(exc)[:200]}", where=where, fix="fix the JSON syntax"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the grid: {exc.strerror}", where=where) from None


def _list(doc: dict, key: str, where: str, default: list | None = None) -> list:
    if key not in doc:
        if default is None:
            raise ConfigError(f"the grid has no {key!r}", where=where, fix=f"add {key} = [...]")
        return default
    value = doc[key]
    if not isinstance(value, list):
        value = [value]
    if not value:
        raise ConfigError(
            f"{key} is empty: the product has no cells", where=f"{where}: {key}", fix="list at least one"
        )
    if len(value) > MAX_LIST:
        raise ConfigError(
            f"{key} has {len(value)} entries", where=f"{where}: {key}", fix=f"at most {MAX_LIST}"
        )
    return value


def _strings(values: list, key: str, where: str) -> list[str]:
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(
                f"{key}[{i}] is {v!r}, not a non-empty string", where=f"{where}: {key}[{i}]", fix="quote it"
            )
    if len(set(values)) != len(values):
        raise ConfigError(f"{key} lists an entry twice", where=f"{where}: {key}", fix="list each once")
    return [v.strip() for v in values]


def check_grid(doc: dict, where: str) -> Grid:
    unknown = [k for k in doc if k not in KEYS]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), KEYS, n=1)
        raise ConfigError(
            f"unknown key {unknown[0]!r}",
            where=f"{where}: {unknown[0]}",
            fix=f"did you mean {close[0]!r}?" if close else f"the keys are: {', '.join(KEYS)}",
        )
    traces = _strings(_list(doc, "traces", where), "traces", where)
    policies = _strings(_list(doc, "policies", where), "policies", where)
    backfill = _strings(_list(doc, "backfill", where, ["easy"]), "backfill", where)
    thresholds = [_threshold(v, i, where) for i, v in enumerate(_list(doc, "thresholds", where, [200000]))]
    if len(set(thresholds)) != len(thresholds):
        raise ConfigError(
            "thresholds lists an entry twice", where=f"{where}: thresholds", fix="list each once"
        )
    from rush.core.names import BACKFILL_MODES
    from rush.core.policies import parse_policy

    for i, name in enumerate(policies):
        try:
            parse_policy(name)
        except RushError as exc:
            raise ConfigError(exc.message, where=f"{where}: policies[{i}]", fix=exc.fix) from None
    for i, mode in enumerate(backfill):
        if mode not in BACKFILL_MODES:
            raise ConfigError(
                f"unknown backfilling {mode!r}",
                where=f"{where}: backfill[{i}]",
                fix=f"use {', '.join(BACKFILL_MODES)}",
            )
    slicing = doc.get("slice", "none")
    if slicing not in ("week", "none"):
        raise ConfigError(f"slice is {slicing!r}", where=f"{where}: slice", fix='use "week" or "none"')
    weeks = _weeks(doc.get("weeks", "all"), slicing, "weeks" in doc, where)
    tau = doc.get("tau", 10.0)
    if isinstance(tau, bool) or not isinstance(tau, int | float) or not math.isfinite(tau) or tau <= 0:
        raise ConfigError(f"tau is {tau!r}", where=f"{where}: tau", fix="seconds > 0, e.g. 10")
    procs = doc.get("procs")
    if procs is not None and (isinstance(procs, bool) or not isinstance(procs, int) or not 0 < procs < 2**31):
        raise ConfigError(f"procs is {procs!r}", where=f"{where}: procs", fix="a processor count, e.g. 128")
    slurm = doc.get("slurm", {})
    if not isinstance(slurm, dict):
        raise ConfigError(
            "slurm is not a table", where=f"{where}: slurm", fix="[slurm] with queue, cores, ..."
        )
    for k in slurm:
        if k not in SLURM_KEYS:
            raise ConfigError(
                f"unknown key {k!r}",
                where=f"{where}: slurm.{k}",
                fix=f"the keys are: {', '.join(SLURM_KEYS)}",
            )
    grid = Grid(where, traces, slicing, weeks, policies, backfill, thresholds, float(tau), procs, dict(slurm))
    planned = grid.axes_size() * (len(weeks) if weeks is not None else 1)
    if planned > MAX_CELLS:
        raise ConfigError(
            f"the grid has {planned} cells, over the cap of {MAX_CELLS}",
            where=where,
            fix="split it into several grids or coarsen its axes",
        )
    return grid


def _threshold(value: Any, i: int, where: str) -> float | str:
    from rush.core.config import parse_threshold

    if isinstance(value, str) and value.strip().lower() in ("none", "off"):
        return "none"
    if isinstance(value, str) and not value.strip():
        raise ConfigError("an empty threshold", where=f"{where}: thresholds[{i}]", fix='seconds, or "none"')
    try:
        seconds = parse_threshold(value)
    except RushError as exc:
        raise ConfigError(exc.message, where=f"{where}: thresholds[{i}]", fix=exc.fix) from None
    except TypeError:
        seconds = None
    if seconds is None:
        raise ConfigError(
            f"bad threshold {value!r}", where=f"{where}: thresholds[{i}]", fix='seconds, or "none"'
        )
    return float(seconds)


def _weeks(value: Any, slicing: str, given: bool, where: str) -> list[int] | None:
    if slicing == "none":
        if given:
            raise ConfigError('weeks needs slice = "week"', where=f"{where}: weeks", fix='add slice = "week"')
        return None
    if value == "all":
        return None
    values = _list({"weeks": value}, "weeks", where)
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 100_000:
            raise ConfigError(
                f"weeks[{i}] is {v!r}",
                where=f"{where}: weeks[{i}]",
                fix='week numbers from 0, or weeks = "all"',
            )
    if len(set(values)) != len(values):
        raise ConfigError("weeks lists a week twice", where=f"{where}: weeks", fix="list each once")
    return [int(v) for v in values]


def resolve_traces(grid: Grid) -> dict[str, Any]:
    """Load each trace once here (checks it, counts its weeks); the loaders the workers will call."""
    from rush.studies.sweep.simulation import load_sliced, trace_resource

    loaders = {}
    grid.resolved = {}
    for spec in grid.traces:
        path = Path(spec).expanduser()
        target = str(path.resolve()) if path.exists() else spec  # workers may run elsewhere (Slurm)
        grid.resolved[spec] = target
        loaders[trace_resource(spec)] = functools.partial(load_sliced, target, grid.procs)
    return loaders


def cells(grid: Grid, loaded: dict[str, Any]) -> list[dict]:
    """The product, after the traces are loaded (``loaded``: spec -> SlicedWorkload)."""
    out: list[dict] = []
    for spec in grid.traces:
        if grid.slice == "week":
            sliced = loaded[spec]
            sizes = sliced.week_sizes()
            if grid.weeks is None:
                weeks = [k for k in range(sliced.weeks) if sizes[k] > 0]
            else:
                weeks = grid.weeks
                for k in weeks:
                    if k >= sliced.weeks or sizes[k] == 0:
                        state = "is outside the trace" if k >= sliced.weeks else "has no jobs"
                        raise ConfigError(
                            f"week {k} of {spec} {state} ({sliced.weeks} weeks)",
                            where=f"{grid.source}: weeks",
                            fix='leave it out, or use weeks = "all" (every week with jobs)',
                        )
            if len(out) + len(weeks) * grid.axes_size() // len(grid.traces) > MAX_CELLS:
                raise ConfigError(
                    f"the grid has over {MAX_CELLS} cells",
                    where=grid.source,
                    fix="split it or coarsen its axes",
                )
        else:
            weeks = [None]
        for week in weeks:
            for policy in grid.policies:
                for backfill in grid.backfill:
                    for threshold in grid.thresholds:
                        cell: dict[str, Any] = {"trace": spec}
                        if week is not None:
                            cell["week"] = week
                        cell |= {
                            "policy": policy,
                            "backfill": backfill,
                            "threshold": threshold,
                            "tau": grid.tau,
                        }
                        if grid.procs is not None:
                            cell["procs"] = grid.procs
                        out.append(cell)
    if not out:
        raise ConfigError("the grid's product is empty", where=grid.source, fix="check traces and weeks")
    return out


def slurm_options(grid: Grid, **overrides: Any) -> SlurmOptions:
    """The grid's [slurm] table with the command line's values over it."""
    values = dict(grid.slurm) | {k: v for k, v in overrides.items() if v is not None}
    types = {"cores": int, "jobs": int, "processes": int, "job_extra_directives": list}
    for k, v in values.items():
        want = types.get(k, str)
        if isinstance(v, bool) or not isinstance(v, want) or (want is int and not 0 < v <= 100_000):
            raise ConfigError(
                f"slurm.{k} is {v!r}", where=f"{grid.source}: slurm.{k}", fix=f"a {want.__name__}"
            )
    return SlurmOptions(**values)
