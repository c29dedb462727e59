"""Resilience without Slurm: an unreachable RJMS endpoint, a corrupt model file, the metrics endpoint.

The backend is the real Slurm backend pointed at a closed localhost port (nothing listens),
so every read fails the way it does when slurmrestd is down.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import requests

from rush.daemon.service import Daemon
from rush.planner.metrics import DaemonMetrics
from tests.daemon.helpers import closed_port, config
from tests.polling import wait_for


def metric(daemon: Daemon, name: str, **labels) -> float:
    value = daemon.metrics.registry.get_sample_value(name, labels or None)
    return 0.0 if value is None else value


def test_unreachable_rjms_no_action_back_off_and_keep_running(tmp_path):
    daemon = Daemon(config(tmp_path), dry_run=False)
    reports = [daemon.run_cycle() for _ in range(4)]
    assert all(not r.ok and r.outcome == "rjms_error" and r.decisions == {} for r in reports)
    assert "127.0.0.1" in reports[0].error
    # Nothing decided, nothing applied, every failure journaled.
    assert daemon.journal.decisions() == [] and daemon.journal.jobs() == {}
    assert len(daemon.journal.events("rjms_error")) == 4
    assert [c["ok"] for c in daemon.journal.cycles()] == [0, 0, 0, 0]
    assert metric(daemon, "rush_rjms_errors_total") == 4
    assert metric(daemon, "rush_cycles_total", outcome="rjms_error") == 4
    assert metric(daemon, "rush_consecutive_failures") == 4
    assert metric(daemon, "rush_last_successful_cycle_timestamp_seconds") == 0
    # Exponential back-off, capped at daemon.backoff_max.
    daemon.failures = 1
    first = daemon.next_delay()
    daemon.failures = 2
    assert daemon.next_delay() == 2 * first
    daemon.failures = 50
    assert daemon.next_delay() == 4


def test_run_loop_survives_failures_and_stops_on_request(tmp_path):
    daemon = Daemon(config(tmp_path))
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    # Polled, not a fixed wait: under load the first cycle (imports, the refused connection) can
    # take seconds. Two failed cycles and the loop still running: it backs off, it does not exit.
    wait_for(lambda: metric(daemon, "rush_cycles_total", outcome="rjms_error") >= 2, timeout=120, step=0.1)
    assert thread.is_alive()
    daemon.stop()
    thread.join(timeout=30)
    assert not thread.is_alive()


def test_corrupt_model_is_journaled_and_the_daemon_starts(tmp_path):
    model = tmp_path / "runtime-class.joblib"
    model.write_bytes(b"\x80\x04not a pickle at all")
    model.with_name(model.name + ".json").write_text('{"model": "runtime-class", "sha256": "00"}')
    cfg = config(tmp_path, models={"runtime_class": str(model), "small_below": 600})
    daemon = Daemon(cfg)
    events = daemon.journal.events("model")
    assert len(events) == 1 and "runtime-class" in events[0]["message"] and str(model) in events[0]["message"]
    assert metric(daemon, "rush_model_errors_total", model="runtime-class") == 1
    # It falls back to the configured rule classifier, and says so in rush_model_info.
    assert daemon.classifier is not None and daemon.classifier.name == "rule"
    assert metric(daemon, "rush_model_info", model="rule", version="small_below=600") == 1


def test_kills_with_a_model_divider_are_disabled_when_the_model_is_missing(tmp_path):
    cfg = config(
        tmp_path,
        policy={"kill_false_small": True},
        models={"runtime_class": str(tmp_path / "missing.joblib")},
    )
    daemon = Daemon(cfg)
    assert daemon.core_config.kill_false_small is False
    assert [e["kind"] for e in daemon.journal.events()] == ["model", "config"]


def test_metrics_endpoint_serves_the_documented_names(tmp_path):
    metrics = DaemonMetrics()
    daemon = Daemon(config(tmp_path), metrics=metrics)
    daemon.run_cycle()
    port = metrics.serve("127.0.0.1:0")
    try:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    finally:
        metrics.shutdown()
    for name in (
        "rush_cycle_duration_seconds_bucket",
        'rush_cycles_total{outcome="rjms_error"} 1.0',
        "rush_queue_length",
        "rush_rjms_errors_total 1.0",
        "rush_last_successful_cycle_timestamp_seconds",
        "rush_dry_run 1.0",
    ):
        assert name in text


def test_cli_once_exits_1_when_the_rjms_is_down(tmp_path):
    path = tmp_path / "rush.toml"
    path.write_text(
        f'[daemon]\njournal = "{tmp_path / "j.sqlite"}"\n'
        f'[rjms]\nbackend = "slurm"\n[rjms.options]\nrest_url = "http://127.0.0.1:{closed_port()}"\n'
        "fallback = false\ntimeout = 2\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "rush", "daemon", "--config", str(path), "--once"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1, out.stderr
    assert "(dry-run): failed" in out.stdout and "RJMS unavailable" in out.stderr
