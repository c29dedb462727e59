"""``rush train``: train models from traces."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rush.models.decision_thresholds import IDEMPOTENT_THRESHOLD, SMALL_THRESHOLD

app = typer.Typer(no_args_is_help=True)

MAX_TREES = 5_000  # beyond this a forest costs memory and prediction time for nothing
MAX_SEED = 2**32 - 1  # numpy's RandomState range
MAX_TRAIN_WEEKS = 10_000


def _check_probability(value: float | None, option: str, zero_means: str) -> None:
    """A decision threshold: a number in (0, 1), or 0 for ``zero_means``."""
    from rush.errors import ConfigError

    if value is not None and not (value == 0 or 0.0 < value < 1.0):  # NaN fails both
        raise ConfigError(
            f"{value} is not a probability",
            where=option,
            fix=f"give a number in (0, 1), or 0 for {zero_means}",
        )


def _check_output(path: Path, option: str) -> None:
    """Refuse an output path that cannot be written *before* the training (nothing lost)."""
    from rush.cli.checks import stat_answers
    from rush.errors import ConfigError
    from rush.output_file import check_output

    stat_answers(path, option)
    if path.is_dir():
        raise ConfigError("is a directory", where=f"{option} {path}", fix="give a file name")
    check_output(path, ConfigError, f"{option} {path}")  # the model is renamed over it
    parent = path.parent if str(path.parent) else Path(".")
    existing = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(
            f"{existing} is not a directory", where=f"{option} {path}", fix="give a writable path"
        )


@app.command("runtime-class")
def runtime_class(
    trace: str = typer.Argument(
        ..., help="A trace path or catalogue name (SWF, or sacct --json/--parsable2)."
    ),
    out: Path = typer.Option(..., "--out", help="Model file to write (MODEL.json model card beside it)."),
    mode: str = typer.Option(
        "live",
        "--mode",
        help="live | weekly: history features at each job's submission (as the daemon) or its week's start.",
    ),
    estimator: str = typer.Option("hgb", "--estimator", help="hgb | rf | extra-trees | logreg"),
    trees: int = typer.Option(
        100, "--trees", help=f"Boosting iterations for hgb (trees for rf), 1..{MAX_TREES}."
    ),
    small_threshold: float | None = typer.Option(
        SMALL_THRESHOLD,
        "--small-threshold",
        help="Predict small when P(small) >= this, in (0, 1) (the default was chosen on development "
        "traces: sim/runtime_classes/README.md); 0 for the estimator's own predict.",
    ),
    idempotent_threshold: float | None = typer.Option(
        IDEMPOTENT_THRESHOLD,
        "--idempotent-threshold",
        help="The same for jobs rush may kill and requeue (idempotent: a false small costs them a "
        "kill at the divider only); 0: as --small-threshold.",
    ),
    max_train_jobs: int | None = typer.Option(
        20_000,
        "--max-train-jobs",
        help="Walk-forward: refit each week on the N most recently finished jobs (0: all).",
    ),
    train_weeks: int | None = typer.Option(
        None, "--train-weeks", help="Walk-forward: train on the last N weeks only (default: all history)."
    ),
    timezone: str | None = typer.Option(
        None,
        "--timezone",
        help="The site's IANA time zone for calendar features (default: the trace header's "
        "TimeZoneString, else its TimeZone offset, else UTC). The daemon uses the model's zone.",
    ),
    walkforward: bool = typer.Option(
        True, "--walkforward/--no-walkforward", help="Report the walk-forward quality first."
    ),
    report: Path | None = typer.Option(None, "--report", help="Write the walk-forward report (JSON) here."),
    seed: int = typer.Option(0, "--seed", help=f"Random seed, 0..{MAX_SEED}."),
) -> None:
    """Train the small/large classifier on a trace's whole history and save it.

    First the walk-forward quality (each week predicted by a model trained on the past
    only), then the deployable model: a scikit-learn Pipeline (the feature step holds the
    per-user history, the divider and the site's clock; then the classifier) fitted on
    every job, features as of its submission, labels against the median runtime. Writes
    MODEL (joblib) and MODEL.json, the model card (features, classes, divider, training
    window, time base, user key kind, versions, sha256), checked before every load.
    """
    from rush.errors import ConfigError, ModelError
    from rush.models.evaluation import walkforward_report
    from rush.models.model_card import RuntimeClassCard
    from rush.models.persistence import save_model
    from rush.models.runtime_class import ESTIMATORS, RuntimeClassifier
    from rush.models.runtime_features import TimeBase
    from rush.models.runtime_pipeline import MODES
    from rush.models.walkforward import fit_on_history, predict_classes_walkforward, prepare
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    if mode not in MODES:
        raise ModelError(f"unknown mode {mode!r}", where="--mode", fix=f"use one of: {', '.join(MODES)}")
    if estimator not in ESTIMATORS:
        raise ModelError(
            f"unknown estimator {estimator!r}",
            where="--estimator",
            fix=f"use one of: {', '.join(ESTIMATORS)}",
        )
    if not 1 <= trees <= MAX_TREES:
        raise ConfigError(f"{trees} trees is out of range", where="--trees", fix=f"give 1..{MAX_TREES}")
    _check_probability(small_threshold, "--small-threshold", "the estimator's own decision")
    _check_probability(idempotent_threshold, "--idempotent-threshold", "the --small-threshold decision")
    if max_train_jobs is not None and not 0 <= max_train_jobs <= 10**9:
        raise ConfigError(
            f"{max_train_jobs} jobs is out of range", where="--max-train-jobs", fix="give 0 (all) or more"
        )
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed {seed} is out of range", where="--seed", fix=f"give 0..{MAX_SEED}")
    if train_weeks is not None and not 1 <= train_weeks <= MAX_TRAIN_WEEKS:
        raise ConfigError(
            f"{train_weeks} weeks is out of range",
            where="--train-weeks",
            fix=f"give 1..{MAX_TRAIN_WEEKS}, or leave it out",
        )
    TimeBase.from_header({}, timezone)  # an unknown zone is refused before the work
    _check_output(out, "--out")
    _check_output(Path(f"{out}.json"), "--out")  # the model card beside it
    if report is not None:
        _check_output(report, "--report")

    loaded = load_trace(trace)
    workload = workload_from_trace(loaded)
    if len(workload) == 0:
        raise ModelError(
            "the trace has no usable jobs to train on", where=trace, fix="give a trace with jobs"
        )
    time_base = TimeBase.from_header(loaded.header, timezone)
    if not time_base.unix_start_known:
        typer.echo(
            "warning: the trace has no UnixStartTime header: calendar features are relative to "
            "1970-01-05 (a Monday), not real dates; live hours and weekdays will not match",
            err=True,
        )
    threshold = small_threshold or None
    classifier = RuntimeClassifier(
        estimator=estimator,
        n_estimators=trees,
        random_state=seed,
        threshold=threshold,
        idempotent_threshold=idempotent_threshold or None,
    )
    quality = None
    if walkforward:
        wf = predict_classes_walkforward(
            workload,
            loaded.header,
            mode=mode,
            estimator=classifier,
            train_weeks=train_weeks,
            max_train_jobs=max_train_jobs or None,
            prepared=prepare(workload, loaded.header, timezone),
        )
        full = walkforward_report(wf)
        quality = full["classification"]
        if report is not None:
            report.parent.mkdir(parents=True, exist_ok=True)
            report.write_text(json.dumps(full, indent=2, default=float))
        typer.echo(
            f"walk-forward ({mode}, {len(wf.weekly_report)} weeks, {wf.seconds:.1f} s): "
            + ", ".join(f"{k} {v:.3f}" for k, v in quality.items() if v is not None)
        )
    trained = fit_on_history(
        workload,
        loaded.header,
        mode=mode,
        estimator=classifier,
        user_names=loaded.labels.get("user"),
        timezone=timezone,
    )
    metadata = dict(trained.metadata) | {
        "small_threshold": threshold,
        "idempotent_threshold": idempotent_threshold or None,
    }
    if quality is not None:
        metadata["walkforward_quality"] = quality | {"mode": mode, "train_weeks": train_weeks}
    meta = save_model(
        trained.model,
        out,
        metadata,
        card=RuntimeClassCard,
        fix=f"rerun: rush train runtime-class {trace} --out {out}",
    )
    users = (
        "user names (match live Slurm jobs)"
        if meta["user_key_kind"] == "name"
        else "trace user ids (cannot match live names: their per-user history starts empty; a replay's trace-N jobs match)"
    )
    typer.echo(
        f"wrote {out} and {out}.json (divider {trained.divider:.0f} s, {trained.jobs} jobs, "
        f"calendar zone {metadata['training_window']['calendar_zone']}, {users}, sha256 {meta['sha256'][:12]})"
    )


@app.command("runtime-quantiles")
def runtime_quantiles(
    trace: str = typer.Argument(
        ..., help="A trace path or catalogue name (SWF, or sacct --json/--parsable2)."
    ),
    out: Path = typer.Option(..., "--out", help="Model file to write (MODEL.json model card beside it)."),
    max_train_jobs: int = typer.Option(
        10_000,
        "--max-train-jobs",
        help="Fit the quantile models on the N most recently finished jobs (0: all), as each weekly retrain.",
    ),
    timezone: str | None = typer.Option(
        None,
        "--timezone",
        help="The site's IANA time zone for calendar features (default: the trace header's zone, else UTC).",
    ),
    seed: int = typer.Option(0, "--seed", help=f"Random seed, 0..{MAX_SEED}."),
    feature_set: str = typer.Option(
        "t23",  # rush.models.runtime_quantiles_features.DEFAULT_FEATURE_SET (a test holds them equal)
        "--feature-set",
        help="Columns the model reads: t23 (the default: base plus the (user, processors, request) history "
        "and the user's last outcome; docs/research.md) or base (rounds 2-5's). Recorded on the model card.",
    ),
    before: str | None = typer.Option(
        None,
        "--before",
        help="Train only on the jobs that finished by this moment: a submit time of the trace (s) or job:N "
        "(the N-th job in submit order, as rush replay --window N:COUNT). Recorded on the model card.",
    ),
    time_scale: float = typer.Option(
        1.0,
        "--time-scale",
        help="Divide the history's times by K (requests, runtimes, waits; submits around the cutoff), "
        "for a replay run with --speedup K: the model then predicts the replay's seconds. On the card.",
    ),
    no_job_fields: bool = typer.Option(
        False,
        "--no-job-fields",
        help="Leave out the trace's app and queue fields: live jobs carry neither, and the live "
        "predictor refuses a model trained with them.",
    ),
) -> None:
    """Train rush's runtime predictor (a distribution: quantiles 0.1, 0.25, 0.5, 0.75, 0.9 of
    each job's runtime) on a trace's whole history and save it.

    A scikit-learn Pipeline: the feature step (the site's clock and the history of finished
    jobs), then one quantile boosting model per level over log runtime. Writes MODEL (joblib)
    and MODEL.json, the model card (features, quantiles, divider, time base, the trace's job
    fields, versions, sha256), checked before every load. The walk-forward quality is
    measured by sim/runtime_predictions/estimates/run.py.
    """
    from rush.errors import ConfigError
    from rush.models.runtime_features import TimeBase
    from rush.models.runtime_quantiles import RuntimeQuantileRegressor
    from rush.models.runtime_quantiles_pipeline import fit_quantiles_on_history, save_quantile_model
    from rush.models.training_cut import TrainingCut, check_time_scale
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    if not 0 <= max_train_jobs <= 10**9:
        raise ConfigError(
            f"{max_train_jobs} jobs is out of range", where="--max-train-jobs", fix="give 0 (all) or more"
        )
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed {seed} is out of range", where="--seed", fix=f"give 0..{MAX_SEED}")
    from rush.models.runtime_quantiles_features import FEATURE_SETS

    if feature_set not in FEATURE_SETS:
        raise ConfigError(
            f"unknown feature set {feature_set!r}",
            where="--feature-set",
            fix=f"use one of {sorted(FEATURE_SETS)}",
        )
    TimeBase.from_header({}, timezone)  # an unknown zone is refused before the work
    _check_output(out, "--out")
    _check_output(Path(f"{out}.json"), "--out")
    check_time_scale(time_scale)  # before the trace is read
    loaded = load_trace(trace)
    workload = workload_from_trace(loaded)
    cut = TrainingCut.parse(before, time_scale, workload)
    if no_job_fields:
        for name in ("app", "queue"):
            workload.extra.pop(name, None)
    model, metadata = fit_quantiles_on_history(
        workload,
        loaded.header,
        RuntimeQuantileRegressor(random_state=seed),
        user_names=loaded.labels.get("user"),
        timezone=timezone,
        max_train_jobs=max_train_jobs or None,
        feature_set=feature_set,
        cut=cut,
    )
    meta = save_quantile_model(model, metadata, out)
    typer.echo(
        f"wrote {out} and {out}.json (quantiles {meta['quantiles']}, divider {meta['divider']:.0f} s, "
        f"{meta['training_window']['jobs']} jobs{_cut_note(cut)}, fields {meta['fields'] or 'none'}, feature set {meta['feature_set']}, sha256 {meta['sha256'][:12]})"
    )


def _cut_note(cut) -> str:
    """The training cut, as the summary line states it."""
    parts = [f"finished by {cut.before:g} s"] if cut.before is not None else []
    parts += [f"times / {cut.time_scale:g}"] if cut.time_scale != 1.0 else []
    return f" ({', '.join(parts)})" if parts else ""


@app.command("variability")
def variability(
    dataset: Path = typer.Argument(..., help="A dataset directory from rush dataset build."),
    out: Path = typer.Option(
        Path("models/variability.joblib"), "--out", help="Model file to write (MODEL.json card beside it)."
    ),
    models: str = typer.Option(
        "extra_trees,random_forest,knn,adaboost", "--models", help="Model kinds compared, comma-separated."
    ),
    estimators: int = typer.Option(100, "--estimators", help="Trees or boosting rounds, 1..2000."),
    rfe_step: float = typer.Option(
        0.1, "--rfe-step", help="Fraction of features dropped per RFE step, (0, 1)."
    ),
    final_scope: str = typer.Option(
        "best",
        "--final-scope",
        help="best | all | job | both: features RFE starts from (best: the whole set).",
    ),
    selection: str = typer.Option(
        "kfold",
        "--selection",
        help="kfold (the paper's stratified k-fold) | loao (leave one application out): which CV chooses.",
    ),
    k_folds: int = typer.Option(5, "--folds", help="k of the stratified k-fold, 2..20."),
    seed: int = typer.Option(0, "--seed", help=f"Random seed, 0..{MAX_SEED}."),
    without_probe: bool = typer.Option(
        False, "--without-probe", help="Leave the probe features out (when no probe runs live)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the CV table, RFE curve and card as JSON."),
) -> None:
    """Model selection (mean F1 both ways: stratified k-fold over all applications, the paper's,
    and leave one application out), node-scope comparison, recursive feature elimination, then
    the 3-class model with its card (features, classes, flag threshold chosen on held-out start
    decisions, CV tables, training window, data sha256, versions, generator seed and command)."""
    from rush.models.variability.dataset import load_dataset
    from rush.models.variability.train import TrainOptions, train_variability

    options = TrainOptions(
        seed=seed,
        models=tuple(m.strip() for m in models.split(",") if m.strip()),
        n_estimators=estimators,
        rfe_step=rfe_step,
        final_scope=final_scope,
        selection=selection,
        k_folds=k_folds,
        exclude=("probe",) if without_probe else (),
    ).checked()
    _check_output(out, "--out")
    _check_output(Path(f"{out}.json"), "--out")
    trained = train_variability(load_dataset(dataset), options)
    card = trained.save(out)
    if as_json:
        typer.echo(json.dumps(trained.report(), indent=2, sort_keys=True, default=float))
        return
    chosen_by = "k-fold" if options.selection == "kfold" else "leave one application out"
    typer.echo(f"model selection (binary F1; chosen by {chosen_by}; paper: 0.95 in cross-validation):")
    apps = sorted(trained.cv_table[0]["per_app"])
    typer.echo(
        f"  {'model':<14} {'k-fold':>6} {'loao':>6} {'pooled':>6}  " + " ".join(f"{a[:10]:>10}" for a in apps)
    )
    for row in trained.cv_table:
        typer.echo(
            f"  {row['model']:<14} {row['kfold_mean_f1']:6.3f} {row['mean_f1']:6.3f} {row['pooled_f1']:6.3f}  "
            + " ".join(f"{row['per_app'][a]:10.3f}" for a in apps)
        )
    typer.echo(
        "node scope ("
        + trained.model_kind
        + f"; {chosen_by}): "
        + ", ".join(
            f"{r['scope']} {r['mean_f1']:.3f} ({r['features']} features)" for r in trained.scope_table
        )
    )
    flag = card.get("flag_threshold_table") or {}
    if flag.get("threshold") is not None:
        typer.echo(
            f"flag threshold {flag['threshold']:.3f} on held-out start decisions ({flag['protocol']}): "
            f"F1 {flag['held_out_f1']:.3f}, precision {flag['precision']:.3f}, recall {flag['recall']:.3f}"
        )
    typer.echo("RFE: " + ", ".join(f"{r['features']}:{r['mean_f1']:.3f}" for r in trained.rfe_curve))
    typer.echo(
        f"wrote {out} and {out}.json: {card['estimator']} on {len(card['features'])} {card['scope']}-scope "
        f"features, classes {card['class_names']}, sha256 {card['sha256'][:12]}"
    )
