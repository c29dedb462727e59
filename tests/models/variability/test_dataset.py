"""The dataset builder on a real feature store: features, labels, description, save/load, bad records."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.models.variability.dataset import (
    DatasetError,
    DatasetOptions,
    build_dataset,
    label_thresholds,
    labels,
    load_dataset,
    read_records,
)
from rush.models.variability.features import (
    PLACEMENT_FEATURES,
    PROBE_FEATURES,
    WTYPE_FEATURES,
    is_placement,
    window_features_for,
)
from tests.models.variability.synth import HOSTS, T0, noise_on, write_campaign


def test_feature_names_follow_the_contract(dataset):
    names = dataset.feature_names
    assert names[-3:] == list(WTYPE_FEATURES)
    assert [n for n in names if n.startswith("probe_")] == list(PROBE_FEATURES)
    assert [n for n in names if is_placement(n)] == list(PLACEMENT_FEATURES)  # what the job brings
    counters = [n for n in names if n.startswith(("job_", "all_")) and not is_placement(n)]
    assert "all_mean_ib_xmit_bytes_per_s" in counters and "job_max_cpu_busy" in counters
    for n in counters:
        scope, stat, _ = n.split("_", 2)
        assert scope in ("job", "all") and stat in ("min", "max", "mean")
    assert dataset.X.shape == (len(dataset), len(names)) and dataset.X.dtype == np.float64


def test_rows_are_the_window_before_the_start(dataset, campaign):
    """The dataset's row is exactly window_features_for on [start - 300, start) (the live function)."""
    records, store_path = campaign
    run = read_records(records).runs[5]
    i = list(dataset.job_ids).index(run.job_id)
    with FeatureStore(store_path) as store:
        job = window_features_for(store, list(run.nodes), run.start, 300.0, probe=run.probe)
        everyone = window_features_for(store, None, run.start, 300.0, with_probe=False)
        raw = store.samples(list(run.nodes), run.start - 300.0, run.start, metrics=["ib_xmit_bytes_per_s"])
    row = dict(zip(dataset.feature_names, dataset.X[i], strict=True))
    for name, value in (job | everyone).items():
        assert row[name] == pytest.approx(value)
    by_host = {h: np.mean([s.value for s in raw if s.host == h]) for h in run.nodes}
    assert row["job_max_ib_xmit_bytes_per_s"] == pytest.approx(max(by_host.values()))
    assert all(s.timestamp < run.start for s in raw)
    assert row[f"wtype_{run.wtype}"] == 1.0 and sum(row[n] for n in WTYPE_FEATURES) == 1.0


def test_labels_per_application():
    runtimes = np.array([10.0] * 18 + [10.5, 30.0])
    apps = np.array(["a"] * 20, dtype=object)
    t = label_thresholds(runtimes)
    assert t["mu"] == pytest.approx(runtimes.mean()) and t["sigma"] == pytest.approx(runtimes.std())
    y_binary, y_class, per_app = labels(
        np.concatenate([runtimes, runtimes * 100]), np.concatenate([apps, apps + "b"])
    )
    assert y_binary.tolist() == ([0] * 19 + [1]) * 2  # relative to each application's own mu and sigma
    assert y_class[19] == 2 and set(y_class[:19]) == {0}
    assert per_app["ab"]["mu"] == pytest.approx(100 * per_app["a"]["mu"])
    # The middle class: with runtimes [10, 10, 13] the slow run is sqrt(2) = 1.41 sigma above mu,
    # between mu + 1.2 sigma and mu + 1.5 sigma: "little", and not variation for the binary label.
    y_binary, y_class, _ = labels(np.array([10.0, 10.0, 13.0]), np.array(["x"] * 3, dtype=object))
    assert y_class.tolist() == [0, 0, 1] and y_binary.tolist() == [0, 0, 0]


def test_labels_carry_the_noise(dataset):
    """The synthetic slow runs are the noisy ones: the label the model will learn is real."""
    noise = np.array(dataset.noise, dtype=bool)
    assert dataset.y_binary.sum() > 0
    assert noise[dataset.y_binary == 1].all()
    assert set(np.unique(dataset.y_class)) <= {0, 1, 2}


def test_description_reports_absent_counters(dataset):
    d = dataset.description
    families = d["counters"]["families"]
    assert families["infiniband"]["present"] == ["ib_xmit_bytes_per_s"]
    assert families["omni-path"]["absent"] and families["lustre"]["absent"]
    assert d["counters"]["other"] == ["cpu_busy"]
    assert d["generator"] == {"seed": 1, "command": "tests/models/variability/synth.py seed=1"}
    assert d["window"] == 300.0 and d["scopes"] == ["job", "all"]
    assert d["rows"] == len(dataset) and d["rows_without_counters"] == 0


def test_save_and_load_round_trip(dataset, tmp_path):
    dataset.save(tmp_path / "ds")
    back = load_dataset(tmp_path / "ds")
    assert back.feature_names == dataset.feature_names
    np.testing.assert_array_equal(np.isnan(back.X), np.isnan(dataset.X))
    np.testing.assert_allclose(np.nan_to_num(back.X), np.nan_to_num(dataset.X))
    assert back.y_binary.tolist() == dataset.y_binary.tolist()
    assert back.y_class.tolist() == dataset.y_class.tolist()
    assert back.apps.tolist() == dataset.apps.tolist() and back.noise == dataset.noise
    assert (
        json.loads((tmp_path / "ds" / "dataset.json").read_text())["csv_sha256"]
        == back.description["csv_sha256"]
    )


def test_edited_csv_is_refused(dataset, tmp_path):
    dataset.save(tmp_path / "ds")
    csv_path = tmp_path / "ds" / "dataset.csv"
    csv_path.write_text(csv_path.read_text().replace(",1,", ",0,", 1))
    with pytest.raises(DatasetError, match="sha256"):
        load_dataset(tmp_path / "ds")


def test_scope_all_only(campaign):
    records, store = campaign
    ds = build_dataset(records, store, DatasetOptions(scopes=("all",)))
    assert not any(n.startswith("job_") and not is_placement(n) for n in ds.feature_names)
    # the job's own node count, whatever the scopes (the synthetic store has no topology)
    assert (ds.X[:, ds.feature_names.index("job_nodes")] == 2).all()
    assert np.isnan(ds.X[:, ds.feature_names.index("job_leaves")]).all()
    assert "all_mean_ib_xmit_bytes_per_s" in ds.feature_names


def test_probe_from_the_store_when_the_record_has_none(tmp_path):
    records, store_path = write_campaign(tmp_path, runs_per_app=4, with_probe=False)
    run = read_records(records).runs[0]
    with FeatureStore(store_path) as store:
        store.insert(
            [
                Sample(run.start + 3.0, h, "mpi_probe", name[6:], 0.25)
                for h in run.nodes
                for name in PROBE_FEATURES
            ]
        )
    ds = build_dataset(records, store_path)
    row = dict(zip(ds.feature_names, ds.X[list(ds.job_ids).index(run.job_id)], strict=True))
    assert row["probe_send_max"] == 0.25
    # Runs without any probe keep NaN: never invented.
    other = [i for i, j in enumerate(ds.job_ids) if j != run.job_id]
    assert np.isnan(ds.X[other, ds.feature_names.index("probe_send_max")]).all()
    assert ds.description["rows_without_probe"] == len(other)


def test_all_nan_windows_build_with_nan_and_say_so(tmp_path):
    """A store without any counter: the rows are NaN (not zeros) and the description counts them."""
    records, store = write_campaign(tmp_path, runs_per_app=4, with_counters=False, with_probe=False)
    ds = build_dataset(records, store)
    readings = [
        i for i, n in enumerate(ds.feature_names) if not n.startswith("wtype_") and not is_placement(n)
    ]
    assert np.isnan(ds.X[:, readings]).all()
    assert ds.description["rows_without_topology"] == len(ds)
    assert ds.description["rows_without_counters"] == len(ds)
    assert all(f["absent"] for f in ds.description["counters"]["families"].values())


def test_not_completed_runs_are_left_out(tmp_path):
    records, store = write_campaign(tmp_path, runs_per_app=4)
    lines = records.read_text().splitlines()
    run = json.loads(lines[1])
    run["state"] = "FAILED"
    lines[1] = json.dumps(run)
    records.write_text("\n".join(lines) + "\n")
    ds = build_dataset(records, store)
    assert run["job_id"] not in ds.job_ids.tolist()
    assert ds.description["dropped"]["not_completed"] == 1


# -------------------------------------------------------------------------------- bad records


def _records(tmp_path: Path, *runs: object, header: bool = True) -> Path:
    path = tmp_path / "records.jsonl"
    lines = [json.dumps({"format": "rush-campaign/1", "seed": 1, "command": "x"})] if header else []
    lines += [r if isinstance(r, str) else json.dumps(r) for r in runs]
    path.write_text("\n".join(lines) + "\n")
    return path


GOOD = {
    "job_id": "1",
    "app": "halo",
    "wtype": "network",
    "nodes": ["n00"],
    "submit": T0,
    "start": T0 + 1,
    "end": T0 + 11,
    "runtime": 10.0,
    "state": "COMPLETED",
    "probe": None,
    "noise": None,
}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "not a JSON object"),
        ("[1, 2]", "must be a JSON object"),
        (json.dumps(GOOD | {"wtype": "gpu"}), "unknown wtype"),
        (json.dumps(GOOD | {"nodes": []}), "nodes"),
        (json.dumps(GOOD | {"nodes": [5]}), "nodes"),
        (json.dumps(GOOD | {"runtime": 0}), "runtime"),
        (json.dumps(GOOD | {"runtime": "10"}), "runtime"),
        (json.dumps(GOOD | {"runtime": True}), "runtime"),
        (json.dumps(GOOD | {"start": None}), "start"),
        (json.dumps(GOOD | {"start": 10**400}), "start"),
        ('{"job_id": "1", "app": "a", "wtype": "io", "nodes": ["n"], "submit": 1, "start": NaN}', "start"),
        (json.dumps(GOOD | {"start": T0 + 100}), "submit <= start <= end"),
        (json.dumps(GOOD | {"app": ""}), "app"),
        (json.dumps(GOOD | {"app": "x" * 1000}), "app"),
        (json.dumps(GOOD | {"probe": {"send_min": 1.0}}), "probe lacks"),
        (json.dumps(GOOD | {"probe": [1]}), "probe"),
        (json.dumps(GOOD | {"noise": "yes"}), "noise"),
        (json.dumps(GOOD | {"job_id": None}), "job_id"),
        (json.dumps(GOOD), "already on line 2"),  # a duplicate of line 2
        (json.dumps({"format": "rush-campaign/9"}), "header after"),
        ("[" * 100_000, "not a JSON object"),
    ],
)
def test_malformed_records_name_the_line(tmp_path, bad, message):
    path = _records(tmp_path, GOOD, bad)
    with pytest.raises(DatasetError, match=message) as info:
        read_records(path)
    assert info.value.where == f"{path}:3"


def test_bad_record_files(tmp_path):
    with pytest.raises(DatasetError, match="not a regular file"):
        read_records(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(DatasetError, match="not a regular file"):
        read_records(tmp_path / "fifo")
    with pytest.raises(DatasetError, match="no runs"):
        read_records(_records(tmp_path))
    with pytest.raises(DatasetError, match="unknown records format") as info:
        read_records(_records(tmp_path, json.dumps({"format": "other"}), header=False))
    assert info.value.where.endswith(":1")
    long_line = tmp_path / "long.jsonl"
    long_line.write_bytes(b'{"a": "' + b"x" * (2 << 20) + b'"}\n')
    with pytest.raises(DatasetError, match="longer than"):
        read_records(long_line)
    broken = tmp_path / "bytes.jsonl"
    broken.write_bytes(b'{"app": "\xff\xfe"}\n')
    with pytest.raises(DatasetError, match="not a JSON object"):
        read_records(broken)


def test_store_absent_and_bad_options(campaign, tmp_path):
    records, store = campaign
    with pytest.raises(DatasetError, match="feature store not found"):
        build_dataset(records, tmp_path / "none.sqlite")
    assert not (tmp_path / "none.sqlite").exists()  # not created as a side effect
    for window in (0, -1, math.nan, math.inf, 1e12):
        with pytest.raises(Exception, match="window") as info:
            build_dataset(records, store, DatasetOptions(window=window))
        assert info.value.where == "--window"
    with pytest.raises(DatasetError, match="scopes"):
        build_dataset(records, store, DatasetOptions(scopes=("pod",)))
    with pytest.raises(DatasetError, match="scopes"):
        build_dataset(records, store, DatasetOptions(scopes=()))


def test_noise_flag_is_never_a_feature(dataset):
    assert not any("noise" in n for n in dataset.feature_names)
    assert any(noise_on(s) for s in dataset.starts) and len(HOSTS) == 8
