"""A longitudinal campaign in the contention simulator: records.jsonl + FeatureStore (the contract).

Like the paper's data collection, the campaign runs the seven applications as 16-node control
jobs over hundreds of noise episodes, under background load like the experiments': it is a
sequence of *blocks*, one every ``BLOCK_EVERY`` seconds, each an experiment's workload
(:mod:`rush.contention.experiment_workload`: 190 jobs, 20 % at the block's start, the rest over
20 minutes, applications dealt evenly), alternately the ADAA one (every job on 16 nodes) and the
WS one (8, 16 and 32 nodes, weak scaling: an application's unimpeded runtime does not depend on
its size, so runtimes compare across blocks). The core schedules them FCFS+EASY with first-fit
placement, the noise job always running at its varying intensity. The 16-node runs are the
control runs and each is a record: nodes, times and runtime as simulated, its own MPI probe
taken on its nodes as it started (``probe``) and ``noise`` (ground truth, never a feature: the
noise was loud, above the middle of its range, on average over the run). The 8- and 32-node
jobs are background load. The counters of every node go to the feature store every 30 s.

A first design (blocks every 35 minutes of mixed-size jobs, every run a record) kept the machine
fuller than any experiment: its label thresholds were far above the experiments' slowdowns (a
check of FCFS+EASY and the present-state oracle, before any RUSH run), so the campaign was
changed to the experiments' regime.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rush.collect.store import FeatureStore
from rush.contention.apps import APP_NAMES, APPS
from rush.contention.experiment_workload import burst
from rush.contention.model import JITTER
from rush.contention.noise import NoiseSchedule, NoiseSpec
from rush.contention.shell import EPOCH, JobResult, JobSpec, Simulation
from rush.contention.state import Fabric
from rush.core.config import CoreConfig
from rush.models.variability.dataset import FORMAT

BLOCK_EVERY = 2700.0  # an experiment's makespan and a gap: each block mostly drains before the next
BLOCK_SCENARIOS = ("ADAA", "WS")
CONTROL_NODES = 16
MAX_HOURS = 48.0


def campaign_jobs(rng: np.random.Generator, hours: float) -> list[JobSpec]:
    """The campaign's blocks of experiment workloads over ``hours``."""
    from rush.contention.experiment import SCENARIOS

    jobs: list[JobSpec] = []
    blocks = max(1, math.floor(hours * 3600.0 / BLOCK_EVERY))
    for b in range(blocks):
        scenario = SCENARIOS[BLOCK_SCENARIOS[b % len(BLOCK_SCENARIOS)]]
        sizes = np.resize(np.array(scenario.sizes), scenario.jobs)
        rng.shuffle(sizes)
        jobs += burst(rng, APP_NAMES, sizes, "weak", start=b * BLOCK_EVERY, first_id=len(jobs) + 1)
    return jobs


def record(r: JobResult, loud: float) -> dict:
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
        "probe": r.probe,
        "noise": bool(r.noise_level > loud),
        "noise_level": r.noise_level,
        "size": r.size,
    }


def run_campaign(out: Path, hours: float, seed: int, command: str, fabric: Fabric, noise: NoiseSpec) -> dict:
    """Write ``out/records.jsonl`` and ``out/store.db``; return a summary."""
    if not (math.isfinite(hours) and 0 < hours <= MAX_HOURS):
        raise ValueError(f"campaign hours must be in (0, {MAX_HOURS}]")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    jobs = campaign_jobs(rng, hours)
    horizon = hours * 3600.0 * 4 + 7200.0
    schedule = NoiseSchedule.random(noise, rng, horizon)
    store_path = out / "store.db"
    for stale in (store_path, out / "store.db-wal", out / "store.db-shm"):
        stale.unlink(missing_ok=True)
    with FeatureStore(store_path) as store:
        sim = Simulation(
            jobs,
            CoreConfig.from_names("FCFS", "easy"),
            rng,
            schedule,
            fabric,
            store=store,
            probe_at_start=True,
        )
        results = sim.run()
    controls = [r for r in results if r.size == CONTROL_NODES]
    loud = sum(noise.intensity) / 2.0 if noise.mode == "always" else 0.0
    header = {
        "format": FORMAT,
        "campaign": "contention-sim",
        "seed": seed,
        "command": command,
        "machine": f"rush contention simulator, {fabric.machine.nodes} nodes ({fabric.machine.name})",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    tmp = out / "records.jsonl.tmp"
    with tmp.open("w") as fh:
        fh.write(json.dumps(header) + "\n")
        for r in controls:
            fh.write(json.dumps(record(r, loud)) + "\n")
    tmp.replace(out / "records.jsonl")
    end = max(r.end for r in results)
    return {
        "runs": len(controls),
        "background_runs": len(results) - len(controls),
        "hours": hours,
        "simulated_s": end,
        "noise_episodes": schedule.episodes(end),
        "seed": seed,
        "runs_per_app": {a: sum(r.app == a for r in controls) for a in APPS},
        "records": str(out / "records.jsonl"),
        "store": str(store_path),
        "jitter_sigma": JITTER,
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
