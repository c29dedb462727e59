"""The live origin of F1-F4's r term: configured, else the daemon's first cycle, kept across restarts."""

from __future__ import annotations

import time

from rush.core import CoreConfig
from rush.core.schedule import schedule
from rush.daemon.service import Daemon
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob
from tests.daemon.helpers import config


def test_origin_is_the_first_start_and_survives_a_restart(tmp_path):
    before = time.time()
    first = Daemon(config(tmp_path), dry_run=True)
    origin = first.builder.time_origin
    assert before <= origin <= time.time()
    first.journal.close()
    again = Daemon(config(tmp_path), dry_run=True)
    assert again.builder.time_origin == origin


def test_configured_origin_wins(tmp_path):
    daemon = Daemon(config(tmp_path, policy={"time_origin": 1.6e9, "policy": "F1"}), dry_run=True)
    assert daemon.builder.time_origin == 1.6e9


def test_f1_live_orders_like_the_simulator_from_the_origin():
    # Two jobs: a wide, short one submitted later, and a narrow one submitted just after the origin.
    # With r counted from the origin, F1 = log10(p) q + 870 log10(r): the early job's small r wins.
    origin = 1.7e9
    now = origin + 3600.0
    jobs = (
        RJMSJob(1, "PENDING", origin + 10.0, 4, 3600.0, user="a"),
        RJMSJob(2, "PENDING", origin + 3000.0, 1, 3600.0, user="a"),
    )
    state = ClusterState(now, 8, 0, jobs)
    live = schedule(
        SnapshotBuilder(time_origin=origin).build(state, {}).snapshot, CoreConfig.from_names("F1")
    )
    # r = 10 vs 3000: 4*log10(3600) + 870*1 = 884 < 1*log10(3600) + 870*log10(3000) = 3029.
    assert live.order == [1, 2]
    # Without the origin (r = Unix time), log10(r) is ~9.23 for both and the job width decides.
    epoch = schedule(SnapshotBuilder().build(state, {}).snapshot, CoreConfig.from_names("F1"))
    assert epoch.order == [2, 1]
