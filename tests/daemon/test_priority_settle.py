"""A batch of priorities is settled in one commit (the journal's `synchronous=FULL` makes each
commit wait for the disk: 200 a cycle were most of the applier's time), with every row as
before, and a failure while settling leaves the whole batch open for `reconcile`, as a crash
there does."""

from __future__ import annotations

import pytest

from rush.planner.apply import Action, Applier, Plan
from rush.planner.journal import Journal
from rush.planner.metrics import DaemonMetrics
from rush.rjms.base import ActionResult, Capabilities, ClusterState, RJMSJob

PRIORITIES = 50


class Answers:
    """A backend whose calls all succeed, one batch call for the priorities."""

    capabilities = Capabilities()

    def __init__(self) -> None:
        self.batches = 0

    def set_priorities(self, pairs):
        self.batches += 1
        return [ActionResult(ok=True, answer=f"site factor {v}") for _, v in pairs]

    def hold(self, job_id: int) -> ActionResult:
        return ActionResult(ok=True, answer="held")


def pending(job_id: int, site_factor: int = 0) -> RJMSJob:
    return RJMSJob(job_id, "PENDING", 1000.0, 2, 600.0, site_factor=site_factor)


def plan() -> Plan:
    actions = [Action("hold", 1, "variable")]
    actions += [Action("priority", j, "WFP3", float(10 * j)) for j in range(2, 2 + PRIORITIES)]
    return Plan(actions=actions)


def state() -> ClusterState:
    return ClusterState(2000.0, 8, 0, tuple(pending(j) for j in range(1, 2 + PRIORITIES)))


def commits(journal: Journal) -> list[str]:
    seen: list[str] = []
    journal.db.set_trace_callback(lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None)
    return seen


def test_a_batch_of_priorities_is_one_commit(tmp_path):
    journal = Journal(tmp_path / "j.sqlite")
    backend = Answers()
    applier = Applier(backend=backend, journal=journal, metrics=DaemonMetrics())  # type: ignore[arg-type]
    seen = commits(journal)
    done, error = applier.apply(1, plan(), state())
    assert error is None and done == {"hold": 1, "priority": PRIORITIES} and backend.batches == 1
    # The intents together, the hold's settlement, the batch's settlements together.
    assert len(seen) == 3
    assert journal.open_intents() == []
    rows = journal.decisions(action="priority")
    assert len(rows) == PRIORITIES and {r["status"] for r in rows} == {"done"}
    assert [journal.job(j).last_site_factor for j in range(2, 2 + PRIORITIES)] == [
        10 * j for j in range(2, 2 + PRIORITIES)
    ]


def test_a_failure_while_settling_leaves_the_batch_for_reconcile(tmp_path):
    journal = Journal(tmp_path / "j.sqlite")
    applier = Applier(backend=Answers(), journal=journal, metrics=DaemonMetrics())  # type: ignore[arg-type]
    finish, calls = journal.finish, []

    def failing_finish(intent, status, answer):
        calls.append(intent)
        if len(calls) == 1 + PRIORITIES // 2:  # the hold's, then half the batch's
            raise OSError("disk full")
        return finish(intent, status, answer)

    journal.finish = failing_finish  # type: ignore[method-assign]
    with pytest.raises(OSError, match="disk full"):
        applier.apply(1, plan(), state())
    journal.finish = finish  # type: ignore[method-assign]
    # The hold stays settled; none of the batch is (one transaction rolled back): all open.
    assert [i.job_id for i in journal.open_intents()] == list(range(2, 2 + PRIORITIES))
    assert journal.job(1).held_by_rush
    # The next read shows every site factor set: reconcile settles the whole batch as done.
    seen = ClusterState(2100.0, 8, 0, tuple(pending(j, 10 * j) for j in range(2, 2 + PRIORITIES)))
    settled = applier.reconcile(seen)
    assert sorted(i.job_id for i, _, _ in settled) == list(range(2, 2 + PRIORITIES))
    assert {status for _, status, _ in settled} == {"done"}
    assert journal.open_intents() == []
