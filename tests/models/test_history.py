"""The live history store: completions in, features out, persisted."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.snapshot import PendingJob
from rush.errors import ModelError
from rush.models.history import JobColumns, RuntimeHistory
from rush.models.runtime_features import FEATURES, Clock
from rush.models.runtime_pipeline import RuntimeFeatures, make_runtime_pipeline

DAY = 86400.0
NOON = 20000 * DAY + 12 * 3600  # a Unix time, UTC clock


def row(history: RuntimeHistory, user: int, procs: int, req: float, submit: float, divider: float) -> dict:
    X = history.features(
        JobColumns(np.array([user]), np.array([procs]), np.array([req]), np.array([submit])), divider
    )
    return dict(zip(FEATURES, X[0], strict=True))


def test_lags_and_fractions_per_category():
    history = RuntimeHistory()
    for runtime in (100, 5000, 50):  # oldest first
        history.observe_finished(user=7, procs=4, requested_time=3600, submit=NOON, runtime=runtime)
    history.observe_finished(user=7, procs=8, requested_time=3600, submit=NOON - DAY, runtime=2000)
    r = row(history, 7, 4, 3600, NOON + 60, divider=1000)
    assert (r["lag1_user_procs"], r["lag2_user_procs"], r["lag3_user_procs"]) == (0.0, 1.0, 0.0)
    assert r["frac_small_user_procs"] == pytest.approx(2 / 3)
    # (user, p~) holds all four; the latest finished is the 8-processor job (large).
    assert r["lag1_user_reqtime"] == 1.0 and r["frac_small_user_reqtime"] == pytest.approx(2 / 4)
    # (user, day): the 8-processor job was submitted the day before.
    assert r["frac_small_user_day"] == pytest.approx(2 / 3) and r["lag1_user_day"] == 0.0
    assert r["hour"] == 12 and r["requested_time"] == 3600 and r["procs"] == 4
    unknown = row(history, 8, 4, 3600, NOON, divider=1000)
    assert all(unknown[f] == -1.0 for f in FEATURES if f.startswith(("lag", "frac")))
    # Another divider relabels the same history.
    assert row(history, 7, 4, 3600, NOON, divider=10_000)["lag2_user_procs"] == 0.0


def test_new_completions_are_seen_at_once_and_runtime_is_clipped():
    history = RuntimeHistory()
    history.observe_finished(7, 4, 3600, NOON, 100)
    assert row(history, 7, 4, 3600, NOON, 1000)["lag1_user_procs"] == 0.0
    history.observe_finished(7, 4, 3600, NOON, 90_000)  # killed at its walltime: 3600 s
    r = row(history, 7, 4, 3600, NOON, 1000)
    assert r["lag1_user_procs"] == 1.0 and r["lag2_user_procs"] == 0.0
    assert history.runtimes[("q", 7, 4)] == [100.0, 3600.0]


def test_pipeline_predicts_pending_job_objects_from_its_history():
    """The feature step's history answers PendingJob objects; the pipeline classifies them."""
    rng = np.random.default_rng(0)
    n = 400
    small = np.arange(n) % 2 == 0
    jobs = JobColumns(
        user=np.arange(n) % 5,
        procs=np.where(small, 1, 64),
        requested_time=np.where(small, 600.0, 86400.0),
        submit=NOON - 7 * DAY + np.arange(n) * 600.0,
        runtime=np.where(small, 30.0, 50_000.0) + rng.uniform(0, 10, n),
        end=NOON - 7 * DAY + np.arange(n) * 600.0 + 60_000.0,
    )
    pipeline = make_runtime_pipeline(RuntimeFeatures(divider=1000.0), n_estimators=10)
    pipeline.fit(jobs, np.where(small, 0, 1))
    history = pipeline.named_steps["features"].history_
    assert history.observed == n and pipeline.named_steps["features"].divider_ == 1000.0
    pending = [
        PendingJob(
            job_id=k,
            submit=NOON + k,
            procs=1 if k % 2 else 64,
            requested_time=600.0 if k % 2 else 86400.0,
            user=k % 5,
        )
        for k in range(50)
    ]
    assert pipeline.predict(pending).tolist() == [0 if k % 2 else 1 for k in range(50)]
    with pytest.raises(ValueError, match="not a feature matrix"):
        pipeline.predict(np.zeros((2, len(FEATURES))))


def test_persistence_round_trip_and_broken_file(tmp_path):
    history = RuntimeHistory(clock=Clock("Europe/Stockholm"))
    for k in range(30):
        history.observe_finished(k % 3, 2 ** (k % 4), 60.0 * (k % 5 + 1), k * 3600.0, 10.0 * k)
    path = tmp_path / "history.json"
    history.save(path, model_sha256="ab" * 32)
    again, sha = RuntimeHistory.load(path)
    assert again.clock == history.clock and again.observed == 30 and sha == "ab" * 32
    pending = JobColumns(
        np.array([0, 1, 2, 9]),
        np.array([1, 2, 4, 8]),
        np.array([60.0, 120.0, 180.0, 60.0]),
        np.array([3600.0, 7200.0, 90000.0, 0.0]) + NOON,
    )
    assert np.array_equal(again.features(pending, 100.0), history.features(pending, 100.0))
    path.write_text("{broken")
    with pytest.raises(ModelError, match="runtime history"):
        RuntimeHistory.load(path)
    path.write_text('{"format": 99}')
    with pytest.raises(ModelError, match="format"):
        RuntimeHistory.load(path)


def test_forget_old_days():
    history = RuntimeHistory()
    history.observe_finished(1, 1, 60, NOON - 10 * DAY, 5)
    history.observe_finished(1, 1, 60, NOON, 5)
    assert history.forget_days_before(NOON) == 1
    assert row(history, 1, 1, 60, NOON - 10 * DAY, 10)["lag1_user_day"] == -1.0
    assert row(history, 1, 1, 60, NOON, 10)["lag1_user_day"] == 0.0


GOOD_SAVED = {
    "format": 3,
    "clock": {"timezone": None, "utc_offset": 0.0},
    "user_key_kind": "name",
    "model_sha256": "ab" * 32,
    "observed": 1,
    "categories": [[["q", 7, 4], [100.0], [100.0]], [["u", 7], [100.0], [100.0]]],
    "users": [[7, 3600.0, [1.0e9], 3600.0]],
    "submits": [[7, [1.0e9 - 100]]],
}

HOSTILE_HISTORIES = [
    ("not JSON", b"{broken", "cannot read"),
    ("empty", b"", "cannot read"),
    ("a list", b"[1, 2, 3]", "not a JSON object"),
    ("null", b"null", "not a JSON object"),
    ("not UTF-8", b'{"format": "\xff"}', "cannot read"),
    ("nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, "cannot read"),
    ("format 1 (before the pipeline)", GOOD_SAVED | {"format": 1}, "format 1"),
    ("format 2 (before the user's recent runs)", GOOD_SAVED | {"format": 2}, "format 2"),
    ("users missing", {k: v for k, v in GOOD_SAVED.items() if k != "users"}, "cannot read"),
    ("user runs without their user", GOOD_SAVED | {"users": []}, "do not match"),
    ("user runs without ends", GOOD_SAVED | {"users": [[7, 3600.0, [], 3600.0]]}, "do not match"),
    ("user ends text", GOOD_SAVED | {"users": [[7, 3600.0, ["x"], 3600.0]]}, "cannot read"),
    ("submits missing", {k: v for k, v in GOOD_SAVED.items() if k != "submits"}, "cannot read"),
    ("submits text", GOOD_SAVED | {"submits": [[7, ["soon"]]]}, "cannot read"),
    ("user key with a value", GOOD_SAVED | {"categories": [[["u", 7, 4], [1.0], [1.0]]]}, "category key"),
    ("format a string", GOOD_SAVED | {"format": "2"}, "format"),
    ("user kind missing", {k: v for k, v in GOOD_SAVED.items() if k != "user_key_kind"}, "user_key_kind"),
    ("user kind unknown", GOOD_SAVED | {"user_key_kind": "uid"}, "user_key_kind"),
    ("model sha a number", GOOD_SAVED | {"model_sha256": 5}, "model_sha256"),
    ("clock missing", {k: v for k, v in GOOD_SAVED.items() if k != "clock"}, "clock"),
    ("clock zone unknown", GOOD_SAVED | {"clock": {"timezone": "Mars/Olympus"}}, "time zone"),
    ("clock offset 1e12", GOOD_SAVED | {"clock": {"utc_offset": 1e12}}, "UTC offset"),
    ("clock a list", GOOD_SAVED | {"clock": [1]}, "cannot read"),
    ("observed text", GOOD_SAVED | {"observed": "many"}, "cannot read"),
    ("categories a number", GOOD_SAVED | {"categories": 5}, "cannot read"),
    ("category kind unknown", GOOD_SAVED | {"categories": [[["x", 7, 4], [1.0], [1.0]]]}, "category key"),
    ("category key short", GOOD_SAVED | {"categories": [[["q", 7], [1.0], [1.0]]]}, "cannot read"),
    ("runtimes text", GOOD_SAVED | {"categories": [[["q", 7, 4], ["a"], ["b"]]]}, "cannot read"),
    ("runtimes empty", GOOD_SAVED | {"categories": [[["q", 7, 4], [], []]]}, "no runtimes"),
    ("user a string", GOOD_SAVED | {"categories": [[["q", "bob", 4], [1.0], [1.0]]]}, "cannot read"),
]


def test_hostile_history_count():
    assert len(HOSTILE_HISTORIES) + 2 == 32  # plus a directory and a 600 MiB (sparse) file


@pytest.mark.parametrize(
    ("name", "content", "message"), HOSTILE_HISTORIES, ids=[c[0] for c in HOSTILE_HISTORIES]
)
def test_hostile_saved_history_is_a_clear_model_error(tmp_path, name, content, message):
    import json

    path = tmp_path / "history.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    with pytest.raises(ModelError, match=message) as err:
        RuntimeHistory.load(path)
    assert err.value.where == str(path) and "delete the file" in err.value.fix


def test_history_path_a_directory_or_huge_is_refused_unread(tmp_path):
    with pytest.raises(ModelError, match="not a regular file"):
        RuntimeHistory.load(tmp_path)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as fh:
        fh.truncate(600 << 20)  # sparse: no disk used, and never read
    with pytest.raises(ModelError, match="larger than"):
        RuntimeHistory.load(huge)


def test_good_saved_history_loads():
    import json
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "history.json"
    path.write_text(json.dumps(GOOD_SAVED))
    history, sha = RuntimeHistory.load(path)
    assert sha == "ab" * 32 and history.recent[("q", 7, 4)] == [100.0] and history.observed == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"submit": float("nan")},
        {"submit": 1e30},
        {"runtime": float("nan")},
        {"runtime": -5.0},
        {"requested_time": float("inf")},
        {"procs": -1},
        {"runtime": "600"},
    ],
)
def test_unreadable_completion_is_skipped_and_changes_nothing(bad):
    history = RuntimeHistory()
    assert history.observe_finished(7, 4, 3600, NOON, 100)
    good = dict(user=7, procs=4, requested_time=3600, submit=NOON, runtime=50)
    assert history.observe_finished(**(good | bad)) is False
    assert history.observed == 1 and history.runtimes[("q", 7, 4)] == [100.0]
