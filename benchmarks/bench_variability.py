"""The learned variability predictor: prediction for 1 000 pending jobs (target <= 50 ms) and the
feature window over 3 000 nodes (target <= 1 s), each beside a reference measured in the same run.

1. A synthetic feature store (``--nodes`` nodes x ``--metrics`` counters, one reading every
   ``--interval`` s for ``--minutes`` minutes, written through ``FeatureStore.insert``).
2. **Feature window**: ``window_features_for(store, None, now, 300)`` (what the live predictor
   and the dataset builder compute: per-node means, then min/max/mean over nodes) against the
   floor of any SQLite design: fetching the window's raw rows (``SELECT ... WHERE ts`` only).
3. **Prediction**: a model trained by ``train_variability`` (AdaBoost, ``--estimators``) on a
   synthetic dataset with the store's all-node feature names; ``predict_from`` for 1 000
   pending jobs given the cycle's window features (the daemon computes the window once per
   cycle), against the reference of scikit-learn's ``pipeline.predict_proba`` on one row
   per job. The end-to-end cycle cost is the window plus the prediction.

Run: ``python benchmarks/bench_variability.py [--nodes 3000] [--metrics 22] [--jobs 1000]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from types import SimpleNamespace

import bench_args
import numpy as np

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.models.variability.dataset import CLASS_NAMES, Dataset
from rush.models.variability.features import (
    WTYPE_FEATURES,
    WTYPES,
    vector,
    window_features_for,
    wtype_features,
)
from rush.models.variability.train import TrainOptions, train_variability
from rush.planner.variation import LearnedVariationPredictor


def best_of(repeat: int, fn) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=bench_args.positive, default=3000)
    parser.add_argument(
        "--metrics", type=bench_args.positive, default=22
    )  # the published InfiniBand counter count
    parser.add_argument("--minutes", type=bench_args.positive, default=10)
    parser.add_argument("--interval", type=bench_args.positive_number, default=30.0)
    parser.add_argument("--jobs", type=bench_args.positive, default=1000)
    parser.add_argument("--estimators", type=bench_args.positive, default=100)
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    hosts = [f"n{h:05d}" for h in range(args.nodes)]
    metrics = [f"ib_c{m:02d}_per_s" for m in range(args.metrics)]
    now = 1_700_000_000.0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "features.sqlite")
        with FeatureStore(path) as store:
            for step in range(int(args.minutes * 60 / args.interval)):
                ts = now - args.minutes * 60 + step * args.interval + 0.5
                values = rng.random((args.nodes, args.metrics)).tolist()
                store.insert(
                    Sample(ts, host, "bench", metric, value)
                    for host, row in zip(hosts, values, strict=True)
                    for metric, value in zip(metrics, row, strict=True)
                )
            size = store.size_bytes() / 2**20
        in_window = args.nodes * args.metrics * int(300 / args.interval)
        print(
            f"store: {args.nodes} nodes x {args.metrics} counters, {size:.1f} MiB; {in_window:,} samples in the window"
        )
        with FeatureStore(path) as store:
            t_window, features, med_window = best_of(
                args.repeat,
                lambda: window_features_for(store, None, now, 300.0, scope="all", with_probe=False),
            )
            t_raw, rows, med_raw = best_of(
                args.repeat,
                lambda: store.db.execute(
                    "SELECT ts, host_id, set_id, vals FROM readings WHERE ts >= ? AND ts < ?",
                    (now - 300, now),
                ).fetchall(),
            )
        print(
            f"feature window, all {args.nodes} nodes: {t_window * 1000:.0f} ms best, {med_window * 1000:.0f} ms "
            f"median ({len(features)} features; target <= 1000 ms) | reference raw row fetch "
            f"({len(rows):,} rows): {t_raw * 1000:.0f} ms best"
        )
        # A model on the store's feature names (labels from one counter, so it has something to learn).
        names = sorted(features) + list(WTYPE_FEATURES)
        n = 400
        X = rng.random((n, len(names)))
        X[:, len(features) :] = np.eye(3)[rng.integers(0, 3, n)]
        y_class = np.where(X[:, 0] > 0.85, 2, np.where(X[:, 0] > 0.75, 1, 0))
        apps = np.array([f"app{i % 4}" for i in range(n)], dtype=object)
        dataset = Dataset(
            X, names, (y_class == 2).astype(int), y_class, apps, np.array(["network"] * n, dtype=object),
            np.array([str(i) for i in range(n)], dtype=object), {"window": 300.0}, np.zeros(n), np.ones(n),
        )  # fmt: skip
        options = TrainOptions(
            models=("adaboost",), n_estimators=args.estimators, rfe_step=0.5, final_scope="all"
        )
        trained = train_variability(dataset, options)
        model = os.path.join(tmp, "variability.joblib")
        trained.save(model)
        predictor = LearnedVariationPredictor(source=path, model=model)
        jobs = [SimpleNamespace(job_id=i, wtype=WTYPES[i % 3]) for i in range(args.jobs)]
        t_pred, flags, med_pred = best_of(args.repeat, lambda: predictor.predict_from(features, jobs))
        rows_per_job = np.vstack([vector(trained.features, features | wtype_features(j.wtype)) for j in jobs])
        t_ref, _, _ = best_of(args.repeat, lambda: trained.pipeline.predict_proba(rows_per_job))
        print(
            f"prediction, {args.jobs} pending jobs ({trained.model_kind}, {args.estimators} estimators, "
            f"{len(trained.features)} features, classes {[CLASS_NAMES[c] for c in trained.card['classes']]}): "
            f"{t_pred * 1000:.1f} ms best, {med_pred * 1000:.1f} ms median (target <= 50 ms; {sum(flags)} flagged) "
            f"| reference predict_proba, one row per job: {t_ref * 1000:.1f} ms"
        )
        t_cycle, _, _ = best_of(args.repeat, lambda: predictor.predict(jobs, now))
        print(f"one cycle end to end (window from the store + prediction): {t_cycle * 1000:.0f} ms best")
        predictor.close()


if __name__ == "__main__":
    main()
