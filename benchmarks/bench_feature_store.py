"""Feature-store window query: 5 minutes over 3,000 nodes x 100 metrics. Target <= 1 s.

Fills a store with one sample per node, metric and minute for ``--minutes`` minutes, then
times ``window_features`` over the last 5 minutes for all nodes and for a 64-node job.

Run: ``python benchmarks/bench_feature_store.py [--nodes 3000] [--metrics 100] [--minutes 10]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from rush.collect.store import FeatureStore


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=3000)
    parser.add_argument("--metrics", type=int, default=100)
    parser.add_argument("--minutes", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "features.sqlite")
        store = FeatureStore(path)
        # Register names once, then bulk-load rows (the collectors' insert path does the same per cycle).
        t0 = time.perf_counter()
        hosts = [f"n{h:05d}" for h in range(args.nodes)]
        metrics = [f"m{m:03d}" for m in range(args.metrics)]
        with store.db:
            store.db.executemany("INSERT INTO hosts (id, name) VALUES (?, ?)", enumerate(hosts))
            store.db.executemany(
                "INSERT INTO metrics (id, name, source) VALUES (?, ?, 'bench')", enumerate(metrics)
            )
        store.close()
        store = FeatureStore(path)
        now = 1_700_000_000.0
        for minute in range(args.minutes):
            ts = now - (args.minutes - minute) * 60
            values = rng.random(args.nodes * args.metrics)
            rows = (
                (ts, m, h, float(values[h * args.metrics + m]))
                for h in range(args.nodes)
                for m in range(args.metrics)
            )
            with store.db:
                store.db.executemany(
                    "INSERT INTO samples (ts, metric_id, host_id, value) VALUES (?, ?, ?, ?)", rows
                )
        fill = time.perf_counter() - t0
        rows = args.nodes * args.metrics * args.minutes
        size = os.path.getsize(path) + (
            os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0
        )
        print(f"filled {rows:,} samples in {fill:.1f} s; store {size / 2**20:.0f} MiB")
        for label, job_hosts in (("all nodes", None), ("64-node job", hosts[:64])):
            times = []
            for _ in range(5):
                t1 = time.perf_counter()
                features = store.window_features(job_hosts, now - 300, now)
                times.append(time.perf_counter() - t1)
            print(
                f"window_features 5 min, {label:12}: median {statistics.median(times) * 1e3:.0f} ms "
                f"(max {max(times) * 1e3:.0f} ms; target 1000 ms), {len(features)} features"
            )
        store.close()


if __name__ == "__main__":
    main()
