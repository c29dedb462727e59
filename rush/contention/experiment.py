"""The variability experiments (Nichols et al., IPDPS 2022, section on simulation) in the contention simulator.

Scenarios (512 nodes, noise job on 1/16 of the nodes):

* ADAA: all 7 applications, 190 jobs on 16 nodes, model trained on all applications;
* ADPA: 3 applications (MILC, Laghos, MACSio), 150 jobs, model trained on all;
* PDPA: the same 3 applications, model trained on the other 4 only;
* WS / SS: all applications at 8, 16 and 32 nodes (190 jobs), weak / strong scaling, model on all.

20 % of the jobs are submitted at t = 0 and the rest uniformly over 20 minutes; applications
are dealt evenly (a shuffled deck). Each trial draws its workload, the runs' OS jitter and the
noise schedule once and runs every policy on them (paired trials): FCFS+EASY; RUSH =
FCFS+EASY with skip-with-limit (the core's ``skip_limit``, 10) driven by the learned predictor
(:class:`rush.planner.variation.LearnedVariationPredictor`) on the trial's own feature store;
RUSH-L, the same flagging the "little" class too; NOISE-ORACLE, a diagnostic bound that flags
network jobs exactly while the noise is on. Placement is the core's: ``first-fit`` (lowest free
nodes, as RUSH's Flux matched) for those four; beyond RUSH, TOPOLOGY is FCFS+EASY with the
core's topology packing (fewest pods), RUSH-V and NOISE-ORACLE-V the same flags with
variability-aware placement (a flagged job goes to quiet pods first and is skipped only when
none holds it; a pod is quiet by the predictor's ``quiet_leaves`` rule, the oracle's pods are
quiet while the noise is off).
Ten minutes of warm-up (noise and counters, no jobs) come before t = 0 so that the first
predictions have a full 5-minute window.

A run "has variation" when its slowdown (runtime over its unimpeded runtime at its size)
exceeds mu + 1.5 sigma of its application's slowdowns in the campaign: the training label's
threshold, applied to the experiments' runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from rush.contention.counters import SAMPLE_INTERVAL
from rush.contention.model import APP_NAMES, APPS, JITTER, POD_SIZE, PODS, THREE_APPS, hostname, scaled
from rush.contention.noise import NoiseSchedule
from rush.contention.shell import EPOCH, JobSpec, Simulation
from rush.core.config import CoreConfig

WARMUP = 600.0
ARRIVAL_SPAN = 1200.0
AT_ZERO = 0.2
# RUSH flags a job when the model's most probable class is "variation" (the card's default);
# RUSH-L also when it is "little" (the configurable variation classes of the issue).
# NOISE-ORACLE is a diagnostic bound, not a predictor: it flags network jobs exactly while the
# noise job is on (ground truth no scheduler has), to show what skip-with-limit can buy here.
POLICIES: tuple[str, ...] = (
    "FCFS+EASY", "RUSH", "RUSH-L", "NOISE-ORACLE", "TOPOLOGY", "RUSH-V", "NOISE-ORACLE-V",
)  # fmt: skip
RUSH_CLASSES: dict[str, tuple[str, ...]] = {
    "RUSH": ("variation",),
    "RUSH-L": ("little", "variation"),
    "RUSH-V": ("variation",),
}
PLACEMENT: dict[str, str] = {"TOPOLOGY": "topology", "RUSH-V": "variability", "NOISE-ORACLE-V": "variability"}


@dataclass(frozen=True)
class Scenario:
    name: str
    apps: tuple[str, ...]
    jobs: int
    sizes: tuple[int, ...]
    scaling: str
    model: str  # "all" | "other4"


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("ADAA", APP_NAMES, 190, (16,), "weak", "all"),
        Scenario("ADPA", THREE_APPS, 150, (16,), "weak", "all"),
        Scenario("PDPA", THREE_APPS, 150, (16,), "weak", "other4"),
        Scenario("WS", APP_NAMES, 190, (8, 16, 32), "weak", "all"),
        Scenario("SS", APP_NAMES, 190, (8, 16, 32), "strong", "all"),
    )
}
SCENARIO_NAMES: tuple[str, ...] = tuple(SCENARIOS)
OTHER_FOUR: tuple[str, ...] = tuple(a for a in APP_NAMES if a not in THREE_APPS)


def workload(scenario: Scenario, rng: np.random.Generator, scale: float = 1.0) -> list[JobSpec]:
    """The scenario's jobs (``scale`` shrinks the job count for tests)."""
    n = max(1, round(scenario.jobs * scale))
    deck = np.resize(np.array(scenario.apps), n)
    rng.shuffle(deck)
    sizes = np.resize(np.array(scenario.sizes), n)
    rng.shuffle(sizes)
    at_zero = round(AT_ZERO * n)
    submit = np.concatenate([np.zeros(at_zero), rng.uniform(0.0, ARRIVAL_SPAN, n - at_zero)])
    jitter = rng.lognormal(0.0, JITTER, n)
    return [
        JobSpec(
            k + 1, str(deck[k]), int(sizes[k]), WARMUP + float(submit[k]), scenario.scaling, float(jitter[k])
        )
        for k in range(n)
    ]


class LearnedOracle:
    """The daemon's learned predictor on a trial's store, answering the shell's questions on
    each job's tentative placement (job-node windows when the model reads them)."""

    def __init__(self, store: Any, model: Path, classes: tuple[str, ...] = ("variation",)) -> None:
        from rush.planner.variation import get_predictor

        self.predictor = get_predictor("learned", source=store, model=str(model), classes=list(classes))
        # The window's content changes only at counter ticks (readings are stamped on the tick
        # grid and the window is a whole number of intervals), so one feature read per interval
        # and node set serves every prediction in it: same answers, far fewer store queries.
        features_on = self.predictor.features_on
        cache: dict[tuple, dict] = {}

        def per_interval(now: float, hosts) -> dict:
            tick = math.ceil((now - EPOCH) / SAMPLE_INTERVAL - 1e-9)
            key = (tick, None if hosts is None else tuple(hosts))
            if not cache or next(iter(cache))[0] != tick:
                cache.clear()
            if key not in cache:
                cache[key] = features_on(now, hosts)
            return dict(cache[key])

        if self.predictor.window % SAMPLE_INTERVAL == 0:
            self.predictor.features_on = per_interval
        self.asked = 0
        self.flagged = 0
        self.unknown = 0

    def __call__(self, now: float, asked) -> list[bool]:
        jobs = [SimpleNamespace(job_id=spec.job_id, wtype=APPS[spec.app].wtype) for spec, _ in asked]
        hosts = [[hostname(int(k)) for k in nodes] for _, nodes in asked]
        flags = self.predictor.predict_on(jobs, now, hosts)
        self.asked += len(jobs)
        self.flagged += sum(flags)
        self.unknown += len(jobs) if self.predictor.last_reason else 0
        return flags

    def quiet_pods(self, now: float) -> np.ndarray:
        """Per pod: a network job on the pod's nodes is not predicted to vary (the predictor's
        ``quiet_leaves`` on all the pod's nodes, where its traffic shows)."""
        leaves = {p: [hostname(k) for k in range(p * POD_SIZE, (p + 1) * POD_SIZE)] for p in range(PODS)}
        quiet = self.predictor.quiet_leaves(now, leaves)
        return np.array([quiet[p] for p in range(PODS)], dtype=bool)


class NoiseOracle:
    """Flags network jobs while the noise job is on (the diagnostic bound, see POLICIES)."""

    def __init__(self, noise: NoiseSchedule) -> None:
        self.noise = noise
        self.asked = 0
        self.flagged = 0

    def __call__(self, now: float, asked) -> list[bool]:
        on = self.noise.level(now - EPOCH) > 0
        flags = [on and APPS[spec.app].wtype == "network" for spec, _ in asked]
        self.asked += len(flags)
        self.flagged += sum(flags)
        return flags

    def quiet_pods(self, now: float) -> np.ndarray:
        """The noise job has two nodes in every pod: all pods are loud while it is on."""
        return np.full(PODS, self.noise.level(now - EPOCH) == 0)


def run_trial(cell: dict, resources: dict | None = None) -> list[dict]:
    """One scenario x trial x policy: one row per job (the sweep task)."""
    from rush.collect.store import FeatureStore

    scenario = SCENARIOS[cell["scenario"]]
    seeds = np.random.SeedSequence(
        [int(cell["seed"]), SCENARIO_NAMES.index(scenario.name), int(cell["trial"])]
    )
    work_seed, noise_seed, counter_seed = seeds.spawn(3)
    jobs = workload(scenario, np.random.default_rng(work_seed), float(cell.get("scale", 1.0)))
    noise = NoiseSchedule.random(np.random.default_rng(noise_seed), 20 * 3600.0)
    config = replace(
        CoreConfig.from_names("FCFS", "easy"), placement=PLACEMENT.get(cell["policy"], "first-fit")
    )
    rush = cell["policy"] in RUSH_CLASSES
    thresholds = cell["thresholds"]
    # The trial's counters live in an in-memory store (only RUSH reads them).
    store = FeatureStore(":memory:") if rush else None
    oracle: LearnedOracle | NoiseOracle | None = None
    if rush:
        oracle = LearnedOracle(store, Path(cell["models"][scenario.model]), RUSH_CLASSES[cell["policy"]])
    elif cell["policy"] in ("NOISE-ORACLE", "NOISE-ORACLE-V"):
        oracle = NoiseOracle(noise)
    sim = Simulation(jobs, config, np.random.default_rng(counter_seed), noise, store=store, oracle=oracle)
    results = sim.run()
    if store is not None:
        store.close()
    rows = []
    for r in results:
        slowdown = r.runtime / r.base
        rows.append(
            {
                "job_id": r.job_id,
                "app": r.app,
                "wtype": r.wtype,
                "size": r.size,
                "submit": r.submit - WARMUP,
                "start": r.start - WARMUP,
                "end": r.end - WARMUP,
                "runtime": r.runtime,
                "base": r.base,
                "slowdown": slowdown,
                "wait": r.wait,
                "skips": r.skips,
                "noise": r.noise,
                "variation": bool(slowdown > thresholds[r.app]),
                "predictions": oracle.asked if oracle else 0,
                "flagged": oracle.flagged if oracle else 0,
            }
        )
    return rows


def slowdown_thresholds(records_path: Path) -> dict[str, float]:
    """Per application: mu + 1.5 sigma of the campaign's slowdowns (runtime / unimpeded runtime)."""
    import json

    by_app: dict[str, list[float]] = {}
    with records_path.open() as fh:
        for line in fh:
            obj = json.loads(line)
            if "format" in obj or obj.get("state") != "COMPLETED":
                continue
            base = scaled(APPS[obj["app"]], len(obj["nodes"]), "weak")[0]
            by_app.setdefault(obj["app"], []).append(obj["runtime"] / base)
    out = {}
    for app in APP_NAMES:
        s = np.asarray(by_app.get(app, []))
        out[app] = float(s.mean() + 1.5 * s.std()) if len(s) else math.inf
    return out


def summarise(rows: list[dict]) -> dict:
    """Per scenario and policy: per-application table and makespans (means over trials)."""
    out: dict[str, Any] = {}
    keys = sorted(
        {(r["scenario"], r["policy"]) for r in rows},
        key=lambda k: (SCENARIO_NAMES.index(k[0]), POLICIES.index(k[1])),
    )
    for scenario, policy in keys:
        sel = [r for r in rows if r["scenario"] == scenario and r["policy"] == policy]
        trials = sorted({r["trial"] for r in sel})
        makespans = [max(r["end"] for r in sel if r["trial"] == t) for t in trials]
        apps = {}
        for app in APP_NAMES:
            a = [r for r in sel if r["app"] == app]
            if not a:
                continue
            runtime = np.array([r["runtime"] for r in a])
            apps[app] = {
                "runs": len(a) / len(trials),
                "runs_with_variation": sum(r["variation"] for r in a) / len(trials),
                "runtime_mean": float(runtime.mean()),
                "runtime_max": float(runtime.max()),
                "slowdown_mean": float(np.mean([r["slowdown"] for r in a])),
                "wait_mean": float(np.mean([r["wait"] for r in a])),
                "skips_mean": float(np.mean([r["skips"] for r in a])),
            }
        first = [next(r for r in sel if r["trial"] == t) for t in trials]
        out.setdefault(scenario, {})[policy] = {
            "trials": len(trials),
            "predictions_per_trial": float(np.mean([r["predictions"] for r in first])),
            "flagged_per_trial": float(np.mean([r["flagged"] for r in first])),
            "runs_with_variation": sum(r["variation"] for r in sel) / len(trials),
            "runs": len(sel) / len(trials),
            "makespan_mean": float(np.mean(makespans)),
            "makespans": [float(m) for m in makespans],
            "wait_mean": float(np.mean([r["wait"] for r in sel])),
            "apps": apps,
        }
    return out
