"""``rush energy classify --store``: a job's power read from the feature store and classified."""

from __future__ import annotations

import json

import numpy as np

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from tests.rush_cli import rush


def test_classify_job_power_from_store(tmp_path):
    path = tmp_path / "features.sqlite"
    start = 1_700_000_000.0
    t = start + np.arange(0, 3 * 3600, 20.0)  # three hours, a sample every 20 s
    periodic = 200 + 80 * np.sin(2 * np.pi * (t - start) / 900)  # 15-minute cycle
    with FeatureStore(path) as store:
        store.insert(
            [
                Sample(ti, h, "rapl", "rapl_package_watts", float(w / 2))
                for h in ("a", "b")
                for ti, w in zip(t, periodic, strict=True)
            ]
        )
        store.insert([Sample(ti, "c", "rapl", "rapl_package_watts", 150.0) for ti in t])
    out = rush(
        "energy",
        "classify",
        "--store",
        str(path),
        "--hosts",
        "a,b",
        "--start",
        str(start),
        "--end",
        str(t[-1]),
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["profile"] == "periodic"
    flat = rush(
        "energy",
        "classify",
        "--store",
        str(path),
        "--hosts",
        "c",
        "--start",
        str(start),
        "--end",
        str(t[-1]),
        "--json",
    )
    assert json.loads(flat.stdout)["profile"] == "constant"
    missing = rush(
        "energy",
        "classify",
        "--store",
        str(path),
        "--hosts",
        "zzz",
        "--start",
        str(start),
        "--end",
        str(t[-1]),
    )
    assert missing.returncode != 0 and "zzz" in missing.stderr
