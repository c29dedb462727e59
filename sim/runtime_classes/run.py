"""Reproduce the runtime-classification experiment.

For each trace (SDSC-SP2, CTC-SP2, KTH-SP2, SDSC-BLUE, HPC2N) and job set (``full``: the
trace as a live system sees it; ``published``: jobs with runtime <= 0 or >= the request
dropped, the thesis's sizes): one walk-forward per mode (``live`` by default: features at
each submission, as the daemon computes them); then EASY with the policies (FCFS and SPF by
default) under the five variants (base, classification, classification-idempotent,
class-clairvoyant, runtime-clairvoyant), threshold 200,000 s, tau 10 s, predictions from
the first mode. The classifier (issue 13) is fixed before any evaluation: gradient boosting
(scikit-learn's HistGradientBoostingClassifier defaults, 100 iterations, no early
stopping), refit every week on the 20,000 most recently finished jobs, predicting small
when P(small) >= 0.5 (plain classification) or >= 0.1 (classification-idempotent): the
thresholds chosen on development traces by ``select_threshold.py``
(``rush.models.decision_thresholds``). Writes to ``results/<job set>/``:

* ``improvement.csv`` / ``.md``: each variant's mean bounded slowdown and its improvement over
  EASY-FCFS (base), the final value of the cumulative mean bounded slowdown;
* ``classification.csv`` / ``.md``: accuracy, precision, recall, recall of jobs <= 10 s,
  false-small and false-large rates per trace and mode;
* ``summary.csv`` / ``.md``: per trace, the improvement of FCFS- and SPF-classification
  (plain, idempotent) over EASY-FCFS next to the class-clairvoyant bound, and the share of
  the bound reached;
* ``fairness.csv``: mean bounded slowdown of small vs large jobs per configuration;
* ``importances.csv``: per-week feature importances (models that have them; not boosting);
* ``cumulative_bsld_<trace>.png``: cumulative mean bounded slowdown over time per variant.

Configurations run in parallel with joblib (``--jobs``); with ``--dask ADDRESS`` they run on
a Dask cluster (e.g. one started by dask-jobqueue on Slurm) through joblib's dask backend.

    RUSH_TRACE_MIRROR=../shared/traces python sim/runtime_classes/run.py [--traces KTH-SP2,...]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from rush.models.walkforward import DEFAULT_MAX_TRAIN_JOBS
from rush.studies.arg_types import count, names, trace_specs
from rush.studies.plots.runtime_classes import plot
from rush.studies.tables import write_table

TRACES = ("SDSC-SP2", "CTC-SP2", "KTH-SP2", "SDSC-BLUE", "HPC2N")
POLICIES = ("FCFS", "SPF", "SAF", "WFP3")
JOB_SETS = ("full", "published")
OUT = Path(__file__).parent / "results"
# The classifier, fixed before looking at any scheduling result (module docstring).
SHORT = 10.0  # "premature" jobs: recall of jobs that ran <= 10 s


def _cell_value(text: str) -> object:
    """A CSV cell back as the value written: None, int, float (repr round-trips) or text."""
    if text == "":
        return None
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(text)
    return text


def with_other_traces(out: Path, name: str, rows: list[dict], traces) -> list[dict]:
    """``rows`` and the rows on disk (``out/<name>.csv``) of the traces not run now, in
    :data:`TRACES`' order then the others' (a run of some traces adds or replaces their rows and
    keeps the table's other rows: round 22 added LLNL-Atlas without rerunning the five)."""
    path = out / f"{name}.csv"
    kept = []
    if path.exists():
        with open(path, newline="") as fh:
            kept = [
                {k: _cell_value(v) for k, v in r.items()}
                for r in csv.DictReader(fh)
                if r["trace"] not in traces
            ]
    order = {t: i for i, t in enumerate(TRACES)}
    return sorted(kept + rows, key=lambda r: order.get(r["trace"], len(order)))


def load(trace_name: str, job_set: str):
    from rush.models.walkforward import published_job_set
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    trace = load_trace(trace_name)
    workload = workload_from_trace(trace)
    return trace, published_job_set(workload) if job_set == "published" else workload


def classifier():
    """The issue-13 classifier (the one ``rush train`` and ``rush simulate`` use)."""
    from rush.models.walkforward import default_classifier

    return default_classifier()


def cached_walkforward(trace_name: str, job_set: str, mode: str):
    """:func:`walkforward`, memoised on disk (``RUSH_CACHE`` or ~/.cache/rush): the
    threshold selection and the evaluation reuse a trace's walk-forward. The cache key holds
    the arguments, this module's code (joblib.Memory) and a digest of ``rush/models`` and
    ``rush/workload``, so a changed classifier, feature or trace reader refits."""
    import hashlib

    from joblib import Memory

    import rush

    root = Path(rush.__file__).parent
    digest = hashlib.sha256()
    for path in sorted([*root.glob("models/*.py"), *root.glob("workload/*.py")]):
        digest.update(path.read_bytes())
    from rush.studies.study_cache import trusted_folder

    cached = Memory(trusted_folder("runtime_classes"), verbose=0).cache(walkforward)
    return cached(trace_name, job_set, mode, code=digest.hexdigest())


def walkforward(trace_name: str, job_set: str, mode: str, code: str = ""):
    from rush.models.walkforward import predict_classes_walkforward

    trace, workload = load(trace_name, job_set)
    wf = predict_classes_walkforward(
        workload, trace.header, mode=mode, estimator=classifier(), max_train_jobs=DEFAULT_MAX_TRAIN_JOBS
    )
    return trace_name, job_set, mode, wf


def simulate_all(trace_name: str, job_set: str, wf, policies: tuple[str, ...]) -> list[dict]:
    from rush.core.config import CoreConfig
    from rush.simulator.engine import simulate
    from rush.simulator.metrics import compute_metrics, cumulative_bounded_slowdown, per_class
    from rush.studies.runtime_variants import VARIANTS, variant_inputs

    trace, workload = load(trace_name, job_set)
    actual_class = np.where(wf.runtime <= wf.divider_or_first(), 0, 1)
    rows = []
    for policy in policies:
        for variant in VARIANTS:
            inputs, kwargs, _ = variant_inputs(variant, trace, workload, walkforward=wf)
            config = CoreConfig.from_names(policy, "easy", 200_000, **kwargs)
            result = simulate(workload, config, inputs)
            metrics = compute_metrics(result, tau=10.0)
            classes = per_class(result, actual_class, tau=10.0)
            times, cumulative = cumulative_bounded_slowdown(result, 10.0)
            rows.append(
                {
                    "trace": trace_name,
                    "job_set": job_set,
                    "jobs": len(workload),
                    "policy": policy,
                    "variant": variant,
                    "mean_bounded_slowdown": metrics["mean_bounded_slowdown"],
                    "mean_wait": metrics["mean_wait"],
                    "utilization": metrics["utilization"],
                    "kills": int(result.requeues.sum()),
                    "wasted_area": float(result.wasted_area.sum()),
                    "bsld_small": classes.get("0", {}).get("mean_bounded_slowdown"),
                    "bsld_large": classes.get("1", {}).get("mean_bounded_slowdown"),
                    "cumulative": (np.asarray(times).tolist(), np.asarray(cumulative).tolist()),
                }
            )
    return rows


def scheduler_address(text: str) -> str:
    """An argparse type: a Dask scheduler's address (``tcp://host:8786``)."""
    from rush.studies.sweep.clusters import ADDRESS

    if not ADDRESS.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a scheduler address such as tcp://host:8786")
    return text


def backend(dask_address: str | None):
    if dask_address is None:
        return contextlib.nullcontext()
    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise SystemExit("--dask needs dask[distributed]: pip install 'rush[dask]'") from exc
    from joblib import parallel_backend

    Client(dask_address)
    return parallel_backend("dask")


def quality_row(trace: str, job_set: str, mode: str, wf, decision: str = "plain") -> dict:
    s = wf.summary()
    actual_small = wf.actual_class() == 0
    short = actual_small & (wf.runtime <= SHORT)
    return {
        "trace": trace,
        "job_set": job_set,
        "mode": mode,
        "decision": decision,
        "jobs": s["jobs"],
        "accuracy": s["accuracy"],
        "precision": s["precision"],
        "recall": s["recall"],
        "recall_le_10s": float(np.mean(wf.predicted_class[short] == 0)) if short.any() else None,
        "false_small_rate": s["false_small_rate"],
        "false_large_rate": s["false_large_rate"],
        "walkforward_seconds": wf.seconds,
    }


def importance_rows(walks: dict) -> list[dict]:
    """Per trace and week, the feature importances; the columns are prefixed so that the
    week-of-year feature's ("week") cannot overwrite the week index (issue 13)."""
    return [
        {"trace": t, "week": w["week"], **{f"importance_{k}": v for k, v in w["importances"].items()}}
        for t, wf in walks.items()
        for w in wf.weekly
        if w.get("importances")
    ]


def summary_rows(rows: list[dict]) -> list[dict]:
    """Per trace: improvements over EASY-FCFS next to the class-clairvoyant bound."""
    imp = {(r["trace"], r["policy"], r["variant"]): r["improvement_over_easy_fcfs_pct"] for r in rows}
    out = []
    for trace in dict.fromkeys(r["trace"] for r in rows):
        row: dict = {"trace": trace}
        for policy in ("FCFS", "SPF"):
            if (trace, policy, "base") not in imp:
                continue
            bound = imp[(trace, policy, "class-clairvoyant")]
            base = imp[(trace, policy, "base")]
            for variant, short in (("classification", "plain"), ("classification-idempotent", "idempotent")):
                value = imp[(trace, policy, variant)]
                row[f"{policy}_{short}_pct"] = value
                # Share of the bound's gain over the policy alone that classification reaches.
                row[f"{policy}_{short}_share_of_bound"] = (
                    (value - base) / (bound - base) if bound != base else None
                )
            row[f"{policy}_base_pct"] = base
            row[f"{policy}_clairvoyant_pct"] = bound
        row["SPF_idempotent_beats_SPF"] = imp.get(
            (trace, "SPF", "classification-idempotent"), float("nan")
        ) > imp.get((trace, "SPF", "base"), float("nan"))
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=trace_specs, default=",".join(TRACES))
    parser.add_argument(
        "--job-set",
        choices=(*JOB_SETS, "both"),
        default="both",
        help="full trace, the published job set (runtime <= 0 or >= request dropped), or both",
    )
    parser.add_argument(
        "--modes",
        type=names(("weekly", "live")),
        default="live",
        help="walk-forward modes; the first feeds the simulations",
    )
    parser.add_argument(
        "--policies", type=names(POLICIES), default="FCFS,SPF", help=f"EASY policies, of {','.join(POLICIES)}"
    )
    parser.add_argument("--jobs", type=count(1), default=1, help="parallel workers (joblib)")
    parser.add_argument(
        "--dask", type=scheduler_address, default=None, help="Dask scheduler address, e.g. tcp://host:8786"
    )
    args = parser.parse_args()
    traces, modes, policies = list(args.traces), list(args.modes), args.policies
    if "FCFS" not in policies:
        parser.error(f"--policies: FCFS is needed; give it with some of {', '.join(POLICIES)}")
    job_sets = JOB_SETS if args.job_set == "both" else (args.job_set,)
    for job_set in job_sets:
        run(traces, job_set, modes, policies, args.jobs, args.dask)


def run(traces, job_set, modes, policies, n_jobs, dask) -> None:
    out = OUT / job_set
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with backend(dask):
        walks = Parallel(n_jobs=n_jobs, verbose=5)(
            delayed(cached_walkforward)(t, job_set, m) for t in traces for m in modes
        )
        first = {t: wf for t, _, m, wf in walks if m == modes[0]}
        batches = Parallel(n_jobs=n_jobs, verbose=5)(
            delayed(simulate_all)(t, job_set, first[t], policies) for t in traces
        )
    rows = [row for batch in batches for row in batch]
    # Quality of both decisions: for jobs that cannot be killed, and for idempotent ones.
    quality = [
        quality_row(t, js, m, w, decision)
        for t, js, m, wf in walks
        for decision, w in (("plain", wf), ("idempotent", wf.for_idempotent()))
    ]
    write_table(
        out, "classification", with_other_traces(out, "classification", quality, traces), list(quality[0])
    )

    base = {
        r["trace"]: r["mean_bounded_slowdown"]
        for r in rows
        if r["policy"] == "FCFS" and r["variant"] == "base"
    }
    for r in rows:
        r["improvement_over_easy_fcfs_pct"] = (
            100.0 * (base[r["trace"]] - r["mean_bounded_slowdown"]) / base[r["trace"]]
        )
    table = with_other_traces(out, "improvement", rows, traces)
    write_table(
        out,
        "improvement",
        table,
        [
            "trace",
            "job_set",
            "jobs",
            "policy",
            "variant",
            "mean_bounded_slowdown",
            "improvement_over_easy_fcfs_pct",
            "mean_wait",
            "utilization",
            "kills",
            "wasted_area",
        ],
    )
    summary = summary_rows(table)
    write_table(out, "summary", summary, list(summary[0]))
    write_table(
        out,
        "fairness",
        with_other_traces(out, "fairness", rows, traces),
        ["trace", "job_set", "policy", "variant", "bsld_small", "bsld_large", "kills", "wasted_area"],
    )
    importances = importance_rows(first)
    if importances:
        write_table(out, "importances", importances, list(importances[0]))
    plot(rows, out)
    (out / "run.json").write_text(
        json.dumps(
            {
                "traces": list(dict.fromkeys(r["trace"] for r in table)),  # the tables'
                "job_set": job_set,
                "modes": modes,
                "policies": list(policies),
                "classifier": {
                    "estimator": classifier().estimator,
                    "iterations": classifier().n_estimators,
                    "max_train_jobs": DEFAULT_MAX_TRAIN_JOBS,
                    "small_threshold": classifier().threshold,
                    "idempotent_threshold": classifier().idempotent_threshold,
                },
                "seconds": time.time() - started,
                "command": "python sim/runtime_classes/run.py --traces "
                + ",".join(traces)
                + f" --job-set {job_set} --modes {','.join(modes)} --policies {','.join(policies)}",
            },
            indent=2,
        )
    )
    print(f"{job_set}: done in {time.time() - started:.0f} s; tables and plots in {out}", flush=True)


if __name__ == "__main__":
    main()
