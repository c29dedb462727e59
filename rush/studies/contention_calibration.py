"""The baseline's calibration: FCFS+EASY alone, against the paper's text (no RUSH, no oracle).

Nichols et al. (IPDPS'22, Section VII-B): under FCFS+EASY in ADAA, "between 1.5 and 3.5 runs on
average per application with significant variation", "the most variation prone applications,
Laghos and LBANN"; Section VI-A: "a queue of jobs that takes between 30 and 50 minutes for all
of them to run to completion". :func:`baseline` measures exactly those on development trials:
a short campaign (FCFS+EASY, :func:`rush.contention.campaign.campaign_jobs`'s blocks, no feature
store: only the control runs' slowdowns are needed) gives the thresholds (mu + 1.5 sigma per
application), then FCFS+EASY runs the scenario's trials, and every run with variation is
attributed (:mod:`rush.contention.avoidable`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from rush.contention.apps import APPS, scaled
from rush.contention.avoidable import attribute_runs
from rush.contention.campaign import campaign_jobs
from rush.contention.experiment import (
    SCENARIO_NAMES,
    SCENARIOS,
    THRESHOLD_NODES,
    VARIANTS,
    WARMUP,
    in_reference_block,
    workload,
)  # fmt: skip
from rush.contention.noise import NoiseSchedule
from rush.contention.oracles import DELAY_BUDGET, DELAY_STEP
from rush.contention.reference import reference_slowdowns
from rush.contention.shell import Simulation
from rush.contention.state import Fabric
from rush.core.config import CoreConfig

PAPER_PER_APP = (1.5, 3.5)  # runs with variation per application per trial, ADAA, FCFS+EASY
PAPER_QUEUE_MIN = (30.0, 50.0)  # minutes for the queue to run to completion
PAPER_MOST_PRONE = ("Laghos", "LBANN")


@dataclass(frozen=True)
class Calibration:
    hours: float = 4.0  # of campaign: small while calibrating (the study's default is 12)
    trials: tuple[int, ...] = tuple(range(10))  # development seeds only
    seed: int = 0
    scenario: str = "ADAA"
    variant: str = "paper"
    # Whose 16-node runs give the thresholds: "queue" (the study's: rush.contention.reference's
    # queue of 16-node jobs), "campaign" (all of the training campaign's) or "adaa" (those of its
    # ADAA-like blocks, :func:`rush.contention.experiment.in_reference_block`; calibration step 3).
    reference: str = "queue"


def campaign_thresholds(c: Calibration) -> tuple[dict[str, float], dict[str, float]]:
    """(mu + 1.5 sigma, mu) of each application's control-run slowdowns in a campaign like the study's
    (same seed stream as :func:`rush.contention.campaign.run_campaign`)."""
    machine, noise_spec = VARIANTS[c.variant]
    rng = np.random.default_rng(c.seed)
    if c.reference == "queue":
        by_queue = reference_slowdowns(Fabric(machine, noise_spec), noise_spec, c.hours, c.seed)
        return (
            {a: float(np.mean(s) + 1.5 * np.std(s)) for a, s in by_queue.items()},
            {a: float(np.mean(s)) for a, s in by_queue.items()},
        )
    jobs = campaign_jobs(rng, c.hours)
    schedule = NoiseSchedule.random(noise_spec, rng, c.hours * 3600.0 * 4 + 7200.0)
    sim = Simulation(jobs, CoreConfig.from_names("FCFS", "easy"), rng, schedule, Fabric(machine, noise_spec))
    by_app: dict[str, list[float]] = {}
    for r in sim.run():
        if r.size == THRESHOLD_NODES and (c.reference != "adaa" or in_reference_block(r.submit)):
            by_app.setdefault(r.app, []).append(r.runtime / scaled(APPS[r.app], r.size, "weak").base)
    bars = {a: float(np.mean(s) + 1.5 * np.std(s)) for a, s in by_app.items()}
    return bars, {a: float(np.mean(s)) for a, s in by_app.items()}


def baseline(c: Calibration) -> dict:
    """FCFS+EASY on the calibration's trials: runs with variation per application per trial, the
    queue's duration, and the causes of the runs with variation."""
    machine, noise_spec = VARIANTS[c.variant]
    bars, means = campaign_thresholds(c)
    scenario = SCENARIOS[c.scenario]
    per_app: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    decisive: Counter[str] = Counter()
    avoidable = 0
    spans = []
    slowdowns: dict[str, list[float]] = {}
    for trial in c.trials:
        seeds = np.random.SeedSequence([c.seed, SCENARIO_NAMES.index(scenario.name), trial])
        work_seed, noise_seed, counter_seed, _ = seeds.spawn(4)
        jobs = workload(scenario, np.random.default_rng(work_seed))
        noise = NoiseSchedule.random(noise_spec, np.random.default_rng(noise_seed), 3 * 86_400.0)
        fabric = Fabric(machine, noise_spec)
        config = replace(CoreConfig.from_names("FCFS", "easy"))
        results = Simulation(jobs, config, np.random.default_rng(counter_seed), noise, fabric).run()
        spans.append((max(r.end for r in results) - WARMUP) / 60.0)
        for r in results:
            slowdowns.setdefault(r.app, []).append(r.runtime / r.base)
        found = attribute_runs(results, jobs, fabric, noise, bars, DELAY_BUDGET, DELAY_STEP)
        for r in results:
            if r.job_id in found:
                per_app[r.app] += 1
                causes[str(found[r.job_id]["cause"])] += 1
                decisive[str(found[r.job_id]["decisive"])] += 1
                avoidable += bool(found[r.job_id]["avoidable"])
    n = len(c.trials)
    apps = [a for a in APPS if a in scenario.apps]
    counts = {a: per_app[a] / n for a in apps}
    return {
        "calibration": c.__dict__ | {"trials": list(c.trials)},
        "thresholds": bars,
        "campaign_mean_slowdown": means,
        "per_app": counts,
        "total": sum(counts.values()),
        "queue_minutes": {"mean": float(np.mean(spans)), "min": min(spans), "max": max(spans)},
        "experiment_mean_slowdown": {a: float(np.mean(slowdowns[a])) for a in apps},
        "experiment_p95_slowdown": {a: float(np.percentile(slowdowns[a], 95)) for a in apps},
        "causes": dict(causes),
        "decisive": dict(decisive),
        "avoidable_by_delay": avoidable / n,
        "checks": checks(counts, float(np.mean(spans))),
    }


def checks(per_app: dict[str, float], queue_minutes: float) -> dict[str, bool]:
    """The paper's three statements about its baseline, as booleans."""
    lo, hi = PAPER_PER_APP
    ranked = sorted(per_app, key=per_app.get, reverse=True)  # type: ignore[arg-type]
    return {
        "per_app_in_range": all(lo <= v <= hi for v in per_app.values()),
        "mean_in_range": lo <= float(np.mean(list(per_app.values()))) <= hi,
        "most_prone_first": set(ranked[:2]) == set(PAPER_MOST_PRONE),
        "queue_in_range": PAPER_QUEUE_MIN[0] <= queue_minutes <= PAPER_QUEUE_MIN[1],
    }


def main() -> None:  # pragma: no cover - a development tool: python -m rush.studies.contention_calibration
    import argparse
    import json

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--hours", type=float, default=4.0)
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--scenario", default="ADAA")
    p.add_argument("--variant", default="paper")
    a = p.parse_args()
    if a.trials > 10:
        raise SystemExit("calibration uses development trials 0-9 only")
    out = baseline(Calibration(a.hours, tuple(range(a.trials)), 0, a.scenario, a.variant))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":  # pragma: no cover
    main()
