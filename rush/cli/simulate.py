"""``rush simulate`` and ``rush compare``: replay a trace through the core.

Only light modules are imported here: ``rush --help`` loads every command module, and numba,
numpy and the simulator are needed only once a command runs.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

import rush
from rush.cli import checks
from rush.cli.app import app
from rush.core.names import BACKFILL_MODES, POLICY_CODES
from rush.errors import ConfigError, RushError

if TYPE_CHECKING:
    from rush.core.fairshare import DecayedFairShare
    from rush.simulator.result import SimResult
    from rush.workload.model import Trace, Workload

CLASS_MODES = ("plain", "idempotent", "clairvoyant")

TRACE_HELP = "A trace file (SWF, gzip or plain; sacct JSON/parsable2), a catalogue name (e.g. KTH-SP2) or lublin[:JOBS[:PROCS[:SEED]]]."
POLICY_HELP = (
    f"Priority policy: {', '.join(p for p in POLICY_CODES if p not in ('LINEAR', 'LEARNED'))}, "
    "LINEAR:q=..,p=..,wait=..,rho=..,expansion=..,area=..,r=.. (weights), "
    "or LEARNED:path/to/heuristic.json (a fitted polynomial, see rush experiment regression)."
)
BACKFILL_HELP = " | ".join(BACKFILL_MODES)
THRESHOLD_HELP = "Starvation threshold in seconds, or 'none'."
TAU_HELP = "Bounded-slowdown threshold tau in seconds (> 0)."
PROCS_HELP = "Machine size in processors (default: MaxProcs header, else the largest job)."
DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str, flag: str) -> float:
    """``300``, ``300s``, ``30m``, ``12h``, ``7d`` or ``2w`` as seconds (finite, > 0)."""
    raw = text.strip().lower()
    unit = DURATION_UNITS.get(raw[-1:], None) if raw else None
    number = raw[:-1] if unit is not None else raw
    try:
        seconds = float(number) * (unit or 1.0)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(
            f"{flag} must be a duration > 0, got {text!r}",
            where=flag,
            fix=f"seconds or a number with s, m, h, d or w, e.g. {flag} 7d",
        )
    return seconds


def fair_share_model(half_life: str | None, period: str | None, by_group: bool) -> DecayedFairShare | None:
    """The replay's fair-share model from the flags (None without a half-life)."""
    if half_life is None:
        if period is not None or by_group:
            raise ConfigError(
                "--fairshare-period and --fairshare-by-group set up the fair-share model",
                where="--fairshare-period" if period is not None else "--fairshare-by-group",
                fix="add --fairshare-half-life (e.g. 7d, Slurm's default)",
            )
        return None
    from rush.core.fairshare import DEFAULT_CALC_PERIOD, DecayedFairShare

    return DecayedFairShare(
        half_life=parse_duration(half_life, "--fairshare-half-life"),
        calc_period=DEFAULT_CALC_PERIOD if period is None else parse_duration(period, "--fairshare-period"),
        by_group=by_group,
    )


def _load_workload(trace: str, procs: int | None, strict: bool) -> tuple[Trace, Workload]:
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    loaded = load_trace(trace, strict=strict)
    return loaded, workload_from_trace(loaded, machine_procs=procs)


def _check_backfill(backfill: str) -> None:
    if backfill not in BACKFILL_MODES:
        raise RushError(
            f"unknown backfilling {backfill!r}",
            where="--backfill",
            fix=f"use one of: {', '.join(BACKFILL_MODES)}",
        )


CLASS_MODELS = ("classifier", "quantiles")  # rush.studies.runtime_quantile_inputs.CLASS_MODELS


def _check_class_model(class_model: str, model: Path | None) -> None:
    if class_model not in CLASS_MODELS:
        raise ConfigError(
            f"unknown --class-model {class_model!r}",
            where="--class-model",
            fix=f"use one of: {', '.join(CLASS_MODELS)}",
        )
    if class_model == "quantiles" and model is not None:
        raise ConfigError(
            "--model is a trained runtime-class model; the quantile predictor is walked forward",
            where="--model",
            fix="leave --model out with --class-model quantiles",
        )


def _check_classes(classes: str | None) -> None:
    if classes is not None and classes not in CLASS_MODES:
        raise RushError(
            f"unknown --classes {classes!r}",
            where="--classes",
            fix=f"use one of: {', '.join(CLASS_MODES)}",
        )


def _core_config(policy: str, backfill: str, threshold: str, backfill_policy: str | None, **kwargs):
    from rush.core.config import CoreConfig
    from rush.models.policies.heuristic_file import parse_policy_text

    chosen = parse_policy_text(backfill_policy) if backfill_policy else None
    return CoreConfig.from_names(parse_policy_text(policy), backfill, threshold, chosen, **kwargs)


@dataclass(frozen=True)
class RunChoice:
    """What one simulation runs: the flags of ``rush simulate`` that pick the scheduler."""

    policy: str
    backfill: str
    threshold: str
    backfill_policy: str | None = None
    classes: str | None = None  # runtime-class variant (None: no classes)
    model: Path | None = None  # trained runtime classifier for ``classes``
    on_nodes: bool = False  # schedule on the trace's nodes (rush.workload.machine)
    placement: str = "first-fit"
    nodes_per_leaf: int = 0
    fair_share: DecayedFairShare | None = None  # factors from the trace's decayed usage
    runtime_prediction: str | None = None  # a runtime predictor's name (rush.models.runtime_predictors)
    prediction_correction: str | None = None  # correction rule (default: the predictor's)
    class_model: str = "classifier"  # where --classes come from: the classifier or the quantile predictor


def run_one(
    trace_obj: Trace, workload: Workload, choice: RunChoice, progress: bool
) -> tuple[SimResult, dict | None]:
    """One simulation, with the runtime-class variants when ``choice.classes`` is given."""
    from rush.simulator.engine import SimInputs, simulate

    policy, backfill, threshold = choice.policy, choice.backfill, choice.threshold
    backfill_policy, classes, model = choice.backfill_policy, choice.classes, choice.model

    inputs = None
    classification = None
    kwargs: dict = {}
    _check_classes(classes)
    if classes is not None and choice.class_model == "quantiles":
        from rush.studies.runtime_quantile_inputs import quantile_class_inputs

        inputs, kwargs, classification = quantile_class_inputs(trace_obj, workload, classes)
    elif classes is not None:
        from rush.studies.runtime_variants import class_inputs

        inputs, kwargs, classification = class_inputs(trace_obj, workload, classes, model)
    if choice.runtime_prediction is not None:
        inputs, kwargs, backfill_policy, classification = _prediction_inputs(workload, choice)
    config = _core_config(policy, backfill, threshold, backfill_policy, placement=choice.placement, **kwargs)
    label = _label(policy, backfill, classes or choice.runtime_prediction, backfill_policy)
    inputs = inputs or SimInputs()
    inputs.fair_share_model = choice.fair_share
    result = simulate(
        workload,
        config,
        inputs,
        progress=progress,
        label=label,
        on_nodes=choice.on_nodes,
        nodes_per_leaf=choice.nodes_per_leaf,
    )
    if inputs.online_prediction is not None:
        classification = _online_summary(result, inputs.online_prediction)
    return result, classification


def _online_summary(result: SimResult, name: str) -> dict:
    """The accuracy of the predictions made in the replay (as a walk-forward's summary)."""
    from rush.models.runtime_predictors import RuntimePredictions

    estimate = result.attributes["estimate"]
    predictions = RuntimePredictions(
        predicted=estimate,
        raw=estimate,
        runtime=result.runtime,
        requested_time=result.requested_time,
        dropped_history=0,
        clipped_history=0,
        fallbacks=0,
        seconds=0.0,
    )
    return predictions.summary() | {"predictor": name, "history": "the replay's own completions"}


def _prediction_inputs(workload: Workload, choice: RunChoice):
    """Walk-forward predictions as the jobs' estimates, with the predictor's backfill order
    (unless --backfill-policy is given) and correction rule (unless --prediction-correction is)."""
    from rush.core.runtime_predictions import ONLINE_PREDICTIONS, prediction_policy
    from rush.models.runtime_predictors import make_predictor, predict_walkforward
    from rush.simulator.engine import SimInputs

    name = str(choice.runtime_prediction)
    order, correction = prediction_policy(name)
    kwargs = {"prediction_correction": choice.prediction_correction or correction}
    if name in ONLINE_PREDICTIONS:  # predicted in the replay: the summary comes after it
        return SimInputs(online_prediction=name), kwargs, choice.backfill_policy or order, None
    predictions = predict_walkforward(workload, make_predictor(name))
    summary = predictions.summary() | {"predictor": name, "seconds": predictions.seconds}
    return SimInputs(estimate=predictions.predicted), kwargs, choice.backfill_policy or order, summary


def _scan_order(backfill_policy: str | None, runtime_prediction: str | None) -> str | None:
    """The backfill order a run uses: the flag's, else the predictor's (SJBF), else the policy's."""
    if backfill_policy is not None or runtime_prediction is None:
        return backfill_policy
    from rush.core.runtime_predictions import prediction_policy

    return prediction_policy(runtime_prediction)[0]


def _check_prediction(runtime_prediction: str | None, correction: str | None, classes: str | None) -> None:
    from rush.core.names import PREDICTION_CORRECTIONS

    if runtime_prediction is None:
        if correction is not None:
            raise ConfigError(
                "--prediction-correction corrects runtime predictions",
                where="--prediction-correction",
                fix="add --runtime-prediction easy++ (or gaussier)",
            )
        return
    from rush.core.runtime_predictions import ONLINE_PREDICTIONS
    from rush.models.runtime_predictors import PREDICTORS

    choices = [*PREDICTORS, *ONLINE_PREDICTIONS]
    if runtime_prediction not in choices:
        raise ConfigError(
            f"unknown runtime predictor {runtime_prediction!r}",
            where="--runtime-prediction",
            fix=f"use one of: {', '.join(choices)}",
        )
    if correction is not None and correction not in PREDICTION_CORRECTIONS:
        raise ConfigError(
            f"unknown prediction correction {correction!r}",
            where="--prediction-correction",
            fix=f"use one of: {', '.join(PREDICTION_CORRECTIONS)}",
        )
    if classes is not None:
        raise ConfigError(
            "--runtime-prediction and --classes both set the jobs' estimates",
            where="--runtime-prediction",
            fix="choose one",
        )


def trace_identity(trace: str) -> dict:
    """Name and sha256 of the replayed trace, when it has a file (catalogue or path)."""
    from rush.hashing import file_sha256
    from rush.workload.catalogue import TraceNotFoundError, lookup, parse_lublin_spec

    if parse_lublin_spec(trace) is not None:
        return {"trace": trace, "trace_sha256": None}  # generated in-process, seeded
    path = Path(trace).expanduser()
    if path.is_file():
        return {"trace": str(path), "trace_sha256": file_sha256(path)}
    try:
        entry = lookup(trace)
    except TraceNotFoundError:
        return {"trace": trace, "trace_sha256": None}
    return {"trace": entry.file, "trace_sha256": entry.sha256}  # verified when fetched


def run_settings(
    trace: str,
    result: SimResult,
    label: str,
    tau: float,
    procs_given: bool,
    classes: str | None = None,
    model: Path | None = None,
) -> dict:
    """The ``settings`` block of ``--json``: what was run (from the result), on what, with which versions."""
    import numba
    import numpy

    info = result.info
    return (
        trace_identity(trace)
        | {
            "label": label,
            "policy": info["policy"],
            "backfill": info["backfill"],
            "backfill_policy": info.get("backfill_policy"),
            "threshold": info.get("threshold"),
            "tau": tau,
            "procs": int(result.machine_procs),
            "procs_from": "--procs" if procs_given else "trace",
            "classes": classes,
            "model": str(model) if model is not None else None,
        }
        | {
            "rush_version": rush.__version__,
            "numba_version": numba.__version__,
            "numpy_version": numpy.__version__,
        }
    )


def _check_placement(placement: str, on_nodes: bool, nodes_per_leaf: int) -> None:
    from rush.core.resources import PLACEMENTS

    if placement not in PLACEMENTS:
        raise ConfigError(
            f"unknown placement {placement!r}",
            where="--placement",
            fix=f"use one of: {', '.join(PLACEMENTS)}",
        )
    if not on_nodes and (placement != "first-fit" or nodes_per_leaf):
        raise ConfigError(
            "--placement and --nodes-per-leaf choose where jobs go on nodes",
            where="--placement" if placement != "first-fit" else "--nodes-per-leaf",
            fix="add --nodes",
        )


def _precheck(
    *,
    backfill: str,
    threshold: str,
    procs: int | None,
    tau: float,
    policies: list[str],
    backfill_policy: str | None,
) -> None:
    """Every flag checked before the trace is read or anything is computed."""
    from rush.core.config import parse_threshold
    from rush.models.policies.heuristic_file import parse_policy_text

    _check_backfill(backfill)
    parse_threshold(threshold)
    checks.machine_procs(procs)
    checks.positive_seconds(tau, "--tau", "10")
    for name in policies:
        parse_policy_text(name)
    if backfill_policy is not None:
        try:
            parse_policy_text(backfill_policy)
        except RushError as exc:  # parse_policy names --policy; name the flag that was given
            raise RushError(exc.message, where="--backfill-policy", fix=exc.fix) from None
        if backfill == "none":
            raise RushError(
                "--backfill-policy needs backfilling",
                where="--backfill-policy",
                fix="add --backfill easy or conservative",
            )


def _slurm_mode(
    slurm_conf: Path | None,
    partition: str,
    classes: str | None,
    on_nodes: bool,
    fairshare_half_life: str | None,
    backfill_policy: str | None,
):
    """The Slurm mode's configuration read from --slurm-conf (checked before the trace is read)."""
    if slurm_conf is None:
        if partition:
            raise ConfigError(
                "--partition names a partition of --slurm-conf", where="--partition", fix="add --slurm-conf"
            )
        return None
    given = {"--classes": classes, "--nodes": on_nodes or None, "--fairshare-half-life": fairshare_half_life,
             "--backfill-policy": backfill_policy}  # fmt: skip
    for flag, value in given.items():
        if value is not None:
            raise ConfigError(
                f"{flag} is not modelled in the Slurm mode",
                where=flag,
                fix="drop it, or simulate without --slurm-conf",
            )
    from rush.rjms.slurm_conf import read_slurm_conf

    return read_slurm_conf(slurm_conf, partition)


def _prepare_numba() -> None:
    from rush.jit_cache import announce_if_cold, skip_numba_blas_probe_when_imported

    skip_numba_blas_probe_when_imported()
    announce_if_cold()  # stderr, so that --json output on stdout stays one JSON document


@app.command("simulate")
def simulate_command(
    trace: str = typer.Argument(..., help=TRACE_HELP),
    policy: str = typer.Option("FCFS", "--policy", "-p", help=POLICY_HELP),
    backfill: str = typer.Option("easy", "--backfill", "-b", help=BACKFILL_HELP),
    backfill_policy: str | None = typer.Option(
        None, "--backfill-policy", help="Order of the backfill scan, any --policy value (default: --policy)."
    ),
    threshold: str = typer.Option("200000", "--threshold", "-T", help=THRESHOLD_HELP),
    procs: int | None = typer.Option(None, "--procs", help=PROCS_HELP),
    tau: float = typer.Option(10.0, "--tau", help=TAU_HELP),
    jobs_out: Path | None = typer.Option(None, "--jobs-out", help="Write per-job records as CSV."),
    out: Path | None = typer.Option(None, "--out", help="Save the run into RUN_DIR for `rush report`."),
    classes: str | None = typer.Option(
        None, "--classes", help="Runtime classes: plain | idempotent | clairvoyant."
    ),
    model: Path | None = typer.Option(
        None, "--model", help="A trained runtime-class model (default: walk-forward training)."
    ),
    class_model: str = typer.Option(
        "classifier",
        "--class-model",
        help="With --classes: classifier (the small/large classifier) or quantiles (P(runtime <= divider) "
        "from rush's runtime-quantile predictor, walked forward weekly).",
    ),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first malformed trace line."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object of metrics and settings."),
    on_nodes: bool = typer.Option(
        False,
        "--nodes",
        help="Schedule on the trace's nodes (whole nodes where the log allocated them, e.g. SDSC-BLUE, "
        "LLNL-Atlas; else one-core nodes). Default: processor counts.",
    ),
    placement: str = typer.Option(
        "first-fit", "--placement", help="With --nodes: first-fit, topology or variability."
    ),
    nodes_per_leaf: int = typer.Option(
        0, "--nodes-per-leaf", min=0, help="With --nodes: nodes per leaf switch (0: one switch)."
    ),
    fairshare_half_life: str | None = typer.Option(
        None,
        "--fairshare-half-life",
        help="Compute fair-share factors from the trace's users and their decayed usage (Slurm's classic "
        "factor) with this PriorityDecayHalfLife, e.g. 7d; LINEAR's fairshare term reads them.",
    ),
    fairshare_period: str | None = typer.Option(
        None, "--fairshare-period", help="With --fairshare-half-life: PriorityCalcPeriod (default 300 s)."
    ),
    fairshare_by_group: bool = typer.Option(
        False,
        "--fairshare-by-group",
        help="With --fairshare-half-life: one account per trace group, users under it (default: users only).",
    ),
    slurm_conf: Path | None = typer.Option(
        None,
        "--slurm-conf",
        help="Predict the Slurm this slurm.conf configures (its nodes, main scheduler and sched/backfill "
        "settings: whole-node reservations, bf_job_part_count_reserve, bf_resolution, bf_window, "
        "bf_max_job_test, bf_interval) instead of --backfill on processor counts.",
    ),
    partition: str = typer.Option(
        "", "--partition", help="With --slurm-conf: the partition (default: the Default=YES one)."
    ),
    runtime_prediction: str | None = typer.Option(
        None,
        "--runtime-prediction",
        help="Schedule with walk-forward runtime predictions: easy++ (Tsafrir et al., from the jobs "
        "that ended in the log), easy++-online (the same rule fed by the replay's own completions, "
        "as Tsafrir et al. ran it), gaussier (Gaussier et al., refit weekly on the log), gaussier-online "
        "(their regression updated at every completion of the replay, as their simulator ran it) or "
        "runtime-quantiles (rush's own model, "
        "slow on whole traces); backfills the shortest predicted job first unless --backfill-policy is given.",
    ),
    prediction_correction: str | None = typer.Option(
        None,
        "--prediction-correction",
        help="With --runtime-prediction: how an expired prediction is corrected: none, request or "
        "stepwise (default, Tsafrir's). Jobs are killed at their request only.",
    ),
) -> None:
    """Replay TRACE through the scheduling core and print the literature's metrics."""
    _precheck(
        backfill=backfill,
        threshold=threshold,
        procs=procs,
        tau=tau,
        policies=[policy],
        backfill_policy=backfill_policy,
    )
    if slurm_conf is not None and runtime_prediction is not None:
        raise ConfigError(
            "--runtime-prediction is not modelled in the Slurm mode",
            where="--runtime-prediction",
            fix="drop it, or simulate without --slurm-conf",
        )
    slurm = _slurm_mode(slurm_conf, partition, classes, on_nodes, fairshare_half_life, backfill_policy)
    _check_classes(classes)
    _check_prediction(runtime_prediction, prediction_correction, classes)
    _check_class_model(class_model, model)
    _check_placement(placement, on_nodes, nodes_per_leaf)
    fair_share = fair_share_model(fairshare_half_life, fairshare_period, fairshare_by_group)
    checks.output_file(jobs_out, "--jobs-out")
    checks.not_the_input(jobs_out, Path(trace), "--jobs-out")
    checks.output_dir(out, "--out")
    _prepare_numba()
    from rush.simulator.metrics import compute_metrics, fair_share_summary

    trace_obj, workload = _load_workload(trace, procs, strict)
    choice = RunChoice(
        policy,
        backfill,
        threshold,
        backfill_policy,
        classes,
        model,
        on_nodes,
        placement,
        nodes_per_leaf,
        fair_share,
        runtime_prediction,
        prediction_correction,
        class_model,
    )
    if slurm is None:
        result, classification = run_one(trace_obj, workload, choice, progress=not as_json)
    else:
        from rush.simulator.slurm_mode import simulate_slurm

        config = _core_config(policy, backfill, threshold, None)
        result, classification = simulate_slurm(workload, slurm.scheduler, config), None
        backfill = "slurm"
    metrics = compute_metrics(result, tau=tau)
    metrics["skipped_lines"] = int(sum(trace_obj.skipped.values()))
    if runtime_prediction is not None:
        metrics["runtime_prediction"] = classification
    elif classification is not None:
        metrics["classification"] = classification | {
            "kills": int(result.requeues.sum()),
            "wasted_area": float(result.wasted_area.sum()),
        }
    if fair_share is not None:
        metrics["fair_share"] = _named(fair_share_summary(result), trace_obj.labels) | {
            "half_life": fair_share.half_life,
            "calc_period": fair_share.calc_period,
            "by_group": fair_share.by_group,
        }
    label = _label(
        policy, backfill, classes or runtime_prediction, _scan_order(backfill_policy, runtime_prediction)
    )
    metrics["settings"] = run_settings(trace, result, label, tau, procs is not None, classes, model)
    time_origin = float(workload.submit.min()) if len(workload) else 0.0
    if jobs_out is not None:
        result.write_jobs_csv(jobs_out, time_origin=time_origin)
    if out is not None:
        from rush.simulator.runs import save_run

        save_run(out, label, result, metrics)
    if as_json:
        typer.echo(json.dumps(_jsonable(metrics), sort_keys=True))
    else:
        _print_table(trace, {label: metrics})
        if fair_share is not None:
            _print_fair_share(metrics["fair_share"])


def _named(summary: dict, labels: dict[str, dict[int, str]]) -> dict:
    """Add the user and account names of a trace that has them (sacct) to the summary's rows."""
    for row in summary["associations"]:
        for column in ("user", "group"):
            name = labels.get(column, {}).get(row[column])
            if name is not None:
                row[f"{column}_name"] = name
    return summary


def _print_fair_share(summary: dict) -> None:
    """The heaviest associations' usage against their share, and waits by usage decile."""
    from rich.console import Console
    from rich.table import Table

    view = Table(
        title=f"fair-share: {summary['associations_count']} associations, "
        f"usage-vs-share gap {summary['share_gap']:.3f}",
        caption="usage share: of the processor-seconds used; factor: mean at the jobs' starts",
    )
    for column in ("user", "group", "jobs", "usage share", "target share", "mean wait [s]", "factor"):
        view.add_column(column, justify="right")
    for row in summary["associations"]:
        view.add_row(
            row.get("user_name", str(row["user"])),
            row.get("group_name", "-" if row["group"] < 0 else str(row["group"])),
            str(row["jobs"]),
            f"{row['usage_share']:.2%}",
            f"{row['target_share']:.2%}",
            f"{row['mean_wait']:.0f}",
            f"{row['mean_factor']:.3f}",
        )
    console = Console()
    console.print(view)
    waits = ", ".join(f"{w:.0f}" for w in summary["mean_wait_by_usage_decile"])
    console.print(
        f"mean wait [s] by usage decile, lightest users first: {waits}", markup=False, highlight=False
    )


@app.command("compare")
def compare_command(
    trace: str = typer.Argument(..., help=TRACE_HELP),
    policies: str = typer.Option(
        "FCFS,SPF,SAF,WFP3", "--policies", help=f"Comma-separated policies ({', '.join(POLICY_CODES)})."
    ),
    backfill: str = typer.Option("easy", "--backfill", "-b", help=BACKFILL_HELP),
    threshold: str = typer.Option("200000", "--threshold", "-T", help=THRESHOLD_HELP),
    procs: int | None = typer.Option(None, "--procs", help=PROCS_HELP),
    tau: float = typer.Option(10.0, "--tau", help=TAU_HELP),
    out: Path | None = typer.Option(None, "--out", help="Save every run into RUN_DIR for `rush report`."),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first malformed trace line."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of metric objects."),
) -> None:
    """Replay TRACE under several policies and print them side by side."""
    names = [p.strip() for p in policies.split(",") if p.strip()]
    if not names:
        raise RushError("no policies given", where="--policies", fix="e.g. --policies FCFS,SPF,SAF")
    _precheck(
        backfill=backfill, threshold=threshold, procs=procs, tau=tau, policies=names, backfill_policy=None
    )
    labels = [_label(name, backfill, None) for name in names]
    if len(set(labels)) != len(labels):
        raise RushError(
            f"two policies give the same run label: {', '.join(labels)}",
            where="--policies",
            fix="list each policy once",
        )
    checks.output_dir(out, "--out")
    _prepare_numba()
    from rich.progress import Progress

    from rush.simulator.metrics import compute_metrics

    trace_obj, workload = _load_workload(trace, procs, strict)
    table: dict[str, dict] = {}
    with Progress(transient=True, disable=as_json or not sys.stderr.isatty()) as bar:
        task = bar.add_task("simulating", total=len(names))
        for name, label in zip(names, labels, strict=True):
            bar.update(task, description=label)
            result, _ = run_one(trace_obj, workload, RunChoice(name, backfill, threshold), progress=False)
            metrics = compute_metrics(result, tau=tau)
            metrics["settings"] = run_settings(trace, result, label, tau, procs is not None)
            table[label] = metrics
            if out is not None:
                from rush.simulator.runs import save_run

                save_run(out, label, result, metrics)
            bar.advance(task)
    if as_json:
        typer.echo(json.dumps([_jsonable({"label": k} | v) for k, v in table.items()], sort_keys=True))
    else:
        _print_table(trace, table)


def _label(policy: str, backfill: str, classes: str | None, backfill_policy: str | None = None) -> str:
    """``SPF-easy``; ``FCFS-easy+SAF`` when the backfill scan has its own order; ``-plain`` etc. for classes."""
    base = f"{policy.split(':')[0].strip().upper()}-{backfill}"
    if backfill_policy is not None:
        scan = backfill_policy.split(":")[0].strip().upper()
        if scan != base.split("-")[0] or ":" in backfill_policy:
            base += f"+{scan}"
    return f"{base}-{classes}" if classes else base


SHOWN = (
    ("jobs", "jobs", "{:.0f}"),
    ("mean_wait", "mean wait [s]", "{:.0f}"),
    ("max_wait", "max wait [s]", "{:.0f}"),
    ("mean_bounded_slowdown", "mean bsld", "{:.2f}"),
    ("mean_pp_bounded_slowdown", "mean pp-bsld", "{:.3f}"),
    ("mean_response_time", "mean response [s]", "{:.0f}"),
    ("awrt", "AWRT [s]", "{:.0f}"),
    ("utilization", "utilization [0-1]", "{:.3f}"),
    ("utilization_window", "util. 15-85% [0-1]", "{:.3f}"),
    ("throughput_std", "throughput SD", "{:.3f}"),
    ("makespan", "makespan [s]", "{:.0f}"),
    ("backfilled", "backfilled", "{:.0f}"),
    ("killed", "walltime kills", "{:.0f}"),
)


def dropped_line(metrics: dict) -> str | None:
    """``dropped: 12 jobs (runtime < 0: 10, procs > machine: 2)``, or None when nothing was dropped."""
    total = int(metrics.get("dropped") or 0)
    if not total:
        return None
    reasons = metrics.get("dropped_by_reason") or {}
    readable = {"runtime<0": "runtime < 0", "procs<=0": "procs <= 0", "procs>machine": "procs > machine"}
    parts = ", ".join(f"{readable.get(k, k)}: {v}" for k, v in reasons.items())
    return f"dropped: {total} jobs ({parts})" if parts else f"dropped: {total} jobs"


def _print_table(trace: str, table: dict[str, dict]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    first = next(iter(table.values()))
    tau = (first.get("settings") or {}).get("tau")
    view = Table(
        title=f"rush: {trace}",
        caption=f"bsld: bounded slowdown, tau = {tau:g} s" if isinstance(tau, float) else None,
    )
    view.add_column("metric")
    for label in table:
        view.add_column(escape(label), justify="right")
    for key, title, fmt in SHOWN:
        row = []
        for metrics in table.values():
            value = metrics.get(key)
            row.append("-" if value is None or not math.isfinite(value) else fmt.format(value))
        view.add_row(escape(title), *row)  # escape: rich would read "[s]" as a style tag
    console = Console()
    console.print(view)
    line = dropped_line(first)
    if line:
        console.print(line, markup=False, highlight=False)


def _jsonable(obj):
    from rush.simulator.runs import jsonable

    return jsonable(obj)
