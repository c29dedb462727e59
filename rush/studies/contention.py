"""The whole variability study: campaign -> dataset -> models -> paired trials -> tables and plots.

``prepare`` runs the simulated campaign (unless ``out/campaign`` already holds one with the same
seed and length), builds the dataset with the variability pipeline
(:func:`rush.models.variability.dataset.build_dataset`, window 300 s, job and all-node scopes) and
trains two models with :func:`rush.models.variability.train.train_variability`: on all seven
applications (ADAA, ADPA, WS, SS) and on the four outside the three-application scenarios
(PDPA). ``run_study`` then runs every scenario x trial x policy through rush.studies.sweep.
"""

from __future__ import annotations

import csv
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rush.contention.experiment import (
    OTHER_FOUR,
    POLICIES,
    SCENARIOS,
    run_trial,
    slowdown_thresholds,
    summarise,
)
from rush.errors import ConfigError

MAX_TRIALS = 100
MAX_HOURS = 48.0


def _command() -> str:
    return "rush " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv else "rush"


def prepare(
    out: Path,
    seed: int,
    hours: float,
    fresh: bool = False,
    train_models: tuple[str, ...] | None = None,
    estimators: int = 100,
) -> dict[str, Any]:
    """Campaign, datasets and the two models under ``out``; reused when already made alike.

    ``train_models``/``estimators`` narrow the model selection (tests); None means the
    published four kinds.
    """
    from rush.contention.campaign import filter_records, run_campaign
    from rush.models.variability.dataset import DatasetOptions, build_dataset
    from rush.models.variability.train import TrainOptions, train_variability

    camp = out / "campaign"
    models = out / "models"
    meta_path = models / "prepare.json"
    wanted: dict[str, Any] = {"seed": seed, "hours": hours}
    if train_models is not None or estimators != 100:
        wanted["train"] = {"models": list(train_models or ()), "estimators": estimators}
    if not fresh and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("campaign_args") == wanted and all(Path(p).is_file() for p in meta["models"].values()):
            meta["reused"] = True
            return meta
    models.mkdir(parents=True, exist_ok=True)
    summary = run_campaign(camp, hours, seed, _command())
    filter_records(camp / "records.jsonl", camp / "records-other4.jsonl", OTHER_FOUR)
    options = DatasetOptions(window=300.0, scopes=("job", "all"))
    trained: dict[str, Any] = {}
    paths: dict[str, str] = {}
    for name, records in (("all", "records.jsonl"), ("other4", "records-other4.jsonl")):
        dataset = build_dataset(camp / records, camp / "store.db", options)
        dataset.save(models / f"dataset-{name}")
        options_t = TrainOptions(seed=seed, n_estimators=estimators)
        if train_models is not None:
            options_t = TrainOptions(seed=seed, models=train_models, n_estimators=estimators)
        model = train_variability(dataset, options_t)
        path = models / f"variability-{name}.joblib"
        model.save(path)
        paths[name] = str(path)
        report = model.report()
        trained[name] = {
            "rows": len(dataset),
            "variation_runs": int(dataset.y_binary.sum()),
            "model": report["model"],
            "features": report["features"],
            "cv_table": report["cv_table"],
            "scope_table": report["scope_table"],
        }
    meta = {
        "campaign_args": wanted,
        "campaign": summary,
        "models": paths,
        "training": trained,
        "thresholds": slowdown_thresholds(camp / "records.jsonl"),
        "reused": False,
    }
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


def check_args(scenarios: list[str], trials: int, seed: int, hours: float, scale: float) -> None:
    bad = [s for s in scenarios if s not in SCENARIOS]
    if not scenarios or bad:
        raise ConfigError(
            f"unknown scenario {', '.join(bad) or '(none)'}",
            where="--scenario",
            fix=f"one of {', '.join(SCENARIOS)} or all",
        )
    if not 1 <= trials <= MAX_TRIALS:
        raise ConfigError(f"--trials must be 1 to {MAX_TRIALS}, got {trials}", where="--trials", fix="e.g. 5")
    if not 0 <= seed < 2**32:
        raise ConfigError(f"--seed must be in [0, 2^32), got {seed}", where="--seed", fix="e.g. 0")
    if not 0.1 <= hours <= MAX_HOURS:  # also refuses NaN
        raise ConfigError(
            f"--campaign-hours must be 0.1 to {MAX_HOURS:.0f}, got {hours}",
            where="--campaign-hours",
            fix="e.g. 4",
        )
    if not 0.01 <= scale <= 1.0:
        raise ConfigError(
            f"--scale must be in [0.01, 1], got {scale}", where="--scale", fix="1 (the published sizes)"
        )


@dataclass(frozen=True)
class ContentionStudy:
    """What one run of the study covers (``rush experiment variability``'s flags)."""

    out: Path
    scenarios: list[str]
    trials: int
    seed: int
    hours: float  # of the synthetic campaign the models are trained on
    cluster: str = "serial"
    scale: float = 1.0
    fresh: bool = False
    progress: bool = False
    train_models: tuple[str, ...] | None = None  # None: all
    estimators: int = 100


def run_study(study: ContentionStudy) -> dict[str, Any]:
    from rush.studies.sweep import SweepOptions, run_sweep

    out, scenarios, trials, seed, hours = study.out, study.scenarios, study.trials, study.seed, study.hours
    cluster, scale, fresh, progress = study.cluster, study.scale, study.fresh, study.progress
    train_models, estimators = study.train_models, study.estimators
    check_args(scenarios, trials, seed, hours, scale)
    meta = prepare(out, seed, hours, fresh, train_models, estimators)
    cells = [
        {
            "scenario": s,
            "trial": t,
            "policy": p,
            "seed": seed,
            "scale": scale,
            "models": meta["models"],
            "thresholds": meta["thresholds"],
        }
        for s in scenarios
        for t in range(trials)
        for p in POLICIES
    ]
    results = out / "results"
    results.mkdir(parents=True, exist_ok=True)
    rows = run_sweep(
        run_trial,
        cells,
        SweepOptions(
            out=results / "sweep",
            cluster=cluster,
            resume=not fresh,
            progress=progress,
            key_fields=["scenario", "trial", "policy", "seed", "scale"],
        ),
    )
    if rows.failed:
        errors = sorted({str(r.get("error")) for r in rows if r.get("error_type")})
        raise ConfigError(
            f"{rows.failed} trial(s) failed: {'; '.join(errors)[:500]}", where="rush experiment variability"
        )
    jobs = [r for r in rows if r["scenario"] in scenarios]
    table = summarise(jobs)
    _write_runs(results / "runs.csv", jobs)
    summary = {
        "scenarios": scenarios,
        "trials": trials,
        "seed": seed,
        "campaign": meta["campaign"],
        "training": {
            k: {kk: v[kk] for kk in ("rows", "variation_runs", "model", "cv_table")}
            for k, v in meta["training"].items()
        },
        "thresholds": meta["thresholds"],
        "results": table,
        "runner": f"rush.studies.sweep.run_sweep, cluster={cluster}",
    }
    (results / "summary.json").write_text(json.dumps(summary, indent=1))
    (results / "tables.md").write_text(markdown(summary))
    from rush.studies.plots.contention import plot_study

    plot_study(out / "plots", jobs, table)
    return summary


COLUMNS = (
    "scenario", "policy", "trial", "job_id", "app", "wtype", "size", "submit", "start", "end",
    "runtime", "base", "slowdown", "wait", "skips", "noise", "variation",
)  # fmt: skip


def _write_runs(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for r in sorted(rows, key=lambda r: (r["scenario"], r["policy"], r["trial"], r["job_id"])):
            w.writerow([r[c] for c in COLUMNS])


def markdown(summary: dict[str, Any]) -> str:
    """The per-application and per-experiment tables of ``summary`` as Markdown (results/tables.md)."""
    lines = []
    for s, by_policy in summary["results"].items():
        policies = list(by_policy)
        lines += [f"### {s}", "", "| app | " + " | ".join(
            f"{p} var / runs | {p} runtime mean / max (s) | {p} wait (s)" for p in policies
        ) + " |", "|---|" + "---|---|---|" * len(policies)]  # fmt: skip
        for app in by_policy[policies[0]]["apps"]:
            cells = []
            for p in policies:
                a = by_policy[p]["apps"][app]
                cells += [
                    f"{a['runs_with_variation']:.1f} / {a['runs']:.0f}",
                    f"{a['runtime_mean']:.0f} / {a['runtime_max']:.0f}",
                    f"{a['wait_mean']:.0f}",
                ]
            lines.append(f"| {app} | " + " | ".join(cells) + " |")
        lines.append("")
        lines.append(
            "| policy | runs with variation per trial | makespan mean (s) | makespans (s) | mean wait (s) | flagged / asked per trial |"
        )
        lines.append("|---|---|---|---|---|---|")
        for p in policies:
            r = by_policy[p]
            spans = ", ".join(f"{m:.0f}" for m in r["makespans"])
            lines.append(
                f"| {p} | {r['runs_with_variation']:.1f} of {r['runs']:.0f} | {r['makespan_mean']:.0f} | {spans} "
                f"| {r['wait_mean']:.0f} | {r.get('flagged_per_trial', 0):.0f} / {r.get('predictions_per_trial', 0):.0f} |"
            )
        lines.append("")
    return "\n".join(lines)
