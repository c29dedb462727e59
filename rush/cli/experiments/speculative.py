"""``rush experiment speculative``: speculative reservations for stochastic jobs.

Gainaru & Pallez (ScalA 2019) on Aupy et al.'s strategies (IPDPS 2019): the cost of the
discrete and continuous estimators (and two baselines) over the full-knowledge optimum as the
number of past runs grows, then a trace replay where each job's reservations come from its
application's history. Heavy modules are imported inside the command (``rush --help``).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rush.models.speculative.job_sequence import HISTORY

DEFAULT_DISTRIBUTIONS = "truncnormal,exponential,lognormal,uniform,weibull,gamma,beta,pareto,boundedpareto"


def register(app: typer.Typer) -> None:
    app.command("speculative")(speculative_command)


def speculative_command(
    distributions: str = typer.Option(
        DEFAULT_DISTRIBUTIONS, "--distributions", help="Laws (comma-separated)."
    ),
    samples: str = typer.Option("5,10,20,50,100,1000", "--samples", help="Numbers of past runs n."),
    repetitions: int = typer.Option(100, "--repetitions", help="Draws of the n samples per (law, n)."),
    trace: str = typer.Option("KTH-SP2", "--trace", help="Trace of the replay ('none': skip it)."),
    trace_jobs: int = typer.Option(5000, "--trace-jobs", help="Jobs of the trace replayed (its first ones)."),
    history: int = typer.Option(HISTORY, "--history", help="Past runs of an application used per job."),
    seed: int = typer.Option(..., "--seed", help="Seed of the sample draws."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    out: Path | None = typer.Option(
        None, "--out", help="results/ and plots/ here (default: a temporary directory)."
    ),
    cluster: str = typer.Option(
        "serial", "--cluster", help="serial | local | local:N | slurm (rush.studies.sweep)."
    ),
) -> None:
    """Estimators vs the full-knowledge optimum (ratio vs n), and a trace replay; tables and plots."""
    import tempfile

    from rush.studies.speculative import SpeculativeStudy, check_args, parse_list, run_study

    names = parse_list(distributions, "--distributions")
    sizes = parse_list(samples, "--samples", int)
    trace_name = None if trace.strip().lower() in ("", "none") else trace
    check_args(names, sizes, repetitions, seed, history, trace_jobs)  # bad input: exit 2, nothing written
    if trace_name is not None:
        from rush.workload.catalogue import resolve_trace

        resolve_trace(trace_name)  # an unknown trace fails here, before the sweep
    with tempfile.TemporaryDirectory(prefix="rush-speculative-") as tmp:
        where = out or Path(tmp)
        study = SpeculativeStudy(
            where,
            names,
            sizes,
            repetitions,
            seed,
            trace_name,
            trace_jobs,
            history,
            cluster,
            progress=not as_json,
        )
        summary = run_study(study)
        if out is None:
            summary["out"] = None
        if as_json:
            typer.echo(json.dumps(summary, indent=1))
        else:
            _print(summary)
    if summary["failures"]:
        typer.echo(f"{len(summary['failures'])} cells failed: {summary['failures'][:3]}", err=True)
        raise typer.Exit(1)


def _print(summary: dict) -> None:
    typer.echo("ratio of expected cost to the full-knowledge optimum (mean over repetitions; alpha=1)")
    typer.echo(f"  {'law':<14}{'n':>6}  {'discrete':>9}{'continuous':>11}{'mean-2x':>9}{'upper':>8}")
    table: dict[tuple, dict] = {}
    for r in summary["ratios"]:
        table.setdefault((r["distribution"], r["n"]), {})[r["estimator"]] = r["mean_ratio"]
    for (name, n), v in table.items():
        cells = "".join(
            f"{v.get(e, float('nan')):>{w}.3f}"
            for e, w in (("discrete", 9), ("continuous", 11), ("mean-doubling", 9), ("upper-bound", 8))
        )
        typer.echo(f"  {name:<14}{n:>6}  {cells}")
    for r in summary["trace"]:
        typer.echo(
            f"trace {r['trace']} ({r['jobs']} jobs) {r['estimator']:<14} BSLD {r['mean_bsld']:8.2f}  "
            f"util {r['utilization']:.3f} (with waste {r['occupied_utilization']:.3f})  kills {r['reservation_kills']}"
        )
    if summary.get("out"):
        typer.echo(f"results in {summary['out']}/results, plots in {summary['out']}/plots")
