"""The batched window and prediction (issue 21, speed targets) answer exactly as one by one.

A random feature store (rush's SQLite FeatureStore, written through insert(); nothing is faked):
30 hosts, counters from three sources (one metric pooled from two of them, readings whose values
are stamped a few ms apart, a host silent in the window, a host whose last reading ends just
before it), MPI probes on random node sets (two of them at the same instant). Then:

* :class:`WindowReader` rows equal ``window_features_for`` for random node sets (duplicates,
  unknown hosts, empty sets, one node, all nodes), across starts that it serves;
* ``predict_on`` for many jobs at once equals ``features_on`` + ``predict_from`` per placement
  (flags and journal outputs), for a model with job-node, all-node and probe features and for a
  job-node-only model;
* after a reading arrives in the window the predictor answers from the new content.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from rush.collect.base import Sample
from rush.collect.probe import FEATURES as PROBE_NAMES
from rush.collect.probe import SOURCE as PROBE_SOURCE
from rush.collect.store import FeatureStore
from rush.models.variability.dataset import Dataset
from rush.models.variability.features import WTYPES, WindowReader, is_placement, window_features_for
from rush.models.variability.train import TrainOptions, train_variability
from rush.planner.variation import LearnedVariationPredictor, _short_hosts

T0 = 1_700_000_000.0
HOSTS = [f"h{i:02d}" for i in range(30)]
SILENT, EARLY = "h29", "h28"  # no reading in the windows; last reading just before them
WINDOW = 300.0
NOWS = (T0 + 600.5, T0 + 605.0, T0 + 745.25)  # the first two see the same readings
COUNTERS = {
    "sysfs_ib": ("ib_xmit_bytes_per_s", "ib_port_xmit_wait_per_s"),
    "procfs": ("cpu_busy_frac",),
    "ldms": ("ib_xmit_bytes_per_s", "lustre_write_bytes_per_s"),  # ib bytes pooled with sysfs_ib
}


def write_store(path: Path, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    samples: list[Sample] = []
    for tick in np.arange(T0, T0 + 900.0, 30.0):
        for host in HOSTS:
            if host == SILENT or (host == EARLY and tick > NOWS[0] - WINDOW - 30):
                continue
            for source, metrics in COUNTERS.items():
                if source == "ldms" and host not in HOSTS[:6]:
                    continue
                spread = rng.random() < 0.3  # values of one reading stamped ms apart
                for k, metric in enumerate(metrics):
                    value = float(rng.lognormal(8.0, 2.0)) * (1e6 if metric.startswith("ib_") else 1.0)
                    samples.append(Sample(tick + 0.001 * k * spread, host, source, metric, value))
    if EARLY not in {s.host for s in samples if s.timestamp > NOWS[0] - WINDOW - 0.9}:
        # One reading that starts just before the window opens (its values lie before it).
        samples.append(Sample(NOWS[0] - WINDOW - 0.5, EARLY, "procfs", "cpu_busy_frac", 0.5))
    probe_times = sorted(rng.uniform(T0 + 200, T0 + 880, 12).tolist())
    probe_times.append(probe_times[5])  # two probes at the same instant
    for t in probe_times:
        hosts = rng.choice(HOSTS[:-1], int(rng.integers(2, 9)), replace=False)
        values = {name: float(rng.lognormal(-10, 0.5)) for name in PROBE_NAMES}
        samples += [Sample(t, str(h), PROBE_SOURCE, name, v) for h in hosts for name, v in values.items()]
    with FeatureStore(path) as store:
        store.insert(samples)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batch") / "store.sqlite"
    write_store(path)
    return path


def host_sets(rng: np.random.Generator, n: int) -> list[list[str]]:
    sets = [list(rng.choice(HOSTS, int(rng.integers(1, 17)), replace=True)) for _ in range(n)]
    return sets + [[], [SILENT], [EARLY, SILENT], ["nope", HOSTS[3]], list(HOSTS), [HOSTS[0]] * 3]


def test_reader_rows_equal_window_features(store_path: Path) -> None:
    rng = np.random.default_rng(1)
    with FeatureStore(store_path) as store:
        reader = WindowReader(store, NOWS[0], WINDOW)
        for now in NOWS:
            fresh = WindowReader(store, now, WINDOW)
            if now == NOWS[1]:
                assert reader.serves(store, now, WINDOW)  # no reading between the two windows
            else:
                reader = fresh
            sets = host_sets(rng, 40)
            for scope in ("job", "all"):
                for with_probe in (True, False):
                    for r in (reader, fresh):
                        table = r.table(sets, scope, with_probe=with_probe)
                        for k, hosts in enumerate(sets):
                            expected = window_features_for(
                                store, hosts, now, WINDOW, scope=scope, with_probe=with_probe
                            )
                            assert table.row(k) == expected, (now, scope, hosts)
            assert fresh.all_nodes("all") == window_features_for(store, None, now, WINDOW, scope="all")
        # The sets did see counters, pooled sources and probes (the comparison is not vacuous).
        row = WindowReader(store, NOWS[0], WINDOW).table([HOSTS[:6]]).row(0)
        assert {"job_mean_lustre_write_bytes_per_s", "job_max_ib_xmit_bytes_per_s", "probe_send_max"} <= set(
            row
        )
        assert not WindowReader(store, NOWS[0], WINDOW).serves(store, NOWS[2], WINDOW)


def train_model(store_path: Path, out: Path, scope: str) -> Path:
    """A small model on the store's names whose labels follow a job-node and an all-node counter."""
    with FeatureStore(store_path) as store:
        job = window_features_for(store, HOSTS[:6], NOWS[0], WINDOW, scope="job", with_probe=False)
    counters = sorted(k[4:] for k in job if not is_placement(k))  # counters only
    names = (
        [f"job_{c}" for c in counters]
        + [f"all_{c}" for c in counters]
        + [f"probe_{p}" for p in PROBE_NAMES]
        + [f"wtype_{w}" for w in WTYPES]
    )
    rng = np.random.default_rng(3)
    n = 240
    X = rng.lognormal(0.0, 1.0, (n, len(names)))
    X[:, -3:] = np.eye(3)[rng.integers(0, 3, n)]
    signal = X[:, names.index("job_max_cpu_busy_frac")] + X[:, names.index("all_mean_cpu_busy_frac")]
    signal += X[:, names.index("probe_send_max")]
    y = np.digitize(signal, np.quantile(signal, [0.6, 0.8]))
    dataset = Dataset(
        X, names, (y == 2).astype(int), y, np.array([f"a{i % 3}" for i in range(n)], dtype=object),
        np.array(["network"] * n, dtype=object), np.array([str(i) for i in range(n)], dtype=object),
        {"window": WINDOW}, np.zeros(n), np.ones(n),
    )  # fmt: skip
    # Leave-one-application-out selection keeps job, all and probe features here (all compared below).
    options = TrainOptions(
        models=("adaboost",), n_estimators=8, rfe_step=0.5, final_scope=scope, selection="loao"
    )
    path = out / f"model-{scope}.joblib"
    train_variability(dataset, options).save(path)
    return path


def one_by_one(predictor: LearnedVariationPredictor, jobs: list[Any], now: float, hosts: list[Any]):
    """The definition: features_on then predict_from, placement by placement."""
    flags, outputs = [], {}
    for job, placed in zip(jobs, hosts, strict=True):
        key = None if placed is None else tuple(placed)
        try:
            flag = predictor.predict_from(predictor.features_on(now, key), [job])[0]
            out = dict(predictor.job_outputs(job.job_id))
        except Exception as exc:  # _Unknown: the job is not flagged, the reason is journaled
            assert type(exc).__name__ == "_Unknown", exc
            flag, out = False, {"variation_class": "unknown", "variation_reason": str(exc)}
        if key is not None:
            out["variation_nodes"] = _short_hosts(key)
        flags.append(flag)
        outputs[job.job_id] = out
    return flags, outputs


@pytest.mark.parametrize("scope", ["both", "job"])
def test_predict_on_equals_one_by_one(store_path: Path, tmp_path: Path, scope: str) -> None:
    model = train_model(store_path, tmp_path, scope)
    batched = LearnedVariationPredictor(source=store_path, model=model)
    single = LearnedVariationPredictor(source=store_path, model=model)
    assert batched.uses_job_nodes and any(f.startswith("probe_") for f in batched.features)
    assert any(f.startswith("all_") for f in batched.features) == (scope == "both")
    rng = np.random.default_rng(5)
    sets = host_sets(rng, 120)
    placements: list[Any] = [*sets, None, sets[0]]  # an unplaced job; two jobs on one placement
    jobs = [SimpleNamespace(job_id=k, wtype=[*WTYPES, "gpu"][k % 4]) for k in range(len(placements))]
    seen: set[str] = set()
    for now in NOWS:
        flags = batched.predict_on(jobs, now, placements)
        expected_flags, expected = one_by_one(single, jobs, now, placements)
        assert flags == expected_flags
        assert {j.job_id: batched.job_outputs(j.job_id) for j in jobs} == expected
        seen |= {out["variation_class"] for out in expected.values()}
    # Flagged, unflagged and unknown answers were all compared.
    assert {"variation", "unknown"} <= seen and len(seen) >= 3
    assert any(flags)


def test_new_reading_in_the_window_is_seen(store_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    path.write_bytes(store_path.read_bytes())
    model = train_model(store_path, tmp_path, "job")
    predictor = LearnedVariationPredictor(source=path, model=model)
    jobs = [SimpleNamespace(job_id=k, wtype="network") for k in range(3)]
    placed = [HOSTS[:4], HOSTS[4:8], [SILENT]]
    now = NOWS[0]
    predictor.predict_on(jobs, now, placed)
    before = predictor.job_outputs(2)
    assert before["variation_class"] == "unknown"  # nothing on the silent host yet
    with FeatureStore(path) as writer:  # the collector, another connection
        writer.insert(Sample(now - 10.0, SILENT, "procfs", "cpu_busy_frac", 0.9) for _ in range(1))
        writer.insert(Sample(now - 10.0, SILENT, PROBE_SOURCE, name, 1e-4) for name in PROBE_NAMES)
    predictor.predict_on(jobs, now, placed)
    fresh = LearnedVariationPredictor(source=path, model=model)
    fresh.predict_on(jobs, now, placed)
    assert predictor.job_outputs(2) == fresh.job_outputs(2)
    assert predictor.job_outputs(2)["variation_class"] != "unknown"
