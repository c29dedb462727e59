"""The bar that defines a run with variation: the paper's control runs in a production-like queue.

Nichols et al. (IPDPS'22) label a run as varying when its runtime exceeds mu + 1.5 sigma of its
application's runs in their data collection: 16-node control jobs submitted over weeks into
Quartz's production queue. The study's thresholds come from the same kind of runs: a queue of
16-node jobs of the seven applications (blocks of the ADAA workload, one every
``BLOCK_EVERY`` seconds, 20 % at the block's start and the rest over 20 minutes, FCFS+EASY,
first-fit), beside the noise job, over the campaign's hours. The training campaign
(:mod:`rush.contention.campaign`) is another matter: it must cover what the experiments ask
(8- and 32-node jobs, weak scaling), and a machine full of 32-node all-to-alls gave its 16-node
runs sigmas up to four times the 16-node queue's, a bar no ADAA run reaches (calibration step 5,
sim/variability/README.md). No feature store is written: only the runtimes are needed.
"""

from __future__ import annotations

import numpy as np

from rush.contention.apps import APP_NAMES, APPS, scaled
from rush.contention.experiment_workload import burst
from rush.contention.noise import NoiseSchedule, NoiseSpec
from rush.contention.shell import JobSpec, Simulation
from rush.contention.state import Fabric
from rush.core.config import CoreConfig

BLOCK_EVERY = 2700.0  # s: a block's makespan (30-40 minutes) and a gap
BLOCK_JOBS = 190
CONTROL_NODES = 16
SIGMAS = 1.5


def reference_jobs(rng: np.random.Generator, hours: float) -> list[JobSpec]:
    """Blocks of 190 16-node jobs of the seven applications, one every ``BLOCK_EVERY`` seconds."""
    jobs: list[JobSpec] = []
    for b in range(max(1, int(hours * 3600.0 // BLOCK_EVERY))):
        sizes = np.full(BLOCK_JOBS, CONTROL_NODES)
        jobs += burst(rng, APP_NAMES, sizes, "weak", start=b * BLOCK_EVERY, first_id=len(jobs) + 1)
    return jobs


def reference_slowdowns(fabric: Fabric, noise: NoiseSpec, hours: float, seed: int) -> dict[str, list[float]]:
    """Per application: the slowdowns (runtime over unimpeded runtime) of the reference queue's runs."""
    rng = np.random.default_rng(seed)
    jobs = reference_jobs(rng, hours)
    schedule = NoiseSchedule.random(noise, rng, hours * 3600.0 * 4 + 7200.0)
    sim = Simulation(jobs, CoreConfig.from_names("FCFS", "easy"), rng, schedule, fabric)
    out: dict[str, list[float]] = {a: [] for a in APP_NAMES}
    for r in sim.run():
        out[r.app].append(r.runtime / scaled(APPS[r.app], r.size, "weak").base)
    return out


def reference_thresholds(fabric: Fabric, noise: NoiseSpec, hours: float, seed: int) -> dict[str, float]:
    """Per application: mu + 1.5 sigma of its slowdowns in the reference queue."""
    return {
        a: float(np.mean(s) + SIGMAS * np.std(s)) if s else float("inf")
        for a, s in reference_slowdowns(fabric, noise, hours, seed).items()
    }
