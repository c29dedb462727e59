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

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
)

from rush.config_file import explain
from rush.core.config import parse_threshold
from rush.core.names import BACKFILL_MODES
from rush.errors import ConfigError, RushError
from rush.models.policies.heuristic_file import parse_policy_text
from rush.studies.sweep.engine import MAX_CELLS
from rush.studies.sweep.options import SlurmOptions

MAX_LIST = 100_000  # entries of one list: far above any grid, far below a memory problem
MAX_GRID_BYTES = 1 << 20
EXAMPLE = "the grid example in `rush sweep run --help`"


def _listed(value: Any) -> Any:
    # ``policies = "FCFS"`` is a list of one.
    return value if isinstance(value, list) else [value]


def _axis(values: list) -> list:
    if not values:
        raise ValueError("is empty: the product has no cells")
    if len(set(values)) != len(values):
        raise ValueError("lists an entry twice (list each once)")
    return values


def _policy(name: str) -> str:
    try:
        parse_policy_text(name)
    except RushError as exc:
        raise ValueError(f"{exc.message} ({exc.fix})" if exc.fix else exc.message) from None
    return name


def _backfill(mode: str) -> str:
    if mode not in BACKFILL_MODES:
        raise ValueError(f"unknown backfilling {mode!r}; use {', '.join(BACKFILL_MODES)}")
    return mode


def _threshold(value: Any) -> float | str:
    if isinstance(value, str) and value.strip().lower() in ("none", "off"):
        return "none"
    if isinstance(value, str) and not value.strip():
        raise ValueError('an empty threshold; give seconds, or "none"')
    try:
        seconds = parse_threshold(value)
    except RushError as exc:
        raise ValueError(exc.message) from None
    except TypeError:
        seconds = None
    if seconds is None:
        raise ValueError('not a threshold; give seconds, or "none"')
    return float(seconds)


def _weeks(value: Any) -> Any:
    return None if value == "all" else _listed(value)


Text = Annotated[StrictStr, StringConstraints(strip_whitespace=True, min_length=1)]
Axis = Field(max_length=MAX_LIST)
Count = Annotated[StrictInt, Field(gt=0, le=100_000)]


class SlurmTable(BaseModel):
    """The grid's ``[slurm]`` table (dask-jobqueue SLURMCluster options); the command line's go over it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    queue: StrictStr | None = Field(None, description="a partition name (a string)")
    cores: Count = Field(1, description="cores per worker job, an integer 1..100000")
    memory: StrictStr = Field("1GB", description='memory per worker job, a string such as "2GB"')
    walltime: StrictStr = Field("00:30:00", description='a time limit, a string such as "01:00:00"')
    jobs: Count = Field(1, description="the number of worker jobs, an integer 1..100000")
    processes: Count = Field(1, description="worker processes per job, an integer 1..100000")
    python: StrictStr | None = Field(None, description="the workers' python (a path)")
    account: StrictStr | None = Field(None, description="a Slurm account name (a string)")
    job_extra_directives: list[StrictStr] = Field(
        default_factory=list, description='a list of #SBATCH lines, e.g. ["--exclusive"]'
    )


class GridFile(BaseModel):
    """A grid file as written; :func:`check_grid` adds the rules between keys."""

    model_config = ConfigDict(extra="forbid", strict=True)

    traces: Annotated[list[Text], BeforeValidator(_listed), Axis, AfterValidator(_axis)] = Field(
        description="a list of catalogue names, trace paths or lublin[:JOBS[:PROCS[:SEED]]]"
    )
    policies: Annotated[
        list[Annotated[Text, AfterValidator(_policy)]], BeforeValidator(_listed), Axis, AfterValidator(_axis)
    ] = Field(description='a list of policies, e.g. ["FCFS", "LINEAR:q=1,wait=2"]')
    backfill: Annotated[
        list[Annotated[Text, AfterValidator(_backfill)]],
        BeforeValidator(_listed),
        Axis,
        AfterValidator(_axis),
    ] = Field(default_factory=lambda: ["easy"], description=f"a list of {', '.join(BACKFILL_MODES)}")
    thresholds: Annotated[
        list[Annotated[Any, AfterValidator(_threshold)]],
        BeforeValidator(_listed),
        Axis,
        AfterValidator(_axis),
    ] = Field(default_factory=lambda: [200000], description='a list of seconds >= 0 or "none"')
    slice: Literal["week", "none"] = Field("none", description='"week" (each week on its own) or "none"')
    weeks: Annotated[
        list[Annotated[StrictInt, Field(ge=0, lt=100_000)]] | None,
        BeforeValidator(_weeks),
        Axis,
        AfterValidator(lambda v: v if v is None else _axis(v)),
    ] = Field(None, description='a list of week numbers from 0, or "all"')
    tau: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        10.0, description="seconds > 0 (the bounded-slowdown tau), e.g. 10"
    )
    procs: Annotated[StrictInt, Field(gt=0, lt=2**31)] | None = Field(
        None, description="a processor count, e.g. 128"
    )
    slurm: SlurmTable = Field(default_factory=SlurmTable, description="a table of SLURMCluster options")


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


def check_grid(doc: dict, where: str) -> Grid:
    """The grid in ``doc`` (from the file ``where``), or a ConfigError naming the key."""
    try:
        parsed = GridFile.model_validate(doc)
    except ValidationError as exc:
        raise explain(exc, where, GridFile, example=EXAMPLE) from None
    if parsed.slice == "none" and "weeks" in parsed.model_fields_set:
        raise ConfigError('weeks needs slice = "week"', where=f"{where}: weeks", fix='add slice = "week"')
    grid = Grid(
        where,
        parsed.traces,
        parsed.slice,
        parsed.weeks,
        parsed.policies,
        parsed.backfill,
        parsed.thresholds,
        parsed.tau,
        parsed.procs,
        parsed.slurm.model_dump(exclude_unset=True),
    )
    planned = grid.axes_size() * (len(grid.weeks) if grid.weeks is not None else 1)
    if planned > MAX_CELLS:
        raise ConfigError(
            f"the grid has {planned} cells, over the cap of {MAX_CELLS}",
            where=where,
            fix="split it into several grids or coarsen its axes",
        )
    return grid


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
    try:
        table = SlurmTable.model_validate(values)
    except ValidationError as exc:
        raise explain(exc, grid.source, SlurmTable, prefix="slurm", example=EXAMPLE) from None
    return SlurmOptions(**table.model_dump(exclude_unset=True))  # SlurmOptions keeps its defaults
