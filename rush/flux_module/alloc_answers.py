"""The module's answers to the job-manager's alloc requests: one KVS commit per pass.

flux-core's ``Scheduler.alloc_success`` commits each job's R to the KVS alone and answers the
job in that commit's continuation. A continuation runs when the reactor reaches the commit's
response, behind every message already queued for the module: after ``flux queue start``,
the job-manager's whole burst of alloc requests. So the first start waited for the ingestion
of the whole queue (2.5 s of a 1 000-job burst at 1 000 nodes; benchmarks/bench_flux_nodes.py).

Here a pass's allocations are collected, their R committed in chunks of :data:`CHUNK` (each
chunk's commit is sent when the chunk is full, the rest when the pass has allocated), and the
jobs of a commit answered when it is done, whichever comes first of:

- the pass itself, which answers the commits already done each time it sends one and at its end;
- the end of a pass that allocated few jobs (:data:`ANSWER_AT_ONCE`) while no earlier commit
  is open, after a wait: milliseconds, and what makes the first start of a burst prompt (a
  synchronous wait reads the commit's response out of order: flux-core's future waits for its
  own response only);
- the start of the next pass, which answers the commits done by then;
- the commit's continuation.

Other than that the module never waits for a commit: while it waits it reads no message (no
arrival, no ``sched.resource-status``). Waiting at each pass's start for the commits still open
was most of the module's wall time in a burst on a loaded host (2.1 s of a 5.7 s run of 1 000
jobs, 0.03 s of CPU; benchmarks/bench_flux_nodes.py ``--timers``). The continuation waits
instead behind the messages queued before the commit's response, which the module reads in a
tenth of a millisecond each.

Between a large pass and its answers the module keeps ingesting arrivals while the KVS
commits. As in the base class, R is in the KVS before the job-manager hears of the job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from _flux._core import ffi, lib  # type: ignore[import-not-found]
from flux.kvs import KVSTxn  # type: ignore[import-not-found]
from flux.kvs import commit_async as kvs_commit_async  # type: ignore[import-not-found]
from flux.scheduler import _ALLOC_SUCCESS  # type: ignore[import-not-found]

# Allocations per KVS commit within a pass.
CHUNK = 64
# A pass that allocated at most this many jobs, with no earlier commit of the module still open,
# waits for its commit and answers at once (the first start of a burst; a start after a job's end).
ANSWER_AT_ONCE = 64


@dataclass
class Committing:
    """One pass's allocations: (job id, request message, R, annotations) each, and their commit."""

    answers: list[tuple[int, Any, dict, dict | None]]
    commit: Any = None  # the KVS commit's future
    answered: bool = False


@dataclass
class AllocAnswers:
    handle: Any
    log: Any  # the module's BrokerLogger
    on_commit_error: Callable[[], None]
    collecting: list[tuple[int, Any, dict, dict | None]] | None = None
    open: list[Committing] = field(default_factory=list)
    this_pass: list[Committing] = field(default_factory=list)
    answer_at_once: int = ANSWER_AT_ONCE
    # Called when the last open commit has been answered (a settling pass runs then).
    on_all_answered: Callable[[], None] | None = None

    def begin(self) -> None:
        """A pass starts allocating: successes are collected from now on."""
        self.collecting = []
        self.this_pass = []

    def collect(self, jobid: int, msg: Any, r: dict, annotations: dict | None) -> bool:
        """Keep a success for the pass's commit; False outside a pass (the caller answers).
        A full chunk is committed now, and the pass's chunks already committed are answered.
        The job's id is given: reading it from the message decodes the whole request (its
        jobspec) again."""
        if self.collecting is None:
            return False
        self.collecting.append((jobid, msg, r, annotations))
        if len(self.collecting) >= CHUNK:
            self.answer_done()
            self._commit_collected()
        return True

    def _commit_collected(self) -> Committing | None:
        answers, self.collecting = self.collecting, []
        if not answers:
            return None
        txn = KVSTxn(self.handle)
        key = ffi.new("char[128]")
        for jobid, _, r, _ in answers:
            if lib.flux_job_kvs_key(key, 128, jobid, b"R") < 0:
                raise OSError("flux_job_kvs_key failed")
            txn.put(ffi.string(key).decode(), r)
        batch = Committing(answers, kvs_commit_async(self.handle, _kvstxn=txn))
        batch.commit.then(lambda _future, done: self.answer(done), batch)
        self.open.append(batch)
        self.this_pass.append(batch)
        return batch

    def commit(self) -> None:
        """Every R collected since the last chunk into the KVS, in one transaction."""
        self._commit_collected()
        self.collecting = None

    def end_of_pass(self) -> None:
        """The commits done by now are answered; a small pass's own, when nothing earlier is
        still open, after a wait (milliseconds: the KVS has nothing else of ours to commit);
        the others by their continuation or the next pass."""
        self.answer_done()
        alone = all(batch in self.this_pass for batch in self.open)
        if self.open and alone and sum(len(b.answers) for b in self.this_pass) <= self.answer_at_once:
            for batch in list(self.open):
                self.answer(batch)

    def answer_done(self) -> None:
        """Answer the open commits that are done, without waiting for any."""
        for batch in list(self.open):
            if batch.commit.is_ready():
                self.answer(batch)

    def answer(self, batch: Committing) -> None:
        """Answer the jobs of a batch once its commit is done (a wait when it is not); once."""
        if batch.answered:
            return
        batch.answered = True
        self.open.remove(batch)
        try:
            batch.commit.get()
        except OSError as exc:  # what the base class does when a job's commit fails
            self.log.error(f"alloc: KVS commit failed: {exc}")
            self.on_commit_error()
            return
        for jobid, msg, r, notes in batch.answers:
            answer = {"id": jobid, "type": _ALLOC_SUCCESS, "R": r}
            if notes is not None:
                answer["annotations"] = notes
            self.handle.respond(msg, answer)
        if not self.open and self.collecting is None and self.on_all_answered is not None:
            self.on_all_answered()
