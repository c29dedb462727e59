"""Start-time estimates on a live Flux replay with Fluxion as the scheduler: rush's (the
daemon's journal, priority mode through rush's jobtap plugin) beside Fluxion's own
``t_estimate``, which its qmanager annotates on the jobs it reserves (the head of the queue
under ``queue-policy=easy``), recorded at every poll.

Behaviour, not a target: the report names Fluxion's estimator, both estimators were read for
the same pending jobs, and the report's shares are the ones the per-job predictions give.
"""

from __future__ import annotations

import pytest

from rush.studies.replay import loaded_scheduler
from tests.flux import fluxion
from tests.flux.plugin_build import jobtap_config, plugin_or_skip
from tests.live_replay import check_report, replay_with_estimates, write_config

pytestmark = pytest.mark.flux


def test_rush_and_fluxion_estimates_recorded_for_the_same_reserved_jobs(
    start_flux, tmp_path_factory, tmp_path
):
    why = fluxion.unavailable()
    if why:
        pytest.skip(why)
    plugin = plugin_or_skip(tmp_path_factory)
    instance = start_flux(size=1, cores=16, config=jobtap_config(plugin))
    fluxion.use_fluxion(instance, queue_policy="easy", match_policy="first")
    assert loaded_scheduler(instance.uri) == "sched-fluxion-qmanager"
    rjms = f'[rjms]\nbackend = "flux"\n\n[rjms.options]\nuri = "{instance.uri}"\npriority_lever = "plugin"\n'
    recorder, rows, summary = replay_with_estimates(write_config(tmp_path, "easy", rjms), "flux")
    assert set(recorder.readers) == {"rush", "fluxion"}
    assert set(summary["first"]) == set(summary["halfway"]) == {"rush", "fluxion"}
    check_report(recorder, rows, summary, "fluxion")
