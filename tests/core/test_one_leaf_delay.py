"""The leaf-aware delay of a flagged job (``one-leaf`` placement, rush.core.easy_nodes.decide_in).

Every job is placed first-fit; a job the variation predictor flags, below its skip limit,
starts only on one leaf switch (the smallest that holds it) and is skipped while none does.
At the limit it is placed first-fit like any other job.
"""

from __future__ import annotations

import pytest

from rush.core.config import CoreConfig
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot


def _leaves(busy: set[int]) -> tuple[Node, ...]:
    """Four leaves of two 8-core nodes (n0..n7, leaf i // 2); ``busy`` nodes have no free core."""
    return tuple(Node(f"n{i}", 8, leaf=i // 2, free_cores=0 if i in busy else None) for i in range(8))


def _decide(
    busy: set[int], placement: str, variable: bool, size: int = 2, skips: int = 0, backfill: str = "easy"
) -> list:
    nodes = _leaves(busy)
    pending = (
        PendingJob(
            1, 0, 8 * size, 100, variable=variable, skips=skips, request=Request(size, 8, exclusive=True)
        ),
    )
    # The busy nodes run one job (ending at 1000 s), so that every pass kind sees them taken.
    running = (
        (RunningJob(9, 0.0, 8 * len(busy), 1000.0, allocation=tuple(Slot(i, 8) for i in sorted(busy))),)
        if busy
        else ()
    )
    snapshot = Snapshot(
        now=0.0,
        total_procs=64,
        free_procs=64 - 8 * len(busy),
        pending=pending,
        running=running,
        nodes=nodes,
        trigger="event",
    )
    config = CoreConfig(placement=placement, backfill=backfill)  # type: ignore[arg-type]
    return [d for d in schedule(snapshot, config).decisions if d.action != "priority"]


def _leaf_of(names: tuple[str, ...]) -> set[int]:
    return {int(n[1:]) // 2 for n in names}


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_a_flagged_job_starts_on_one_leaf_where_first_fit_would_span_two(backfill: str) -> None:
    # n0 busy: first fit gives n1 and n2 (leaves 0 and 1); leaves 1, 2, 3 each hold the job.
    [plain] = _decide({0}, "first-fit", False, backfill=backfill)
    assert plain.action == "start" and plain.nodes == ("n1", "n2")
    [rush] = _decide({0}, "first-fit", True, backfill=backfill)
    assert rush.action == "skip"
    [leaf] = _decide({0}, "one-leaf", True, backfill=backfill)
    assert leaf.action == "start" and len(_leaf_of(leaf.nodes)) == 1 and leaf.nodes == ("n2", "n3"), leaf
    # An unflagged job is placed first-fit, as without the rule.
    assert _decide({0}, "one-leaf", False, backfill=backfill) == [plain]


def test_a_flagged_job_takes_the_smallest_leaf_that_holds_it() -> None:
    # Free: n1 (leaf 0), n4 n5 (leaf 2), n6 n7 (leaf 3) and n3 (leaf 1); a one-node job fits on
    # leaf 0 or 1 (one free node each: the smallest), a two-node job on leaf 2 (the first of
    # the two that hold it).
    [one] = _decide({0, 2}, "one-leaf", True, size=1)
    assert one.action == "start" and _leaf_of(one.nodes) in ({0}, {1})
    [two] = _decide({0, 2}, "one-leaf", True, size=2)
    assert two.action == "start" and two.nodes == ("n4", "n5"), two


def test_a_flagged_job_no_leaf_holds_is_skipped_until_its_limit() -> None:
    # Free: n1, n2, n4, n6: room for two nodes only across leaves.
    busy = {0, 3, 5, 7}
    [held] = _decide(busy, "one-leaf", True)
    assert held.action == "skip" and held.value == 1  # an event pass counts the skip
    # At the limit (10) it is placed first-fit like any job, across the leaves.
    [at_limit] = _decide(busy, "one-leaf", True, skips=10)
    assert at_limit.action == "start" and at_limit.nodes == ("n1", "n2")
    # A job larger than any leaf is held as RUSH holds it.
    [big] = _decide(set(), "one-leaf", True, size=3)
    assert big.action == "skip"
