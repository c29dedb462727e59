"""``rush dataset build`` and ``rush train variability``: JSON tables, and hostile flags -> exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def rush(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rush", *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def built(campaign, tmp_path_factory) -> Path:
    records, store = campaign
    out = tmp_path_factory.mktemp("cli") / "ds"
    result = rush("dataset", "build", str(records), "--store", str(store), "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    description = json.loads(result.stdout)
    assert description["rows"] == 96 and description["csv"].endswith("dataset.csv")
    return out


def test_train_variability_json(built, tmp_path):
    out = tmp_path / "m.joblib"
    result = rush(
        "train", "variability", str(built), "--out", str(out), "--models", "adaboost,knn",
        "--estimators", "10", "--rfe-step", "0.3", "--without-probe", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [r["model"] for r in report["cv_table"]] == ["adaboost", "knn"]
    assert set(report["cv_table"][0]["per_app"]) == {"halo", "cg", "stream", "fsync"}
    assert report["rfe_curve"] and report["scope_table"]
    assert report["card"]["sha256"] and out.exists() and Path(f"{out}.json").exists()
    assert not any(f.startswith("probe_") for f in report["features"])


def test_dataset_build_text(campaign, tmp_path):
    records, store = campaign
    result = rush("dataset", "build", str(records), "--store", str(store), "--out", str(tmp_path / "d"))
    assert result.returncode == 0, result.stderr
    assert "omni-path absent" in result.stdout and "lustre absent" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--window", "0"],
        ["--window", "nan"],
        ["--window", "inf"],
        ["--window", "-300"],
        ["--window", "1e300"],
        ["--window", "abc"],
        ["--scope", "pods"],
        ["--scope", ""],
        ["--store", "/nonexistent/store.sqlite"],
        ["--store", "/tmp"],
    ],
)
def test_hostile_dataset_flags(campaign, tmp_path, args):
    records, store = campaign
    base = {"--store": str(store), "--out": str(tmp_path / "out")}
    flags = [x for k, v in base.items() if k not in args for x in (k, v)]
    result = rush("dataset", "build", str(records), *flags, *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "dataset.csv").exists()  # no partial output


def test_hostile_records_and_out(campaign, tmp_path):
    records, store = campaign
    bad = tmp_path / "bad.jsonl"
    bad.write_text(records.read_text().splitlines()[0] + "\n{broken\n")
    result = rush("dataset", "build", str(bad), "--store", str(store), "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and f"{bad}:2" in result.stderr
    (tmp_path / "file").write_text("x")
    result = rush("dataset", "build", str(records), "--store", str(store), "--out", str(tmp_path / "file"))
    assert result.returncode == 2 and "not a directory" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--models", "svm"],
        ["--models", ","],
        ["--estimators", "0"],
        ["--estimators", "99999999"],
        ["--rfe-step", "0"],
        ["--rfe-step", "nan"],
        ["--rfe-step", "2"],
        ["--final-scope", "rack"],
        ["--seed", "-1"],
        ["--seed", "99999999999"],
        ["--out", "/tmp"],
    ],
)
def test_hostile_train_flags(built, tmp_path, args):
    out = ["--out", str(tmp_path / "m.joblib")] if "--out" not in args else []
    result = rush("train", "variability", str(built), *out, *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "m.joblib").exists()


def test_train_on_a_missing_or_edited_dataset(built, tmp_path):
    result = rush("train", "variability", str(tmp_path / "none"), "--out", str(tmp_path / "m.joblib"))
    assert result.returncode == 2 and "not found" in result.stderr
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("dataset.csv", "dataset.json"):
        (copy / name).write_bytes((built / name).read_bytes())
    with (copy / "dataset.csv").open("a") as fh:
        fh.write("extra,row\n")
    result = rush("train", "variability", str(copy), "--out", str(tmp_path / "m.joblib"))
    assert result.returncode == 2 and "sha256" in result.stderr


def test_train_variability_text_reports_both_ways(built, tmp_path):
    out = tmp_path / "m.joblib"
    result = rush(
        "train", "variability", str(built), "--out", str(out), "--models", "adaboost",
        "--estimators", "10", "--rfe-step", "0.3", "--folds", "4",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "chosen by k-fold" in result.stdout and "paper: 0.95" in result.stdout
    assert "k-fold" in result.stdout and "loao" in result.stdout
    assert "flag threshold" in result.stdout and "held-out start decisions (kfold)" in result.stdout
    card = json.loads(Path(f"{out}.json").read_text())
    assert card["selection"] == "kfold" and card["k_folds"] == 4
    assert card["flag_threshold_table"]["decisions"] == 96


@pytest.mark.parametrize("args", [["--selection", "holdout"], ["--folds", "1"], ["--final-scope", "pods"]])
def test_hostile_selection_flags(built, tmp_path, args):
    out = tmp_path / "m.joblib"
    result = rush("train", "variability", str(built), "--out", str(out), *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and not out.exists()
