"""The module's poll for its KVS commits' responses (rush/flux_module/alloc_answers.py) on a
real Flux handle: a poll that finds its commit still open puts back every other message it
read, so no response and no request meant for the module is lost."""

from __future__ import annotations

from tests.polling import wait_for


def test_a_poll_that_finds_its_commit_open_loses_no_other_message(flux):
    """The oldest open "commit" is an RPC the broker answers only at a KVS version far ahead
    (``kvs.wait-version``): it stays open. Another RPC's response is waiting in the handle's
    queue when the poll runs (``flux_pollevents``). The poll gives up on the open one (its jobs
    unanswered, nothing counted) and the other RPC's response is still there for its own
    future. With a timed ``flux_future_wait_for`` as the poll, the messages its reactor had
    read stayed with the open future when it timed out, and that response never came."""
    from _flux._core import lib  # type: ignore[import-not-found]
    from flux.future import Future  # type: ignore[import-not-found]

    from rush.flux_module.alloc_answers import AllocAnswers, Committing

    h = flux.handle()
    never = h.rpc("kvs.wait-version", {"rootseq": 2**30, "namespace": "primary"})
    batch = Committing(answers=[], commit=Future(never))
    answers = AllocAnswers(h, log=None, on_commit_error=lambda: None, poll=0.05)
    answers.open.append(batch)
    other = h.rpc("attr.get", {"name": "rank"})
    wait_for(lambda: lib.flux_pollevents(h.handle) & lib.FLUX_POLLIN, timeout=60, step=0.01)
    answers.answer_polled()
    assert answers.open == [batch] and not batch.answered and answers.answered_by_poll == 0
    assert other.wait_for(10).get()["value"] == "0"  # its response was put back, in the queue
