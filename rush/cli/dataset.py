"""``rush dataset``: build the variability dataset from campaign records and the feature store."""

from __future__ import annotations

import json
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True)

SCOPE_CHOICES = {"job": ("job",), "all": ("all",), "both": ("job", "all")}


@app.command("build")
def build(
    records: Path = typer.Argument(..., help="The campaign's records.jsonl (rush-campaign/1)."),
    store: Path = typer.Option(..., "--store", help="The feature store the collectors wrote (SQLite)."),
    window: float = typer.Option(
        300.0, "--window", help="Seconds of counters before each start, (0, 30 days]."
    ),
    scope: str = typer.Option(
        "both", "--scope", help="job | all | both: the nodes counters are aggregated over."
    ),
    out: Path = typer.Option(..., "--out", help="Directory for dataset.csv and dataset.json."),
    as_json: bool = typer.Option(False, "--json", help="Print the description as JSON."),
) -> None:
    """Join campaign runs with the counters of the window before each start, plus probes and
    workload type; label each run against its application's runtimes (mu + 1.2/1.5 sigma).
    Counters the machine lacks are listed in the description, never synthesised."""
    from rush.errors import ConfigError
    from rush.models.variability.dataset import DatasetOptions, build_dataset
    from rush.models.variability.features import check_window

    if scope not in SCOPE_CHOICES:
        raise ConfigError(f"unknown scope {scope!r}", where="--scope", fix="job, all or both")
    check_window(window, "--window")
    if out.exists() and not out.is_dir():
        raise ConfigError("exists and is not a directory", where=f"--out {out}", fix="give a directory")
    dataset = build_dataset(records, store, DatasetOptions(window=window, scopes=SCOPE_CHOICES[scope]))
    csv_path, json_path = dataset.save(out)
    d = dataset.description
    if as_json:
        typer.echo(json.dumps(d | {"csv": str(csv_path), "json": str(json_path)}, indent=2, sort_keys=True))
        return
    families = ", ".join(
        f"{name} {'absent' if f['absent'] else len(f['present'])}"
        for name, f in d["counters"]["families"].items()
    )
    per_app = d["labels"]["per_app"]
    typer.echo(
        f"wrote {csv_path} and {json_path}: {d['rows']} runs of {len(per_app)} application(s), "
        f"{len(dataset.feature_names)} features ({d['dropped']['not_completed']} runs not COMPLETED left out)"
    )
    typer.echo(f"counter families: {families}; other counters: {len(d['counters']['other'])}")
    for app_name, t in per_app.items():
        typer.echo(
            f"  {app_name}: {t['runs']} runs, mu {t['mu']:.3f} s, sigma {t['sigma']:.3f} s, "
            f"{t['variation_runs']} above mu+1.5 sigma"
        )
