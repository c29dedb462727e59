"""The daemon's runtime-class model interface with a real trained, persisted pipeline."""

from __future__ import annotations

import json
import logging

import numpy as np

from rush.core.snapshot import RuntimeClass
from rush.models.history import JobColumns
from rush.models.users import user_key
from rush.planner.snapshot_builder import ModelClassPredictor, SnapshotBuilder, load_class_predictor, user_id
from rush.rjms.base import ClusterState, RJMSJob
from tests.models.fixtures import save_trained, trained


def test_trained_model_classifies_live_jobs_and_learns_completions(tmp_path, caplog):
    path = tmp_path / "rc.joblib"
    trained, card = save_trained(path)
    with caplog.at_level(logging.WARNING, logger="rush.daemon"):
        predictor = load_class_predictor(path, tmp_path / "history.json", small_below=None)
    assert isinstance(predictor, ModelClassPredictor)
    assert predictor.divider == card["divider"] and "sha256:" in predictor.version
    # Trained on an SWF trace (numeric users): the trained history is kept (replayed trace-N jobs
    # meet it) and the log says that live user names cannot match it.
    trained_jobs = predictor.history.observed
    assert "cannot match" in caplog.text and trained_jobs > 0
    jobs = [
        RJMSJob(i, "PENDING", 1_800_000_000.0 + i, q, t, user=u)
        for i, (q, t, u) in enumerate([(1, 60.0, "a"), (64, 86400.0, "b"), (8, float("inf"), "a")], start=1)
    ]
    built = SnapshotBuilder(predictor).build(ClusterState(1_800_000_100.0, 64, 0, tuple(jobs)), {})
    # The same answer as the saved pipeline on the raw columns (an unlimited request is clipped).
    columns = JobColumns(
        np.array([user_id(j.user) for j in jobs]),
        np.array([j.procs for j in jobs]),
        np.array([min(j.requested_time, 365 * 86400.0) for j in jobs]),
        np.array([j.submit for j in jobs]),
    )
    expected = predictor.live.pipeline.predict(columns)
    assert [int(p.runtime_class) for p in built.snapshot.pending] == expected.tolist()
    assert {o["class_source"] for o in built.outputs.values()} == {"runtime-class"}
    assert set(built.predicted) == {1, 2, 3} and "runtime-class" in built.model_seconds
    # A finished job enters the live history, which is saved and reloaded on restart.
    done = RJMSJob(9, "RUNNING", 1_800_000_000.0, 1, 60.0, start=1_800_000_010.0, user="a")
    predictor.observe_finished(done, end=1_800_000_040.0)
    predictor.save()
    again = ModelClassPredictor(path, tmp_path / "history.json")
    assert again.history.observed == trained_jobs + 1 and len(again.notes) == 1
    assert again.history.recent[("q", user_key("a"), 1)] == [30.0]
    assert RuntimeClass(built.snapshot.pending[0].runtime_class) in (RuntimeClass.SMALL, RuntimeClass.LARGE)


def test_a_retrained_trace_id_model_keeps_its_own_trained_history(tmp_path):
    path = tmp_path / "rc.joblib"
    save_trained(path)
    predictor = ModelClassPredictor(path, tmp_path / "history.json")
    predictor.observe_finished(RJMSJob(1, "RUNNING", 1.8e9, 1, 60.0, start=1.8e9, user="a"), end=1.8e9 + 5)
    predictor.save()
    other = tmp_path / "other.joblib"  # e.g. the model retrained on newer accounting
    save_trained(other, trained(n=500))
    # Both trained on trace ids: the new model's trained history (which replayed trace-N jobs
    # meet) is used, the earlier model's saved one set aside (nothing lost).
    retrained = ModelClassPredictor(other, tmp_path / "history.json")
    fresh = ModelClassPredictor(other, None)
    assert retrained.history.observed == fresh.history.observed
    assert any("another model or clock" in n for n in retrained.notes)
    assert (tmp_path / "history.json.unused").exists()


def test_saved_history_that_cannot_continue_is_set_aside(tmp_path):
    path = tmp_path / "rc.joblib"
    save_trained(path)
    predictor = ModelClassPredictor(path, tmp_path / "history.json")
    predictor.observe_finished(RJMSJob(1, "RUNNING", 1.8e9, 1, 60.0, start=1.8e9, user="a"), end=1.8e9 + 5)
    predictor.save()
    saved = (tmp_path / "history.json").read_bytes()
    utc = tmp_path / "utc.joblib"  # another clock: its days are other days
    save_trained(utc, trained(header={"UnixStartTime": "1700000000"}))
    fresh = ModelClassPredictor(utc, tmp_path / "history.json")
    unsaved = ModelClassPredictor(utc, None)
    assert fresh.history.observed == unsaved.history.observed  # its own trained history, not the saved
    assert any("another model or clock" in n for n in fresh.notes)
    assert (tmp_path / "history.json.unused").read_bytes() == saved  # nothing lost


def test_user_id_is_the_models_user_key():
    assert user_id("alice") == user_key("alice") != user_key("bob")
    assert 0 <= user_key("é" * 3) < 2**31


def test_damaged_history_file_is_set_aside_and_the_model_still_used(tmp_path):
    path = tmp_path / "rc.joblib"
    save_trained(path)
    (tmp_path / "history.json").write_text("[1, 2")
    predictor = load_class_predictor(path, tmp_path / "history.json", small_below=None)
    assert isinstance(predictor, ModelClassPredictor)
    assert any("cannot read the runtime history" in n and ".unused" in n for n in predictor.notes)
    assert (tmp_path / "history.json.unused").read_text() == "[1, 2"
    assert not (tmp_path / "history.json").exists()


def test_history_saved_by_an_earlier_rush_is_not_used(tmp_path):
    """Format 1 kept trace-clock times: it is set aside with a note, not mixed in or fatal."""
    path = tmp_path / "rc.joblib"
    save_trained(path)
    old = {"format": 1, "clock": {"start": 8e8}, "observed": 5, "categories": []}
    (tmp_path / "history.json").write_text(json.dumps(old))
    predictor = ModelClassPredictor(path, tmp_path / "history.json")
    assert any("format 1" in note for note in predictor.notes)
    assert predictor.history.observed == ModelClassPredictor(path, None).history.observed  # not its 5
    assert json.loads((tmp_path / "history.json.unused").read_text()) == old
    predictor.save()
    assert json.loads((tmp_path / "history.json").read_text())["format"] == 3


def test_a_job_with_unreadable_values_stays_unknown_and_the_others_are_classified(tmp_path):
    path = tmp_path / "rc.joblib"
    save_trained(path)
    predictor = ModelClassPredictor(path, None)
    good = [
        RJMSJob(1, "PENDING", 1.8e9, 1, 600.0, user="a"),
        RJMSJob(2, "PENDING", 1.8e9, 64, 86400.0, user="b"),
    ]
    hostile = [
        RJMSJob(3, "PENDING", float("nan"), 1, 600.0, user="a"),
        RJMSJob(4, "PENDING", 1e30, 1, 600.0, user="a"),
        RJMSJob(5, "PENDING", -1e12, 1, 600.0, user="a"),
        RJMSJob(6, "PENDING", 1.8e9, 1, float("nan"), user="a"),
        RJMSJob(7, "PENDING", 1.8e9, -4, 600.0, user="a"),
        RJMSJob(8, "PENDING", 1.8e9, 1, -600.0, user="a"),
    ]
    alone = predictor.predict(good)
    mixed = predictor.predict(hostile[:3] + good + hostile[3:])
    assert mixed == [-1, -1, -1, *alone, -1, -1, -1] and set(alone) <= {0, 1}


def test_live_history_keeps_day_categories_for_two_weeks_only(tmp_path):
    """The (user, day) categories would grow by one per user and day forever."""
    path = tmp_path / "rc.joblib"
    save_trained(path)
    predictor = ModelClassPredictor(path, tmp_path / "history.json")
    trained_jobs = predictor.history.observed  # a trace-id model keeps its trained history
    day = 86400.0
    now = 1.8e9
    for age in (30, 15, 13, 0):
        submit = now - age * day
        predictor.observe_finished(
            RJMSJob(1, "RUNNING", submit, 1, 60.0, start=submit, user="a"), end=submit + 5
        )
    predictor.live.save(now=now)
    days = sorted(k[2] for k in predictor.history.recent if k[0] == "d" and k[1] == user_key("a"))
    assert len(days) == 2 and days[-1] - days[0] == 13
    assert predictor.history.observed == trained_jobs + 4  # the other categories keep every completion
