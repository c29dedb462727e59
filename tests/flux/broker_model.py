"""A variation model on job-node features for the multi-broker live tests (a trusted model
trained in the test, as tests/live_rush_common.py does for one node).

A synthetic campaign in the past on the four brokers ``node0``..``node3``: each run had two of
them; in some windows a noise job kept one node busy (:mod:`tests.flux.broker_tasks`'s
counter, 0.02-0.9 cores there, ~0 elsewhere), and a network run that had that node ran three
times slower, one that did not ran as fast as without noise. The model, trained on the window
before each start over the run's own nodes (``scopes=("job",)``, ``final_scope="job"``),
flags a placement that includes a busy node and passes one that does not.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from tests.flux.broker_tasks import METRIC, SOURCE

WINDOW = 12.0  # the model card's window: the live predictor reads [now - WINDOW, now)
NODES = tuple(f"node{rank}" for rank in range(4))
# Cores busy on a node, as the collector reads them live here: 0.2-0.7 under the network noise
# (less on a loaded machine: the noise shares its cores; the synthetic levels go down to 0.02
# so that a starved noise still reads as noise), 0 with a sleep or nothing. The tests
# wait for the live window to be clearly on one side of the split the model learns between the
# synthetic levels.
BUSY, IDLE = 0.1, 0.03


def synthetic_campaign(out: Path, runs: int = 60) -> tuple[Path, Path]:
    rng = random.Random(11)
    out.mkdir()
    start0 = time.time() - 86400
    header = {"format": "rush-campaign/1", "campaign": "broker-noise", "seed": 11, "command": "broker_model",
              "machine": "test", "created": "2026-11-28T00:00:00+00:00"}  # fmt: skip
    lines, samples = [json.dumps(header)], []
    for index in range(runs):
        start = start0 + 100.0 * index
        nodes = sorted(rng.sample(NODES, 2))
        noisy = rng.choice(NODES) if index % 5 in (1, 3) else None  # 40 % of windows have noise
        slow = noisy in nodes
        runtime = (3.0 if slow else 1.0) * (1 + 0.02 * rng.random())
        lines.append(json.dumps({
            "job_id": str(index + 1), "app": ("halo", "cg")[index % 2], "wtype": "network", "nodes": nodes,
            "submit": start - 1, "start": start, "end": start + runtime, "runtime": runtime,
            "state": "COMPLETED", "probe": None, "noise": slow,
        }))  # fmt: skip
        busy = rng.uniform(0.02, 0.9)  # this run's noise level: the window's mean, not each sample's
        for t in range(0, int(WINDOW), 1):
            for node in NODES:
                level = busy * rng.uniform(0.8, 1.2) if node == noisy else rng.uniform(0.0, 0.002)
                samples.append(Sample(start - WINDOW + t, node, SOURCE, METRIC, level))
    records, store = out / "records.jsonl", out / "features.sqlite"
    records.write_text("\n".join(lines) + "\n")
    with FeatureStore(store) as fs:
        fs.insert(samples)
    return records, store


def train_model(work: Path, dataset_mod: Any, train_mod: Any) -> Path:
    """The learned model of the synthetic campaign on job-node features: ``work/variability.joblib``."""
    records, store = synthetic_campaign(work / "campaign")
    dataset = dataset_mod.build_dataset(
        records, store, dataset_mod.DatasetOptions(window=WINDOW, scopes=("job",))
    )
    assert int((dataset.y_class == 2).sum()) >= 8  # the slow runs vary
    trained = train_mod.train_variability(
        dataset,
        train_mod.TrainOptions(
            seed=0, models=("extra_trees",), n_estimators=20, final_scope="job", exclude=("probe",)
        ),
    )
    path = work / "variability.joblib"
    trained.save(path)
    return path


def node_window(store_path: Path, node: str) -> float:
    """The live window's mean busy cores on ``node`` (what the model splits on)."""
    with FeatureStore(store_path) as store:
        now = time.time()
        features = store.window_features([node], now - WINDOW, now, [SOURCE])
    return features.get(f"mean_{METRIC}", 0.0)
