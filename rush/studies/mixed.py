"""The mixed-policy study: per-week optima by grid, CMA-ES and XNES, their transfer, the pure ranking.

Per trace (weeks of :mod:`rush.models.policies.mixed`, split in half: the first half of the weeks with
jobs is the *training* half, the rest the *test* half):

* the 12 index policies on every week (the best pure policy of each week, SAF, FCFS);
* ``grid``: every point of the simplex over (q, p, wait) with step ``1/grid_steps``; w* of a
  week is its best point (ties: the first point, vertices first);
* ``cmaes3`` / ``cmaes6``: CMA-ES (package ``cma``) per week over 3 or 6 features. CMA-ES
  searches an unconstrained vector z; the policy is w = z / ||z||_1, **signs free** (a
  negative weight reverses a feature: -e_q is LQF), so the search space is the whole L1
  sphere, whose vertices are the 12 index policies for 6 features. The start is the centroid
  of the positive simplex (w_i = 1/d), evaluated first; w* is the best vector evaluated, so
  CMA-ES is never worse than its start. Each generation's population, for every week at once,
  is one batch of sweep cells;
* ``xnes3`` / ``xnes6``: XNES (``pypop7``, :mod:`rush.models.policies.mixed_xnes`) over the same z, w,
  start and budget (the CMA-ES runs' generations x population candidates after the start);
  pypop7 evaluates candidates one by one, so each week's whole run is one sweep cell;
* ``w*_train``: one vector minimising the mean over the training weeks of the weekly mean
  bsld (grid: the best point; CMA-ES, XNES: one more run on that objective), used on the test weeks;
* ``w_greedy``: week k uses w* of the previous week with jobs.

Simulations run through :func:`rush.studies.sweep.run_sweep` (a LocalCluster by default, one trace
load per worker); identical cells in a batch are simulated once.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rush.errors import RushError
from rush.models.policies.mixed import (
    FEATURES_3,
    FEATURES_6,
    INDEX_POLICIES,
    MIXED,
    THRESHOLD,
    normalise,
    simplex_grid,
)
from rush.models.policies.mixed_xnes import popsize
from rush.studies.mixed_weeks import TraceWeeks, load_trace_weeks, task, trace_loader

METHODS: tuple[str, ...] = ("grid", "cmaes3", "cmaes6", "xnes3", "xnes6")
METHOD_FEATURES: dict[str, tuple[str, ...]] = {
    "grid": FEATURES_3,
    "cmaes3": FEATURES_3,
    "cmaes6": FEATURES_6,
    "xnes3": FEATURES_3,
    "xnes6": FEATURES_6,
}


@dataclass
class StudyConfig:
    traces: list[str]
    weeks: int | None = None  # the first N weeks of each trace; None: all
    methods: tuple[str, ...] = METHODS
    seed: int = 0
    grid_steps: int = 10
    cma_generations: int = 15
    cma_popsize: int | None = None  # None: cma's default 4 + 3 ln d
    threshold: float | None = THRESHOLD
    tau: float = 10.0
    procs: int | None = None
    cluster: Any = "local"
    workers: int | None = None
    sweep_dir: Path | None = None  # the sweep's resumable table (None: in memory)
    progress: bool = False  # the sweep's progress bars
    log: Callable[[str], None] | None = None  # one line per finished phase (the CLI: stderr)


@dataclass
class Evaluator:
    """Runs batches of cells on one cluster, opened once for the whole study."""

    config: StudyConfig
    resources: dict[str, Any] = field(default_factory=dict)
    cells_computed: int = 0  # sweep cells simulated (not read back from a resumed table)
    _cluster: Any = None
    _workers: int = 1

    def run(self, cells: list[dict]) -> list[list[dict]]:
        """Rows of each cell (in cell order); a failed simulation is an error naming it."""
        from rush.studies.sweep import SweepOptions, cell_key, run_sweep

        keys = [cell_key(c) for c in cells]
        unique = list({k: c for k, c in zip(keys, cells, strict=True)}.items())
        # Several tiny cells per Dask task: a weekly simulation takes milliseconds.
        batch = max(1, min(64, len(unique) // (8 * self._workers)))
        options = SweepOptions(
            out=self.config.sweep_dir,
            cluster=self._cluster,
            progress=self.config.progress,
            resources=self.resources,
            batch=batch,
            description={"study": "mixed policies"},
        )
        rows = run_sweep(task, [c for _, c in unique], options)
        self.cells_computed += rows.computed
        by_key: dict[str, list[dict]] = {}
        for row in rows:
            if row.get("error_type"):
                raise RushError(
                    f"a simulation failed: {row['error_type']}: {row.get('error')}",
                    where=f"trace {row.get('trace')}, policy {row.get('policy')}",
                    fix="see the message; --cluster serial runs in this process for a traceback",
                )
            by_key.setdefault(row["key"], []).append(row)
        return [sorted(by_key[k], key=lambda r: r["part"]) for k in keys]


@contextmanager
def evaluator(config: StudyConfig) -> Iterator[Evaluator]:
    """An :class:`Evaluator` whose Dask cluster (if any) lives as long as the ``with`` block."""
    from rush.studies.sweep import SweepOptions
    from rush.studies.sweep.clusters import open_executor

    resources = {spec: trace_loader(spec, config.procs) for spec in config.traces}
    ev = Evaluator(config, resources)
    if config.cluster == "serial" or not isinstance(config.cluster, str):
        ev._cluster = config.cluster
        yield ev
        return
    with open_executor(SweepOptions(cluster=config.cluster, workers=config.workers)) as executor:
        ev._cluster = executor.client
        ev._workers = executor.workers
        yield ev


def _cell(
    trace: str, config: StudyConfig, weeks: Sequence[int], policy: str, features=(), weights=()
) -> dict:
    return {
        "trace": trace,
        "span": "week",
        "weeks": [int(k) for k in weeks],
        "policy": policy,
        "features": ",".join(features),
        "weights": [float(x) for x in weights],
        "threshold": config.threshold,
        "tau": config.tau,
    }


def _values(rows: list[dict]) -> dict[int, float]:
    return {int(r["week"]): float(r["mean_bsld"]) for r in rows if r.get("mean_bsld") is not None}


def _seed(seed: int, *parts: int) -> int:
    # cma treats seed 0 as "from the clock": derive a positive 31-bit seed per (study seed, run).
    state = np.random.SeedSequence([seed, *parts]).generate_state(1)[0]
    return int(state % (2**31 - 2)) + 1


def _cma(x0: np.ndarray, seed: int, config: StudyConfig):
    import cma

    options = {
        "seed": seed,
        "verbose": -9,
        "maxiter": config.cma_generations,
        "tolflatfitness": 10**6,  # a week's bsld is piecewise constant in w: flat steps are normal
    }
    if config.cma_popsize is not None:
        options["popsize"] = config.cma_popsize
    return cma.CMAEvolutionStrategy(x0.tolist(), 1.0 / len(x0), options)


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 1e300


class _Best:
    """Best normalised vector seen so far (the first of equal values)."""

    def __init__(self, w: np.ndarray, value: float) -> None:
        self.w, self.value = w, value

    def offer(self, w: np.ndarray, value: float) -> None:
        if value < self.value:
            self.w, self.value = w, value


def cmaes_per_week(
    ev: Evaluator, trace: str, weeks: list[int], features: tuple[str, ...], seed_parts: tuple[int, ...]
) -> dict[int, _Best]:
    """One CMA-ES per week, all weeks' populations of a generation in one batch."""
    config = ev.config
    d = len(features)
    x0 = np.full(d, 1.0 / d)
    start = _values(ev.run([_cell(trace, config, weeks, MIXED, features, x0)])[0])
    best = {k: _Best(x0, start[k]) for k in weeks}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cma's notes on flat fitness and step sizes
        runs = {k: _cma(x0, _seed(config.seed, d, k, *seed_parts), config) for k in weeks}
        for _ in range(config.cma_generations):
            live = [k for k in weeks if not runs[k].stop()]
            if not live:
                break
            asked = {k: runs[k].ask() for k in live}
            cells, owners = [], []
            for k in live:
                for z in asked[k]:
                    cells.append(_cell(trace, config, [k], MIXED, features, normalise(z)))
                    owners.append(k)
            results = ev.run(cells)
            values: dict[int, list[float]] = {k: [] for k in live}
            for cell, k, rows in zip(cells, owners, results, strict=True):
                value = _values(rows)[k]
                values[k].append(_finite(value))
                best[k].offer(np.asarray(cell["weights"]), value)
            for k in live:
                runs[k].tell(asked[k], values[k])
    return best


def cmaes_train(
    ev: Evaluator, trace: str, train: list[int], features: tuple[str, ...], seed_parts: tuple[int, ...]
) -> _Best:
    """One CMA-ES on the mean, over the training weeks, of the weekly mean bsld."""
    config = ev.config
    d = len(features)
    x0 = np.full(d, 1.0 / d)

    def objective(rows: list[dict]) -> float:
        values = _values(rows)
        return float(np.mean([values[k] for k in train]))

    best = _Best(x0, objective(ev.run([_cell(trace, config, train, MIXED, features, x0)])[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = _cma(x0, _seed(config.seed, d, 2**32 - 1, *seed_parts), config)  # not a week's seed
        for _ in range(config.cma_generations):
            if run.stop():
                break
            asked = run.ask()
            cells = [_cell(trace, config, train, MIXED, features, normalise(z)) for z in asked]
            values = [objective(rows) for rows in ev.run(cells)]
            for cell, value in zip(cells, values, strict=True):
                best.offer(np.asarray(cell["weights"]), value)
            run.tell(asked, [_finite(v) for v in values])
    return best


def _xnes_cell(trace: str, config: StudyConfig, weeks: list[int], features, seed: int) -> dict:
    d = len(features)
    return _cell(trace, config, weeks, MIXED, features, np.full(d, 1.0 / d)) | {
        "optimiser": "xnes",
        "evaluations": config.cma_generations * popsize(d, config.cma_popsize),
        "population": config.cma_popsize,
        "seed": seed,
    }


def xnes_runs(
    ev: Evaluator,
    trace: str,
    active: list[int],
    train: list[int],
    features: tuple[str, ...],
    seed_parts: tuple[int, ...],
):
    """One XNES run per week and one on the training weeks' mean, each a whole sweep cell.

    Budget: the CMA-ES runs' (generations x population candidates after the start).
    """
    from rush.models.policies.mixed_xnes import load_xnes

    load_xnes()  # missing pypop7: one clear error here, before any cell is sent
    config = ev.config
    d = len(features)
    cells = [_xnes_cell(trace, config, [k], features, _seed(config.seed, d, k, *seed_parts)) for k in active]
    if train:
        cells.append(
            _xnes_cell(trace, config, train, features, _seed(config.seed, d, 2**32 - 1, *seed_parts))
        )
    results = ev.run(cells)
    star = {
        k: (np.asarray(rows[0]["w_best"]), float(rows[0]["mean_bsld"]))
        for k, rows in zip(active, results, strict=False)
    }
    if not train:
        return star, None, math.nan
    rows = results[-1]
    return star, np.asarray(rows[0]["w_best"]), float(rows[0]["mean_bsld"])


def _split(active: list[int]) -> tuple[list[int], list[int]]:
    half = len(active) // 2
    return active[:half], active[half:]


def _check_weeks(tw: TraceWeeks, weeks: int | None) -> list[int]:
    """The first ``weeks`` weeks (all of a shorter trace: several traces share one --weeks)."""
    total = len(tw.weeks)
    return list(range(min(weeks, total) if weeks is not None else total))


def study_trace(ev: Evaluator, tw: TraceWeeks, index: int = 0) -> dict:
    """Every method on one trace (module docstring)."""
    config = ev.config
    spec = tw.name
    selected = _check_weeks(tw, config.weeks)
    active = [k for k in selected if tw.jobs(k)]
    skipped = [{"week": k, "reason": "no jobs in this week"} for k in selected if not tw.jobs(k)]
    train, test = _split(active)
    say = config.log or (lambda _: None)
    pure_rows = ev.run([_cell(spec, config, active, name) for name in INDEX_POLICIES])
    say(f"{spec}: 12 index policies on {len(active)} weeks done")
    pure = {name: _values(rows) for name, rows in zip(INDEX_POLICIES, pure_rows, strict=True)}
    weeks: list[dict] = []
    for k in active:
        values = {name: pure[name][k] for name in INDEX_POLICIES}
        best = min(INDEX_POLICIES, key=lambda n: values[n])
        weeks.append(
            {
                "week": k,
                "jobs": tw.jobs(k),
                "split": "train" if k in train else "test",
                "pure": values,
                "best_pure": best,
                "best_pure_bsld": values[best],
                "saf_bsld": values["SAF"],
                "fcfs_bsld": values["FCFS"],
                "methods": {},
            }
        )
    by_week = {w["week"]: w for w in weeks}
    trained: dict[str, dict] = {}
    for method in config.methods:
        # The method's fixed index seeds its runs: the same results whichever methods are chosen.
        m_index = METHODS.index(method)
        features = METHOD_FEATURES[method]
        if method == "grid":
            star, w_train, train_value = _grid(ev, spec, active, train)
        elif method.startswith("xnes"):
            star, w_train, train_value = xnes_runs(ev, spec, active, train, features, (index, m_index))
        else:
            bests = cmaes_per_week(ev, spec, active, features, (index, m_index))
            star = {k: (b.w, b.value) for k, b in bests.items()}
            if train:
                b = cmaes_train(ev, spec, train, features, (index, m_index))
                w_train, train_value = b.w, b.value
            else:
                w_train, train_value = None, math.nan
        # Transfer: w_train on every week (in-sample on the training half), w* of the previous week.
        cells, slots = [], []
        if w_train is not None:
            cells.append(_cell(spec, config, active, MIXED, features, w_train))
            slots.append(("train", None))
        for prev, k in zip(active, active[1:], strict=False):
            cells.append(_cell(spec, config, [k], MIXED, features, star[prev][0]))
            slots.append(("greedy", k))
        transfer = dict.fromkeys(active, math.nan)
        greedy = dict.fromkeys(active, math.nan)
        for (kind, k), rows in zip(slots, ev.run(cells) if cells else [], strict=True):
            if kind == "train":
                transfer |= _values(rows)
            else:
                greedy[k] = _values(rows)[k]
        for k in active:
            by_week[k]["methods"][method] = {
                "w_star": [float(x) for x in star[k][0]],
                "bsld_star": star[k][1],
                "bsld_train": transfer[k],
                "bsld_greedy": greedy[k],
            }
        say(f"{spec}: {method} done ({ev.cells_computed} sweep cells so far)")
        trained[method] = {
            "features": list(features),
            "w_train": None if w_train is None else [float(x) for x in w_train],
            "train_objective": train_value,
        }
    return {
        "trace": spec,
        "weeks_in_trace": len(tw.weeks),
        "weeks_selected": len(selected),
        "train_weeks": train,
        "test_weeks": test,
        "skipped_weeks": skipped,
        "scales": tw.scales.as_dict(),
        "machine_procs": int(tw.workload.machine_procs),
        "weeks": weeks,
        "trained": trained,
        "summary": summarise(weeks, config.methods, trained),
    }


def _grid(ev: Evaluator, spec: str, active: list[int], train: list[int]):
    config = ev.config
    points = simplex_grid(len(FEATURES_3), config.grid_steps)
    rows = ev.run([_cell(spec, config, active, MIXED, FEATURES_3, w) for w in points])
    table = np.array([[_values(r)[k] for k in active] for r in rows])  # points x weeks
    star = {k: (points[int(np.argmin(table[:, i]))], float(table[:, i].min())) for i, k in enumerate(active)}
    if not train:
        return star, None, math.nan
    columns = [active.index(k) for k in train]
    objective = table[:, columns].mean(axis=1)
    at = int(np.argmin(objective))
    return star, points[at], float(objective[at])


def _mean(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def summarise(weeks: list[dict], methods: Sequence[str], trained: dict[str, dict]) -> dict:
    """Per method: means over weeks, how often and by how much w* beats the best pure policy,
    and the test half's w*_train and w_greedy against SAF."""
    out: dict[str, dict] = {}
    test = [w for w in weeks if w["split"] == "test"]
    for method in methods:
        star = [w["methods"][method]["bsld_star"] for w in weeks]
        best = [w["best_pure_bsld"] for w in weeks]
        ratios = [b / s for b, s in zip(best, star, strict=True) if s > 0]
        top = int(np.argmax(ratios)) if ratios else None
        out[method] = {
            "weeks": len(weeks),
            "mean_bsld_star": _mean(star),
            "mean_bsld_best_pure": _mean(best),
            "mean_bsld_saf": _mean([w["saf_bsld"] for w in weeks]),
            "mean_bsld_fcfs": _mean([w["fcfs_bsld"] for w in weeks]),
            "weeks_star_better_than_best_pure": sum(
                s < b * (1 - 1e-9) for s, b in zip(star, best, strict=True)
            ),
            "weeks_star_worse_than_best_pure": sum(
                s > b * (1 + 1e-9) for s, b in zip(star, best, strict=True)
            ),
            "max_ratio_best_pure_to_star": ratios[top] if top is not None else math.nan,
            "max_ratio_week": weeks[top]["week"] if top is not None else None,
            "test_weeks": len(test),
            "test_mean_bsld_star": _mean([w["methods"][method]["bsld_star"] for w in test]),
            "test_mean_bsld_best_pure": _mean([w["best_pure_bsld"] for w in test]),
            "test_mean_bsld_saf": _mean([w["saf_bsld"] for w in test]),
            "test_mean_bsld_train": _mean([w["methods"][method]["bsld_train"] for w in test]),
            "test_mean_bsld_greedy": _mean([w["methods"][method]["bsld_greedy"] for w in test]),
            "w_train": trained[method]["w_train"],
            "features": trained[method]["features"],
        }
    return out


def run_study(config: StudyConfig) -> dict:
    """The whole study on every trace of ``config``."""
    clock = time.perf_counter()
    # Every trace read (and checked) before a cluster starts or a simulation runs.
    loaded = [load_trace_weeks(spec, config.procs) for spec in config.traces]
    with evaluator(config) as ev:
        traces = {tw.name: study_trace(ev, tw, i) for i, tw in enumerate(loaded)}
        computed = ev.cells_computed
    seconds = time.perf_counter() - clock
    return {
        "settings": settings(config) | {"sweep_cells_computed": computed, "wall_seconds": round(seconds, 1)},
        "traces": traces,
    }


def pure_ranking(config: StudyConfig) -> dict:
    """The 12 index policies on each whole trace (EASY, the threshold), ranked by mean bsld."""
    with evaluator(config) as ev:
        cells = [
            _cell(spec, config, [], name) | {"span": "trace"}
            for spec in config.traces
            for name in INDEX_POLICIES
        ]
        results = ev.run(cells)
    traces: dict[str, list[dict]] = {}
    for cell, rows in zip(cells, results, strict=True):
        traces.setdefault(cell["trace"], []).append(
            {"policy": cell["policy"], "mean_bsld": rows[0]["mean_bsld"], "jobs": rows[0]["jobs"]}
        )
    for ranking in traces.values():
        ranking.sort(key=lambda r: (r["mean_bsld"], r["policy"]))
        for rank, row in enumerate(ranking, 1):
            row["rank"] = rank
    return {"settings": settings(config, ranking=True), "ranking": traces}


def settings(config: StudyConfig, ranking: bool = False) -> dict:
    import rush

    base = {
        "traces": list(config.traces),
        "backfill": "easy",
        "threshold": config.threshold,
        "threshold_days": None if config.threshold is None else config.threshold / 86400.0,
        "tau": config.tau,
        "procs": config.procs,
        "rush_version": rush.__version__,
    }
    if ranking:
        return base | {"policies": list(INDEX_POLICIES)}
    import cma

    return (
        base
        | {
            "weeks": "all" if config.weeks is None else config.weeks,
            "methods": list(config.methods),
            "seed": config.seed,
            "grid_steps": config.grid_steps,
            "grid_points": len(simplex_grid(len(FEATURES_3), config.grid_steps)),
            "cma_generations": config.cma_generations,
            "cma_popsize": config.cma_popsize or "cma default (4 + 3 ln d)",
            "cma_version": cma.__version__,
            "scaling": "trace-wide medians; wait scaled by the median requested time",
            "signs": "grid: w >= 0; CMA-ES, XNES: w = z / ||z||_1, signs free",
        }
        | _xnes_settings(config)
    )


def _xnes_settings(config: StudyConfig) -> dict:
    if not any(m.startswith("xnes") for m in config.methods):
        return {}
    from importlib.metadata import version

    return {
        "xnes": "pypop7 XNES, start z = ones(d) (w = 1/d), A0 = I; one sweep cell per run",
        "xnes_evaluations": {str(d): config.cma_generations * popsize(d, config.cma_popsize) for d in (3, 6)},
        "pypop7_version": version("pypop7"),
    }
