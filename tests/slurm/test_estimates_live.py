"""Start-time estimates on a live Slurm replay: rush's (the daemon's journal) beside Slurm's
own ``squeue --start``, recorded at every poll (rush/studies/estimate_accuracy.py).

Behaviour, not a target: both estimators were read for the replay's pending jobs, and the
report's shares are in [0, 1] and are the ones the per-job predictions give. The window
(KTH-SP2 jobs 1491-1510 at speedup 2000) queues for a few seconds, so polls see pending jobs.
"""

from __future__ import annotations

import pytest

from tests.live_replay import check_report, replay_with_estimates, write_config

pytestmark = pytest.mark.slurm


def test_rush_and_squeue_start_recorded_for_the_same_jobs(slurm, tmp_path):
    rjms = (
        f'[rjms]\nbackend = "slurm"\n[rjms.options]\nslurm_conf = "{slurm.conf}"\nbin_dir = "{slurm.bin}"\n'
    )
    recorder, rows, summary = replay_with_estimates(write_config(tmp_path, "easy", rjms), "slurm")
    assert recorder.polls >= 3
    check_report(recorder, rows, summary, "slurm")
