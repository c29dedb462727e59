"""The variation predictor at the nodes a job would get (issue 20 §3), live.

A synthetic campaign whose noise is on one leaf switch only (n00-n03, leaf 0; n04-n07 on leaf 1
stay quiet): a model trained on job-node features learns that a run on leaf 0 during the noise
varies. Live, the planner runs the core once, predicts on each would-start job's nodes, and
reruns; with variability-aware placement the quiet leaf takes the flagged job.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.core.resources import Node, Request
from rush.daemon.service import Daemon
from rush.models.variability.dataset import DatasetOptions, build_dataset
from rush.models.variability.train import TrainOptions, train_variability
from rush.planner.config import parse_config
from rush.planner.variation import get_predictor
from rush.rjms.base import ClusterState, RJMSJob
from tests.models.variability.synth import NOISE, PERIOD, T0, noise_on
from tests.queue_backend import Queue

HOSTS = [f"n{i:02d}" for i in range(8)]
LOUD = HOSTS[:4]  # leaf 0: the noise is here
NOISY = T0 + 2 * PERIOD + 420.0
QUIET = T0 + 2 * PERIOD + 2000.0


def write_campaign(directory: Path, runs: int = 160, seed: int = 3) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    starts = T0 + 400.0 + np.sort(rng.uniform(0, PERIOD * 6, runs))
    end = float(starts[-1] + 600)
    with FeatureStore(directory / "store.sqlite") as store:
        samples = []
        for t in np.arange(T0, end, 10.0):
            for h in HOSTS:
                loud = h in LOUD and noise_on(float(t))
                samples.append(
                    Sample(
                        float(t),
                        h,
                        "sysfs_ib",
                        "ib_xmit_bytes_per_s",
                        (5e8 if loud else 1e7) * rng.uniform(0.8, 1.2),
                    )
                )
        store.insert(samples)
    header = {"format": "rush-campaign/1", "campaign": "leaf-noise", "seed": seed, "command": "test",
              "machine": "test", "created": "2026-11-26T00:00:00Z"}  # fmt: skip
    lines = [json.dumps(header)]
    for i, start in enumerate(starts):
        leaf = HOSTS[:4] if i % 2 else HOSTS[4:]
        nodes = sorted(rng.choice(leaf, 2, replace=False).tolist())
        slow = 1.6 if nodes[0] in LOUD and noise_on(float(start)) else 1.0
        runtime = 20.0 * slow * rng.uniform(0.995, 1.005)
        lines.append(json.dumps({
            "job_id": str(1000 + i), "app": ("halo", "cg")[i % 4 // 2], "wtype": "network", "nodes": nodes,
            "submit": float(start) - 5, "start": float(start), "end": float(start) + runtime,
            "runtime": runtime, "state": "COMPLETED", "probe": None, "noise": slow > 1,
        }))  # fmt: skip
    (directory / "records.jsonl").write_text("\n".join(lines) + "\n")
    return directory / "records.jsonl", directory / "store.sqlite"


@pytest.fixture(scope="module")
def job_model(tmp_path_factory) -> tuple[Path, Path]:
    """(model file trained on job-node features, the campaign's store)."""
    records, store = write_campaign(tmp_path_factory.mktemp("leaf-campaign"))
    dataset = build_dataset(records, store, DatasetOptions(window=300.0, scopes=("job", "all")))
    options = TrainOptions(
        seed=0, models=("extra_trees",), n_estimators=20, final_scope="job", exclude=("probe",)
    )
    model = tmp_path_factory.mktemp("leaf-model") / "variability.joblib"
    train_variability(dataset, options).save(model)
    return model, store


def test_job_node_model_answers_per_placement(job_model) -> None:
    model, store = job_model
    predictor = get_predictor("learned", source=store, model=model)
    assert predictor.uses_job_nodes and all(not f.startswith("all_") for f in predictor.features)
    job = [SimpleNamespace(job_id=1, wtype="network")]
    assert predictor.predict_on(job, NOISY, [["n00", "n01"]]) == [True]
    assert predictor.job_outputs(1)["variation_nodes"] == "n00,n01"
    assert predictor.predict_on(job, NOISY, [["n04", "n05"]]) == [False]
    assert predictor.predict_on(job, QUIET, [["n00", "n01"]]) == [False]
    leaves = {0: HOSTS[:4], 1: HOSTS[4:]}
    assert predictor.quiet_leaves(NOISY, leaves) == {0: False, 1: True}
    assert predictor.quiet_leaves(QUIET, leaves) == {0: True, 1: True}
    assert NOISE > 300  # the whole window before NOISY is noisy


def _state(now: float) -> ClusterState:
    nodes = tuple(Node(h, 4, leaf=k // 4, partitions=("batch",)) for k, h in enumerate(HOSTS))
    job = RJMSJob(7, "PENDING", now - 5, 8, 600.0, tags={"wtype": "network"},
                  request=Request(nodes=2, cores_per_node=4, exclusive=True))  # fmt: skip
    return ClusterState(now, 32, 32, (job,), nodes=nodes)


def _daemon(tmp_path: Path, model: Path, store: Path, now: float, placement: str) -> Daemon:
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / f"journal-{placement}.sqlite"), "dry_run": False},
            "policy": {"placement": placement},
            "variation": {"enabled": True, "predictor": "learned", "store": str(store), "model": str(model)},
        }
    )
    return Daemon(config, backend=Queue(_state(now)))


@pytest.mark.parametrize("now, held", [(NOISY, [7]), (QUIET, [])])
def test_first_fit_predicts_on_the_cores_nodes(tmp_path, job_model, now, held) -> None:
    """First fit would start job 7 on n00,n01 (leaf 0): flagged during the noise, so held."""
    model, store = job_model
    daemon = _daemon(tmp_path, model, store, now, "first-fit")
    report = daemon.run_cycle()
    assert report.ok, report.error
    assert daemon.backend.held == held
    _, built, _ = daemon.last
    assert built.outputs[7]["variation_nodes"] == "n00,n01"
    assert built.outputs[7]["variation_scope"] == "job nodes at the tentative placement"
    assert built.snapshot.pending[0].variable == bool(held)
    daemon.journal.close()


def test_variability_placement_moves_the_job_to_the_quiet_leaf(tmp_path, job_model) -> None:
    """Same noise, variability-aware placement: leaf 0 is loud, so job 7 starts on leaf 1."""
    model, store = job_model
    daemon = _daemon(tmp_path, model, store, NOISY, "variability")
    report = daemon.run_cycle()
    assert report.ok, report.error
    assert daemon.backend.held == []
    _, built, decisions = daemon.last
    assert [n.quiet for n in built.snapshot.nodes] == [False] * 4 + [True] * 4
    start = [d for d in decisions.decisions if d.action in ("start", "backfill")]
    assert [d.job_id for d in start] == [7] and set(start[0].nodes) <= set(HOSTS[4:])
    daemon.journal.close()


def test_rule_quiet_leaves_reads_each_leafs_counter(job_model) -> None:
    _, store = job_model
    rule = get_predictor("rule", source=store, threshold=1e8)
    leaves = {0: HOSTS[:4], 1: HOSTS[4:], 2: []}
    assert rule.quiet_leaves(NOISY, leaves) == {0: False, 1: True, 2: True}
    assert rule.quiet_leaves(QUIET, leaves) == {0: True, 1: True, 2: True}


def test_quiet_leaves_without_data_are_quiet(job_model, tmp_path) -> None:
    """No store, or a window without samples: every leaf quiet (no data never steers a job)."""
    model, store = job_model
    leaves = {0: HOSTS[:4], 1: HOSTS[4:]}
    missing = tmp_path / "absent.sqlite"
    assert get_predictor("rule", source=missing).quiet_leaves(NOISY, leaves) == {0: True, 1: True}
    assert not missing.exists()
    assert get_predictor("learned", source=missing, model=model).quiet_leaves(NOISY, leaves) == {
        0: True,
        1: True,
    }
    late = NOISY + 100 * PERIOD  # long after the campaign's last sample
    assert get_predictor("learned", source=store, model=model).quiet_leaves(late, leaves) == {
        0: True,
        1: True,
    }
