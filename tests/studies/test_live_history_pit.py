"""sim/runtime_predictions/live_history_pit.py (diagnostic H-live): the histories' times, the
pair count, D9's PIT and the pre-registered verdict."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(ROOT / "sim" / "runtime_predictions" / "live_history_pit.py", "live_history_pit_study")


def test_cut_hides_outside_jobs_not_ended_by_the_windows_first_submit():
    submit = np.array([0.0, 10.0, 20.0, 30.0, 40.0])
    start = np.array([0.0, 10.0, 25.0, 30.0, 45.0])
    end = np.array([15.0, 25.0, 50.0, 60.0, 70.0])
    window = np.array([2, 3])
    s, e = script.cut_schedule(submit, start, end, window)
    # job 0 ended (15) before the window's first submit (20): kept; job 1 (25: before the window's
    # last submit, after its first) and job 4 (70,
    # submitted after it) are hidden; the window's own jobs keep the log's times
    assert e.tolist() == [15.0, script.HIDDEN, 50.0, 60.0, script.HIDDEN]
    assert s.tolist() == [0.0, script.HIDDEN, 25.0, 30.0, script.HIDDEN]
    s, e = script.cut_schedule(
        submit, start, end, window, (np.array([100.0, 110.0]), np.array([200.0, 300.0]))
    )
    assert s[window].tolist() == [100.0, 110.0] and e[window].tolist() == [200.0, 300.0]
    assert e[0] == 15.0 and e[1] == script.HIDDEN


def test_cut_refuses_bad_window_times():
    with pytest.raises(ValueError):
        script.cut_schedule([0.0], [0.0], [1.0], np.array([0]), (np.array([5.0]), np.array([4.0])))
    with pytest.raises(ValueError):
        script.cut_schedule([0.0], [0.0], [1.0], np.array([], dtype=int))


def test_live_times_on_the_trace_clock_keep_the_trace_submit_and_scale_wait_and_runtime():
    start, end = script.live_on_trace_clock([1000.0, 2000.0], [5.0, 6.0], [7.0, 6.5], [9.0, 16.5], 60.0)
    assert start.tolist() == [1000.0 + 120.0, 2000.0 + 30.0]
    assert end.tolist() == [1120.0 + 120.0, 2030.0 + 600.0]


def test_pairs_seen_counts_earlier_same_user_jobs_ended_by_the_later_submit():
    user = [1, 1, 2, 1]
    submit = [0.0, 10.0, 11.0, 20.0]
    end = [10.0, 30.0, 12.0, 40.0]
    # pairs (1, 0), (3, 0), (3, 1); seen: job 0 by 10 (at), by 20; job 1 not by 20
    assert script.pairs_seen(user, submit, end) == (3, 2)


def test_d9_pit_interpolates_in_the_capped_quantiles():
    levels = [0.1, 0.5, 0.9]
    assert math.isclose(script.d9_pit(levels, [10.0, 20.0, 30.0], 15.0, 100.0), 0.3)
    assert script.d9_pit(levels, [10.0, 20.0, 30.0], 5.0, 100.0) == 0.0
    assert script.d9_pit(levels, [10.0, 20.0, 300.0], 40.0, 40.0) == 0.9  # the last knot capped at the limit


def _row(rjms, arm, median, source="before L2"):
    return {"rjms": rjms, "source": source, "arm": arm, "d9": {"median_pit": median}}


def test_verdict_reads_the_preregistered_thresholds_on_d9s_runs_only():
    rows = [
        _row("flux", "W cut, live", 0.70),
        _row("fluxion", "W cut, live", 0.69),
        _row("flux", "M log", 0.50),
        _row("fluxion", "M log", 0.52),
        _row("fluxion", "M log", 0.10, source="rep1"),  # a repeat: not in the verdict
    ]
    v = script.verdict(rows)
    assert v["runs"] == ["flux", "fluxion"]
    assert v["criterion_1"] and not v["criterion_2"] and v["H-live"] == "partly"
    rows[3]["d9"]["median_pit"] = 0.51
    assert script.verdict(rows)["H-live"] == "holds"
    rows[0]["d9"]["median_pit"] = 0.6
    rows[2]["d9"]["median_pit"] = None
    assert script.verdict(rows)["H-live"] == "refuted"


def test_summary_median_and_share_above_q075():
    s = script.summary([0.2, 0.8, 0.9, float("nan")])
    assert s["jobs"] == 3 and math.isclose(s["median_pit"], 0.8) and math.isclose(s["above_q75"], 2 / 3)
    assert script.summary([])["median_pit"] is None


def test_week_model_gives_the_walk_forward_back_and_its_cut_trains_on_jobs_ended_by_the_window():
    from rush.models.runtime_quantiles_walkforward import WEEK, predict_quantiles_walkforward
    from tests.models.fixtures import HEADER, synthetic_workload

    w = synthetic_workload(700)
    week_of = (w.submit - w.submit[0]) // WEEK
    rows = np.flatnonzero(week_of == 1)[10:40]
    model = script.WeekModel(w, HEADER, rows)
    wf = predict_quantiles_walkforward(
        w, HEADER, max_train_jobs=script.MAX_TRAIN_JOBS, feature_set=script.FEATURE_SET
    )
    assert np.array_equal(model.quantiles(model.log_features), wf.quantiles[rows])
    start, end = script.log_times(model)
    assert np.allclose(start, w.submit) and np.allclose(end, w.submit + w.runtime)  # the fixture: no waits
    cut = script.WeekModel(w, HEADER, rows, cut=True)
    ended = int(np.sum(w.submit + w.runtime < w.submit[rows[0]]))
    assert cut.trained_on == {0: ended} and ended > model.trained_on[1]


def test_trace_keyed_reads_only_replay_tags():
    assert script.trace_keyed("trace-42") == 42
    assert script.trace_keyed("alice") is None and script.trace_keyed("trace-x") is None


def test_keyed_as_trained_keys_a_replay_tag_as_the_trace_number_and_restores():
    from rush.models.users import user_key
    from rush.planner import runtime_prediction
    from rush.rjms.base import RJMSJob

    own = frozenset({"rush"})

    def job(user, tag):
        return RJMSJob(
            job_id=1, state="PENDING", submit=0.0, procs=1, requested_time=60.0, user=user, tags={"user": tag}
        )

    assert runtime_prediction.history_user(job("rush", "trace-42"), own) == user_key("trace-42")
    with pytest.raises(RuntimeError), script.keyed_as_trained():
        assert runtime_prediction.history_user(job("rush", "trace-42"), own) == 42
        assert runtime_prediction.history_user(job("rush", "alice"), own) == user_key("alice")
        assert runtime_prediction.history_user(job("bob", "trace-42"), own) == user_key(
            "bob"
        )  # not ours: no tag
        raise RuntimeError("restored even so")
    assert runtime_prediction.history_user(job("rush", "trace-42"), own) == user_key("trace-42")
