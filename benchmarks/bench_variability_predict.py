"""The learned variability predictor at tentative placements (issue 21, "Targets"; issue 28: the
job's own features): prediction for 1 000 pending jobs each on its own 8, 16 or 32 nodes, packed
or spread (target <= 50 ms) and one job-node feature window over 512 nodes (target <= 100 ms),
each beside references measured in the same run.

1. A feature store of 512 nodes ``n000``..``n511`` written through ``FeatureStore.insert``: one
   reading every 30 s for an hour of the contention model's counters
   (:data:`rush.contention.state.METRICS`: sysfs_ib, lustre, procfs), busy nodes in runs of 16
   with network, I/O or compute load, the noise nodes (1/16) loud; an MPI probe (nine features,
   source ``mpi_probe``) on 16 random nodes every minute; where each node hangs (source
   ``topology``: leaf ``k // 32``, one pod) at every tick, as the contention simulator writes it.
2. A model trained by ``train_variability`` (AdaBoost, 50 estimators, RFE over the whole set) on
   400 runs read from this store's windows (random placements of 8, 16 or 32 nodes, packed or
   spread, and starts), labelled by the busiest node's InfiniBand bytes, the probe's allreduce
   time and the leaves the placement spans.
3. **Prediction**: ``predict_on(jobs, now, hosts)`` for ``--jobs`` jobs, each on its placement,
   at a ``now`` whose window no earlier run has read (the predictor's cache cannot serve it);
   ``warm``: the same call again at the same ``now`` (the planner's reruns of one pass).
   References: scikit-learn's ``pipeline.predict_proba`` alone on the same rows (the floor of
   any design that calls the model) and the compiled trees alone on them.
4. **Job-node window**: ``features_on(now, all 512 hosts)`` at fresh ``now`` values.
   Reference: fetching the window's raw rows for those hosts (the floor of any SQLite design).

``python -c pass`` (process start) is printed as the machine's speed reference. Figures are the
median of ``--repeat`` runs after one warm-up. The set-up's objects are frozen out of the
garbage collector (``gc.freeze()``, as a long-running daemon would after loading its model):
otherwise a full collection over the process's heap (~70 ms here) lands in some runs.

Run: ``python benchmarks/bench_variability_predict.py [--jobs 1000] [--repeat 7]``
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import bench_args
import numpy as np

from rush.collect.base import Sample
from rush.collect.probe import FEATURES as PROBE_NAMES
from rush.collect.probe import SOURCE as PROBE_SOURCE
from rush.collect.store import FeatureStore
from rush.contention.state import METRICS
from rush.models.variability.dataset import Dataset
from rush.models.variability.features import (
    TOPOLOGY_SOURCE,
    WTYPES,
    is_placement,
    vector,
    window_features_for,
    wtype_features,
)
from rush.models.variability.train import TrainOptions, train_variability
from rush.planner.variation import LearnedVariationPredictor

NODES = 512
INTERVAL = 30.0
HOUR = 3600.0
JOB_NODES = 16
SIZES = (8, 16, 32)
LEAF = 32
T_END = 1_700_003_600.0  # the store's last tick; predictions are asked in its last 10 minutes
# Per-node rates of a busy node by load kind, in the real collectors' units.
LOAD = {
    "network": {"ib_xmit_bytes_per_s": 3e9, "ib_port_xmit_wait_per_s": 2e6, "cpu_busy_frac": 0.7},
    "io": {"lustre_write_bytes_per_s": 4e8, "lustre_write_ops_per_s": 400.0, "cpu_busy_frac": 0.4},
    "compute": {"cpu_busy_frac": 0.97, "ib_xmit_bytes_per_s": 2e7},
}


def median_ms(repeat: int, fn: Callable[[int], Any]) -> float:
    """Median wall time of ``fn(run)`` over ``repeat`` runs after one warm-up, in ms."""
    fn(-1)
    times = []
    for run in range(repeat):
        t = time.perf_counter()
        fn(run)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def write_store(path: str, rng: np.random.Generator) -> int:
    """An hour of counters and probes on NODES nodes; returns the number of samples."""
    hosts = [f"n{h:03d}" for h in range(NODES)]
    metrics = [m for ms in METRICS.values() for m in ms]
    column = {m: k for k, m in enumerate(metrics)}
    source_of = {m: s for s, ms in METRICS.items() for m in ms}
    noise = np.arange(0, NODES, 16)  # 1/16 of the nodes carry the noise job
    total = 0
    with FeatureStore(path) as store:
        load = np.empty(NODES, dtype=object)
        for step in range(int(HOUR / INTERVAL) + 1):
            ts = T_END - HOUR + step * INTERVAL
            if step % 20 == 0:  # jobs change every 10 minutes, in blocks of 16 nodes
                kinds = rng.choice([*LOAD, "idle"], NODES // JOB_NODES, p=[0.35, 0.15, 0.3, 0.2])
                load = np.repeat(kinds, JOB_NODES)
            rates = rng.lognormal(0.0, 0.3, (NODES, len(metrics))) * 1e3  # idle background
            for kind, demands in LOAD.items():
                rows = np.flatnonzero(load == kind)
                for metric, rate in demands.items():
                    rates[rows, column[metric]] = rate * rng.lognormal(0.0, 0.2, len(rows))
            rates[noise, column["ib_xmit_bytes_per_s"]] = 1.1e10 * (0.5 + 0.5 * np.sin(step / 7.0) ** 2)
            rates[:, column["ib_rcv_bytes_per_s"]] = rates[:, column["ib_xmit_bytes_per_s"]] * 0.98
            rates[:, column["ib_port_xmit_packets_per_s"]] = rates[:, column["ib_xmit_bytes_per_s"]] / 2048
            rates[:, column["ib_port_rcv_packets_per_s"]] = rates[:, column["ib_rcv_bytes_per_s"]] / 2048
            rates[:, column["cpu_busy_frac"]] = np.clip(rates[:, column["cpu_busy_frac"]] / 1e3, 0, 1)
            samples = [
                Sample(ts, host, source_of[metric], metric, float(value))
                for host, row in zip(hosts, rates.tolist(), strict=True)
                for metric, value in zip(metrics, row, strict=True)
            ]
            if step % 2 == 0:  # an MPI probe on 16 random nodes every minute
                probe_hosts = rng.choice(NODES, JOB_NODES, replace=False)
                loud = float(np.isin(probe_hosts, noise).sum())
                values = {
                    name: 1e-5 * (1 + loud) * (1 + k / 9) * float(rng.lognormal(0, 0.1))
                    for k, name in enumerate(PROBE_NAMES)
                }
                samples += [
                    Sample(ts + 3.0, hosts[int(h)], PROBE_SOURCE, name, value)
                    for h in probe_hosts
                    for name, value in values.items()
                ]
            samples += [
                Sample(ts, host, TOPOLOGY_SOURCE, "leaf", float(h // LEAF)) for h, host in enumerate(hosts)
            ]
            samples += [Sample(ts, host, TOPOLOGY_SOURCE, "pod", 0.0) for host in hosts]
            total += store.insert(samples)
    return total


def placement(rng: np.random.Generator, hosts: list[str]) -> list[str]:
    """8, 16 or 32 nodes: half packed (consecutive from a random node), half spread at random."""
    size = int(rng.choice(SIZES))
    if rng.random() < 0.5:
        first = int(rng.integers(0, NODES - size))
        return hosts[first : first + size]
    return [hosts[int(k)] for k in sorted(rng.choice(NODES, size, replace=False))]


def train_model(store_path: str, model_path: str, rng: np.random.Generator, runs: int = 400) -> Any:
    """A model trained on this store's windows: ``runs`` 16-node runs at random starts in the
    hour, features as the dataset builder reads them (job-node with probe, all-node), labels from
    the busiest node's InfiniBand bytes plus the probe's allreduce time (the noise nodes')."""
    hosts = [f"n{h:03d}" for h in range(NODES)]
    rows, all_nodes = [], {}
    with FeatureStore(store_path) as store:
        for _ in range(runs):
            start = T_END - float(rng.integers(1, 100)) * INTERVAL + 0.5
            placed = placement(rng, hosts)
            if start not in all_nodes:
                all_nodes[start] = window_features_for(store, None, start, 300.0, with_probe=False)
            rows.append(all_nodes[start] | window_features_for(store, placed, start, 300.0))
    names = sorted({n for row in rows for n in row}) + [f"wtype_{w}" for w in WTYPES]
    wtypes = rng.integers(0, 3, runs)
    X = np.vstack(
        [vector(names, row | wtype_features(WTYPES[w])) for row, w in zip(rows, wtypes, strict=True)]
    )
    rank = np.argsort(np.argsort(np.nan_to_num(X[:, names.index("job_max_ib_xmit_bytes_per_s")])))
    rank += np.argsort(np.argsort(np.nan_to_num(X[:, names.index("probe_allreduce_max")])))
    rank += np.argsort(np.argsort(np.nan_to_num(X[:, names.index("job_leaves")])))
    y_class = np.digitize(rank, np.quantile(rank, [0.7, 0.85]))
    apps = np.array([f"app{i % 4}" for i in range(runs)], dtype=object)
    dataset = Dataset(
        X, names, (y_class == 2).astype(int), y_class, apps, np.array([WTYPES[w] for w in wtypes], dtype=object),
        np.array([str(i) for i in range(runs)], dtype=object), {"window": 300.0}, np.zeros(runs), np.ones(runs),
    )  # fmt: skip
    options = TrainOptions(models=("adaboost",), n_estimators=50, rfe_step=0.5, final_scope="best")
    trained = train_variability(dataset, options)
    trained.save(model_path)
    return trained


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=bench_args.positive, default=1000)
    parser.add_argument("--repeat", type=bench_args.positive, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    hosts = [f"n{h:03d}" for h in range(NODES)]
    started = time.perf_counter()
    py = median_ms(3, lambda _: subprocess.run([sys.executable, "-c", "pass"], check=True))
    with tempfile.TemporaryDirectory() as tmp:
        store_path = os.path.join(tmp, "features.sqlite")
        model_path = os.path.join(tmp, "variability.joblib")
        samples = write_store(store_path, rng)
        print(
            f"store: {NODES} nodes, {samples:,} samples (1 h of 30 s counters {sorted(METRICS)} + mpi_probe "
            f"every 60 s), written in {time.perf_counter() - started:.0f} s; reference `python -c pass`: {py:.0f} ms"
        )
        trained = train_model(store_path, model_path, rng)
        predictor = LearnedVariationPredictor(source=store_path, model=model_path)
        print(
            f"model: {trained.model_kind}, {len(trained.features)} features "
            f"({sum(f.startswith('job_') and not is_placement(f) for f in trained.features)} job-node, "
            f"{sum(is_placement(f) for f in trained.features)} placement, "
            f"{sum(f.startswith('all_') for f in trained.features)} all-node, "
            f"{sum(f.startswith('probe_') for f in trained.features)} probe); uses_job_nodes={predictor.uses_job_nodes}"
        )
        gc.collect()
        gc.freeze()
        jobs = [SimpleNamespace(job_id=i, wtype=WTYPES[i % 3]) for i in range(args.jobs)]
        placements = [placement(rng, hosts) for _ in jobs]

        def fresh_now(run: int) -> float:
            """A distinct window per run (whole ticks apart), so no cache can answer it."""
            return T_END - INTERVAL * (run + 2) + 0.5

        flags: list[bool] = []

        def cold(run: int) -> None:
            nonlocal flags
            flags = predictor.predict_on(jobs, fresh_now(run), placements)

        t_cold = median_ms(args.repeat, cold)
        t_warm = median_ms(args.repeat, lambda _: predictor.predict_on(jobs, fresh_now(0), placements))
        rows = []
        for job, placed in zip(jobs, placements, strict=True):
            features = predictor.features_on(fresh_now(0), placed) | wtype_features(job.wtype)
            rows.append(vector(predictor.features, features))
        X = np.vstack(rows)
        t_sklearn = median_ms(args.repeat, lambda _: trained.pipeline.predict_proba(X))
        t_trees = median_ms(args.repeat, lambda _: predictor._proba(X))
        unknown = sum(1 for j in jobs if predictor.job_outputs(j.job_id).get("variation_class") == "unknown")
        print(
            f"(a) predict_on, {args.jobs} jobs on 8/16/32 nodes: {t_cold:.1f} ms median, new window each run "
            f"(target <= 50 ms; {sum(flags)} flagged, {unknown} unknown) | same window again: {t_warm:.1f} ms | "
            f"reference predict_proba alone on the {len(X)} rows: {t_sklearn:.1f} ms, compiled trees alone: "
            f"{t_trees:.2f} ms"
        )
        t_window = median_ms(args.repeat, lambda run: predictor.features_on(fresh_now(run), hosts))
        with FeatureStore(store_path) as store:
            t_raw = median_ms(
                args.repeat,
                lambda run: store.db.execute(
                    "SELECT ts, host_id, set_id, vals FROM readings WHERE ts >= ? AND ts < ?",
                    (fresh_now(run) - 300.0, fresh_now(run)),
                ).fetchall(),
            )
        print(
            f"(b) features_on, one job-node window over {NODES} nodes: {t_window:.1f} ms median "
            f"(target <= 100 ms) | reference raw row fetch of the window: {t_raw:.1f} ms"
        )
        predictor.close()


if __name__ == "__main__":
    main()
