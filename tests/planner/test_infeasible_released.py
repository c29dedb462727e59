"""Priority mode: a job rush reads as infeasible is released to the RJMS at the lowest priority,
journaled once with the job named and the reason, so that a gate (Flux's ``gate = true``:
priority 0 until rush ranks a job) never keeps it from the RJMS's scheduler (issue 30, bad
input: "jobspecs Fluxion accepts and rush's request model does not"). On Slurm's path a job
rush holds is released once the core reads it as infeasible (it is never skipped), so it is
not held for ever either. A shell that starts jobs itself sends no priority."""

from __future__ import annotations

from rush.cli.explain import explain_text
from rush.core.priority_values import LOWEST_VALUE
from rush.core.resources import Node, Request
from rush.planner.config import parse_config
from rush.planner.journal_query import JournalQuery
from rush.planner.plan import Planner
from rush.planner.start_order import released_line, released_pending_line
from rush.rjms.base import ActionResult, Capabilities, ClusterState, RJMSJob
from tests.queue_backend import Queue

# The packed GPU shape `slot[3] > (core[1], gpu[1])` as main read it: 3 nodes of 1 core and
# 1 GPU, on a machine of two nodes (Fluxion packs the slots on them and starts it).
MISREAD = Request(nodes=3, cores_per_node=1, gpus_per_node=1)
REASON = "released to the RJMS at the lowest priority"


class Recorded(Queue):
    """The test queue, recording every priority it is told to set."""

    def __init__(self, state: ClusterState) -> None:
        super().__init__(state)
        self.priorities: list[tuple[int, int]] = []

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        self.priorities.append((job_id, site_factor))
        return ActionResult(True)


def _machine(*jobs: RJMSJob) -> ClusterState:
    nodes = tuple(Node(f"n{i}", 4, gpus=2) for i in range(2))
    return ClusterState(taken_at=2000.0, total_procs=8, free_procs=8, jobs=jobs, nodes=nodes)


def _planner(tmp_path, backend: Queue) -> Planner:
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": False},
        "policy": {"policy": "FCFS", "backfill": "easy"},
    }
    return Planner(parse_config(raw), backend=backend)


def _released_lines(planner: Planner) -> list[dict]:
    return [r for r in planner.journal.decisions(action="priority") if REASON in r["reason"]]


def test_a_job_read_as_infeasible_is_released_at_the_lowest_priority_once(tmp_path):
    misread = RJMSJob(1, "PENDING", 1001.0, 3, 600.0, request=MISREAD)
    fits = RJMSJob(2, "PENDING", 1002.0, 1, 600.0, request=Request(nodes=1, cores_per_node=1))
    backend = Recorded(_machine(misread, fits))
    planner = _planner(tmp_path, backend)
    for _ in range(3):  # the same queue, three cycles: released once
        assert planner.run_cycle().ok
        assert [d.job_id for d in planner.last[2].of("infeasible")] == [1]
    assert backend.priorities.count((1, LOWEST_VALUE)) == 1
    assert [p for j, p in backend.priorities if j == 2][0] > LOWEST_VALUE  # ranked above it
    lines = _released_lines(planner)
    assert [(r["job_id"], r["value"], r["status"]) for r in lines] == [(1, LOWEST_VALUE, "done")]
    assert lines[0]["reason"].startswith("rush reads it as infeasible: ")
    assert "3 nodes" in lines[0]["reason"] and "2 such nodes" in lines[0]["reason"]


def test_a_held_job_read_as_infeasible_is_released_from_the_hold(tmp_path):
    """Slurm's path: a job rush holds (skipped when its request read otherwise) is released in
    the first cycle the core reads it as infeasible, and gets the lowest value."""
    backend = Recorded(_machine(RJMSJob(1, "PENDING", 1001.0, 3, 600.0, request=MISREAD)))
    released: list[int] = []
    backend.release = lambda job_id: released.append(job_id) or ActionResult(True)  # type: ignore[method-assign]
    planner = _planner(tmp_path, backend)
    rec = planner.journal.job(1)
    rec.held_by_rush, rec.skips = True, 1
    planner.journal.save_job(rec)
    assert planner.run_cycle().ok
    assert [d.job_id for d in planner.last[2].of("infeasible")] == [1]
    assert released == [1]
    assert (1, LOWEST_VALUE) in backend.priorities


def test_a_shell_that_starts_jobs_itself_sends_no_release(tmp_path):
    backend = Recorded(_machine(RJMSJob(1, "PENDING", 1001.0, 3, 600.0, request=MISREAD)))
    backend.capabilities = Capabilities(starts_jobs=True)  # type: ignore[misc]
    planner = _planner(tmp_path, backend)
    assert planner.run_cycle().ok
    assert [d.value for d in planner.last[2].of("infeasible")] == [None]
    assert backend.priorities == [] and _released_lines(planner) == []


def test_a_released_job_the_rjms_refuses_is_journaled_with_its_reason(tmp_path):
    class Refusing(Recorded):
        def ended_unstarted(self, job_id: int) -> str | None:
            return 'alloc denied due to type="unsatisfiable"'

    backend = Refusing(_machine(RJMSJob(1, "PENDING", 1001.0, 3, 600.0, request=MISREAD)))
    planner = _planner(tmp_path, backend)
    assert planner.run_cycle().ok
    backend.state = _machine()  # the RJMS refused it: it left the queue
    for _ in range(2):
        assert planner.run_cycle().ok
    lines = [e["message"] for e in planner.journal.events("rjms_order")]
    assert lines == [released_line(1, 'alloc denied due to type="unsatisfiable"')]
    assert "job 1, which rush read as infeasible and released to the RJMS, ended without starting" in lines[0]


def test_a_released_job_the_rjms_keeps_pending_is_journaled_once_and_explained(tmp_path):
    """Fluxion's ``easy`` answers ``-N3`` on two nodes with EBUSY (more nodes than are up) and
    keeps the job blocked, neither started nor refused: once the RJMS has settled (two reads,
    nothing started between), journaled once over the episode, naming the job and rush's
    reason, and on the job's own history, which ``rush explain`` prints."""
    backend = Recorded(_machine(RJMSJob(1, "PENDING", 1001.0, 3, 600.0, request=MISREAD)))
    planner = _planner(tmp_path, backend)
    for _ in range(6):
        assert planner.run_cycle().ok
    [infeasible] = planner.last[2].of("infeasible")
    line = released_pending_line(1, infeasible.reason)
    assert [e["message"] for e in planner.journal.events("rjms_order")] == [line]
    assert "neither started nor refused it" in line and "2 such nodes" in line
    [row] = planner.journal.decisions(1, "rjms_order")
    assert (row["reason"], row["status"]) == (line, "observed")
    with JournalQuery(tmp_path / "journal.sqlite") as query:
        text = "\n".join(explain_text(query.job_view(1).to_json(), 2000.0))
    assert line in text, text
