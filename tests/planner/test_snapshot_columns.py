"""The planner's kept job columns (rush.planner.snapshot_columns) against the columns read
afresh from the objects, and the core's decisions with them against its decisions without,
over random event sequences: arrivals, ends, starts, changed jobs, and the queue listed in
another order. Once on the columns alone (30 seeds x 8 cycles, on nodes and on processor
counts, EASY and conservative), once through the planner's whole cycle as each shell feeds it
(the Flux module keeps its job objects between passes, a daemon reads fresh ones)."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest

from rush.core import CoreConfig, PendingJob
from rush.core.job_columns import PendingRows, SnapshotColumns, snapshot_columns
from rush.core.schedule import schedule
from rush.errors import RushError
from rush.planner.config import parse_config
from rush.planner.plan import Planner
from rush.planner.snapshot_columns import KeptColumns
from rush.rjms.base import RJMSJob
from tests.planner.live_cycles import KeptObjects, assert_same_decisions, event_sequence, rjms_state
from tests.queue_backend import Queue


def assert_same_columns(kept: SnapshotColumns, read: SnapshotColumns) -> None:
    for kind in ("pending", "running"):
        ours, theirs = getattr(kept, kind), getattr(read, kind)
        for field in dataclasses.fields(theirs):
            a, b = getattr(ours, field.name), getattr(theirs, field.name)
            if isinstance(b, np.ndarray):
                assert a.dtype == b.dtype, (kind, field.name)
                np.testing.assert_array_equal(a, b, err_msg=f"{kind}.{field.name}")
            else:
                assert tuple(a) == tuple(b), (kind, field.name)


@pytest.mark.parametrize("on_nodes", [True, False], ids=["nodes", "counts"])
@pytest.mark.parametrize("seed", range(30))
def test_kept_columns_equal_columns_read_afresh_and_decide_the_same(seed: int, on_nodes: bool) -> None:
    kept = KeptColumns()
    config = CoreConfig(backfill="easy" if seed % 2 else "conservative")
    last: dict[int, PendingJob] = {}
    for snapshot in event_sequence(seed, 8, on_nodes):
        columns = kept.update(snapshot.pending, snapshot.running)
        assert_same_columns(columns, snapshot_columns(snapshot.pending, snapshot.running))
        assert len(kept.pending) == len(snapshot.pending) and len(kept.running) == len(snapshot.running)
        with_columns = schedule(replace(snapshot, columns=columns), config)
        assert_same_decisions(with_columns, schedule(snapshot, config))
        # Only the jobs that arrived or changed (a new object) are read again.
        assert kept.pending.rewritten == sum(last.get(p.job_id) is not p for p in snapshot.pending)
        last = {p.job_id: p for p in snapshot.pending}


def test_columns_of_other_jobs_or_in_another_order_are_refused() -> None:
    snapshot = next(event_sequence(0, 1, True))
    fewer = snapshot_columns(snapshot.pending[1:], snapshot.running)
    swapped = snapshot_columns(
        (snapshot.pending[1], snapshot.pending[0], *snapshot.pending[2:]), snapshot.running
    )
    for columns in (fewer, swapped):
        with pytest.raises(RushError, match="snapshot.columns.pending"):
            schedule(replace(snapshot, columns=columns), CoreConfig())


@pytest.mark.parametrize("shell", ["daemon", "flux-module"])
@pytest.mark.parametrize("seed", range(6))
def test_planner_cycles_hand_the_core_kept_columns_that_decide_as_read_ones(
    tmp_path, seed: int, shell: str
) -> None:
    backfill = "easy" if seed % 2 else "conservative"
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": shell == "daemon"},
        "policy": {"policy": "FCFS", "backfill": backfill},
    }
    backend = KeptObjects() if shell == "flux-module" else Queue()
    planner = Planner(parse_config(raw), backend=backend)
    objects: dict[int, RJMSJob] = {}
    reread, listed = [], []
    for snapshot in event_sequence(seed, 6, on_nodes=seed % 3 != 0):
        backend.state = rjms_state(snapshot, fresh=shell == "daemon", kept=objects)
        report = planner.run_cycle()
        assert report.ok, report.error
        _, built, decisions = planner.last
        given = built.snapshot
        assert given.columns is not None
        assert_same_columns(given.columns, snapshot_columns(given.pending, given.running))
        again = schedule(replace(given, columns=None), planner.core_config, explain_priorities=False)
        words = [d for d in decisions.decisions if d.action != "priority"]
        assert_same_decisions(dataclasses.replace(decisions, decisions=words), again)
        # The builder writes the pending columns itself, as core jobs made only where read.
        assert isinstance(given.pending, PendingRows) and given.columns.pending is given.pending.columns
        reread.append(planner.builder.rows_read)
        listed.append(len(given.pending))
    # Unchanged pending jobs keep their rows, whether the shell kept the objects or read anew.
    assert reread[0] == listed[0] and sum(reread[1:]) < sum(listed[1:])
