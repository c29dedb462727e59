"""``rush train``: train models from traces."""

from __future__ import annotations

import json
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("runtime-class")
def runtime_class(
    trace: str = typer.Argument(..., help="A trace path or catalogue name."),
    out: Path = typer.Option(..., "--out", help="Model file to write (MODEL.json sidecar beside it)."),
    mode: str = typer.Option(
        "weekly", "--mode", help="weekly | live: when lag/aggregation features are read."
    ),
    estimator: str = typer.Option("rf", "--estimator", help="rf | extra-trees | hgb | logreg"),
    trees: int = typer.Option(50, "--trees", help="Trees (boosting iterations for hgb)."),
    train_weeks: int | None = typer.Option(
        None, "--train-weeks", help="Walk-forward: train on the last N weeks only (default: all history)."
    ),
    history: Path | None = typer.Option(
        None, "--history", help="Where to write the history store (default: MODEL.history.json)."
    ),
    walkforward: bool = typer.Option(
        True, "--walkforward/--no-walkforward", help="Report the walk-forward quality first."
    ),
    report: Path | None = typer.Option(None, "--report", help="Write the walk-forward report (JSON) here."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Train the small/large classifier on a trace's whole history and save it.

    First the walk-forward quality (each week predicted by a model trained on the past
    only), then the deployable model: fitted on every job, features as of its submission,
    labels against the median runtime. Writes MODEL, MODEL.json (features, divider,
    training window, versions, sha256) and the history store for the daemon.
    """
    from rush.errors import ModelError
    from rush.models.evaluation import walkforward_report
    from rush.models.persistence import file_sha256, save_model
    from rush.models.runtime_class import ESTIMATORS
    from rush.models.walkforward import (
        MODES,
        fit_on_history,
        predict_classes_walkforward,
        prepare,
        replay_history,
    )
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
    loaded = load_trace(trace)
    workload = workload_from_trace(loaded)
    prepared = prepare(workload, loaded.header)
    quality = None
    if walkforward:
        wf = predict_classes_walkforward(
            workload,
            loaded.header,
            mode=mode,
            estimator=estimator,
            n_estimators=trees,
            random_state=seed,
            train_weeks=train_weeks,
            prepared=prepared,
        )
        full = walkforward_report(wf)
        quality = full["classification"]
        if report is not None:
            report.write_text(json.dumps(full, indent=2, default=float))
        typer.echo(
            f"walk-forward ({mode}, {len(wf.weekly_report)} weeks, {wf.seconds:.1f} s): "
            + ", ".join(f"{k} {v:.3f}" for k, v in quality.items() if v is not None)
        )
    trained = fit_on_history(
        workload,
        loaded.header,
        mode=mode,
        estimator=estimator,
        n_estimators=trees,
        random_state=seed,
        prepared=prepared,
    )
    history_path = history or out.with_name(out.name + ".history.json")
    store = replay_history(workload, loaded.header)
    out.parent.mkdir(parents=True, exist_ok=True)
    store.save(history_path)
    metadata = dict(trained.metadata)
    metadata["history"] = {"path": str(history_path), "sha256": file_sha256(history_path)}
    if quality is not None:
        metadata["walkforward_quality"] = quality | {"mode": mode, "train_weeks": train_weeks}
    meta = save_model(trained.model, out, metadata)
    typer.echo(
        f"wrote {out} (divider {trained.divider:.0f} s, {trained.jobs} jobs, sha256 {meta['sha256'][:12]}), "
        f"{out}.json and {history_path}"
    )
