"""The regression-obtained heuristics study (Rosa et al. JSSPP'23; SC'17), run by ``rush experiment regression``.

Scores (S, Q) pairs by trials (:func:`score_cell`, a sweep task), fits the Lin/Qdr/Cub/Qua
templates by weighted least squares (coefficients, VIF, sign flips between two halves of the
pairs), writes each as a LEARNED heuristic file and evaluates them as policies against FCFS, SPF,
SAF and F1-F4 on Lublin runs and weeks of real traces, with and without EASY
(:mod:`rush.studies.regression`). Scoring and evaluation run on Dask through
:func:`rush.studies.sweep.run_sweep`.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

from rush.errors import ConfigError


def score_cell(cell: dict, resources: object) -> list[dict]:
    """Sweep task: one pair's 32 rows (features, score, its standard error)."""
    from rush.studies.regression_data import pair_jobs, score_pair

    seed = int(cell["pair_seed"])
    submit, procs, runtime = pair_jobs(seed, float(cell.get("q_spread", 1.0)))
    scores = score_pair(submit, procs, runtime, int(cell["trials"]), seed=seed)
    if scores is None:
        return [{"flat": 1}]
    span = float(scores.raw.max() - scores.raw.min())
    return [
        {
            "flat": 0,
            "p": float(scores.p[k]),
            "q": float(scores.q[k]),
            "r": float(scores.r[k]),
            "score": float(scores.score[k]),
            "stderr": float(scores.stderr[k] / span),
            "raw_mean_bsld": float(scores.raw[k]),
            "trials_per_job": scores.trials_per_job,
        }
        for k in range(len(scores.p))
    ]


def _write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _sign_flips(fits_a, fits_b) -> dict[str, int]:
    import numpy as np

    return {
        name: int(np.sum(np.sign(fits_a[name].coefficients[1:]) != np.sign(fits_b[name].coefficients[1:])))
        for name in fits_a
    }


def _options(out: Path | None, name: str, cluster: str, workers: int | None, resources=None):
    from rush.studies.sweep import SweepOptions

    return SweepOptions(
        out=None if out is None else out / "sweeps" / name,
        cluster=cluster,
        workers=workers,
        progress=False,
        resources=resources or {},
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class RegressionStudy:
    """What one run of the study covers (``rush experiment regression``'s flags)."""

    pairs: int  # (S, Q) pairs scored
    trials: int  # random orders per Q job put first
    seed: int
    q_spread: float
    runs: int  # Lublin evaluation runs
    jobs: int  # jobs per Lublin run
    trace_names: list[str]  # traces evaluated week by week
    weeks: int
    spread_pairs: int  # pairs of the score-spread-vs-trials part
    spread_repeats: int
    out: Path | None  # None: nothing written but the heuristics (in a temporary directory)
    cluster: str
    workers: int | None


def run_study(study: RegressionStudy) -> dict:
    import functools
    import tempfile

    import numpy as np

    from rush.models.policies.regression import TEMPLATES, fit_template, row_weights
    from rush.studies.regression import BASELINES, evaluate_cell, summarise, trace_resource, trace_weeks
    from rush.studies.regression_data import MAX_PAIRS, Q_SIZE, score_spread
    from rush.studies.sweep import run_sweep
    from rush.studies.sweep.simulation import load_sliced
    from rush.workload.catalogue import resolve_trace

    pairs, trials, seed, q_spread = study.pairs, study.trials, study.seed, study.q_spread
    runs, jobs, trace_names, weeks = study.runs, study.jobs, study.trace_names, study.weeks
    spread_pairs, spread_repeats = study.spread_pairs, study.spread_repeats
    out, cluster, workers = study.out, study.cluster, study.workers
    for spec in trace_names:  # a missing trace is an error before any work
        resolve_trace(spec)
    messages: list[str] = []

    # 1. Score the pairs (one sweep cell per pair).
    cells = [{"pair_seed": seed * MAX_PAIRS + k, "trials": trials} for k in range(pairs)]
    if q_spread != 1.0:  # the default keeps the cells' keys (and resumable sweeps) of earlier runs
        cells = [dict(c, q_spread=q_spread) for c in cells]
    scored = run_sweep(score_cell, cells, _options(out, "training", cluster, workers))
    failed = [r for r in scored if r.get("error_type")]
    if failed:
        raise ConfigError(f"{len(failed)} pair(s) failed: {failed[0].get('error')}", where="scoring sweep")
    rows = [r for r in scored if r.get("flat") == 0]
    flat = sum(1 for r in scored if r.get("flat") == 1)
    if len(rows) < 2 * Q_SIZE:
        raise ConfigError(
            f"only {len(rows) // Q_SIZE} informative pair(s) of {pairs}", where="--pairs", fix="more pairs"
        )
    col = {k: np.array([float(r[k]) for r in rows]) for k in ("p", "q", "r", "score", "stderr")}
    pair = np.array([int(r["pair_seed"]) for r in rows])
    weights = row_weights(col["stderr"])

    # 2. Fit the templates on all pairs, and on two halves for the sign stability.
    fits = {t: fit_template(t, col["p"], col["q"], col["r"], col["score"], weights) for t in TEMPLATES}
    halves = []
    for parity in (0, 1):
        m = pair % 2 == parity
        halves.append(
            {
                t: fit_template(
                    t, col["p"][m], col["q"][m], col["r"][m], col["score"][m], weights[m], fits[t].scale
                )
                for t in TEMPLATES
            }
        )
    flips = _sign_flips(*halves)
    for f in fits.values():
        messages += f.messages
    heuristic_dir = Path(tempfile.mkdtemp(prefix="rush-heuristics-")) if out is None else out / "heuristics"
    heuristic_dir.mkdir(parents=True, exist_ok=True)
    policies = [[b, b] for b in BASELINES]
    for name, f in fits.items():
        path = heuristic_dir / f"{name}.json"
        info = {
            "study": "rush experiment regression",
            "pairs": pairs,
            "pairs_flat": flat,
            "trials": trials,
            "seed": seed,
            "q_spread": q_spread,
            "r2": f.r2,
            "vif": [None if not math.isfinite(v) else v for v in f.vif.tolist()],
        }
        path.write_text(json.dumps(f.heuristic(info).to_json(), indent=1, allow_nan=False) + "\n")
        policies.append([name, f"LEARNED:{path}"])

    # 3. Score spread against the number of trials.
    counts = sorted({c for c in (320, 1280, 5120, 20480, 81920, 256000) if c <= trials} | {trials})
    spread = []
    for k in range(spread_pairs):
        for item in score_spread(seed * MAX_PAIRS + k, counts, spread_repeats, q_spread):
            spread.append({"pair_seed": seed * MAX_PAIRS + k, **item})

    # 4. Evaluate every heuristic as a policy (one sweep cell per workload).
    eval_cells: list[dict] = [
        {"source": "lublin", "run": k, "jobs": jobs, "policies": policies} for k in range(runs)
    ]
    resources = {}
    for spec in trace_names:
        resources[trace_resource(spec)] = functools.partial(load_sliced, spec)
        eval_cells += [{"source": spec, "week": w, "policies": policies} for w in trace_weeks(spec, weeks)]
    evaluated = run_sweep(evaluate_cell, eval_cells, _options(out, "evaluation", cluster, workers, resources))
    eval_failed = [r for r in evaluated if r.get("error_type")]
    if eval_failed:
        messages.append(f"{len(eval_failed)} evaluation cell(s) failed, e.g. {eval_failed[0].get('error')}")
    eval_rows = [
        {k: v for k, v in r.items() if k not in ("policies", "key", "part", "parts")}
        for r in evaluated
        if not r.get("error_type")
    ]
    summary = summarise(eval_rows)

    coefficients = [
        {
            **row,
            "sign_half_a": int(np.sign(halves[0][t].coefficients[i])),
            "sign_half_b": int(np.sign(halves[1][t].coefficients[i])),
        }
        for t, f in fits.items()
        for i, row in enumerate(f.table())
    ]
    fit_rows = [
        {
            "template": t,
            "terms": len(f.terms) - 1,
            "r2": f.r2,
            "rank": f.rank,
            "singular": f.singular,
            "max_vif": "inf" if np.any(np.isinf(f.vif[1:])) else float(np.nanmax(f.vif[1:])),
            "terms_vif_over_5": int(np.sum(f.vif[1:] > 5)),
            "sign_flips_between_halves": flips[t],
        }
        for t, f in fits.items()
    ]
    result = {
        "settings": {
            "pairs": pairs,
            "trials": trials,
            "trials_per_job": int(rows[0]["trials_per_job"]),
            "seed": seed,
            "q_spread": q_spread,
            "runs": runs,
            "jobs": jobs,
            "traces": trace_names,
            "weeks": weeks,
            "cluster": cluster,
        },
        "pairs_flat": flat,
        "rows": len(rows),
        "fits": fit_rows,
        "coefficients": coefficients,
        "spread": spread,
        "summary": [{k: (_finite(v) if isinstance(v, float) else v) for k, v in s.items()} for s in summary],
        "heuristics": {name: str(heuristic_dir / f"{name}.json") for name in fits},
        "messages": messages,
    }
    if out is not None:
        results = out / "results"
        _write_csv(
            results / "training.csv",
            [
                {k: r[k] for k in ("pair_seed", "p", "q", "r", "score", "stderr", "raw_mean_bsld")}
                for r in rows
            ],
        )
        _write_csv(results / "coefficients.csv", coefficients)
        _write_csv(results / "fits.csv", fit_rows)
        if spread:
            _write_csv(results / "spread.csv", spread)
        _write_csv(results / "evaluation.csv", eval_rows)
        _write_csv(results / "summary.csv", summary)
        (results / "summary.json").write_text(
            json.dumps(result, indent=1, sort_keys=True, allow_nan=False) + "\n"
        )
        from rush.studies.plots.regression import plot_study

        plot_study(out / "plots", result, fits)
    return result
