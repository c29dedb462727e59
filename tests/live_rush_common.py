"""What the live RUSH acceptances share (tests/campaign/test_live_hold.py on Slurm,
tests/flux/test_rush_live.py on Flux): a learned variation model trained on a synthetic
campaign, and this host's procfs counters sampled live into a feature store.

The synthetic campaign makes "noise on" exactly "a high network counter" (procfs
``net_xmit_bytes_per_s`` in the window before the start), so what the model predicts live is
deterministic: ~1e5 B/s quiet here, ~1e9 B/s while collectors/noise.py's ``network`` kind runs.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rush.campaign.runner import Sampler
from rush.collect.base import Sample
from rush.collect.procfs import ProcfsCollector
from rush.collect.store import FeatureStore

WINDOW = 12.0  # the model card's window: the live predictor reads [now - WINDOW, now)
# bytes/s in the synthetic campaign; live here: ~1e5 quiet, ~1e9 with the network noise. The
# model splits between the two; the tests wait for the live window to be clearly on one side.
QUIET, NOISY = 1e5, 3e8
APPS = {"halo": "network", "cg": "network", "compute": "compute", "io": "io"}


def synthetic_campaign(
    out: Path, node: str, runs: int = 20, sensitive: frozenset[str] = frozenset(APPS.values())
) -> tuple[Path, Path]:
    """records.jsonl + store of a campaign in the past where a noisy window triples the runtime
    of the ``sensitive`` workload types (the others run as fast with the noise as without)."""
    rng = random.Random(3)
    out.mkdir()
    start0 = time.time() - 86400
    header = {"format": "rush-campaign/1", "campaign": "synthetic", "seed": 3, "command": "live_rush_common",
              "machine": node, "created": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    lines, samples = [json.dumps(header)], []
    index = 0
    for app, wtype in APPS.items():
        noisy_runs = set(rng.sample(range(runs), runs // 5))
        for run in range(runs):
            start = start0 + 100.0 * index
            index += 1
            noisy = run in noisy_runs
            jitter = rng.random()
            if wtype not in sensitive:  # two values: no run is above mu + 1.2 sigma
                jitter = float(run % 2)
            runtime = (3.0 if noisy and wtype in sensitive else 1.0) * (1 + 0.02 * jitter)
            lines.append(json.dumps({
                "job_id": str(index), "app": app, "wtype": wtype, "nodes": [node],
                "submit": start - 1, "start": start, "end": start + runtime, "runtime": runtime,
                "state": "COMPLETED", "probe": None, "noise": noisy,
            }))  # fmt: skip
            level = NOISY if noisy else QUIET
            samples += [
                Sample(
                    start - WINDOW + t,
                    node,
                    "procfs",
                    "net_xmit_bytes_per_s",
                    level * (1 + 0.1 * rng.random()),
                )
                for t in range(0, int(WINDOW), 2)
            ]
    records, store = out / "records.jsonl", out / "features.sqlite"
    records.write_text("\n".join(lines) + "\n")
    with FeatureStore(store) as fs:
        fs.insert(samples)
    return records, store


def train_model(
    work: Path, dataset_mod, train_mod, sensitive: frozenset[str] = frozenset(APPS.values())
) -> Path:
    """The learned model (helper F's pipeline: build_dataset, train_variability) of the
    synthetic campaign, saved as ``work/variability.joblib``."""
    records, store = synthetic_campaign(work / "campaign", node="anynode", sensitive=sensitive)
    dataset = dataset_mod.build_dataset(
        records, store, dataset_mod.DatasetOptions(window=WINDOW, scopes=("all",))
    )
    noisy_sensitive = sum(1 for wtype in APPS.values() if wtype in sensitive) * 4
    assert dataset.y_class.tolist().count(2) == noisy_sensitive  # the noisy sensitive runs vary
    trained = train_mod.train_variability(
        dataset, train_mod.TrainOptions(seed=0, models=("adaboost",), n_estimators=10, exclude=("probe",))
    )
    path = work / "variability.joblib"
    trained.save(path)
    return path


@contextmanager
def live_store(path: Path) -> Iterator[Path]:
    """This host's procfs counters sampled every second into a feature store, as in a campaign."""
    store = FeatureStore(path)
    sampler = Sampler(store, threading.Lock(), [ProcfsCollector()], interval=1.0)
    sampler.start()
    try:
        yield path
    finally:
        sampler.stop()
        store.close()


def window_mean(store_path: Path) -> float:
    """The live window's mean network transmit rate (what the model splits on)."""
    with FeatureStore(store_path) as store:
        now = time.time()
        features = store.window_features(None, now - WINDOW, now, ["procfs"])
    return features.get("mean_net_xmit_bytes_per_s", 0.0)
