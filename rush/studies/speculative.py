"""The speculative-reservation studies, as sweep tasks (``task(cell, resources) -> rows``).

1. **Estimators vs the full-knowledge optimum** (Gainaru & Pallez, ScalA 2019): for a law D,
   n samples drawn from D, each estimator's strategy is costed *under D* and divided by the
   cost of the optimal strategy for D (:func:`ratio_task`). One cell is a block of repetitions
   of one (law, n); repetition r draws its samples from ``default_rng([seed, law, n, r])``.
2. **Trace replay** (:func:`trace_task`): each job's reservation sequence comes from the
   previous runs of its application (:func:`reservation_inputs`), the simulator carries the
   kills and requeues out, and the metrics are reported against the plain walltime.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rush.models.speculative.distributions import DISTRIBUTIONS, distribution
from rush.models.speculative.job_sequence import (
    HISTORY,
    MIN_HISTORY,
    SLURM_GRANULARITY,
    PastRun,
    job_sequence,
    past_run,
    swf_state,
)
from rush.models.speculative.strategy import (
    CostModel,
    Strategy,
    estimate_strategy,
    expected_cost,
    optimal_continuous,
)

STUDY_ESTIMATORS = ("discrete", "continuous", "mean-doubling", "upper-bound")
TRACE_ESTIMATORS = ("walltime", "mean-doubling", "discrete", "continuous")


@functools.lru_cache(maxsize=64)
def optimum(name: str, alpha: float, beta: float, gamma: float) -> tuple[Strategy, float]:
    """The full-knowledge optimum of a law and its expected cost (computed once per process)."""
    law = distribution(name)
    cost = CostModel(alpha, beta, gamma)
    best = optimal_continuous(law, cost)
    return best, expected_cost(best.reservations, law, cost)


def _rng(seed: int, name: str, n: int, repetition: int) -> np.random.Generator:
    index = DISTRIBUTIONS.index(name) if name in DISTRIBUTIONS else 999
    return np.random.default_rng([int(seed), index, int(n), int(repetition)])


def ratio_task(cell: dict, resources=None) -> list[dict]:
    """Rows (repetition, estimator, cost, optimal_cost, ratio, reservations) for one cell.

    cell: distribution, n, rep_start, rep_stop, seed, alpha, beta, gamma.
    """
    name = cell["distribution"]
    n = int(cell["n"])
    cost = CostModel(
        float(cell.get("alpha", 1.0)), float(cell.get("beta", 0.0)), float(cell.get("gamma", 0.0))
    )
    law = distribution(name)
    _, best = optimum(name, cost.alpha, cost.beta, cost.gamma)
    rows = []
    for rep in range(int(cell["rep_start"]), int(cell["rep_stop"])):
        samples = law.sample(_rng(cell["seed"], name, n, rep), n)
        for estimator in STUDY_ESTIMATORS:
            strategy = estimate_strategy(estimator, samples, law.upper, cost)
            value = expected_cost(strategy.reservations, law, cost)
            rows.append(
                {
                    "repetition": rep,
                    "estimator": estimator,
                    "cost": value,
                    "optimal_cost": best,
                    "ratio": value / best,
                    "reservations": len(strategy),
                }
            )
    return rows


def ratio_cells(
    distributions: list[str], samples: list[int], repetitions: int, seed: int, block: int = 25
) -> list[dict]:
    """Cells of the ratio study: repetitions in blocks of ``block`` per (law, n)."""
    cells = []
    for name in distributions:
        for n in samples:
            for lo in range(0, repetitions, block):
                cells.append(
                    {
                        "distribution": name,
                        "n": n,
                        "rep_start": lo,
                        "rep_stop": min(lo + block, repetitions),
                        "seed": seed,
                        "alpha": 1.0,
                        "beta": 0.0,
                        "gamma": 0.0,
                    }
                )
    return cells


def summarise_ratios(rows: list[dict]) -> list[dict]:
    """Per (distribution, n, estimator): mean, median and 90th percentile ratio, share within 5 %."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        if "ratio" in row:
            groups[(row["distribution"], int(row["n"]), row["estimator"])].append(float(row["ratio"]))
    out = []
    for (name, n, estimator), ratios in sorted(
        groups.items(), key=lambda kv: (DISTRIBUTIONS.index(kv[0][0]), kv[0][1], kv[0][2])
    ):
        r = np.asarray(ratios)
        out.append(
            {
                "distribution": name,
                "n": n,
                "estimator": estimator,
                "repetitions": len(r),
                "mean_ratio": float(r.mean()),
                "median_ratio": float(np.median(r)),
                "p90_ratio": float(np.quantile(r, 0.9)),
                "within_5pct": float(np.mean(r <= 1.05)),
            }
        )
    return out


# --- trace replay ------------------------------------------------------------------------


def application_keys(workload) -> tuple[np.ndarray, str]:
    """One key per job: (user, executable) from SWF field 14, else (user, requested time)."""
    app = workload.extra.get("app")
    if app is not None and len(app) and np.mean(app >= 0) > 0.5:
        pairs = np.stack((workload.user, np.asarray(app, dtype=np.int64)), axis=1)
        how = "(user, executable): SWF field 14"
    else:
        pairs = np.stack((workload.user, np.rint(workload.requested_time).astype(np.int64)), axis=1)
        how = "(user, requested time): the trace has no executable field (SWF field 14)"
    _, keys = np.unique(pairs, axis=0, return_inverse=True)
    return keys.ravel(), how


def past_runs(workload) -> list[PastRun | None]:
    """Each trace job's run as a sample (:mod:`rush.models.speculative.job_sequence`'s rules).

    SWF has no TIMEOUT state: a "failed" run (status 0) that reached its walltime is one.
    """
    n = len(workload)
    status = workload.extra.get("status")
    status = np.asarray(status, dtype=np.int64) if status is not None else np.full(n, -1)
    return [
        past_run(
            swf_state(int(status[j]), float(workload.runtime[j]), float(workload.requested_time[j])),
            float(workload.runtime[j]),
        )
        for j in range(n)
    ]


def reservation_inputs(
    workload,
    estimator: str,
    history: int = HISTORY,
    min_history: int = MIN_HISTORY,
    cost: CostModel = CostModel(),
    granularity: float = SLURM_GRANULARITY,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Per-job sequences (padded (n, K) array, counts) from each application's previous runs.

    A job's samples are its application's last ``history`` runs that had *ended* (submit +
    wait + runtime in the trace) by its submit time and are samples by the rules of
    :func:`rush.models.speculative.job_sequence.job_sequence` (which also builds, rounds and
    refuses the sequence: the daemon calls it too). Identical (samples, walltime) pairs share
    one computation.
    """
    n = len(workload)
    keys, how = application_keys(workload)
    wait = workload.extra.get("wait")
    wait = np.where(np.asarray(wait) >= 0, wait, 0.0) if wait is not None else np.zeros(n)
    ended = workload.submit + wait + workload.runtime
    runs = past_runs(workload)
    by_app: dict[int, list[int]] = defaultdict(list)
    for j in np.argsort(ended, kind="stable"):
        if runs[j] is not None:
            by_app[int(keys[j])].append(int(j))
    app_end = {k: ended[np.asarray(v)] for k, v in by_app.items()}
    seqs: list[tuple[float, ...]] = [()] * n
    cache: dict[tuple, tuple[float, ...]] = {}
    opted = censored = 0
    if estimator != "walltime":
        for j in range(n):
            app = by_app.get(int(keys[j]))
            upper = float(workload.requested_time[j])
            if not app or not upper > 0:
                continue
            stop = int(np.searchsorted(app_end[int(keys[j])], workload.submit[j], side="right"))
            window = tuple(runs[i] for i in app[max(0, stop - history) : stop])
            key = (window, upper)
            if key not in cache:
                cache[key] = job_sequence(
                    window, upper, estimator, granularity, cost, min_history
                ).reservations
            seqs[j] = cache[key]
            if seqs[j]:
                opted += 1
                censored += any(r.censored and r.length < upper for r in window)
    width = max(1, max((len(s) for s in seqs), default=1))
    arr = np.zeros((n, width))
    counts = np.zeros(n, dtype=np.int64)
    for j, s in enumerate(seqs):
        if s:
            arr[j, : len(s)] = s
            counts[j] = len(s)
    info = {
        "application_key": how,
        "opted_in": opted,
        "opted_in_with_censored": censored,
        "strategies_computed": sum(1 for v in cache.values() if v),
    }
    return arr, counts, info


def load_slice(trace: str, jobs: int):
    """The first ``jobs`` jobs of a trace as a workload (loaded once per worker)."""
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    w = workload_from_trace(load_trace(trace))
    return w.subset(np.arange(min(jobs, len(w))))


def trace_task(cell: dict, resources=None) -> dict:
    """Simulate a trace slice with one estimator's sequences (FCFS + EASY); metrics of the run.

    cell: trace, jobs, estimator, history; optional min_history, granularity (the rules'
    defaults) and ``every_run_observed`` (the study's rule before the one rule set: every run
    a sample at its length, nothing censored; kept to measure what the rules changed).
    ``resources["workload"]`` (when given) is the slice.
    """
    from rush.core.config import CoreConfig
    from rush.simulator.engine import SimInputs, simulate
    from rush.simulator.metrics import bounded_slowdown, compute_metrics

    if resources is not None and "workload" in resources:
        workload = resources["workload"]
    else:
        workload = load_slice(cell["trace"], int(cell["jobs"]))
    granularity = float(cell.get("granularity", SLURM_GRANULARITY))
    min_history = int(cell.get("min_history", MIN_HISTORY))
    runs = workload
    if cell.get("every_run_observed"):
        # SWF status 1 on every run: each one "completed" at its length (clipped at the walltime).
        runs = replace(workload, extra={**workload.extra, "status": np.ones(len(workload), dtype=np.int64)})
    seq, counts, info = reservation_inputs(
        runs, cell["estimator"], int(cell["history"]), min_history, granularity=granularity
    )
    config = CoreConfig.from_names(policy="FCFS", backfill="easy")
    result = simulate(workload, config, SimInputs(reservations=seq, reservation_counts=counts))
    m = compute_metrics(result)
    bsld = bounded_slowdown(result)
    useful = float(np.sum((result.end - result.start) * result.procs))
    wasted = float(result.wasted_area.sum())
    span = float(result.end.max() - result.submit.min())
    capacity = workload.machine_procs * span if span > 0 else math.nan
    opted = counts > 0
    return {
        "mean_bsld": m["mean_bounded_slowdown"],
        "mean_bsld_opted_in": float(bsld[opted].mean()) if opted.any() else math.nan,
        "mean_wait": m["mean_wait"],
        "utilization": m["utilization"],
        "occupied_utilization": (useful + wasted) / capacity,
        "wasted_fraction": wasted / (useful + wasted) if useful + wasted > 0 else 0.0,
        "reservation_kills": int(result.attributes["reservation_kills"].sum()),
        "final_kills": int(result.killed.sum()),
        "opted_in": info["opted_in"],
        "opted_in_with_censored": info["opted_in_with_censored"],
        "strategies_computed": info["strategies_computed"],
        "application_key": info["application_key"],
        "makespan": span,
    }


# --- the whole study: sweeps, tables, plots ---------------------------------------------

SAMPLE_SIZES = (5, 10, 20, 50, 100, 1000)
MAX_SAMPLES = 100_000  # the discrete programme bins beyond MAX_SUPPORT values; this bounds sampling
MAX_REPETITIONS = 10_000


def check_args(
    distributions: list[str], samples: list[int], repetitions: int, seed: int, history: int, trace_jobs: int
) -> None:
    """Refuse bad study arguments before any work (the CLI exits 2)."""
    from rush.errors import ConfigError

    if not distributions:
        raise ConfigError(
            "no distribution given", where="--distributions", fix=f"e.g. {','.join(DISTRIBUTIONS[:2])}"
        )
    for name in distributions:
        if name not in DISTRIBUTIONS:
            raise ConfigError(
                f"unknown distribution {name!r}",
                where="--distributions",
                fix=f"choose among {', '.join(DISTRIBUTIONS)}",
            )
    if not samples:
        raise ConfigError("no sample size given", where="--samples", fix="e.g. --samples 5,10,20,50,100,1000")
    for n in samples:
        if not 0 <= n <= MAX_SAMPLES:
            raise ConfigError(f"sample size {n} outside [0, {MAX_SAMPLES}]", where="--samples")
    if not 1 <= repetitions <= MAX_REPETITIONS:
        raise ConfigError(f"{repetitions} repetitions outside [1, {MAX_REPETITIONS}]", where="--repetitions")
    if seed < 0:
        raise ConfigError(f"seed {seed} is negative", where="--seed", fix="give an integer >= 0")
    if not 1 <= history <= 1000:
        raise ConfigError(f"history {history} outside [1, 1000]", where="--history")
    if not 10 <= trace_jobs <= 1_000_000:
        raise ConfigError(f"{trace_jobs} trace jobs outside [10, 1000000]", where="--trace-jobs")


def parse_list(text: str, where: str, kind: type = str) -> list:
    from rush.errors import ConfigError

    items = [t.strip() for t in text.split(",") if t.strip()]
    if kind is int:
        out = []
        for t in items:
            if not (t.isascii() and t.lstrip("-").isdigit() and len(t) <= 9):
                raise ConfigError(f"{t!r} is not an integer", where=where, fix="e.g. 5,10,20")
            out.append(int(t))
        return list(dict.fromkeys(out))
    return list(dict.fromkeys(t.lower() for t in items))


def _write_csv(path, rows: list[dict]) -> None:
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


@dataclass(frozen=True)
class SpeculativeStudy:
    """What one run of the study covers (``rush experiment speculative``'s flags)."""

    out: Path
    distributions: list[str]
    samples: list[int]
    repetitions: int
    seed: int
    trace: str | None  # None: no trace replay
    trace_jobs: int = 5000
    history: int = HISTORY
    cluster: str = "serial"
    progress: bool = False


def run_study(study: SpeculativeStudy) -> dict:
    """Both parts of the study on rush.studies.sweep; tables under ``out/results``, plots under ``out/plots``."""
    import json

    from rush.studies.sweep import SweepOptions, run_sweep

    out = Path(study.out)
    distributions, samples, repetitions, seed = (
        study.distributions,
        study.samples,
        study.repetitions,
        study.seed,
    )
    trace, trace_jobs, history = study.trace, study.trace_jobs, study.history
    cluster, progress = study.cluster, study.progress
    results, plots = out / "results", out / "plots"
    cells = ratio_cells(distributions, samples, repetitions, seed)
    rows = run_sweep(
        ratio_task, cells, SweepOptions(out=out / "sweep-ratios", cluster=cluster, progress=progress)
    )
    failures = [r for r in rows if r.get("error_type")]
    ratios = [r for r in rows if "ratio" in r]
    summary_rows = summarise_ratios(ratios)
    _write_csv(results / "ratios.csv", [{k: r[k] for k in _RATIO_COLUMNS} for r in ratios])
    _write_csv(results / "ratios_summary.csv", summary_rows)
    optima = {}
    for name in distributions:
        best, value = optimum(name, 1.0, 0.0, 0.0)
        law = distribution(name)
        optima[name] = {
            "support": [law.lower, law.upper],
            "optimal_cost": value,
            "reservations": list(best.reservations),
            "how": best.note,
        }
    trace_rows: list[dict] = []
    trace_info = None
    if trace:
        import functools

        tcells = [
            {"trace": trace, "jobs": trace_jobs, "estimator": e, "history": history} for e in TRACE_ESTIMATORS
        ]
        loader = functools.partial(load_slice, trace, trace_jobs)
        trows = run_sweep(
            trace_task,
            tcells,
            SweepOptions(
                out=out / "sweep-trace", cluster=cluster, progress=progress, resources={"workload": loader}
            ),
        )
        failures += [r for r in trows if r.get("error_type")]
        trace_rows = [
            {k: r[k] for k in ("trace", "jobs", "estimator", "history", *_TRACE_COLUMNS) if k in r}
            for r in trows
            if "mean_bsld" in r
        ]
        _write_csv(results / "trace.csv", trace_rows)
        trace_info = {
            "trace": trace,
            "jobs": trace_jobs,
            "history": history,
            "min_history": MIN_HISTORY,
            "granularity": SLURM_GRANULARITY,
            "policy": "FCFS+EASY",
        }
    summary = {
        "protocol": {
            "cost": {"alpha": 1.0, "beta": 0.0, "gamma": 0.0},
            "distributions": distributions,
            "samples": samples,
            "repetitions": repetitions,
            "seed": seed,
            "truncation_quantile": 0.999,
            "trace": trace_info,
        },
        "optima": optima,
        "ratios": summary_rows,
        "trace": trace_rows,
        "failures": [{k: r.get(k) for k in ("key", "error_type", "error")} for r in failures[:20]],
    }
    results.mkdir(parents=True, exist_ok=True)
    (results / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    from rush.studies.plots.speculative import plot_study

    plot_study(summary, plots)
    summary["out"] = str(out)
    return summary


_RATIO_COLUMNS = (
    "distribution",
    "n",
    "repetition",
    "estimator",
    "cost",
    "optimal_cost",
    "ratio",
    "reservations",
)
_TRACE_COLUMNS = (
    "mean_bsld",
    "mean_bsld_opted_in",
    "mean_wait",
    "utilization",
    "occupied_utilization",
    "wasted_fraction",
    "reservation_kills",
    "final_kills",
    "opted_in",
    "opted_in_with_censored",
    "strategies_computed",
    "application_key",
    "makespan",
)
