"""rush's runtime-quantile predictor on whole traces: its runtimes, its classes, its start estimates.

For each trace (KTH-SP2, CTC-SP2, SDSC-BLUE, SDSC-SP2; the full trace, as a live system sees
it):

1. the predictor walked forward weekly (:mod:`rush.models.runtime_quantiles_walkforward`:
   trained on the 10,000 most recently finished jobs, features at each submission);
2. ``predictor.csv/.md``: how often the real runtime is below each predicted quantile
   (calibration), median absolute error of the median against that of the request;
3. ``classes.csv/.md``: runtime classes from the distribution, P(runtime <= divider) >= the
   threshold chosen walk-forward (plain), and >= 0.1 for idempotent jobs: accuracy,
   precision, recall, beside the runtime-class study's classifier
   (``sim/runtime_classes/results/full/classification.csv``);
4. ``gain.csv/.md``: the runtime-class study's protocol (EASY, threshold 200,000 s, tau 10 s,
   FCFS and SPF; base, classification, classification-idempotent, class-clairvoyant) with
   these classes: improvement over EASY-FCFS and the share of the class-clairvoyant gain;
5. ``estimates.csv/.md``: start estimates at submit and halfway through the wait against the
   real start in EASY-FCFS on limits (:mod:`rush.studies.estimate_accuracy_offline`), for
   limits (``squeue --start``), EASY++ and this predictor, by wait class;
6. plots: ``predicted_vs_real_<trace>.png``, ``estimate_error_<trace>.png``.

    RUSH_TRACE_MIRROR=../shared/traces OMP_NUM_THREADS=1 python sim/runtime_predictions/estimates/run.py \
        [--traces KTH-SP2,...] [--max-queries 30000]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import time
from pathlib import Path

import numpy as np

from rush.studies.arg_types import count, positive_number, trace_specs
from rush.studies.tables import write_table

TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2")
OUT = Path(__file__).parent / "results"
CLASSIFIER = Path(__file__).parents[2] / "runtime_classes" / "results" / "full" / "classification.csv"
MAX_QUERIES = 30_000  # per trace: every k-th job beyond it (fixed before any result)
# The code a walk-forward runs: a change to any of them recomputes it.
WALKFORWARD_MODULES = (
    "runtime_quantiles",
    "runtime_quantiles_features",
    "runtime_quantiles_walkforward",
    "runtime_features",
    "decision_thresholds",
)
# Since round 6 the estimators project with the core's EASY replay (decisions on limits, time on
# the runtimes); `limits` (Slurm's plan on limits) and round 5's two conservative rows stay beside.
CONSERVATIVE_ESTIMATORS = ("limits", "quantiles-mean-round5", "clairvoyant-conservative")
# Round 8 (dev_log.md, H8): quantiles-mean-calibrated, the queue's means calibrated per band of the
# mean over the week's model's training rows; since round 8's deployment the model's own rule
# (rush.models.runtime_mean_bands), the mean every live estimate uses.
EASY_ESTIMATORS = (
    "limits-easy",
    "easy++",
    "quantiles-median",
    "quantiles-mean",
    "quantiles-mean-calibrated",
    "clairvoyant",
)
ESTIMATORS = CONSERVATIVE_ESTIMATORS + EASY_ESTIMATORS


def load(trace_name: str):
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    trace = load_trace(trace_name)
    return trace, workload_from_trace(trace)


def cached_walkforward(
    trace_name: str,
    max_train_jobs: int,
    max_iter: int,
    n_jobs: int = 1,
    learning_rate: float = 0.1,
    max_leaf_nodes: int = 31,
    feature_set: str = "base",
):
    """The walk-forward, kept on disk (``RUSH_CACHE`` or ~/.cache/rush) under a digest of the
    code it runs (the predictor's modules, the runtime features, the trace reader). The model is
    always the caller's: the keyword defaults are round 2's (what the older studies ran), and
    ``main`` passes the predictor's own default."""
    import rush
    from rush.models.runtime_quantiles import RuntimeQuantileRegressor
    from rush.models.runtime_quantiles_walkforward import predict_quantiles_walkforward
    from rush.studies.study_cache import cache_folder, load_entry, store_entry

    root = Path(rush.__file__).parent
    key = f"{trace_name} {max_train_jobs} {max_iter} {learning_rate}"
    key = key if max_leaf_nodes == 31 else f"{key} {max_leaf_nodes}"
    digest = hashlib.sha256((key if feature_set == "base" else f"{key} {feature_set}").encode())
    for path in sorted(
        [
            *(root / "models" / f"{m}.py" for m in WALKFORWARD_MODULES),
            *root.glob("workload/*.py"),
        ]
    ):
        digest.update(path.read_bytes())
    path = cache_folder("runtime_quantiles") / f"{trace_name}-{digest.hexdigest()[:16]}.pkl"
    if path.exists():
        return load_entry(path)
    trace, workload = load(trace_name)
    regressor = RuntimeQuantileRegressor(
        max_iter=max_iter, learning_rate=learning_rate, max_leaf_nodes=max_leaf_nodes
    )
    wf = predict_quantiles_walkforward(
        workload,
        trace.header,
        regressor,
        max_train_jobs=max_train_jobs,
        n_jobs=n_jobs,
        feature_set=feature_set,
    )
    store_entry(path, wf)
    return wf


def predictor_row(trace: str, wf) -> dict:
    ok = np.isfinite(wf.proba_small)  # weeks with a model (week 0 has none)
    real, req = wf.runtime[ok], wf.requested_time[ok]
    row = {"trace": trace, "jobs": int(ok.sum())}
    for k, level in enumerate(wf.levels):
        row[f"below_q{level:g}"] = float(np.mean(real <= wf.quantiles[ok, k] * (1 + 1e-9)))
    median = wf.quantile(0.5)[ok]
    row["median_ae_min_q0.5"] = float(np.median(np.abs(median - real)) / 60)
    row["median_ae_min_request"] = float(np.median(np.abs(req - real)) / 60)
    row["mae_min_q0.5"] = float(np.mean(np.abs(median - real)) / 60)
    row["mae_min_request"] = float(np.mean(np.abs(req - real)) / 60)
    row["median_fit_seconds"] = float(np.median(wf.fit_seconds)) if wf.fit_seconds else None
    row["walkforward_seconds"] = wf.seconds
    return row


def class_rows(trace: str, wf) -> list[dict]:
    published = {}
    if CLASSIFIER.exists():
        with open(CLASSIFIER) as fh:
            published = {(r["trace"], r["decision"]): r for r in csv.DictReader(fh)}
    cw = wf.class_walkforward()
    rows = []
    for decision, result in (("plain", cw), ("idempotent", cw.for_idempotent())):
        s = result.summary()
        theirs = published.get((trace, decision), {})
        rows.append(
            {
                "trace": trace,
                "decision": decision,
                "jobs": s["jobs"],
                "accuracy": s["accuracy"],
                "precision": s["precision"],
                "recall": s["recall"],
                "false_small_rate": s["false_small_rate"],
                "classifier_accuracy": float(theirs["accuracy"]) if theirs else None,
            }
        )
    return rows


def gain_rows(trace_name: str, wf, policies: tuple[str, ...] = ("FCFS", "SPF")) -> list[dict]:
    from rush.core.config import CoreConfig
    from rush.simulator.engine import simulate
    from rush.simulator.metrics import compute_metrics
    from rush.studies.runtime_variants import variant_inputs

    trace, workload = load(trace_name)
    cw = wf.class_walkforward()
    bsld = {}
    for policy in policies:
        for variant in ("base", "classification", "classification-idempotent", "class-clairvoyant"):
            inputs, kwargs, _ = variant_inputs(variant, trace, workload, walkforward=cw)
            result = simulate(workload, CoreConfig.from_names(policy, "easy", 200_000, **kwargs), inputs)
            bsld[(policy, variant)] = (
                compute_metrics(result, tau=10.0)["mean_bounded_slowdown"],
                int(result.requeues.sum()),
            )
    base = bsld[("FCFS", "base")][0]
    rows = []
    for policy in policies:
        imp = {v: 100.0 * (base - bsld[(policy, v)][0]) / base for (p, v) in bsld if p == policy}
        for variant in ("classification", "classification-idempotent"):
            bound, own = imp["class-clairvoyant"], imp["base"]
            rows.append(
                {
                    "trace": trace_name,
                    "policy": policy,
                    "variant": variant,
                    "improvement_pct": imp[variant],
                    "base_pct": own,
                    "clairvoyant_pct": bound,
                    "share_of_bound": (imp[variant] - own) / (bound - own) if bound != own else None,
                    "kills": bsld[(policy, variant)][1],
                    "clairvoyant_kills": bsld[(policy, "class-clairvoyant")][1],
                }
            )
    return rows


def estimate_rows(trace_name: str, wf, max_queries: int) -> tuple[list[dict], dict]:
    """Every estimator's error rows."""
    from rush.core.config import CoreConfig
    from rush.core.remaining_runtime import quantile_knots
    from rush.models.runtime_features import USER_RECENT
    from rush.models.runtime_quantiles_features import FEATURES
    from rush.simulator.engine import simulate
    from rush.studies.estimate_accuracy_offline import (
        REMAINING_MEDIAN,
        RULE_EASY,
        easy_plus_plus_ladder,
        easy_plus_plus_prediction,
        error_rows,
        ladder,
        limits_ladder,
        make_queries,
        projection,
        quantile_ladder,
        sweep_estimates,
        sweep_projected,
    )

    trace, workload = load(trace_name)
    result = simulate(workload, CoreConfig.from_names("FCFS", "easy", 200_000))
    req = np.asarray(workload.requested_time, dtype=np.float64)
    last = wf.features[:, FEATURES.index(USER_RECENT[0])]
    last2 = wf.features[:, FEATURES.index(USER_RECENT[1])]
    upper = wf.quantiles[:, wf.levels > 0.5]
    real = ladder(np.minimum(np.asarray(workload.runtime, dtype=np.float64), req), None, req)
    mean_ladder = ladder(wf.mean(), upper, req)
    conservative = np.stack([limits_ladder(req), mean_ladder, real])
    # quantiles-*: a running job ends at its median runtime given its elapsed time (round 6's
    # H4; the ladder's first rung is the queued job's statistic); easy++ keeps its stepwise correction.
    easy = np.stack(
        [
            limits_ladder(req),
            easy_plus_plus_ladder(easy_plus_plus_prediction(last, last2, req), req),
            quantile_ladder(wf.quantiles, wf.levels, req),
            mean_ladder,
            real,
        ]
    )
    submit = np.asarray(result.submit, dtype=np.float64)
    start, end = np.asarray(result.start, dtype=np.float64), np.asarray(result.end, dtype=np.float64)
    # H8, deployed: the queue's means as the model gives them live (each week's model's bands of
    # the mean, fitted on its training rows' out-of-sample predictions: QuantileWalkForward.
    # calibrated_mean, RuntimeQuantileRegressor.calibrated_mean); running jobs end as in quantiles-mean.
    calibrated = mean_ladder.copy()
    calibrated[:, 0] = wf.calibrated_mean()
    easy = np.concatenate([easy[:4], calibrated[None], easy[4:]])
    conditional = np.array([0, 0, REMAINING_MEDIAN, REMAINING_MEDIAN, REMAINING_MEDIAN, 0])
    knots = quantile_knots(np.log1p(wf.quantiles), wf.levels, np.log1p(req))
    queries, step = make_queries(submit, start, max_queries)
    t0 = time.perf_counter()
    state = (
        queries.time,
        queries.job,
        submit,
        np.where(start >= 0, start, np.inf),
        np.where(start >= 0, end, np.inf),
        np.asarray(workload.procs, dtype=np.int64),
    )
    machine = int(workload.machine_procs)
    estimates = np.concatenate(
        [
            sweep_estimates(*state, np.ascontiguousarray(conservative), machine),
            sweep_projected(
                state[0],
                state[1],
                (*state[2:], machine),
                np.ascontiguousarray(easy),
                projection(RULE_EASY, req, conditional, knots),
            ),
        ]
    )
    info = {
        "trace": trace_name,
        "sample_step": step,
        "queries": len(queries.job),
        "seconds": time.perf_counter() - t0,
    }
    return error_rows(trace_name, list(ESTIMATORS), estimates, queries, submit, start), info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=trace_specs, default=",".join(TRACES))
    parser.add_argument("--max-queries", type=count(1), default=MAX_QUERIES)
    parser.add_argument(
        "--skip-gain",
        action="store_true",
        help="no scheduling simulations (the part on disk keeps its gain rows if of the same model)",
    )
    parser.add_argument(
        "--max-train-jobs",
        type=count(1),
        default=10_000,
        help="weekly refit on the N most recently finished jobs",
    )
    # The predictor's default model (one default: RuntimeQuantileRegressor's own).
    from rush.models.runtime_quantiles import RuntimeQuantileRegressor

    model = RuntimeQuantileRegressor()
    parser.add_argument(
        "--max-iter", type=count(1), default=model.max_iter, help="boosting iterations per quantile model"
    )
    parser.add_argument(
        "--learning-rate", type=positive_number, default=model.learning_rate, help="of each quantile model"
    )
    # scikit-learn's least: a tree of one leaf does not split
    parser.add_argument(
        "--max-leaf-nodes", type=count(2), default=model.max_leaf_nodes, help="leaves per tree"
    )
    parser.add_argument(
        "--jobs", type=count(1), default=1, help="weeks fitted at once (the result is the same)"
    )
    from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET, FEATURE_SETS

    parser.add_argument(
        "--feature-set",
        default=DEFAULT_FEATURE_SET,
        choices=sorted(FEATURE_SETS),
        help="the predictor's columns; a set other than base writes to results/feature_set_<set>/",
    )
    args = parser.parse_args()
    global OUT
    OUT = results_dir(args.feature_set)
    traces = list(args.traces)
    OUT.mkdir(parents=True, exist_ok=True)
    from rush.studies.plots.runtime_quantiles import plot_estimate_errors, plot_predicted_vs_real

    parts = OUT / "parts"
    parts.mkdir(exist_ok=True)
    for trace in traces:
        started = time.time()
        wf = cached_walkforward(
            trace,
            args.max_train_jobs,
            args.max_iter,
            args.jobs,
            args.learning_rate,
            args.max_leaf_nodes,
            args.feature_set,
        )
        part: dict = {
            "trace": trace,
            "model": {
                "max_train_jobs": args.max_train_jobs,
                "max_iter": args.max_iter,
                "learning_rate": args.learning_rate,
                "max_leaf_nodes": args.max_leaf_nodes,
                "feature_set": args.feature_set,
            },
            "predictor": [predictor_row(trace, wf)],
            "classes": class_rows(trace, wf),
        }
        print(trace, part, flush=True)
        plot_predicted_vs_real(trace, wf, OUT)
        part["estimates"], part["estimate_run"] = estimate_rows(trace, wf, args.max_queries)
        plot_estimate_errors(trace, part["estimates"], OUT)
        print(trace, part["estimate_run"], flush=True)
        kept = kept_gain(parts / f"{trace}.json", part["model"]) if args.skip_gain else None
        (parts / f"{trace}.json").write_text(json.dumps(part, indent=1))
        if kept is not None:
            part["gain"], part["gain_kept_from"] = kept
        elif not args.skip_gain:
            part["gain"] = gain_rows(trace, wf)
            print(trace, part["gain"], flush=True)
        part["seconds"] = time.time() - started
        part["command"] = (
            f"python sim/runtime_predictions/estimates/run.py --traces {trace} "
            f"--max-train-jobs {args.max_train_jobs} --max-iter {args.max_iter} --learning-rate {args.learning_rate} "
            f"--max-leaf-nodes {args.max_leaf_nodes} --feature-set {args.feature_set}"
            + (" --skip-gain" if args.skip_gain else "")
        )
        (parts / f"{trace}.json").write_text(json.dumps(part, indent=1))
        merge()


def kept_gain(path: Path, model: dict) -> tuple[list[dict], str] | None:
    """The gain rows of the part already on disk when it is of the same model: the scheduling
    simulations read only the walk-forward's classes, not the start-estimate rules, so a rerun of
    the estimates (``--skip-gain``) keeps them, saying from which run they are."""
    if not path.exists():
        return None
    old = json.loads(path.read_text())
    if old.get("model") != model or not old.get("gain"):
        return None
    return old["gain"], old.get("gain_kept_from") or old.get("command", "an earlier run")


def results_dir(feature_set: str) -> Path:
    """``results/`` holds the base set's tables (rounds 2-5), another set's its own folder."""
    return OUT if feature_set == "base" else OUT / f"feature_set_{feature_set}"


def merge() -> None:
    """The tables of every trace measured so far (``results/parts/<trace>.json``)."""
    parts = [json.loads(p.read_text()) for p in sorted((OUT / "parts").glob("*.json"))]
    order = {t: k for k, t in enumerate(TRACES)}
    parts.sort(key=lambda p: order.get(p["trace"], len(order)))
    for name in ("predictor", "classes", "gain", "estimates"):
        rows = [row for p in parts for row in p.get(name, [])]
        if rows:
            write_table(OUT, name, rows, missing="")


if __name__ == "__main__":
    main()
