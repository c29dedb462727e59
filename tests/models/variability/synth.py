"""A small synthetic campaign (records.jsonl + a real FeatureStore) whose labels a counter carries.

Used by the tests only: a noise generator switches on in known intervals; while it is on the
InfiniBand counter of every node is high and runs take 1.6x (network) or 1.4x (others) longer,
so a model that reads ``all_mean_ib_xmit_bytes_per_s`` can learn the label. Nothing here is a mock: the store
is rush's SQLite FeatureStore, written through its insert().
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rush.collect.base import Sample
from rush.collect.store import FeatureStore

T0 = 1_700_000_000.0
HOSTS = [f"n{i:02d}" for i in range(8)]
APPS = {
    "halo": ("network", 20.0),
    "cg": ("network", 30.0),
    "stream": ("compute", 25.0),
    "fsync": ("io", 15.0),
}


PERIOD, NOISE = 3600.0, 480.0


def noise_on(t: float) -> bool:
    """Noise in the first 480 s of every hour (rare: a label above mu + 1.5 sigma needs rare slow
    runs; long enough that the 300 s window before a start mostly sees it)."""
    return (t - T0) % PERIOD < NOISE


def write_campaign(
    directory: Path,
    runs_per_app: int = 24,
    seed: int = 1,
    apps: dict[str, tuple[str, float]] | None = None,
    with_counters: bool = True,
    with_probe: bool = True,
) -> tuple[Path, Path]:
    """Write records.jsonl and store.sqlite under ``directory``; return their paths."""
    rng = np.random.default_rng(seed)
    apps = apps or APPS
    directory.mkdir(parents=True, exist_ok=True)
    store_path = directory / "store.sqlite"
    records_path = directory / "records.jsonl"
    n = runs_per_app * len(apps)
    starts = T0 + 400.0 + np.sort(rng.uniform(0, PERIOD * 6, n))
    names = [name for name in apps for _ in range(runs_per_app)]
    rng.shuffle(names)
    end = float(starts[-1] + 600)
    with FeatureStore(store_path) as store:
        if with_counters:
            samples = []
            for t in np.arange(T0, end, 10.0):
                for h in HOSTS:
                    base = 5e8 if noise_on(float(t)) else 1e7
                    samples.append(
                        Sample(float(t), h, "sysfs_ib", "ib_xmit_bytes_per_s", base * rng.uniform(0.8, 1.2))
                    )
                    samples.append(Sample(float(t), h, "procfs", "cpu_busy", rng.uniform(0, 1)))
            store.insert(samples)
    lines = [
        json.dumps(
            {
                "format": "rush-campaign/1",
                "campaign": "synth",
                "seed": seed,
                "command": f"tests/models/variability/synth.py seed={seed}",
                "machine": "test",
                "created": "2026-11-23T00:00:00Z",
            }
        )
    ]
    for i, (app, start) in enumerate(zip(names, starts, strict=True)):
        wtype, base = apps[app]
        slow = (1.6 if wtype == "network" else 1.4) if noise_on(float(start)) else 1.0
        runtime = base * slow * rng.uniform(0.995, 1.005)
        nodes = sorted(rng.choice(HOSTS, 2, replace=False).tolist())
        probe = None
        if with_probe:
            w = 0.05 * (4 if noise_on(float(start)) else 1)
            probe = {
                f"{op}_{s}": w * f
                for op in ("send", "recv", "allreduce")
                for s, f in (("min", 0.5), ("mean", 1.0), ("max", 1.5))
            }
        lines.append(
            json.dumps(
                {
                    "job_id": str(1000 + i),
                    "app": app,
                    "wtype": wtype,
                    "nodes": nodes,
                    "submit": float(start) - 5,
                    "start": float(start),
                    "end": float(start) + runtime,
                    "runtime": runtime,
                    "state": "COMPLETED",
                    "probe": probe,
                    "noise": noise_on(float(start)),
                }
            )
        )
    records_path.write_text("\n".join(lines) + "\n")
    return records_path, store_path
