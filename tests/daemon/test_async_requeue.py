"""The requeue is asynchronous: issued in one cycle, confirmed in a later one, never issued twice.

The backend here is an in-memory stand-in that records calls (the real Slurm sequence is in
tests/daemon/test_live_slurm.py::test_opted_in_false_small_job_requeued_once_and_finishes_as_large
and the kill -9 tests there); it lets each state of the requeue be set exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rush.core.snapshot import RuntimeClass
from rush.planner.apply import Action, Applier, Plan
from rush.planner.journal import Journal
from rush.planner.metrics import DaemonMetrics
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob


class Recorder(RJMSBackend):
    name = "recorder"

    def __init__(self, requeue_answer: ActionResult) -> None:
        self.requeue_answer = requeue_answer
        self.calls: list[tuple[str, int]] = []

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        self.calls.append(("requeue", job_id))
        return self.requeue_answer

    def finish_requeue(self, job: RJMSJob) -> ActionResult | None:
        self.calls.append(("finish", job.job_id))
        return None if job.state == "COMPLETING" else ActionResult(True, "begin in 5 s")

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        raise NotImplementedError

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        raise NotImplementedError

    def hold(self, job_id: int) -> ActionResult:
        raise NotImplementedError

    def release(self, job_id: int) -> ActionResult:
        raise NotImplementedError

    def submit(self, **kwargs) -> int:
        raise NotImplementedError

    def cancel(self, job_id: int) -> ActionResult:
        raise NotImplementedError


RUNNING = RJMSJob(job_id=5, state="RUNNING", submit=0.0, procs=2, requested_time=60.0, start=1.0)


def state_of(job: RJMSJob) -> ClusterState:
    return ClusterState(taken_at=10.0, total_procs=8, free_procs=6, jobs=(job,))


def kill_plan() -> Plan:
    # The core's kill carries the class and count it requeues with (false_small_kill.requeue_as_large).
    kill = Action(
        "kill", 5, "false small: ran past the divider", 4.0, requeue_class=RuntimeClass.LARGE, requeues=1
    )
    return Plan(actions=[kill])


def statuses(journal: Journal) -> list[tuple[str, str]]:
    return [(d["status"], d["answer"]) for d in journal.decisions(5, "kill")]


def test_requeue_is_issued_once_confirmed_next_cycle_and_never_reissued(tmp_path):
    backend = Recorder(ActionResult(True, "requeue issued: ok; tags rush:class=large;requeues=1: ok"))
    journal = Journal(tmp_path / "j.sqlite")
    applier = Applier(backend, journal, DaemonMetrics())
    done, error = applier.apply(1, kill_plan(), state_of(RUNNING))
    assert error is None and done == {"kill": 1} and backend.calls == [("requeue", 5)]
    # Issued, not waited for: the intent stays open with Slurm's answer.
    [(status, answer)] = statuses(journal)
    assert status == "intent" and answer.startswith("requeue issued")
    # The core asks again before it is confirmed: refused, not issued a second time.
    applier.apply(2, kill_plan(), state_of(RUNNING))
    assert backend.calls == [("requeue", 5)]
    assert [s for s, _ in statuses(journal)] == ["intent", "refused"]
    # Next cycle: the old run is still completing (restart count already up): still open.
    completing = replace(RUNNING, state="COMPLETING", restarts=1)
    assert applier.reconcile(state_of(completing)) == []
    assert statuses(journal)[0] == (status, answer)  # the row is left as it was
    # Then it is pending again: confirmed from the restart count, begin time brought back.
    pending = replace(RUNNING, state="PENDING", start=None, restarts=1)
    [(_, settled, why)] = applier.reconcile(state_of(pending))
    assert settled == "done" and "restart count 0 -> 1" in why and "begin in 5 s" in why
    assert backend.calls == [("requeue", 5), ("finish", 5), ("finish", 5)]
    assert journal.open_intents() == [] and journal.job(5).requeues == 1


def test_a_requeue_that_cannot_be_attempted_fails_at_once_and_is_not_counted(tmp_path):
    backend = Recorder(ActionResult(False, "requeue needs scontrol, which is not installed", attempted=False))
    journal = Journal(tmp_path / "j.sqlite")
    done, error = Applier(backend, journal, DaemonMetrics()).apply(1, kill_plan(), state_of(RUNNING))
    assert error is None and done == {}
    [(status, answer)] = statuses(journal)
    assert status == "failed" and "needs scontrol" in answer
    assert journal.open_intents() == [] and journal.job(5).requeues == 0


def test_an_unclear_requeue_is_reconciled_not_reissued(tmp_path):
    backend = Recorder(ActionResult(False, "requeue issued: ok; tags: Socket timed out"))
    journal = Journal(tmp_path / "j.sqlite")
    applier = Applier(backend, journal, DaemonMetrics())
    applier.apply(1, kill_plan(), state_of(RUNNING))
    assert [s for s, _ in statuses(journal)] == ["intent"]
    # Slurm did requeue it (restart count up): confirmed, not issued again.
    [(_, settled, _)] = applier.reconcile(state_of(replace(RUNNING, state="PENDING", start=None, restarts=1)))
    assert settled == "done" and [c for c in backend.calls if c[0] == "requeue"] == [("requeue", 5)]
