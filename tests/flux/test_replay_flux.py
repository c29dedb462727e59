"""Replay on a LIVE Flux instance: a trace window as sleep jobs, then the fidelity report.

Two modes. Priority mode: the instance's own scheduler (sched-simple, priority FIFO) starts
the jobs while the daemon cycles and sets their priorities through rush's jobtap plugin; it
is compared with the simulator under FCFS without backfilling. (With the urgency lever
instead, rush's FCFS values land on urgency 13 while a job rush has not ranked yet keeps
Flux's default 16, so sched-simple starts a new job that fits ahead of the waiting ones until
the next cycle: measured on this window, 11 to 15 of 190 pairs inverted, 4 jobs up to 19 s
early. That lever is not held to the simulator's order.) Scheduler mode: rush's scheduler module (rush/flux_module/sched-rush.py)
replaces sched-simple for the replay (through ``rush replay --mode scheduler``, the command a
user runs) and is compared with the simulator under the same rush.toml: the start order must
be the simulator's and every wait within Flux's timing granularity (1 s).

The window, KTH-SP2 jobs 1491-1510 at speedup 2000 on 16 cores, queues (mean simulated wait
3.6 s, max 17 s) and backfills (12 of 20 jobs under EASY); it takes about 30 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rush.daemon.service import replay_hooks
from rush.planner.journal import Journal
from rush.studies.replay import ReplayOptions, loaded_scheduler, replay
from tests.core.real_traces import MIRROR, TRACES, real_workload
from tests.flux.plugin_build import jobtap_config, plugin_or_skip
from tests.live_replay import SPEEDUP, WINDOW
from tests.live_replay import write_config as write_replay_config

ROOT = Path(__file__).resolve().parents[2]


def write_config(tmp_path: Path, uri: str, backfill: str, options: str = "") -> Path:
    return write_replay_config(
        tmp_path, backfill, f'[rjms]\nbackend = "flux"\n\n[rjms.options]\nuri = "{uri}"\n{options}'
    )


def check_complete(report: dict) -> None:
    assert report["rjms"] == "flux" and report["unfinished"] == 0
    assert report["jobs"] == WINDOW.count == len(report["per_job"]) == len(report["rjms_job_ids"])
    assert sorted(r["job_id"] for r in report["per_job"]) == sorted(int(k) for k in report["rjms_job_ids"])
    for pair in report["metrics"].values():
        assert pair["simulator"] is not None and pair["flux"] is not None
    # The window really queues: a replay where nothing waits would compare nothing.
    assert max(r["sim_wait"] for r in report["per_job"]) > 10


def test_priority_mode_plugin_values_obeyed_by_sched_simple(start_flux, tmp_path_factory, tmp_path):
    plugin = plugin_or_skip(tmp_path_factory)
    instance = start_flux(size=1, cores=16, config=jobtap_config(plugin))
    config = write_config(tmp_path, instance.uri, "none", 'priority_lever = "plugin"\n')
    core_config, backend, cycle = replay_hooks(config)
    report = replay(
        backend,
        real_workload("KTH-SP2"),
        WINDOW,
        SPEEDUP,
        core_config,
        ReplayOptions(cycle=cycle, timeout=300),
    )
    (tmp_path / "fidelity.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in ("start_difference", "start_order", "metrics")}, indent=1))
    check_complete(report)
    assert report["mode"] == "priority"
    # The daemon cycled against the instance, during the submissions too, and its values went
    # through the jobtap plugin (a job it has not ranked yet waits behind the ranked ones).
    journal = Journal(tmp_path / "journal.sqlite")
    assert len(journal.cycles()) >= 3
    applied = [d for d in journal.decisions() if d["action"] == "priority" and d["status"] == "done"]
    assert applied and min(d["value"] for d in applied) > 31  # rush's values, not urgencies
    # sched-simple is a priority FIFO: with rush's FCFS values it is the simulator's FCFS
    # without backfilling, start for start, every wait within 1 s.
    assert report["start_order"]["same"], report["start_order"]
    assert report["start_difference"]["within_granularity"] == 1.0, report["start_difference"]


def test_scheduler_mode_start_order_is_the_simulators(start_flux, tmp_path):
    instance = start_flux(size=1, cores=16)
    config = write_config(tmp_path, instance.uri, "easy")
    out = tmp_path / "fidelity.json"
    trace = MIRROR / TRACES["KTH-SP2"]
    if not trace.exists():
        pytest.skip(f"trace {trace} not available: set RUSH_TRACE_MIRROR to the traces directory")
    argv = [sys.executable, "-m", "rush", "replay", str(trace), "--window", f"{WINDOW.start}:{WINDOW.count}"]
    argv += ["--speedup", f"{SPEEDUP:g}", "--rjms", "flux", "--rjms-option", f"uri={instance.uri}"]
    argv += ["--mode", "scheduler", "--config", str(config), "--timeout", "300", "--out", str(out)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=instance.env(), cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:] + instance.log_tail()
    print(run.stdout)
    report = json.loads(out.read_text())
    check_complete(report)
    assert report["mode"] == "scheduler" and "start order: the simulator's" in run.stdout
    # rush's module decided every start: the same core as the simulator, same configuration.
    assert report["start_order"]["same"], report["start_order"]
    assert report["start_difference"]["within_granularity"] == 1.0, report["start_difference"]
    # The instance's own scheduler is back afterwards.
    assert loaded_scheduler(instance.uri) == "sched-simple"
    starts = [
        d for d in Journal(tmp_path / "journal.sqlite").decisions() if d["action"] in ("start", "backfill")
    ]
    assert {d["status"] for d in starts} == {"done"}
    assert len({d["job_id"] for d in starts}) == WINDOW.count + 1  # and the warm-up job
    assert any(d["action"] == "backfill" for d in starts)


@pytest.mark.parametrize(
    "argv, where",
    [
        (["--mode", "scheduler"], "--mode scheduler"),  # no --config
        (["--mode", "scheduler", "--rjms", "slurm", "--config", "rush.toml"], "--mode scheduler"),
        (["--mode", "fast"], "--mode"),
        (["--window", "3"], "--window"),
    ],
)
def test_bad_replay_flags_are_refused_before_any_job(argv, where, tmp_path):
    args = [sys.executable, "-m", "rush", "replay", "lublin:50:16:1", "--rjms", "flux"]
    if "--window" not in argv:
        args += ["--window", "0:5"]
    run = subprocess.run(args + argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert where in run.stderr and "Traceback" not in run.stderr
