"""A longitudinal campaign in the contention simulator: records.jsonl + FeatureStore (the contract).

The seven applications run back to back under random background load for ``hours`` simulated
hours: Poisson arrivals sized to keep about ``load`` of the machine busy, each job a uniformly
drawn application on 8, 16 or 32 nodes (probabilities 1/4, 1/2, 1/4; weak scaling, so an
application's unimpeded runtime does not depend on its size and its label thresholds apply
to all its runs), scheduled FCFS+EASY by the core, with the noise job switching on and off.
Every run is a control job: its record carries the nodes, times and runtime the simulator
produced, ``probe`` null (the simulator has no MPI probe) and ``noise`` (ground truth, never a
feature). The counters of all 512 nodes go to the feature store every 30 s.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rush.collect.store import FeatureStore
from rush.contention.model import APP_NAMES, APPS, JITTER, NODES
from rush.contention.noise import NOISE_NODES_COUNT, NoiseSchedule
from rush.contention.shell import EPOCH, JobResult, JobSpec, Simulation
from rush.core.config import CoreConfig
from rush.models.variability.dataset import FORMAT

SIZES = (8, 16, 32)
SIZE_P = (0.25, 0.5, 0.25)
MAX_HOURS = 48.0


def campaign_jobs(rng: np.random.Generator, hours: float, load: float = 0.8) -> list[JobSpec]:
    """Poisson arrivals of random applications and sizes for ``hours``, offered ``load``."""
    mean_nodes = float(np.dot(SIZES, SIZE_P))
    mean_base = float(np.mean([a.base for a in APPS.values()]))
    rate = load * (NODES - NOISE_NODES_COUNT) / (mean_nodes * mean_base)
    jobs, t, k = [], 0.0, 0
    while True:
        t += rng.exponential(1.0 / rate)
        if t >= hours * 3600.0:
            return jobs
        k += 1
        app = APP_NAMES[int(rng.integers(len(APP_NAMES)))]
        size = int(rng.choice(SIZES, p=SIZE_P))
        jobs.append(JobSpec(k, app, size, t, "weak", float(rng.lognormal(0.0, JITTER))))


def record(r: JobResult) -> dict:
    return {
        "job_id": str(r.job_id),
        "app": r.app,
        "wtype": r.wtype,
        "nodes": r.hosts,
        "submit": EPOCH + r.submit,
        "start": EPOCH + r.start,
        "end": EPOCH + r.end,
        "runtime": r.runtime,
        "state": "COMPLETED",
        "probe": None,
        "noise": r.noise,
    }


def run_campaign(out: Path, hours: float, seed: int, command: str, load: float = 0.8) -> dict:
    """Write ``out/records.jsonl`` and ``out/store.db``; return a summary."""
    if not (math.isfinite(hours) and 0 < hours <= MAX_HOURS):
        raise ValueError(f"campaign hours must be in (0, {MAX_HOURS}]")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    jobs = campaign_jobs(rng, hours, load)
    noise = NoiseSchedule.random(rng, hours * 3600.0 * 2 + 7200.0)
    store_path = out / "store.db"
    for stale in (store_path, out / "store.db-wal", out / "store.db-shm"):
        stale.unlink(missing_ok=True)
    with FeatureStore(store_path) as store:
        sim = Simulation(jobs, CoreConfig.from_names("FCFS", "easy"), rng, noise, store=store)
        results = sim.run()
    header = {
        "format": FORMAT,
        "campaign": "contention-sim",
        "seed": seed,
        "command": command,
        "machine": f"rush contention simulator, {NODES} nodes",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    tmp = out / "records.jsonl.tmp"
    with tmp.open("w") as fh:
        fh.write(json.dumps(header) + "\n")
        for r in results:
            fh.write(json.dumps(record(r)) + "\n")
    tmp.replace(out / "records.jsonl")
    return {
        "runs": len(results),
        "hours": hours,
        "seed": seed,
        "noise_on_share": float(
            np.sum(np.minimum(noise.ends, hours * 3600) - np.minimum(noise.starts, hours * 3600))
        )
        / (hours * 3600.0),
        "records": str(out / "records.jsonl"),
        "store": str(store_path),
    }


def filter_records(src: Path, dst: Path, apps: tuple[str, ...]) -> int:
    """Copy the header and the runs of ``apps`` (the PDPA model's training set)."""
    kept = 0
    with src.open() as fin, dst.open("w") as fout:
        for line in fin:
            obj = json.loads(line)
            if "format" in obj or obj.get("app") in apps:
                fout.write(line)
                kept += "format" not in obj
    return kept
