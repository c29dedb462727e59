"""A saved dataset whose sha256 matches but whose values cannot be right (written by another tool,
or by hand): NaN or negative runtimes, negative or infinite features, unknown workload types,
labels outside their classes, unknown feature columns. Each is refused naming the line and
column; ``rush train variability`` exits 2 and writes no model."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from rush.models.variability.dataset import DatasetError, load_dataset


def _spoilt(dataset, **changes):
    return replace(dataset, description=dict(dataset.description), **changes)


def _feature(dataset, name, value, row=3):
    X = dataset.X.copy()
    X[row, dataset.feature_names.index(name)] = value
    return _spoilt(dataset, X=X)


@pytest.mark.parametrize(
    ("spoil", "column"),
    [
        (lambda d: _spoilt(d, runtimes=np.where(np.arange(len(d)) == 3, np.nan, d.runtimes)), "runtime"),
        (lambda d: _spoilt(d, runtimes=np.where(np.arange(len(d)) == 3, -5.0, d.runtimes)), "runtime"),
        (lambda d: _feature(d, "all_mean_ib_xmit_bytes_per_s", -1.0), "all_mean_ib_xmit_bytes_per_s"),
        (lambda d: _feature(d, "job_nodes", -2.0), "job_nodes"),
        (lambda d: _feature(d, "probe_send_max", np.inf), "probe_send_max"),
        (lambda d: _spoilt(d, wtypes=np.where(np.arange(len(d)) == 3, "gpu", d.wtypes)), "wtype"),
        (lambda d: _spoilt(d, y_class=np.where(np.arange(len(d)) == 3, 7, d.y_class)), "y_class"),
        (lambda d: _spoilt(d, y_binary=1 - d.y_binary), "y_class"),  # labels that disagree
        (lambda d: _spoilt(d, apps=np.where(np.arange(len(d)) == 3, "", d.apps)), "app"),
    ],
)
def test_bad_values_are_refused_naming_line_and_column(dataset, tmp_path, spoil, column):
    spoilt = spoil(dataset)
    spoilt.save(tmp_path / "ds")  # a consistent sha256: only the values are wrong
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path / "ds")
    assert info.value.where.endswith(f": {column}") and "dataset.csv:" in info.value.where
    assert "rebuild" in info.value.fix


def test_an_unknown_feature_column_is_refused(dataset, tmp_path):
    names = list(dataset.feature_names)
    names[0] = "gpu_temperature"
    _spoilt(dataset, feature_names=names).save(tmp_path / "ds")
    with pytest.raises(DatasetError, match="unknown feature column"):
        load_dataset(tmp_path / "ds")


def test_the_cli_exits_2_and_writes_no_model(dataset, tmp_path):
    _feature(dataset, "all_mean_ib_xmit_bytes_per_s", -1.0).save(tmp_path / "ds")
    out = tmp_path / "m.joblib"
    result = subprocess.run(
        [sys.executable, "-m", "rush", "train", "variability", str(tmp_path / "ds"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert "negative" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists() and not out.with_name(out.name + ".json").exists()


def test_labels_come_from_each_applications_control_runs():
    """mu and sigma of the most common size's runs (the control runs), applied to every size: a
    32-node run is labelled against the 16-node runs' thresholds, as the experiments count."""
    from rush.models.variability.dataset import labels

    rng = np.random.default_rng(2)
    control = 100.0 + rng.normal(0, 1.0, 60)  # 16-node runs: mu ~ 100, sigma ~ 1
    big = np.array([101.0, 103.0, 110.0, 120.0])  # 32-node runs, slower on the whole
    runtimes = np.concatenate([control, big])
    apps = np.array(["a"] * len(runtimes), dtype=object)
    sizes = np.array([16] * 60 + [32] * 4)
    y, y_class, per_app = labels(runtimes, apps, sizes)
    t = per_app["a"]
    assert t["reference_nodes"] == 16 and t["runs"] == 60 and t["labelled_runs"] == 64
    assert t["mu"] == pytest.approx(control.mean()) and t["sigma"] == pytest.approx(control.std())
    assert y[60:].tolist() == [int(r > t["variation_above"]) for r in big] and y[62:].tolist() == [1, 1]
    assert set(y_class[y == 1].tolist()) == {2}
    # without sizes (or with one size) every run is a control run, as before
    y_all, _, all_app = labels(runtimes, apps)
    assert all_app["a"]["runs"] == 64 and "reference_nodes" not in all_app["a"]
    assert y_all.sum() <= y.sum()
