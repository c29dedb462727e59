"""A finished learned trial is reused only with the same model files (the sweep's key)."""

from __future__ import annotations

from rush.studies.contention import _models_key


def _meta(threshold: float) -> dict:
    return {"models": {"all": {"path": "paper/models/m.joblib", "flag_threshold": threshold}}}


def test_a_retrained_model_or_threshold_changes_the_key(tmp_path) -> None:
    model = tmp_path / "paper" / "models" / "m.joblib"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"first model")
    first = _models_key(tmp_path, _meta(0.5))
    assert _models_key(tmp_path, _meta(0.5)) == first  # same files, same key: the trial is reused
    assert _models_key(tmp_path, _meta(0.6)) != first  # another flag threshold
    model.write_bytes(b"retrained model")
    assert _models_key(tmp_path, _meta(0.5)) != first  # another model file


def test_the_present_state_models_leave_rushs_key_alone(tmp_path) -> None:
    """Adding RUSH-PRESENT-LABEL's models keeps RUSH's finished trials; retraining them changes only
    RUSH-PRESENT-LABEL's key."""
    models = tmp_path / "paper" / "models"
    models.mkdir(parents=True)
    (models / "m.joblib").write_bytes(b"variation model")
    (models / "p.joblib").write_bytes(b"present-state model")
    before = _models_key(tmp_path, _meta(0.5), "RUSH")
    meta = _meta(0.5)
    meta["models"]["present-all"] = {"path": "paper/models/p.joblib", "flag_threshold": 0.3}
    assert _models_key(tmp_path, meta, "RUSH") == before
    present = _models_key(tmp_path, meta, "RUSH-PRESENT-LABEL")
    assert present != before
    (models / "p.joblib").write_bytes(b"retrained present-state model")
    assert _models_key(tmp_path, meta, "RUSH") == before
    assert _models_key(tmp_path, meta, "RUSH-PRESENT-LABEL") != present
    # RUSH-MOVE-PRESENT-LABEL runs the same models: its key follows them, not RUSH's.
    assert _models_key(tmp_path, meta, "RUSH-MOVE-PRESENT-LABEL") == _models_key(
        tmp_path, meta, "RUSH-PRESENT-LABEL"
    )
