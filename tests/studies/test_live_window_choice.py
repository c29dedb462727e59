"""rush.studies.live_window_choice: the first window after the offset whose simulated EASY
replay has enough waits over an hour within the wall-time budget (issue 29's live windows)."""

from __future__ import annotations

import numpy as np
import pytest

from rush.errors import RushError
from rush.studies.live_window_choice import HOUR, WindowRule, first_window, head_times
from tests.studies.window_choice_trace import RULE, tiny_trace


def test_the_first_window_after_the_offset_with_enough_long_waits_is_chosen():
    chosen = first_window(tiny_trace(), RULE)
    # Windows from job 12 every 2 jobs: 12 and 14 hold at most one queued wide job (0 or 1
    # wait over an hour); 16 (jobs 16-21) holds 18, 19, 20: waits 0, about 2 h and 4 h, and
    # 21 waits behind them (about 6 h: no room to backfill).
    assert chosen.start == 16 and chosen.count == 6
    assert chosen.long_waits() == 3
    assert np.allclose(chosen.waits[3:] / HOUR, [1.98, 3.97, 5.95], atol=0.01)
    # The first half's windows (jobs 0-5 wait up to 10 h) are before the offset: never chosen.
    assert first_window(tiny_trace(), RULE).start >= 12


def test_the_wall_time_budget_excludes_windows_and_no_window_is_a_clear_error():
    with pytest.raises(RushError, match="no window of 6 jobs after job 12"):
        first_window(tiny_trace(), WindowRule(**{**RULE.__dict__, "max_makespan": 4 * HOUR}))
    with pytest.raises(RushError, match="lower min_long"):
        first_window(tiny_trace(), WindowRule(**{**RULE.__dict__, "max_runtime": HOUR}))
    # From the start of the trace (and a budget that holds its 12 h queue) the first half's
    # window is the first to qualify.
    whole = WindowRule(**{**RULE.__dict__, "offset_share": 0.0, "max_makespan": 20 * HOUR})
    assert first_window(tiny_trace(), whole).start == 0


def test_time_is_compressed_as_the_replay_compresses_it():
    # At K = 60 the same jobs' 2 h runs take 120 wall s: a 10-minute makespan budget holds
    # window 16, whose waits are still counted in trace seconds.
    rule = WindowRule(**{**RULE.__dict__, "speedup": 60.0, "max_makespan": 600.0, "max_runtime": 180.0})
    chosen = first_window(tiny_trace(), rule)
    assert chosen.start == 16 and chosen.long_waits() == 3
    assert chosen.makespan <= 600.0


def test_head_times_are_the_time_each_job_is_the_blocked_first_in_fcfs_order():
    # Job 1 waits at the head from its submit (1) to its start (10); job 2 starts with it, so it
    # never heads a blocked queue; job 3 heads it from 10 to 12.
    assert np.allclose(head_times(np.array([0.0, 1, 2, 3]), np.array([0.0, 10, 10, 12])), [0, 9, 0, 2])
    # A job backfilled past a waiting one is never the head; the order is the submit order, not
    # the arrays' (ties by position).
    assert np.allclose(head_times(np.array([2.0, 0, 1]), np.array([3.0, 0, 10])), [0, 0, 9])
    assert np.allclose(head_times(np.array([0.0, 0.0]), np.array([5.0, 5.0])), [5, 0])
    with pytest.raises(RushError, match="head_times"):
        head_times(np.array([0.0, np.nan]), np.array([0.0, 1.0]))
    with pytest.raises(RushError, match="same length"):
        head_times(np.array([0.0]), np.array([0.0, 1.0]))


def test_min_head_counts_only_the_long_waits_spent_at_the_blocked_head():
    # Window 18 (jobs 18-23): 19, 20 and 21 each head the queue for about 2 h; 22 starts with 21
    # and 23 a minute after it, so of its 5 waits over an hour only 3 head it for 2 minutes.
    rule = WindowRule(**{**RULE.__dict__, "min_long": 4})
    chosen = first_window(tiny_trace(), rule)
    assert chosen.start == 18 and chosen.long_waits() == 5
    assert chosen.long_heads(120.0) == 3 and chosen.long_heads(0.0) == 5
    assert (
        first_window(
            tiny_trace(), WindowRule(**{**rule.__dict__, "min_head": 3, "head_seconds": 120.0})
        ).start
        == 18
    )
    with pytest.raises(RushError, match="4 of them at the blocked head"):
        first_window(tiny_trace(), WindowRule(**{**rule.__dict__, "min_head": 4, "head_seconds": 120.0}))
    # Off (min_head 0, the round-11 rule), window 16 is still the first with 3 waits over an hour.
    assert first_window(tiny_trace(), RULE).start == 16
