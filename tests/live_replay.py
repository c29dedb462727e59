"""What the live replay tests share (Slurm and Flux): the window, a daemon configuration, and
a replay with the start-estimate recorder and the checks of its report."""

from __future__ import annotations

from pathlib import Path

from rush.daemon.service import replay_hooks
from rush.planner.config import load_config
from rush.studies import estimate_accuracy
from rush.studies.replay import GRANULARITY, ReplayOptions, replay
from rush.studies.replay_window import Window
from tests.core.real_traces import real_workload

# KTH-SP2 jobs 1491-1510 at speedup 2000: the window queues for a few seconds.
WINDOW, SPEEDUP = Window(1491, 20), 2000.0


def write_config(tmp_path: Path, backfill: str, rjms: str) -> Path:
    """A rush.toml for a replay: FCFS, applying, ``rjms`` the [rjms] section's text."""
    path = tmp_path / "rush.toml"
    path.write_text(
        f'[daemon]\ncycle_interval = 1\njournal = "{tmp_path / "journal.sqlite"}"\ndry_run = false\n\n'
        f'[policy]\npolicy = "FCFS"\nbackfill = "{backfill}"\nthreshold = "none"\nwait_quantum = 0\n\n' + rjms
    )
    return path


def replay_with_estimates(config: Path, rjms: str):
    """Replay the window with the daemon's cycles and the recorder; (recorder, rows, summary)."""
    core_config, backend, cycle = replay_hooks(config)
    recorder = estimate_accuracy.recorder_for(backend, load_config(config).daemon.journal, cycle)
    report = replay(
        backend,
        real_workload("KTH-SP2"),
        WINDOW,
        SPEEDUP,
        core_config,
        ReplayOptions(cycle=recorder, timeout=300),
    )
    assert report["unfinished"] == 0
    ids = {int(k): v for k, v in report["rjms_job_ids"].items()}
    rows, summary = estimate_accuracy.report(recorder, backend, ids, SPEEDUP, GRANULARITY[rjms])
    print(estimate_accuracy.table(summary["first"]))
    return recorder, rows, summary


def check_report(recorder, rows, summary, rjms: str) -> None:
    """Both estimators seen, shares in [0, 1] and recomputable from the per-job rows."""
    ids = {r.rjms_job_id for r in rows}
    seen = {(s.job_id, s.estimator) for s in recorder.samples if s.start is not None and s.job_id in ids}
    assert {e for _, e in seen} == {"rush", rjms}, "both estimators gave estimates for replayed jobs"
    both = {j for j, e in seen if e == "rush"} & {j for j, e in seen if e == rjms}
    assert both, "at least one job had an estimate from each estimator"
    assert summary["jobs"] == WINDOW.count and not summary["failed_reads"]
    for name in ("rush", rjms):
        mine = [r for r in rows if r.estimator == name]
        again = estimate_accuracy.accuracy([r.error for r in mine], [r.wait for r in mine])
        assert summary["first"][name]["all"] == again
        for classes in (summary["first"][name], summary["halfway"][name]):
            for acc in classes.values():
                for key in ("coverage", "within_1min", "within_10pct", "within_1min_of_all"):
                    assert acc[key] is None or 0.0 <= acc[key] <= 1.0, (name, key, acc)
        assert 0 < summary["first"][name]["all"]["estimated"] <= WINDOW.count
