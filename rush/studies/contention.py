"""The whole variability study: campaign -> dataset -> models -> paired trials -> tables and plots.

``prepare`` runs, per variant of the set-up (the paper's, and the sensitivity variants asked
for), the simulated campaign on that machine and noise (unless ``out/<variant>/campaign``
already holds one made alike), builds the dataset with the variability pipeline
(:func:`rush.models.variability.dataset.build_dataset`, window 300 s, job and all-node scopes,
each run's own probe) and trains two models with
:func:`rush.models.variability.train.train_variability` (leave-one-application-out model
selection among ExtraTrees, RandomForest, kNN and AdaBoost, the node scope with the best
held-out F1, RFE, the 3-class model, the flag threshold on held-out data): on all seven
applications (ADAA, ADPA, WS, SS) and on the four outside ADPA/PDPA's three (PDPA).
``run_study`` then runs every variant x scenario x trial x policy through rush.studies.sweep
and hands the rows to :mod:`rush.studies.contention_report`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rush.contention.apps import OTHER_FOUR
from rush.contention.experiment import LEARNED, POLICIES, SCENARIOS, run_trial, slowdown_thresholds
from rush.errors import ConfigError
from rush.output_file import replace_file

MAX_TRIALS = 100
MAX_HOURS = 48.0
WINDOW = 300.0


def _command() -> str:
    return "rush " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv else "rush"


@dataclass(frozen=True)
class ContentionStudy:
    """What one run of the study covers (``rush experiment variability``'s flags)."""

    out: Path
    scenarios: list[str]
    trials: int
    seed: int
    hours: float  # of the simulated campaign the models are trained on
    cluster: str = "serial"
    scale: float = 1.0
    fresh: bool = False
    progress: bool = False
    train_models: tuple[str, ...] | None = None  # None: all four kinds
    estimators: int = 100
    study_spec: Any = None  # rush.contention.spec.StudySpec; None: the paper's set-up
    variants: tuple[str, ...] = ("paper",)
    policies: tuple[str, ...] = POLICIES
    first_trial: int = 0  # trials first_trial .. first_trial + trials - 1 (held-out seeds)
    reference_hours: float = 12.0  # of the 16-node reference queue that sets the bar (as calibrated)
    # The labels models are trained on (rush.contention.labels): "variation" (RUSH's, always) and
    # "present-state" (RUSH-PRESENT-LABEL's and RUSH-MOVE-PRESENT-LABEL's: models "present-all",
    # "present-other4").
    labels: tuple[str, ...] = ("variation",)


def _spec(study: ContentionStudy, variant: str) -> dict[str, dict[str, Any]]:
    from rush.contention.spec import load_study_spec

    spec = (study.study_spec or load_study_spec(None)).variant(variant)
    out = {"machine": dict(spec.machine_args), "noise": dict(spec.noise_args)}
    if spec.apps:  # only when given: a study without [calibration] reuses campaigns made alike
        out["apps"] = {name: dict(fields) for name, fields in spec.apps.items()}
    return out


def thresholds(study: ContentionStudy, variant: str) -> dict[str, Any]:
    """The bar of one variant: mu + 1.5 sigma per application in the reference queue
    (:mod:`rush.contention.reference`), kept in ``out/<variant>/reference.json`` and reused when
    made alike. It needs neither the campaign nor the models, so the diagnostics can run first."""
    from rush.contention.experiment import cell_machine
    from rush.contention.reference import reference_thresholds
    from rush.contention.state import Fabric

    spec = _spec(study, variant)
    path = study.out / variant / "reference.json"
    wanted = {"seed": study.seed, "hours": study.reference_hours, "spec": json.loads(json.dumps(spec))}
    if not study.fresh and path.is_file():
        kept = json.loads(path.read_text())
        if kept.get("args") == wanted:
            return kept
    machine, noise = cell_machine({"study_spec": spec})
    out = {
        "args": wanted,
        "thresholds": reference_thresholds(Fabric(machine, noise), noise, study.reference_hours, study.seed),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    return out


def prepare(study: ContentionStudy, variant: str) -> dict[str, Any]:
    """Campaign, datasets and the two models of one variant under ``out/<variant>``; reused
    when already made alike."""
    from rush.contention.campaign import filter_records, run_campaign
    from rush.contention.experiment import cell_machine
    from rush.contention.labels import PresentStateRecorder
    from rush.contention.state import Fabric
    from rush.models.variability.dataset import DatasetOptions, build_dataset
    from rush.studies.contention_labels import save_answers

    spec = _spec(study, variant)
    base = study.out / variant
    camp, models = base / "campaign", base / "models"
    meta_path = models / "prepare.json"
    wanted: dict[str, Any] = {"seed": study.seed, "hours": study.hours, "spec": json.loads(json.dumps(spec))}
    if study.train_models is not None or study.estimators != 100:
        wanted["train"] = {"models": list(study.train_models or ()), "estimators": study.estimators}
    if not study.fresh and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("campaign_args") == wanted and all(
            (study.out / m["path"]).is_file() for m in meta["models"].values()
        ):
            changed = _add_size_thresholds(study.out, meta)
            if _present_state(study):
                changed = _add_present_state(study, variant, meta) or changed
            if changed:
                meta_path.write_text(json.dumps({**meta, "reused": False}, indent=1))
            meta["reused"] = True
            return meta
    models.mkdir(parents=True, exist_ok=True)
    machine, noise = cell_machine({"study_spec": spec})
    # With the present-state label, the campaign runs with its recorder (which never flags: the
    # same records) and keeps the answers, so the models need no second campaign.
    recorder = (
        PresentStateRecorder(thresholds(study, variant)["thresholds"]) if _present_state(study) else None
    )
    summary = run_campaign(
        camp, study.hours, study.seed, _command(), Fabric(machine, noise), noise, oracle=recorder
    )
    if recorder is not None:
        save_answers(camp, thresholds(study, variant)["thresholds"], recorder.answers)
    for key in ("records", "store"):
        summary[key] = str(Path(summary[key]).relative_to(study.out))
    filter_records(camp / "records.jsonl", camp / "records-other4.jsonl", OTHER_FOUR)
    options = DatasetOptions(window=WINDOW, scopes=("job", "all"))
    trained: dict[str, Any] = {}
    paths: dict[str, dict[str, Any]] = {}
    for name, records in (("all", "records.jsonl"), ("other4", "records-other4.jsonl")):
        dataset = build_dataset(camp / records, camp / "store.db", options)
        dataset.save(models / f"dataset-{name}")
        paths[name], trained[name] = _train(study, dataset, models / f"variability-{name}.joblib")
    meta = {
        "campaign_args": wanted,
        "campaign": summary,
        "models": paths,
        "training": trained,
        # The bar of a run with variation: the 16-node reference queue's (rush.contention.reference);
        # the training campaign's 16-node runs (ADAA-like blocks) for comparison.
        "thresholds": thresholds(study, variant)["thresholds"],
        "campaign_thresholds": slowdown_thresholds(camp / "records.jsonl"),
        "reused": False,
    }
    if _present_state(study):
        _add_present_state(study, variant, meta)
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


def _present_state(study: ContentionStudy) -> bool:
    """Whether the present-state models are prepared: asked for, or a policy runs them."""
    from rush.contention.labels import policy_label

    return "present-state" in study.labels or any(policy_label(p) == "present-state" for p in study.policies)


def _train(study: ContentionStudy, dataset: Any, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """One model of the study (model selection, RFE, 3-class model, flag threshold): its
    prepare.json entry and its training summary."""
    from rush.models.variability.train import TrainOptions, train_variability

    kinds = study.train_models or TrainOptions().models
    model = train_variability(
        dataset,
        TrainOptions(seed=study.seed, models=kinds, n_estimators=study.estimators, final_scope="best"),
    )
    card = model.save(path)
    report = model.report()
    # Relative to the study's directory: a clone elsewhere reuses the committed models.
    entry = {
        "path": str(path.relative_to(study.out)),
        "flag_threshold": card.get("flag_threshold"),
        "flag_threshold_by_size": card.get("flag_threshold_by_size"),
    }
    trained = {
        "rows": len(dataset),
        "variation_runs": int(dataset.y_binary.sum()),
        "model": report["model"],
        "features": report["features"],
        "scope": card.get("scope"),
        "cv_table": report["cv_table"],
        "scope_table": report["scope_table"],
        "flag_threshold": card.get("flag_threshold_table"),
        "label": card.get("label", "variation"),
    }
    return entry, trained


def _add_present_state(study: ContentionStudy, variant: str, meta: dict[str, Any]) -> bool:
    """The models on the present-state label ("present-all", "present-other4") beside the
    variation ones, from the same campaign, dataset options and training; False when already there.
    The answers come from rerunning the campaign with the recorder (rush.studies.contention_labels)."""
    from rush.contention.experiment import cell_machine
    from rush.contention.state import Fabric
    from rush.models.variability.dataset import DatasetOptions, build_dataset
    from rush.studies.contention_labels import present_state_answers, relabel_present_state

    names = ("present-all", "present-other4")
    if all(n in meta["models"] and (study.out / meta["models"][n]["path"]).is_file() for n in names):
        return False
    base = study.out / variant
    camp, models = base / "campaign", base / "models"
    machine, noise = cell_machine({"study_spec": _spec(study, variant)})
    answers = present_state_answers(
        camp, study.hours, study.seed, Fabric(machine, noise), noise, meta["thresholds"]
    )
    options = DatasetOptions(window=WINDOW, scopes=("job", "all"))
    for name, records in (("present-all", "records.jsonl"), ("present-other4", "records-other4.jsonl")):
        dataset = relabel_present_state(build_dataset(camp / records, camp / "store.db", options), answers)
        meta["models"][name], meta["training"][name] = _train(
            study, dataset, models / f"variability-{name}.joblib"
        )
    return True


def _add_size_thresholds(out: Path, meta: dict[str, Any]) -> bool:
    """Models prepared before the per-size flag thresholds existed get them (computed from their
    card and dataset, as training computes them); True when any was added."""
    from rush.models.variability.dataset import load_dataset
    from rush.models.variability.train import load_variability_model, size_threshold_table

    added = False
    for name, entry in meta["models"].items():
        if entry.get("flag_threshold_by_size"):
            continue
        _, card = load_variability_model(out / entry["path"])
        table = size_threshold_table(load_dataset(out / Path(entry["path"]).parent / f"dataset-{name}"), card)
        entry["flag_threshold_by_size"] = {k: v["threshold"] for k, v in table.items()}
        meta["training"][name]["flag_threshold_by_size"] = table
        added = True
    return added


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
            fix="e.g. 12",
        )
    if not 0.01 <= scale <= 1.0:
        raise ConfigError(
            f"--scale must be in [0.01, 1], got {scale}", where="--scale", fix="1 (the published sizes)"
        )


def check_policies(text: str) -> tuple[str, ...]:
    """``--policy``: names of :data:`rush.contention.experiment.POLICIES` (any case), or all;
    FCFS+EASY always runs (every comparison is against it)."""
    names = [n.strip().upper() for n in text.split(",") if n.strip()]
    if "ALL" in names:
        return POLICIES
    bad = [n for n in names if n not in POLICIES]
    if not names or bad:
        raise ConfigError(
            f"unknown policy {', '.join(bad)[:200] or '(none)'}",
            where="--policy",
            fix=f"some of {', '.join(POLICIES)}, or all",
        )
    return tuple(p for p in POLICIES if p in names or p == "FCFS+EASY")


def _models_key(out: Path, meta: dict[str, Any], policy: str = "RUSH") -> str:
    """A digest of the model files and flag thresholds a learned policy runs with (the models of
    its label: adding the present-state models leaves RUSH's finished trials valid)."""
    from rush.contention.labels import MODEL_PREFIX, policy_label

    prefix = MODEL_PREFIX.get(policy_label(policy), "")
    digest = hashlib.sha1()
    for name, model in sorted(meta["models"].items()):
        if name.startswith("present-") if not prefix else not name.startswith(prefix):
            continue
        digest.update(name.encode())
        digest.update(hashlib.sha256((out / model["path"]).read_bytes()).digest())
        digest.update(json.dumps({k: v for k, v in model.items() if k != "path"}, sort_keys=True).encode())
    return digest.hexdigest()[:12]


def prepare_only(study: ContentionStudy) -> dict[str, Any]:
    """``--prepare-only``: the bar, the campaign and the models of every variant, no trial."""
    check_args(study.scenarios, 1, study.seed, study.hours, study.scale)
    return {v: prepare(study, v) for v in study.variants}


def run_study(study: ContentionStudy) -> dict[str, Any]:
    from rush.studies.contention_records import write_plots, write_report_files
    from rush.studies.sweep import SweepOptions, run_sweep

    check_args(study.scenarios, study.trials, study.seed, study.hours, study.scale)
    # The campaign and the models only when a learned policy runs: the diagnostics need the bar only.
    learned = any(p in LEARNED for p in study.policies)
    metas = {
        v: prepare(study, v)
        if learned
        else {
            "thresholds": thresholds(study, v)["thresholds"],
            "models": {},
            "campaign": None,
            "training": {},
        }
        for v in study.variants
    }
    cells = [
        {
            "variant": v,
            "scenario": s,
            "trial": t,
            "policy": p,
            "seed": study.seed,
            "scale": study.scale,
            "models": {k: m | {"path": str(study.out / m["path"])} for k, m in metas[v]["models"].items()},
            "thresholds": metas[v]["thresholds"],
            # A finished trial is reused only under the same bar and, for a learned policy, the same
            # model files (the sweep's key): a retrained model must not bring back old trials.
            "bar": hashlib.sha1(json.dumps(metas[v]["thresholds"], sort_keys=True).encode()).hexdigest()[:12],
            "model_key": _models_key(study.out, metas[v], p) if p in LEARNED else "",
            "study_spec": _spec(study, v),
        }
        for v in study.variants
        for s in study.scenarios
        for t in range(study.first_trial, study.first_trial + study.trials)
        for p in study.policies
    ]
    results = study.out / "results"
    results.mkdir(parents=True, exist_ok=True)
    rows = run_sweep(
        run_trial,
        cells,
        SweepOptions(
            out=results / "sweep",
            cluster=study.cluster,
            resume=not study.fresh,
            progress=study.progress,
            key_fields=["variant", "scenario", "trial", "policy", "seed", "scale", "bar", "model_key"],
        ),
    )
    if rows.failed:
        errors = sorted({str(r.get("error")) for r in rows if r.get("error_type")})
        raise ConfigError(
            f"{rows.failed} trial(s) failed: {'; '.join(errors)[:500]}", where="rush experiment variability"
        )
    wanted = set(study.scenarios)
    jobs = [r for r in rows if r.get("kind") == "job" and r["scenario"] in wanted]
    predictions = [r for r in rows if r.get("kind") == "prediction" and r["scenario"] in wanted]
    _write_csv(results / "runs.csv.gz", jobs, JOB_COLUMNS)
    _write_csv(results / "predictions.csv.gz", predictions, PREDICTION_COLUMNS)
    head = {
        "scenarios": study.scenarios,
        "variants": list(study.variants),
        "trials": list(range(study.first_trial, study.first_trial + study.trials)),
        "seed": study.seed,
        "campaign": {v: m["campaign"] for v, m in metas.items()},
        "training": {
            v: {
                k: {kk: t[kk] for kk in ("rows", "variation_runs", "model", "scope", "cv_table", "scope_table",
                                         "flag_threshold", "features")}
                | {"label": t.get("label", "variation")}
                for k, t in m["training"].items()
            }
            for v, m in metas.items()
        },
        "thresholds": {v: m["thresholds"] for v, m in metas.items()},
        "results": None,  # the report's keys, filled in by write_report_files
        "runner": f"rush.studies.sweep.run_sweep, cluster={study.cluster}",
    }  # fmt: skip
    summary = write_report_files(results, jobs, predictions, head)
    write_plots(study.out, jobs, summary)
    return summary


JOB_COLUMNS = (
    "variant", "scenario", "policy", "trial", "job_id", "app", "wtype", "size", "submit", "start", "end",
    "runtime", "base", "slowdown", "wait", "skips", "skip_limit", "limit_hit", "noise_level", "variation",
    "cause", "decisive", "without_noise", "without_others", "without_own", "without_io", "without_all",
    "best_delayed", "best_delay", "avoidable",
)  # fmt: skip
PREDICTION_COLUMNS = ("variant", "scenario", "policy", "trial", "t", "job_id", "app", "flag", "oracle_flag")


def _write_csv(path: Path, rows: list[dict], columns: tuple[str, ...]) -> None:
    """Gzipped CSV (tens of MB of rows otherwise), written whole then renamed; rows in trial order."""
    import gzip

    tmp = path.with_suffix(".tmp")
    # mtime 0: the same rows give the same bytes (no spurious diffs in the committed results).
    with gzip.GzipFile(tmp, "wb", mtime=0) as raw, io.TextIOWrapper(raw, newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in sorted(rows, key=lambda r: tuple(_sort_key(r[c]) for c in columns[:6])):
            w.writerow([r.get(c, "") for c in columns])
    replace_file(tmp, path)


def _sort_key(value: Any) -> tuple:
    """Numbers by value (trials, job ids, times), text by text."""
    return (0, float(value), "") if isinstance(value, int | float) else (1, 0.0, str(value))
