"""Feature-store window query: 5 minutes over 3,000 nodes x 100 metrics. Target <= 1 s.

Fills a store through ``FeatureStore.insert`` (the collectors' path) with one reading per
node and minute for ``--minutes`` minutes (100 metrics each), then times
``window_features`` over the last 5 minutes — 3,000 x 100 x 5 = 1.5 M samples — for all
nodes and for a 64-node job, and prints the database size.

Run: ``python benchmarks/bench_feature_store.py [--nodes 3000] [--metrics 100] [--minutes 10]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import bench_args
import numpy as np

from rush.collect.base import Sample
from rush.collect.store import FeatureStore


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=bench_args.positive, default=3000)
    parser.add_argument("--metrics", type=bench_args.positive, default=100)
    parser.add_argument("--minutes", type=bench_args.positive, default=10)
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    hosts = [f"n{h:05d}" for h in range(args.nodes)]
    metrics = [f"m{m:03d}_per_s" for m in range(args.metrics)]
    now = 1_700_000_000.0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "features.sqlite")
        with FeatureStore(path) as store:
            fill = 0.0
            for minute in range(args.minutes):
                ts = now - (args.minutes - minute) * 60 + 1  # inside [now - 300, now) for the last 5
                values = rng.random((args.nodes, args.metrics)).tolist()
                batch = [
                    Sample(ts, host, "bench", metric, value)
                    for host, row in zip(hosts, values, strict=True)
                    for metric, value in zip(metrics, row, strict=True)
                ]
                t0 = time.perf_counter()  # time the store, not the Sample construction
                store.insert(batch)
                fill += time.perf_counter() - t0
            total = args.nodes * args.metrics * args.minutes
            print(
                f"inserted {total:,} samples in {fill:.1f} s ({total / fill:,.0f} samples/s); "
                f"store {store.size_bytes() / 2**20:.1f} MiB"
            )
        with FeatureStore(path) as store:  # a fresh reader, as the daemon opens it
            for label, job_hosts in (("all nodes", None), ("64-node job", hosts[:64])):
                times = []
                for _ in range(args.repeat):
                    t1 = time.perf_counter()
                    features = store.window_features(job_hosts, now - 300, now)
                    times.append(time.perf_counter() - t1)
                print(
                    f"window_features 5 min, {label:12}: median {statistics.median(times) * 1e3:.0f} ms "
                    f"(max {max(times) * 1e3:.0f} ms; target 1000 ms), {len(features)} features"
                )


if __name__ == "__main__":
    main()
