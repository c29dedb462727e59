"""``rush train``: train models from traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

app = typer.Typer(no_args_is_help=True)


@app.command("runtime-class")
def runtime_class(
    trace: str = typer.Argument(..., help="A trace path or catalogue name."),
    out: Path = typer.Option(
        ..., "--out", help="Model file to write (a .json sidecar is written beside it)."
    ),
    mode: str = typer.Option(
        "weekly", "--mode", help="weekly | live: how the reported walk-forward quality is computed."
    ),
    n_estimators: int = typer.Option(30, "--trees", help="Trees in the random forest."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Train the small/large classifier on a trace's whole history and save it.

    Prints the walk-forward quality first (each week predicted from the past only), then
    fits on every job with features as of its submission, labels against the median runtime.
    """
    from rush.models.persistence import save_model
    from rush.models.runtime_class import RuntimeClassifier
    from rush.models.runtime_features import FEATURES
    from rush.models.walkforward import clipped_runtime, predict_classes_walkforward
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    loaded = load_trace(trace)
    workload = workload_from_trace(loaded)
    wf = predict_classes_walkforward(workload, loaded.header, mode=mode, random_state=seed)
    quality = wf.summary()
    runtime = clipped_runtime(workload)
    divider = float(np.median(runtime))
    model = RuntimeClassifier(n_estimators=n_estimators, random_state=seed)
    model.fit(wf.features, np.where(runtime <= divider, 0, 1))
    meta = save_model(
        model,
        out,
        {
            "model": "runtime-class",
            "features": list(FEATURES),
            "divider": divider,
            "training_window": {
                "trace": loaded.name,
                "first_submit": float(workload.submit.min()),
                "last_submit": float(workload.submit.max()),
                "jobs": len(workload),
                "unix_start_time": loaded.header.get("UnixStartTime"),
            },
            "walkforward_quality": {k: v for k, v in quality.items() if k != "confusion"} | {"mode": mode},
        },
    )
    typer.echo(
        f"walk-forward ({mode}): accuracy {quality['accuracy']:.3f}, precision {quality['precision']:.3f}, "
        f"recall {quality['recall']:.3f}, false-small rate {quality['false_small_rate']:.3f}"
    )
    typer.echo(f"wrote {out} (divider {divider:.0f} s, sha256 {meta['sha256'][:12]}…) and {out}.json")
