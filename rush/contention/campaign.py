"""A longitudinal campaign in the contention simulator: records.jsonl + FeatureStore (the contract).

Like the paper's data collection, the campaign runs the seven applications as control jobs over
hundreds of noise episodes, under background load like the experiments': it is a sequence of
*blocks*, one every ``BLOCK_EVERY`` seconds, each an experiment's workload
(:mod:`rush.contention.experiment_workload`: 190 jobs, 20 % at the block's start, the rest over
20 minutes, applications dealt evenly), alternately the ADAA one (every job on 16 nodes) and the
WS one (8, 16 and 32 nodes, weak scaling: an application's unimpeded runtime does not depend on
its size, so runtimes compare across blocks and sizes). The core schedules them FCFS+EASY with
first-fit placement, the noise job always running at its varying intensity.

**What the experiments ask, the campaign covers** (issue 28): every run of 8, 16 or 32 nodes
(``CONTROL_SIZES``) is a control run and a record, because WS and SS ask the predictor about
jobs of those sizes; first-fit on a machine that fills and drains gives both packed placements
(a job on as few leaves as it can be) and spread ones (nodes left free on many leaves), and the
runs meet the noise over its whole intensity range. The summary reports all three (``coverage``:
runs per size, leaves spanned per size, packed and spread runs, the noise levels met). Each record
carries its nodes, times and runtime as simulated, its own MPI probe taken on its nodes as it
started (``probe``), its ``size`` and ``noise`` (ground truth, never a feature: the noise was loud,
above the middle of its range, on average over the run). The counters of every node, and where
each node hangs (leaf, pod), go to the feature store every 30 s.

A first design (blocks every 35 minutes of mixed-size jobs) kept the machine fuller than any
experiment: its label thresholds were far above the experiments' slowdowns (a check of FCFS+EASY
and the present-state oracle, before any RUSH run), so the campaign was changed to the
experiments' regime. Until issue 28 only the 16-node runs were records (the paper's control jobs
are 16-node jobs); the 8- and 32-node ones were background load, and the model never saw the
sizes WS and SS ask about.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
from rush.output_file import replace_file

BLOCK_EVERY = 2700.0  # an experiment's makespan and a gap: each block mostly drains before the next
BLOCK_SCENARIOS = ("ADAA", "WS")
CONTROL_SIZES: tuple[int, ...] = (8, 16, 32)  # the sizes the experiments ask about (WS, SS)
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


def run_campaign(
    out: Path, hours: float, seed: int, command: str, fabric: Fabric, noise: NoiseSpec, oracle: Any = None
) -> dict:
    """Write ``out/records.jsonl`` and ``out/store.db``; return a summary. ``oracle``: asked at the
    start decisions (the present-state label's recorder, which never flags); None: never asked."""
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
            oracle=oracle,
        )
        results = sim.run()
    controls = [r for r in results if r.size in CONTROL_SIZES]
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
    replace_file(tmp, out / "records.jsonl")
    end = max(r.end for r in results)
    return {
        "runs": len(controls),
        "background_runs": len(results) - len(controls),
        "hours": hours,
        "simulated_s": end,
        "noise_episodes": schedule.episodes(end),
        "seed": seed,
        "runs_per_app": {a: sum(r.app == a for r in controls) for a in APPS},
        "coverage": coverage(controls, fabric, noise),
        "records": str(out / "records.jsonl"),
        "store": str(store_path),
        "jitter_sigma": JITTER,
    }


def coverage(runs: list[JobResult], fabric: Fabric, noise: NoiseSpec) -> dict:
    """What the control runs cover: sizes, placements (leaves spanned; packed = on as few leaves
    as the size needs, spread = more) and the noise levels they met."""
    m = fabric.machine
    usable = m.leaf_size - int(np.bincount(m.leaf_of[fabric.noise_nodes], minlength=m.leaves).max())
    index = {h: k for k, h in enumerate(m.hosts)}
    out: dict = {"sizes": {}, "noise_intensity_range": list(noise.intensity)}
    for size in sorted({r.size for r in runs}):
        of_size = [r for r in runs if r.size == size]
        leaves = [len({int(m.leaf_of[index[h]]) for h in r.hosts}) for r in of_size]
        fewest = math.ceil(size / max(1, usable))
        out["sizes"][str(size)] = {
            "runs": len(of_size),
            "leaves_spanned": {str(k): leaves.count(k) for k in sorted(set(leaves))},
            "packed": sum(k <= fewest for k in leaves),
            "spread": sum(k > fewest for k in leaves),
        }
    levels = np.array([r.noise_level for r in runs]) if runs else np.zeros(1)
    out["noise_level_met"] = {
        "min": float(levels.min()),
        "max": float(levels.max()),
        "quartiles": [float(q) for q in np.quantile(levels, [0.25, 0.5, 0.75])],
    }
    return out


def filter_records(src: Path, dst: Path, apps: tuple[str, ...]) -> int:
    """Copy the header and the runs of ``apps`` (the PDPA model's training set). Every run is
    checked first (the campaign contract, :func:`rush.models.variability.dataset.parse_record`,
    and an application the simulator knows): a bad line is a DatasetError naming it, and
    nothing is written."""
    from rush.models.variability.dataset import DatasetError, parse_record

    kept: list[str] = []
    with src.open() as fin:
        for number, line in enumerate(fin, start=1):
            where = f"{src}:{number}"
            try:
                obj = json.loads(line)
            except ValueError:
                raise DatasetError("not a JSON object", where=where, fix="rerun the campaign") from None
            if isinstance(obj, dict) and "format" in obj:
                kept.append(line)
                continue
            run = parse_record(obj, where, number)
            if run.app not in APPS:
                raise DatasetError(
                    f"unknown application {run.app[:40]!r}",
                    where=f"{where}: app",
                    fix=f"one of {', '.join(APP_NAMES)} (rerun the campaign)",
                )
            if run.app in apps:
                kept.append(line)
    tmp = dst.with_name(dst.name + ".tmp")
    tmp.write_text("".join(kept))
    replace_file(tmp, dst)
    return sum("format" not in json.loads(line) for line in kept)
