"""The module's answers to the job-manager's alloc requests: one KVS commit per pass.

flux-core's ``Scheduler.alloc_success`` commits each job's R to the KVS alone and answers the
job in that commit's continuation. A continuation runs when the reactor reaches the commit's
response, behind every message already queued for the module: after ``flux queue start``,
the job-manager's whole burst of alloc requests. So the first start waited for the ingestion
of the whole queue (2.5 s of a 1 000-job burst at 1 000 nodes; benchmarks/bench_flux_nodes.py).

Here a pass's allocations are collected, their R committed in one transaction when the pass
has allocated, and the jobs answered when that commit is done, whichever comes first of:

- the end of the pass, when it allocated few jobs (:data:`ANSWER_AT_ONCE`): waiting for a
  small commit costs milliseconds and is what makes the first start prompt (a synchronous
  wait reads the commit's response out of order: flux-core's future waits for its own
  response only);
- the start of the next pass, which answers every commit still open (done by then as a
  rule, so the wait is nil);
- the commit's continuation, when no pass comes first.

Within a pass the allocations are committed in chunks of :data:`CHUNK`: each chunk's commit
is sent when the chunk is full, and the pass answers the earlier chunks whose commits are
done as it goes (never waiting for one), so the job-manager starts those jobs while the pass
allocates the rest (a pass of 1 000 starts answered them all at once, at its end or later,
and the broker then started them one after another).

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

# A pass that allocated at most this many jobs waits for their commit and answers at once.
ANSWER_AT_ONCE = 64
# Allocations per KVS commit within a pass.
CHUNK = 64


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

    def commit(self) -> list[Committing]:
        """Every R collected since the last chunk into the KVS, in one transaction; the
        pass's commits."""
        self._commit_collected()
        self.collecting = None
        return self.this_pass

    def end_of_pass(self, batches: list[Committing]) -> None:
        """A pass that allocated few jobs waits for their commit; otherwise the commits done
        by now are answered, the others when done (their continuation, or the next pass)."""
        if sum(len(b.answers) for b in batches) <= ANSWER_AT_ONCE:
            for batch in batches:
                self.answer(batch)
        else:
            self.answer_done()

    def answer_done(self) -> None:
        """Answer the open commits that are done, without waiting for any."""
        for batch in list(self.open):
            if batch.commit.is_ready():
                self.answer(batch)

    def answer_open(self) -> None:
        """Answer every pass whose commit is still open (at the start of a pass: they are
        done by then as a rule, so the wait is nil). A wait with a timeout is no option: a
        commit future that timed out once is not answered by its continuation any more."""
        for batch in list(self.open):
            self.answer(batch)

    def answer(self, batch: Committing) -> None:
        """Wait for the batch's commit (nil when done) and answer its jobs; once."""
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
