"""The variability study's report files, written from its job and prediction rows.

:func:`write_report_files` is the one writer of a study's ``summary.json`` and ``tables.md``
(:func:`rush.studies.contention.run_study` calls it after the trials). :func:`rewrite_report`
reads a committed folder's run records (``runs.csv.gz``, ``predictions.csv.gz``) back and
writes the two files again, so a change of the report reaches every committed table without
rerunning a trial; the summary's other keys (campaign, training, thresholds) are kept as they
were, since they come from the campaign, not from the rows.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rush.errors import ConfigError
from rush.studies.tables import csv_value

RUNS = "runs.csv.gz"
PREDICTIONS = "predictions.csv.gz"


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One gzipped CSV of the study (its columns as written by run_study)."""
    try:
        with gzip.open(path, "rt", newline="") as fh:
            return [{k: csv_value(v) for k, v in row.items()} for row in csv.DictReader(fh)]
    except (OSError, EOFError, csv.Error) as exc:
        raise ConfigError(
            f"cannot read the study's records {path}: {exc}",
            where=str(path),
            fix="point at a folder holding the study's runs.csv.gz (and predictions.csv.gz, if any)",
        ) from None


def write_report_files(
    results: Path,
    jobs: Sequence[dict],
    predictions: Sequence[dict],
    head: dict[str, Any],
    agreement: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """results/summary.json (``head`` plus results, causes and ladder) and results/tables.md.
    ``agreement``: the flag agreement to report instead of the predictions' (a folder that kept
    its summary but not its predictions)."""
    from rush.studies import contention_avoidable as avoid
    from rush.studies.contention_report import markdown, summarise

    table = summarise(jobs, predictions)
    if agreement is not None:
        table["agreement"] = agreement
    summary = dict(head)
    summary["results"] = table
    summary["causes"] = avoid.causes(jobs)
    summary["ladder"] = avoid.ladder(table)
    (results / "summary.json").write_text(json.dumps(summary, indent=1))
    (results / "tables.md").write_text(
        markdown(table) + "\n" + avoid.markdown(summary["causes"], summary["ladder"])
    )
    return summary


def rewrite_report(folder: Path, plots: Path | None = None) -> dict[str, Any]:
    """Write ``folder``'s summary.json and tables.md again from its run records; with ``plots``
    (a folder named ``plots``), the figures too."""
    runs = folder / RUNS
    if not runs.is_file():
        raise ConfigError(
            f"no {RUNS} in {folder}", where=str(folder), fix="name a folder of the study's committed results"
        )
    jobs = read_rows(runs)
    old = folder / "summary.json"
    head = json.loads(old.read_text()) if old.is_file() else {}
    if (folder / PREDICTIONS).is_file():
        predictions, agreement = read_rows(folder / PREDICTIONS), None
    else:
        # Some folders committed the summary but not the questions: keep the agreement computed then.
        predictions, agreement = [], (head.get("results") or {}).get("agreement")
    summary = write_report_files(folder, jobs, predictions, head, agreement)
    if plots is not None:
        write_plots(plots.parent, jobs, summary)
    return summary


def write_plots(out: Path, jobs: Sequence[dict], summary: dict[str, Any]) -> None:
    """out/plots: the paper's figures and the ladder."""
    from rush.studies import contention_avoidable as avoid
    from rush.studies.plots.contention import plot_study

    plot_study(out, jobs, summary["results"])
    avoid.plot_ladder(
        summary["ladder"], lambda v: out / "plots" / ("ladder.png" if v == "paper" else f"ladder-{v}.png")
    )
