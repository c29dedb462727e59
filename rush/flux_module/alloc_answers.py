"""The module's answers to the job-manager's alloc requests: one KVS commit per pass.

flux-core's ``Scheduler.alloc_success`` commits each job's R to the KVS alone and answers the
job in that commit's continuation. A continuation runs when the reactor reaches the commit's
response, behind every message already queued for the module: after ``flux queue start``,
the job-manager's whole burst of alloc requests. So the first start waited for the ingestion
of the whole queue (2.5 s of a 1 000-job burst at 1 000 nodes; benchmarks/bench_flux_nodes.py).

Here a pass's allocations are collected, their R committed in chunks of :data:`CHUNK` (each
chunk's commit is sent when the chunk is full, the rest when the pass has allocated), and the
jobs of a commit answered when it is done, never by waiting for it, whichever comes first of:

- the pass itself, which answers the commits already done each time it sends one and at its end;
- the start of the next pass, which answers the commits done by then;
- the commit's continuation.

A synchronous wait for a commit (``future.get()`` before it is done) would read the commit's
response out of order, but the module would read nothing else meanwhile: no arrival, no
``sched.resource-status``. On a loaded host those waits were most of the module's wall time in a
burst (2.1 s of a 5.7 s run of 1 000 jobs, 0.03 s of CPU; benchmarks/bench_flux_nodes.py
``--timers``) and the longest gaps in its answers to RPCs. The continuation waits instead behind
the messages queued before the commit's response, which the module reads in a tenth of a
millisecond each.

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

    def begin(self) -> None:
        """A pass starts allocating: successes are collected from now on."""
        self.collecting = []

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
        return batch

    def commit(self) -> None:
        """Every R collected since the last chunk into the KVS, in one transaction."""
        self._commit_collected()
        self.collecting = None

    def end_of_pass(self) -> None:
        """The pass's commits (and earlier ones) that are done by now are answered; the others
        by their continuation or the next pass."""
        self.answer_done()

    def answer_done(self) -> None:
        """Answer the open commits that are done, without waiting for any."""
        for batch in list(self.open):
            if batch.commit.is_ready():
                self.answer(batch)

    def answer(self, batch: Committing) -> None:
        """Answer the jobs of a batch whose commit is done (its continuation, or is_ready()); once."""
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
