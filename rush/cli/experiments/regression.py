"""``rush experiment regression``: regression-obtained heuristics (Rosa et al. JSSPP'23; SC'17).

Scores (S, Q) pairs by trials, fits the Lin/Qdr/Cub/Qua templates by weighted least squares
(coefficients, VIF, sign flips between two halves of the pairs), writes each as a LEARNED
heuristic file and evaluates them as policies against FCFS, SPF, SAF and F1-F4 on Lublin runs
and weeks of real traces, with and without EASY. Scoring and evaluation run on Dask through
:func:`rush.studies.sweep.run_sweep`. Heavy modules are imported inside the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rush.errors import ConfigError

MAX_RUNS = 1000
MAX_WEEKS = 1000
MAX_JOBS = 100_000
MAX_TOTAL_TRIALS = 10**11


def register(app: typer.Typer) -> None:
    app.command("regression")(regression_command)


def _check(value: int, flag: str, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ConfigError(f"{flag} must be {low} to {high}, got {value}", where=flag)


def _traces(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if len(names) > 20:
        raise ConfigError("at most 20 traces", where="--traces")
    return list(dict.fromkeys(names))


def regression_command(
    pairs: int = typer.Option(300, "--pairs", help="(S, Q) pairs to score."),
    trials: int = typer.Option(256_000, "--trials", help="Trials per pair (the paper: 256 000)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the pairs and trials."),
    q_spread: float = typer.Option(1.0, "--q-spread", help="Scale of Q's arrival span (1: the model's)."),
    runs: int = typer.Option(50, "--runs", help="Lublin-Feitelson evaluation runs."),
    jobs: int = typer.Option(2000, "--jobs", help="Jobs per Lublin evaluation run (256 processors)."),
    traces: str = typer.Option(
        "SDSC-SP2,KTH-SP2", "--traces", help="Real traces (comma-separated; '' for none)."
    ),
    weeks: int = typer.Option(20, "--weeks", help="Weeks per real trace, spread over the trace."),
    spread_pairs: int = typer.Option(3, "--spread-pairs", help="Pairs for the score-spread study (0: skip)."),
    spread_repeats: int = typer.Option(5, "--spread-repeats", help="Repetitions per trial count."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    out: Path | None = typer.Option(
        None, "--out", help="Write heuristics/, results/, plots/ and sweeps/ here."
    ),
    cluster: str = typer.Option(
        "local", "--cluster", help="local | local:N | serial | slurm | tcp://host:port."
    ),
    workers: int | None = typer.Option(
        None, "--workers", help="Workers of a local cluster (default: cores)."
    ),
) -> None:
    """Fit Lin/Qdr/Cub/Qua heuristics on scored (S, Q) pairs and evaluate them as policies."""
    from rush.studies.regression_data import MAX_PAIRS, MAX_TRIALS, Q_SIZE

    _check(pairs, "--pairs", 2, MAX_PAIRS)
    _check(trials, "--trials", Q_SIZE, MAX_TRIALS)
    _check(seed, "--seed", 0, 2**20)
    _check(runs, "--runs", 0, MAX_RUNS)
    _check(jobs, "--jobs", 100, MAX_JOBS)
    _check(weeks, "--weeks", 0, MAX_WEEKS)
    _check(spread_pairs, "--spread-pairs", 0, 100)
    _check(spread_repeats, "--spread-repeats", 2, 100)
    if pairs * trials > MAX_TOTAL_TRIALS:
        raise ConfigError(f"{pairs} pairs x {trials} trials is over {MAX_TOTAL_TRIALS:.0e}", where="--trials")
    trace_names = _traces(traces)
    from rush.studies.regression_data import check_q_spread

    check_q_spread(q_spread)
    from rush.studies.sweep import SweepOptions
    from rush.studies.sweep.clusters import check_cluster

    check_cluster(SweepOptions(cluster=cluster, workers=workers))
    from rush.studies.regression_heuristics import RegressionStudy, run_study

    study = RegressionStudy(
        pairs,
        trials,
        seed,
        q_spread,
        runs,
        jobs,
        trace_names,
        weeks,
        spread_pairs,
        spread_repeats,
        out,
        cluster,
        workers,
    )
    result = run_study(study)
    for message in result["messages"]:
        typer.secho(message, err=True)
    if as_json:
        typer.echo(json.dumps(result, sort_keys=True, allow_nan=False))
        return
    _print(result)


def _print(result: dict) -> None:
    s = result["settings"]
    typer.echo(
        f"{result['rows'] // 32} pairs scored ({result['pairs_flat']} flat) with {s['trials']} trials "
        f"({s['trials_per_job']} per first job)"
    )
    typer.echo(f"{'template':8} {'terms':>5} {'R2':>6} {'max VIF':>10} {'VIF>5':>5} {'sign flips':>10}")
    for f in result["fits"]:
        vif = f["max_vif"] if isinstance(f["max_vif"], str) else f"{f['max_vif']:.3g}"
        typer.echo(
            f"{f['template']:8} {f['terms']:5d} {f['r2']:6.3f} {vif:>10} {f['terms_vif_over_5']:5d} "
            f"{f['sign_flips_between_halves']:10d}"
        )
    typer.echo("")
    typer.echo(f"{'source':10} {'backfill':8} {'policy':6} {'mean BSLD':>10} {'/SAF':>6} {'/FCFS':>6}")
    for row in result["summary"]:
        typer.echo(
            f"{row['source']:10} {row['backfill']:8} {row['policy']:6} {row['mean_bsld'] or float('nan'):10.2f} "
            f"{row['gmean_ratio_to_saf'] or float('nan'):6.2f} {row['gmean_ratio_to_fcfs'] or float('nan'):6.2f}"
        )
