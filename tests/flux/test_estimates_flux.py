"""Start-time estimates on a live Flux replay: rush's (the daemon's journal, priority mode
through rush's jobtap plugin) beside flux-core's sched-backfill ``t_estimate`` (which it
annotates on the head of the queue only), recorded at every poll.

Behaviour, not a target: both estimators were read for the replay's pending jobs, and the
report's shares are in [0, 1] and are the ones the per-job predictions give.
"""

from __future__ import annotations

from rush.daemon.service import replay_hooks
from rush.planner.config import load_config
from rush.studies import estimate_accuracy
from rush.studies.replay import GRANULARITY, ReplayOptions, loaded_scheduler, replay
from tests.core.real_traces import real_workload
from tests.flux.plugin_build import jobtap_config, plugin_or_skip
from tests.flux.test_replay_flux import SPEEDUP, WINDOW, write_config
from tests.slurm.test_estimates_live import check_report


def test_rush_and_sched_backfill_estimates_recorded_for_the_same_jobs(start_flux, tmp_path_factory, tmp_path):
    plugin = plugin_or_skip(tmp_path_factory)
    instance = start_flux(size=1, cores=16, config=jobtap_config(plugin))
    instance.use_scheduler("sched-backfill")
    assert loaded_scheduler(instance.uri) == "sched-backfill"
    config = write_config(tmp_path, instance.uri, "easy", 'priority_lever = "plugin"\n')
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
    rows, summary = estimate_accuracy.report(recorder, backend, ids, SPEEDUP, GRANULARITY["flux"])
    print(estimate_accuracy.table(summary["first"]))
    check_report(recorder, rows, summary, "flux")
