"""The shipped model (models/variability.joblib): its card verifies and matches the shipped dataset;
on the campaign's own store (when present) the live predictor gives scikit-learn's prediction, not "unknown"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from rush.models.variability.dataset import load_dataset
from rush.models.variability.train import load_variability_model
from rush.planner.variation import get_predictor

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / "models" / "variability.joblib"
DATASET = ROOT / "models" / "variability-dataset"
CAMPAIGN = ROOT / "runs" / "campaign-vm1"

pytestmark = pytest.mark.skipif(
    not MODEL.exists(), reason="models/variability.joblib is not in this checkout"
)


def test_card_verifies_and_matches_the_dataset():
    model, card = load_variability_model(MODEL)
    assert card["estimator"] == "adaboost" and card["scope"] == "all" and card["window"] == 30.0
    assert card["generator"]["seed"] == 2026 and "rush campaign run" in card["generator"]["command"]
    dataset = load_dataset(DATASET)
    assert card["data_sha256"] == dataset.description["csv_sha256"]
    assert set(card["features"]) <= set(dataset.feature_names)
    assert card["rows"] == len(dataset) and card["variation_runs"] == int(dataset.y_binary.sum())
    assert list(model.classes_) == card["classes"]


@pytest.mark.skipif(
    not (CAMPAIGN / "features.sqlite").exists(), reason="runs/campaign-vm1 is not in this checkout"
)
def test_live_prediction_on_the_campaign_store(tmp_path: Path):
    """The daemon's prediction for campaign runs equals scikit-learn's on the same window features."""
    from rush.models.variability.features import vector, wtype_features

    # A copy: opening the store (SQLite, WAL) rewrites the committed file.
    store = tmp_path / "features.sqlite"
    shutil.copyfile(CAMPAIGN / "features.sqlite", store)
    predictor = get_predictor("learned", source=store, model=MODEL)
    lines = (CAMPAIGN / "records.jsonl").read_text().splitlines()
    runs = [json.loads(line) for line in lines[1:21]]  # line 0 is the header
    for k, run in enumerate(runs):
        [flag] = predictor.predict([SimpleNamespace(job_id=k, wtype=run["wtype"])], run["start"])
        out = predictor.job_outputs(k)
        assert out["variation_class"] != "unknown", out
        features = predictor.current_features(run["start"]) | wtype_features(run["wtype"])
        expected = predictor.pipeline.predict_proba(vector(predictor.features, features)[None, :])[0]
        journaled = [out["variation_p"][c] for c in predictor.class_names]
        assert journaled == pytest.approx(expected, abs=5e-5)
        best = predictor.class_names[int(expected.argmax())]
        assert out["variation_class"] == best and flag == (best in predictor.classes)
    predictor.close()
