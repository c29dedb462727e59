"""The variability experiments of Nichols et al. (IPDPS'22) in the contention simulator.

Scenarios (the paper's Table II; 512 nodes, noise job on 1/16 of them, always on):

* ADAA: all 7 applications, 190 jobs on 16 nodes, model trained on all applications;
* ADPA: 3 applications (Laghos, LBANN, PENNANT), 150 jobs, model trained on all;
* PDPA: the same 3 applications, model trained on the other 4 (AMG, Kripke, sw4lite, SWFFT);
* WS / SS: all applications at 8, 16 and 32 nodes (190 jobs), weak / strong scaling, model on all.

Each trial draws its workload (:func:`rush.contention.experiment_workload.burst`), the runs' OS
jitter and the noise schedule once and runs every policy on them (paired trials). Policies:
FCFS+EASY; RUSH = FCFS+EASY with skip-with-limit (limit 10) driven by the learned predictor
(:class:`rush.contention.oracles.LearnedOracle`) on the trial's own feature store; RUSH-30 and
RUSH-UNLIMITED, the same with skip limits 30 and none (sensitivity); PRESENT-ORACLE and
NOISE-ORACLE, diagnostics (:mod:`rush.contention.oracles`), limit 10. Placement is first-fit,
as RUSH's Flux matched. Ten minutes of warm-up (noise and counters, no jobs) come before t = 0
so that the first predictions have a full window.

Variants (sensitivity runs of the set-up): ``paper`` (one pod of 512, noise always on),
``multipod`` (4 pods of 128 with 4:1 tapered pod uplinks), ``onoff`` (noise switching on and off),
``longnoise`` (the noise's level held 900 s on average instead of 180 s).

A run "has variation" when its slowdown (runtime over its unimpeded runtime at its size)
exceeds mu + 1.5 sigma of its application's slowdowns in the campaign (the training label's
threshold); the report adds within-experiment thresholds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rush.contention.apps import APP_NAMES, APPS, OTHER_FOUR, THREE_APPS, scaled, use_apps
from rush.contention.avoidable import attribute_runs
from rush.contention.experiment_workload import burst
from rush.contention.labels import check_model_label, model_name
from rush.contention.machine import MULTIPOD, PAPER, Machine
from rush.contention.noise import SWITCHING, NoiseSchedule, NoiseSpec
from rush.contention.oracles import (
    DELAY_BUDGET,
    DELAY_STEP,
    ClairvoyantOracle,
    LearnedOracle,
    NoiseOracle,
    PresentStateOracle,
    Recorded,
)  # fmt: skip
from rush.contention.shell import EPOCH, Oracle, Simulation
from rush.contention.state import Fabric
from rush.core.config import CoreConfig
from rush.core.resources import PLACEMENTS

WARMUP = 600.0
THRESHOLD_NODES = 16  # the control runs' size: thresholds come from these
UNLIMITED = -1
# An hour of an idle machine held by flagged jobs releases them (see Simulation.idle_release):
# never reached with a finite limit (10 or 30 passes of at most 30 s each).
IDLE_RELEASE = 3600.0
POLICIES: tuple[str, ...] = (
    "FCFS+EASY", "RUSH", "RUSH-30", "RUSH-UNLIMITED", "RUSH-MOVE", "PRESENT-ORACLE", "NOISE-ORACLE",
    "CLAIRVOYANT-ORACLE", "RUSH-SIZE", "RUSH-PRESENT-LABEL", "RUSH-MOVE-PRESENT-LABEL",
)  # fmt: skip
DIAGNOSTICS: tuple[str, ...] = ("PRESENT-ORACLE", "NOISE-ORACLE", "CLAIRVOYANT-ORACLE")
SKIP_LIMIT: dict[str, int] = {"RUSH-30": 30, "RUSH-UNLIMITED": UNLIMITED}
# RUSH-PRESENT-LABEL: RUSH with the model trained on the present-state label (rush.contention.labels);
# RUSH-MOVE-PRESENT-LABEL: RUSH-MOVE's rules with that model (round seven, change p).
LEARNED: tuple[str, ...] = (
    "RUSH",
    "RUSH-30",
    "RUSH-UNLIMITED",
    "RUSH-MOVE",
    "RUSH-SIZE",
    "RUSH-PRESENT-LABEL",
    "RUSH-MOVE-PRESENT-LABEL",
)
# The flag threshold per job size, capped at the size's base rate: the daemon's
# variation.flag_by_size = true (LearnedOracle's flag_by_size; the rule is the core's,
# rush.core.variation_flag).
BY_SIZE: tuple[str, ...] = ("RUSH-SIZE",)
# Variability-aware placement ("move, then delay"): flagged jobs to quiet leaves first.
PLACEMENT: dict[str, str] = {"RUSH-MOVE": "variability", "RUSH-MOVE-PRESENT-LABEL": "variability"}
# The core's skip counter never reaches this: "no limit".
_NO_LIMIT = 2**31 - 1


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
VARIANTS: dict[str, tuple[Machine, NoiseSpec]] = {
    "paper": (PAPER, NoiseSpec()),
    "multipod": (MULTIPOD, NoiseSpec()),
    "onoff": (PAPER, SWITCHING),
    "longnoise": (PAPER, NoiseSpec(change_every=900.0)),
}


def workload(scenario: Scenario, rng: np.random.Generator, scale: float = 1.0):
    """The scenario's jobs, submitted after the warm-up (``scale`` shrinks the count for tests)."""
    n = max(1, round(scenario.jobs * scale))
    sizes = np.resize(np.array(scenario.sizes), n)
    rng.shuffle(sizes)
    return burst(rng, scenario.apps, sizes, scenario.scaling, start=WARMUP)


def skip_limit(policy: str) -> int:
    return SKIP_LIMIT.get(policy, 10)


def learned_oracle(policy: str, model: dict[str, Any], store: Any, rng: np.random.Generator) -> LearnedOracle:
    """The learned oracle of a RUSH policy for a prepared model (``path`` and its
    ``flag_threshold_by_size``, prepare.json's): RUSH-SIZE flags by job size (the daemon's
    ``variation.flag_by_size = true``), the others with the card's one threshold (the default)."""
    by_size = policy in BY_SIZE
    if by_size and not model.get("flag_threshold_by_size"):
        raise ValueError(f"{policy} needs the model's per-size flag thresholds (prepare.json)")
    table = model.get("flag_threshold_by_size") if by_size else None
    return LearnedOracle(store, Path(model["path"]), rng, flag_by_size=by_size, size_table=table)


def run_trial(cell: dict, resources: dict | None = None, predictor: Oracle | None = None) -> list[dict]:
    """One variant x scenario x trial x policy: one row per job (``kind`` "job") and one per
    question a flagging policy answered (``kind`` "prediction").

    Diagnostics of the development tooling (``sim/variability``), not policies of the study:
    ``predictor`` answers a learned policy's questions in place of its model (a placebo, a
    predictor that flags every job): the policy still gives the rules (skip limit, placement), no
    model is read and no feature store kept, and its answers are recorded as the model's would be.
    A cell's ``placement`` (one of the core's) replaces the policy's (TOPOLOGY: FCFS+EASY packed)."""
    from rush.collect.store import FeatureStore

    scenario = SCENARIOS[cell["scenario"]]
    machine, noise_spec = cell_machine(cell)
    seeds = np.random.SeedSequence(
        [int(cell["seed"]), SCENARIO_NAMES.index(scenario.name), int(cell["trial"])]
    )
    work_seed, noise_seed, counter_seed, probe_seed = seeds.spawn(4)
    jobs = workload(scenario, np.random.default_rng(work_seed), float(cell.get("scale", 1.0)))
    noise = NoiseSchedule.random(noise_spec, np.random.default_rng(noise_seed), 3 * 86_400.0)
    policy = cell["policy"]
    if predictor is not None and policy not in LEARNED:
        raise ValueError(
            f"a predictor replaces a learned policy's model ({', '.join(LEARNED)}), not {policy}'s"
        )
    placement = cell.get("placement") or PLACEMENT.get(policy, "first-fit")
    if placement not in PLACEMENTS:
        raise ValueError(f"cell placement {placement!r}: use one of {', '.join(PLACEMENTS)}")
    limit = skip_limit(policy)
    config = replace(
        CoreConfig.from_names("FCFS", "easy"),
        skip_limit=_NO_LIMIT if limit == UNLIMITED else limit,
        placement=placement,
    )
    thresholds = cell["thresholds"]
    fabric = Fabric(machine, noise_spec)
    reference = PresentStateOracle(thresholds)
    store = FeatureStore(":memory:") if policy in LEARNED and predictor is None else None
    oracle = None
    if predictor is not None:
        oracle = Recorded(predictor, reference)
    elif policy in LEARNED:
        name = model_name(policy, scenario.model)
        if name not in cell["models"]:
            raise ValueError(
                f"{policy} needs the prepared model {name!r} (prepare with --label present-state)"
            )
        check_model_label(Path(cell["models"][name]["path"]), policy)
        learned = learned_oracle(policy, cell["models"][name], store, np.random.default_rng(probe_seed))
        oracle = Recorded(learned, reference)
    elif policy == "PRESENT-ORACLE":
        oracle = Recorded(reference, reference)
    elif policy == "NOISE-ORACLE":
        oracle = Recorded(NoiseOracle(noise_spec), reference)
    elif policy == "CLAIRVOYANT-ORACLE":
        oracle = Recorded(ClairvoyantOracle(thresholds), reference)
    sim = Simulation(
        jobs, config, np.random.default_rng(counter_seed), noise, fabric, store=store, oracle=oracle,
        idle_release=IDLE_RELEASE,
    )  # fmt: skip
    results = sim.run()
    if store is not None:
        store.close()
    # Under the baseline, each run with variation's causes and whether a delay avoids it.
    causes = (
        attribute_runs(results, jobs, fabric, noise, thresholds, DELAY_BUDGET, DELAY_STEP)
        if policy == "FCFS+EASY"
        else {}
    )
    # The sweep adds the cell's parameters (variant, scenario, policy, trial) to every row.
    rows = []
    for r in results:
        slowdown = r.runtime / r.base
        rows.append(
            {
                "kind": "job",
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
                "skip_limit": limit,
                "limit_hit": r.limit_hit,
                "noise_level": r.noise_level,
                "variation": bool(slowdown > thresholds[r.app]),
                **causes.get(r.job_id, {}),
            }
        )
    if oracle is not None:
        for e in oracle.events:
            rows.append({"kind": "prediction", **e, "t": e["t"] - WARMUP})
    return rows


def cell_machine(cell: dict) -> tuple[Machine, NoiseSpec]:
    """The cell's machine and noise: its variant's, or the study file's for ``paper``. Sets this
    process's application table to the study file's (:func:`rush.contention.apps.use_apps`)."""
    spec = cell.get("study_spec")
    use_apps((spec or {}).get("apps", {}))
    if spec is not None:
        noise = dict(spec["noise"])
        if "intensity" in noise:
            noise["intensity"] = tuple(noise["intensity"])
        return Machine(**spec["machine"]), NoiseSpec(**noise)
    return VARIANTS[cell.get("variant", "paper")]


def in_reference_block(submit: float) -> bool:
    """Whether a campaign run submitted at ``submit`` (simulated seconds) belongs to an ADAA-like
    block (16-node jobs only): the regime of the paper's control runs, which ran in a production
    queue, not on a machine full of 32-node weak-scaling all-to-alls (calibration step 3,
    sim/variability/README.md). A campaign without ADAA-like blocks: every block."""
    from rush.contention import campaign

    blocks = getattr(campaign, "BLOCK_SCENARIOS", ())
    every = getattr(campaign, "BLOCK_EVERY", 0.0)
    if "ADAA" not in blocks or not every:
        return True
    return blocks[int(submit // every) % len(blocks)] == "ADAA"


def slowdown_thresholds(records_path: Path) -> dict[str, float]:
    """Per application: mu + 1.5 sigma of the campaign's 16-node slowdowns (runtime / unimpeded
    runtime) in its ADAA-like blocks (:func:`in_reference_block`): the paper's control jobs ran
    on 16 nodes in a production queue, and a campaign that records other sizes too (for the
    model) must not move the bar that defines a run with variation."""
    by_app: dict[str, list[float]] = {}
    with records_path.open() as fh:
        for line in fh:
            obj = json.loads(line)
            if "format" in obj or obj.get("state") != "COMPLETED":
                continue
            if len(obj["nodes"]) != THRESHOLD_NODES or not in_reference_block(obj["submit"] - EPOCH):
                continue
            base = scaled(APPS[obj["app"]], len(obj["nodes"]), "weak").base
            by_app.setdefault(obj["app"], []).append(obj["runtime"] / base)
    out = {}
    for app in APP_NAMES:
        s = np.asarray(by_app.get(app, []))
        out[app] = float(s.mean() + 1.5 * s.std()) if len(s) else math.inf
    return out


__all__ = [
    "DIAGNOSTICS", "OTHER_FOUR", "POLICIES", "SCENARIOS", "SCENARIO_NAMES", "VARIANTS", "Scenario",
    "run_trial", "slowdown_thresholds", "workload",
]  # fmt: skip
