"""The planner's runtime predictor (rush.planner.runtime_prediction) on a queue the test sets.

What the RJMS reports finished feeds the predictor; its guarded predictions become the jobs'
estimates, so the core's start estimates follow them; the history survives a restart; bad
history never gives a NaN or negative estimate; bad configuration names its key. The live
counterparts (Flux module, Slurm) are tests/flux/test_estimates_runtime_flux.py and
tests/daemon/test_live_slurm_runtime.py.
"""

from __future__ import annotations

import math
import subprocess
import sys
import typing

import pytest

from rush.core.runtime_predictions import CORRECTION_STEPWISE, running_estimate
from rush.daemon.service import Daemon
from rush.errors import ConfigError
from rush.models.runtime_predictors import PREDICTORS
from rush.planner.config import PolicySection, parse_config
from rush.planner.runtime_prediction import RuntimeHistoryStore
from rush.planner.snapshot_builder import user_id
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue

HOUR = 3600.0


def job(job_id: int, state: str, submit: float, start: float | None = None, **kw) -> RJMSJob:
    values = {"procs": 8, "requested_time": HOUR, "user": "alice", **kw}
    return RJMSJob(job_id=job_id, state=state, submit=submit, start=start, **values)


def daemon(tmp_path, prediction: str = "easy++", **policy) -> tuple[Daemon, Queue]:
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "j.sqlite")},
            "policy": {"runtime_prediction": prediction, **policy},
            "rjms": {"backend": "slurm"},
        }
    )
    queue = Queue()
    return Daemon(config, backend=queue, dry_run=True), queue


def cycle(d: Daemon, q: Queue, now: float, *jobs: RJMSJob, free: int = 0):
    q.state = ClusterState(now, 8, free, tuple(jobs))
    report = d.run_cycle()
    assert report.ok, report.error
    return d.last[1], d.last[2]


def finish_two(d: Daemon, q: Queue, runs: tuple[float, float], user: str = "alice") -> None:
    """Two runs of ``user`` that end (leave the queue) at the next read: their lengths are
    the read time minus their start, as the daemon sees them without accounting."""
    cycle(d, q, 999.0, job(1, "RUNNING", 0.0, 1000.0 - runs[0], user=user))
    cycle(d, q, 1000.0, job(2, "RUNNING", 0.0, 1000.0, user=user))  # job 1 ended: runs[0]
    cycle(d, q, 1000.0 + runs[1])  # job 2 ended: runs[1]


def test_the_predictor_names_are_the_simulators():
    allowed = typing.get_args(PolicySection.model_fields["runtime_prediction"].annotation)
    assert set(allowed) == {"none", *PREDICTORS}


def test_history_makes_the_estimates_follow_the_prediction(tmp_path):
    d, q = daemon(tmp_path)
    assert d.core_config.prediction_correction == "stepwise" and d.core_config.scan_policy.name == "SPF"
    finish_two(d, q, (300.0, 500.0))
    predicted = (300.0 + 500.0) / 2  # EASY++: the mean of the user's last two runtimes
    built, decided = cycle(d, q, 2100.0, job(3, "RUNNING", 2000.0, 2050.0), job(4, "PENDING", 2060.0))
    assert built.snapshot.running[0].estimate == predicted
    assert built.snapshot.pending[0].estimate == predicted
    assert built.outputs[4] == built.outputs[4] | {"predicted_runtime": predicted, "runtime_source": "easy++"}
    # The machine is full until job 3 ends: by its prediction, not its limit.
    assert decided.estimated_start[4] == 2050.0 + predicted
    row = d.journal.queue()[4]
    assert row.estimated_start == 2050.0 + predicted and row.estimate == predicted
    assert '"runtime_source": "easy++"' in row.model_outputs
    assert d.metrics.runtime_sources.labels(source="easy++")._value.get() == 2
    # Once job 3 outlives its prediction the core corrects it (stepwise); kills stay at the limit.
    now = 2050.0 + predicted + 10.0
    _, decided = cycle(d, q, now, job(3, "RUNNING", 2000.0, 2050.0), job(4, "PENDING", 2060.0))
    expected = running_estimate(CORRECTION_STEPWISE, predicted, now - 2050.0, HOUR)
    assert expected == predicted + 60.0
    assert decided.estimated_start[4] == 2050.0 + expected
    # rush explain's "waits behind job 3, predicted end": the corrected estimate, journaled.
    assert d.journal.queue()[3].estimate == expected
    d.journal.db.close()
    out = subprocess.run(
        [sys.executable, "-m", "rush", "explain", "4", "--journal", str(tmp_path / "j.sqlite")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "predicted by easy++" in out.stdout and "waits behind job 3" in out.stdout
    assert not decided.of("kill")


def test_fallback_to_the_request_for_a_user_with_one_job_and_other_users(tmp_path):
    d, q = daemon(tmp_path)
    cycle(d, q, 1000.0, job(1, "RUNNING", 0.0, 700.0, user="bob"))
    built, decided = cycle(
        d,
        q,
        1100.0,
        job(3, "RUNNING", 1000.0, 1050.0, user="bob"),
        job(4, "PENDING", 1060.0, user="carol"),
    )
    assert [r.estimate for r in built.snapshot.running] == [HOUR]
    assert built.outputs[3]["runtime_source"] == "request" and built.outputs[4]["runtime_source"] == "request"
    assert decided.estimated_start[4] == 1050.0 + HOUR


def test_jobs_are_predicted_again_when_their_user_finishes_another(tmp_path):
    d, q = daemon(tmp_path)
    waiting = job(9, "PENDING", 900.0)
    built, _ = cycle(d, q, 999.0, job(1, "RUNNING", 0.0, 700.0), waiting)
    assert built.snapshot.pending[0].estimate == HOUR  # no finished job of alice yet: the request
    cycle(d, q, 1000.0, job(2, "RUNNING", 0.0, 1000.0), waiting)  # job 1 ended: 300 s
    built, _ = cycle(d, q, 1500.0, waiting)  # job 2 ended: 500 s
    assert built.snapshot.pending[0].estimate == 400.0
    assert built.outputs[9]["runtime_source"] == "easy++"


def test_the_history_survives_a_restart(tmp_path):
    d, q = daemon(tmp_path)
    finish_two(d, q, (300.0, 500.0))
    d.journal.db.close()
    again, q2 = daemon(tmp_path)
    assert any("replayed from the journal" in e["message"] for e in again.journal.events("model"))
    built, decided = cycle(again, q2, 2100.0, job(3, "RUNNING", 2000.0, 2050.0), job(4, "PENDING", 2060.0))
    assert built.snapshot.pending[0].estimate == 400.0
    assert decided.estimated_start[4] == 2050.0 + 400.0


def test_history_is_bounded_per_user(tmp_path):
    d, q = daemon(tmp_path)
    store = RuntimeHistoryStore(d.journal.db, per_user=3)
    with d.journal.transaction():
        store.add([_row(k, user_id("alice"), 10.0 * k, k) for k in range(1, 8)])
    rows, bad = store.load()
    assert bad == 0 and [r.runtime for r in rows] == [50.0, 60.0, 70.0]


def _row(job_id: int, user: int, runtime: float, end: float, limit: float = HOUR):
    from rush.planner.runtime_prediction import Finished

    return Finished(job_id, user, 0.0, 1, limit, runtime, end)


@pytest.mark.parametrize(
    "runtimes",
    [
        (math.nan, math.nan),
        (-50.0, -10.0),
        (0.0, 0.0),
        (5 * HOUR, 9 * HOUR),  # over the limit: clipped to it, so the request stands
        (math.inf, 100.0),
        ("garbage", "2x"),
    ],
)
def test_bad_history_lines_never_publish_a_bad_estimate(tmp_path, runtimes):
    d, _ = daemon(tmp_path)
    alice = user_id("alice")
    for k, runtime in enumerate(runtimes):
        d.journal.db.execute(
            "INSERT INTO runtime_history (job_id, user, submit, procs, requested_time, runtime, end)"
            " VALUES (?, ?, 0, 1, ?, ?, ?)",
            (100 + k, alice, HOUR, runtime, 10.0 + k),
        )
    d.journal.db.close()
    again, q = daemon(tmp_path)
    built, decided = cycle(again, q, 2100.0, job(3, "RUNNING", 2000.0, 2050.0), job(4, "PENDING", 2060.0))
    estimates = [j.estimate for j in (*built.snapshot.running, *built.snapshot.pending)]
    assert all(math.isfinite(e) and 0 < e <= HOUR for e in estimates)
    assert math.isfinite(decided.estimated_start[4]) and decided.estimated_start[4] >= 2100.0
    if isinstance(runtimes[0], str):
        assert any("unreadable" in e["message"] for e in again.journal.events("model"))


def test_a_replays_user_tag_counts_only_on_rushs_own_account(tmp_path):
    from rush.planner.runtime_prediction import history_user, own_accounts

    own = own_accounts()
    mine = next(iter(own))
    assert history_user(job(1, "PENDING", 0.0, user=mine, tags={"user": "trace-7"}), own) == user_id(
        "trace-7"
    )
    assert history_user(job(1, "PENDING", 0.0, user="mallory", tags={"user": "alice"}), own) == user_id(
        "mallory"
    )


def test_gaussier_predicts_from_the_kept_history(tmp_path):
    d, q = daemon(tmp_path, "gaussier")
    finish_two(d, q, (300.0, 500.0))
    built, decided = cycle(d, q, 2100.0, job(3, "RUNNING", 2000.0, 2050.0), job(4, "PENDING", 2060.0))
    estimate = built.snapshot.pending[0].estimate
    assert math.isfinite(estimate) and 0 < estimate <= HOUR
    assert 2100.0 <= decided.estimated_start[4] <= 2050.0 + HOUR


@pytest.mark.parametrize(
    ("policy", "models", "key"),
    [
        ({"runtime_prediction": "runtime-quantiles"}, {}, "models.runtime_quantiles"),
        ({"prediction_correction": "stepwise"}, {}, "policy.prediction_correction"),
        ({"runtime_prediction": "easypp"}, {}, "policy.runtime_prediction"),
    ],
)
def test_bad_configuration_names_the_key(tmp_path, policy, models, key):
    with pytest.raises(ConfigError) as err:
        parse_config({"policy": policy, "models": models, "daemon": {"journal": str(tmp_path / "j")}})
    assert key in str(err.value.where) or key in str(err.value)


def test_the_command_line_exits_2_on_a_bad_predictor(tmp_path):
    config = tmp_path / "rush.toml"
    config.write_text(
        f'[daemon]\njournal = "{tmp_path / "j.sqlite"}"\n\n[policy]\nruntime_prediction = "oracle"\n'
    )
    out = subprocess.run(
        [sys.executable, "-m", "rush", "daemon", "--config", str(config), "--once"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "policy.runtime_prediction" in out.stderr and "Traceback" not in out.stderr


def test_a_quantile_model_that_cannot_load_leaves_limits_and_is_journaled(tmp_path):
    missing = tmp_path / "absent.joblib"
    missing.write_text("not a model")
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "j.sqlite")},
            "policy": {"runtime_prediction": "runtime-quantiles"},
            "models": {"runtime_quantiles": str(missing)},
            "rjms": {"backend": "slurm"},
        }
    )
    q = Queue()
    d = Daemon(config, backend=q, dry_run=True)
    assert d.runtime is None
    assert any("runtime:runtime-quantiles" in e["message"] for e in d.journal.events("model"))
    built, decided = cycle(d, q, 2100.0, job(3, "RUNNING", 2000.0, 2050.0), job(4, "PENDING", 2060.0))
    assert decided.estimated_start[4] == 2050.0 + HOUR
    assert built.snapshot.running[0].runtime_quantiles is None  # no model: no quantiles, limits
