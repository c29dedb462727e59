"""Start-time estimates on a live Flux replay: rush's (the daemon's journal, priority mode
through rush's jobtap plugin) beside flux-core's sched-backfill ``t_estimate`` (which it
annotates on the head of the queue only), recorded at every poll.

Behaviour, not a target: both estimators were read for the replay's pending jobs, and the
report's shares are in [0, 1] and are the ones the per-job predictions give.
"""

from __future__ import annotations

from rush.studies.replay import loaded_scheduler
from tests.flux.plugin_build import jobtap_config, plugin_or_skip
from tests.live_replay import check_report, replay_with_estimates, write_config


def test_rush_and_sched_backfill_estimates_recorded_for_the_same_jobs(start_flux, tmp_path_factory, tmp_path):
    plugin = plugin_or_skip(tmp_path_factory)
    instance = start_flux(size=1, cores=16, config=jobtap_config(plugin))
    instance.use_scheduler("sched-backfill")
    assert loaded_scheduler(instance.uri) == "sched-backfill"
    rjms = f'[rjms]\nbackend = "flux"\n\n[rjms.options]\nuri = "{instance.uri}"\npriority_lever = "plugin"\n'
    recorder, rows, summary = replay_with_estimates(write_config(tmp_path, "easy", rjms), "flux")
    check_report(recorder, rows, summary, "flux")
