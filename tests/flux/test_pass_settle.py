"""The Flux module's settle rule (rush/flux_module/pass_settle.py): when a due pass runs."""

from __future__ import annotations

import pytest

from rush.flux_module.pass_settle import LONG_PASS_CPU, SETTLE_MIN, PassSettle


def test_a_due_pass_waits_a_turn_per_waiting_message_then_runs_when_none_is_left():
    settle = PassSettle()
    assert settle.wait(10.0, message_waiting=True, commits_open=False) == 0.0
    assert settle.settling()
    assert settle.wait(10.01, message_waiting=True, commits_open=False) == 0.0
    assert settle.wait(10.02, message_waiting=False, commits_open=False) is None
    assert not settle.settling()
    stats = settle.stats()
    assert stats["settled_passes"] == 1 and stats["settle_cut_short"] == 0
    assert stats["passes_after_reading_a_burst"] == 1


def test_after_a_long_pass_open_commits_put_the_next_off_for_the_rest_of_the_bound():
    settle = PassSettle()
    settle.ran(0.1, LONG_PASS_CPU)  # a long queue
    wait = settle.wait(5.0, message_waiting=False, commits_open=True)
    assert wait == pytest.approx(SETTLE_MIN)
    assert settle.wait(5.0 + SETTLE_MIN / 2, message_waiting=False, commits_open=True) == pytest.approx(
        SETTLE_MIN / 2
    )
    # The bound is over: the pass runs, and says it began with a commit open.
    assert settle.wait(5.0 + 2 * SETTLE_MIN, message_waiting=False, commits_open=True) is None
    stats = settle.stats()
    assert stats["settle_cut_short"] == 1 and stats["passes_begun_with_commits_open"] == 1


def test_after_a_short_pass_open_commits_do_not_hold_the_next_back():
    settle = PassSettle()
    settle.ran(0.2, LONG_PASS_CPU / 10)  # wall seconds of a loaded host, little CPU: a short queue
    assert settle.wait(1.0, message_waiting=False, commits_open=True) is None
    stats = settle.stats()
    assert stats["passes_begun_with_commits_open"] == 1 and stats["settle_cut_short"] == 0


def test_a_stream_of_messages_does_not_hold_a_pass_back_beyond_the_bound():
    settle = PassSettle()
    now = 0.0
    while (wait := settle.wait(now, message_waiting=True, commits_open=False)) is not None:
        assert wait == 0.0
        now += 0.001
    assert now == pytest.approx(SETTLE_MIN, abs=0.002)
    assert settle.stats()["settle_cut_short"] == 1


def test_the_bound_is_the_modules_settle_and_settle_0_never_waits():
    settle = PassSettle()
    settle.ran(100.0, 1.0)
    assert settle.bound() == SETTLE_MIN  # not the last pass's seconds
    assert PassSettle(limit=30.0).bound() == 30.0
    never = PassSettle(limit=0.0)
    never.ran(100.0, 1.0)
    assert never.bound() == 0.0
    assert never.wait(1.0, message_waiting=True, commits_open=True) is None
