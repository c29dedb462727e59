"""``rush experiment mixed``: mixed policies per week (Zrigui's thesis, ch. 5) and the pure ranking.

Heavy modules (numpy, cma, dask, matplotlib, the simulator) are imported inside the command:
``rush --help`` imports this module.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from rush.errors import RushError

METHOD_CHOICES = ("grid", "cmaes3", "cmaes6", "xnes3", "xnes6", "all")
MAX_GRID_STEPS = 100
MAX_GENERATIONS = 1000
MAX_POPSIZE = 1000


def _weeks(text: str) -> int | None:
    value = text.strip().lower()
    if value == "all":
        return None
    if not value.isdigit() or not 1 <= int(value) <= 10_000:
        raise RushError(f"bad --weeks {text!r}", where="--weeks", fix="a number of weeks (e.g. 8) or all")
    return int(value)


def _methods(text: str) -> tuple[str, ...]:
    names = [m.strip().lower() for m in text.split(",") if m.strip()]
    bad = [m for m in names if m not in METHOD_CHOICES]
    if not names or bad:
        raise RushError(
            f"unknown --method {text!r}", where="--method", fix=f"one of {', '.join(METHOD_CHOICES)}"
        )
    if "all" in names:
        return ("grid", "cmaes3", "cmaes6", "xnes3", "xnes6")
    return tuple(dict.fromkeys(names))


def _count(value: int | None, flag: str, upper: int, example: str) -> None:
    if value is not None and not 1 <= value <= upper:
        raise RushError(f"{flag} must be 1 to {upper}, got {value}", where=flag, fix=f"e.g. {flag} {example}")


def _threshold(text: str) -> float | None:
    from rush.core.config import parse_threshold

    value = text.strip().lower()
    if value.endswith("d") and value[:-1].replace(".", "", 1).isdigit():
        value = str(float(value[:-1]) * 86400.0)  # 2.31d: the thesis gives days
    try:
        return parse_threshold(value)
    except RushError as exc:
        raise RushError(
            exc.message, where="--threshold", fix="seconds, days such as 2.31d, or none"
        ) from None


def register(app: typer.Typer) -> None:
    app.command("mixed")(mixed_command)


def mixed_command(
    trace: list[str] = typer.Option(
        ["SDSC-SP2"], "--trace", help="Trace (catalogue name or file); repeat for several."
    ),
    weeks: str = typer.Option(
        "all", "--weeks", help="The first N weeks of each trace (at most its length), or all."
    ),
    method: str = typer.Option(
        "all", "--method", help="grid | cmaes3 | cmaes6 | xnes3 | xnes6 | all (comma-separated)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the CMA-ES and XNES runs."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    out: Path | None = typer.Option(
        None, "--out", help="Write results/*.csv, results/*.json and plots/ here."
    ),
    cluster: str = typer.Option(
        "local", "--cluster", help="local | local:N | serial | slurm | tcp://host:port."
    ),
    workers: int | None = typer.Option(
        None, "--workers", help="Workers of a local cluster (default: cores)."
    ),
    grid_steps: int = typer.Option(
        10, "--grid-steps", help="Simplex grid step 1/N for grid (10: 66 points)."
    ),
    generations: int = typer.Option(
        15, "--cma-generations", help="CMA-ES generations per run (XNES: the same evaluations)."
    ),
    popsize: int | None = typer.Option(
        None, "--cma-popsize", help="CMA-ES/XNES population (default 4 + 3 ln d)."
    ),
    threshold: str = typer.Option("2.31d", "--threshold", help="Starvation threshold: seconds, 2.31d, none."),
    tau: float = typer.Option(10.0, "--tau", help="Bounded-slowdown threshold tau in seconds (> 0)."),
    procs: int | None = typer.Option(None, "--procs", help="Machine size (default: the trace's)."),
    sweep_dir: Path | None = typer.Option(
        None, "--sweep-dir", help="Keep the sweep table here; a rerun resumes from it."
    ),
    ranking: bool = typer.Option(
        False, "--ranking", help="Rank the 12 index policies on each whole trace instead."
    ),
) -> None:
    """Mixed policies per week (grid, CMA-ES), w*_train and w_greedy; or --ranking of the pure policies."""
    from rush.cli import checks
    from rush.workload.limits import check_seed

    config_weeks = _weeks(weeks)
    methods = _methods(method)
    check_seed(seed)
    _count(grid_steps, "--grid-steps", MAX_GRID_STEPS, "10")
    _count(generations, "--cma-generations", MAX_GENERATIONS, "15")
    _count(popsize, "--cma-popsize", MAX_POPSIZE, "8")
    if popsize is not None and popsize < 2:
        raise RushError("--cma-popsize must be at least 2", where="--cma-popsize", fix="e.g. 8")
    checks.positive_seconds(tau, "--tau", "10")
    checks.machine_procs(procs)
    checks.output_dir(out, "--out")
    checks.output_dir(sweep_dir, "--sweep-dir")
    config_threshold = _threshold(threshold)
    traces = list(dict.fromkeys(t.strip() for t in trace if t.strip()))
    if not traces:
        raise RushError("no trace given", where="--trace", fix="e.g. --trace SDSC-SP2")
    from rush.studies.sweep import SweepOptions
    from rush.studies.sweep.clusters import check_cluster

    check_cluster(SweepOptions(cluster=cluster, workers=workers))
    from rush.workload.catalogue import parse_lublin_spec, resolve_trace

    for spec in traces:  # a missing trace is an error before any cluster starts
        if parse_lublin_spec(spec) is None:
            resolve_trace(spec)

    if any(m.startswith("xnes") for m in methods) and not ranking:
        from rush.models.policies.mixed_xnes import load_xnes

        load_xnes()  # pypop7 missing: exit 2 naming the install line, before any simulation
    from rush.jit_cache import announce_if_cold, skip_numba_blas_probe
    from rush.studies.mixed import StudyConfig, pure_ranking, run_study

    skip_numba_blas_probe()
    announce_if_cold()
    config = StudyConfig(
        traces=traces,
        weeks=config_weeks,
        methods=methods,
        seed=seed,
        grid_steps=grid_steps,
        cma_generations=generations,
        cma_popsize=popsize,
        threshold=config_threshold,
        tau=tau,
        procs=procs,
        cluster=cluster,
        workers=workers,
        sweep_dir=sweep_dir,
        progress=False,
        log=lambda line: typer.echo(line, err=True),
    )
    if ranking:
        result = pure_ranking(config)
        if out is not None:
            from rush.studies.mixed_report import write_ranking

            write_ranking(result, out)
        if as_json:
            typer.echo(json.dumps(_jsonable(result), sort_keys=True))
        else:
            _print_ranking(result)
        return
    result = run_study(config)
    for spec, data in result["traces"].items():
        for skipped in data["skipped_weeks"]:
            typer.secho(f"{spec}: week {skipped['week']} skipped: {skipped['reason']}", err=True)
    if out is not None:
        from rush.studies.mixed_report import write_study

        write_study(result, out)
    if as_json:
        typer.echo(json.dumps(_jsonable(result), sort_keys=True))
    else:
        _print_study(result)


def _jsonable(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    return obj


def _fmt(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.2f}"


def _print_ranking(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    threshold = result["settings"]["threshold_days"]
    for spec, ranking in result["ranking"].items():
        days = "none" if threshold is None else f"{threshold:g} days"
        table = Table(title=f"{spec}: index policies, EASY, starvation threshold {days}")
        for name in ("rank", "policy", "mean bsld"):
            table.add_column(name, justify="right")
        for row in ranking:
            table.add_row(str(row["rank"]), row["policy"], _fmt(row["mean_bsld"]))
        Console().print(table)


STUDY_ROWS = (
    ("mean_bsld_star", "w* (per week)"),
    ("mean_bsld_best_pure", "best pure (per week)"),
    ("mean_bsld_saf", "SAF"),
    ("mean_bsld_fcfs", "FCFS"),
    ("weeks_star_better_than_best_pure", "weeks w* < best pure"),
    ("max_ratio_best_pure_to_star", "max best pure / w*"),
    ("test_mean_bsld_star", "test: w*"),
    ("test_mean_bsld_best_pure", "test: best pure"),
    ("test_mean_bsld_saf", "test: SAF"),
    ("test_mean_bsld_train", "test: w*_train"),
    ("test_mean_bsld_greedy", "test: w_greedy"),
)


def _print_study(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for spec, data in result["traces"].items():
        table = Table(
            title=f"{spec}: mean over weeks of the weekly mean bsld",
            caption=f"{data['weeks_selected']} weeks; test = the last {len(data['test_weeks'])}",
        )
        table.add_column("")
        for method in data["summary"]:
            table.add_column(method, justify="right")
        for key, title in STUDY_ROWS:
            cells = []
            for s in data["summary"].values():
                value = s[key]
                cells.append(f"{value}/{s['weeks']}" if isinstance(value, int) else _fmt(value))
            table.add_row(title, *cells)
        console.print(table)
