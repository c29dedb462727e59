"""The Flux module's settle rule (rush/flux_module/pass_settle.py): when a due pass runs."""

from __future__ import annotations

import time

import pytest

from rush.flux_module.pass_settle import (
    IDLE_QUEUE,
    LONG_PASS_CPU,
    SETTLE_MIN,
    PassSettle,
    settle_hooks_missing,
)
from tests.flux.instance import available


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


def test_an_idle_modules_pass_runs_at_once_though_messages_are_waiting():
    """No job running, a short queue, no commit open (the first pass of a burst): the pass runs
    on what has arrived, as sched-backfill answers a request as it arrives on an idle instance."""
    settle = PassSettle()
    assert settle.wait(1.0, message_waiting=True, commits_open=False, jobs=(0, 1)) is None
    assert not settle.settling()
    stats = settle.stats()
    assert stats["passes_run_at_once_idle"] == 1 and stats["settled_passes"] == 1
    assert stats["settle_cut_short"] == 0 and stats["passes_after_reading_a_burst"] == 0


def test_a_busy_module_or_an_open_commit_still_settles():
    settle = PassSettle()
    # A job running (not idle): the waiting message is read first, as before.
    assert settle.wait(1.0, message_waiting=True, commits_open=False, jobs=(1, 1)) == 0.0
    assert settle.wait(1.001, message_waiting=False, commits_open=False, jobs=(1, 1)) is None
    # Idle by its jobs but a commit of the module's is open: the message is read first too.
    assert settle.wait(2.0, message_waiting=True, commits_open=True, jobs=(0, 1)) == 0.0
    assert settle.wait(2.001, message_waiting=False, commits_open=True, jobs=(0, 1)) is None
    assert settle.stats()["passes_run_at_once_idle"] == 0
    # settle=0 never waits, idle or not.
    assert PassSettle(limit=0.0).wait(1.0, message_waiting=True, commits_open=False, jobs=(0, 1)) is None


def test_the_idle_bound_is_the_modules_idle_queue_and_0_turns_it_off():
    """Rule I's bound lives in PassSettle (idle-queue=): a queue at the bound is idle, one job
    more or one running is not; the largest value the module accepts (1 000 000) is a bound as
    any other; 0 never calls the module idle; unknown counts are never idle."""
    assert PassSettle().is_idle(0, IDLE_QUEUE) and not PassSettle().is_idle(0, IDLE_QUEUE + 1)
    assert not PassSettle().is_idle(1, 0)
    huge = PassSettle(idle_queue=1_000_000)
    assert huge.is_idle(0, 1_000_000) and not huge.is_idle(0, 1_000_001)
    assert huge.wait(1.0, message_waiting=True, commits_open=False, jobs=(0, 999_999)) is None
    assert huge.stats()["passes_run_at_once_idle"] == 1
    off = PassSettle(idle_queue=0)
    assert not off.is_idle(0, 0)
    assert off.wait(1.0, message_waiting=True, commits_open=False, jobs=(0, 0)) == 0.0
    assert PassSettle().wait(1.0, message_waiting=True, commits_open=False) == 0.0


def test_the_stats_report_the_last_passs_wall_clock_and_cpu_seconds():
    settle = PassSettle()
    assert settle.stats()["last_pass_seconds"] == 0.0 and settle.stats()["last_pass_cpu_seconds"] == 0.0
    settle.ran(2.5, 0.3)  # a pass that waited (a slow host or journal) more than it computed
    settle.ran(0.4, 0.25)
    stats = settle.stats()
    assert stats["last_pass_seconds"] == 0.4 and stats["last_pass_cpu_seconds"] == 0.25


class _Timer:
    def reset(self, after: float) -> None:
        pass


class _Base088:
    """flux-core 0.88's Scheduler as far as the settle rule reads it."""

    def __init__(self) -> None:
        self._sched_pending = False
        self._sched_timer = _Timer()

    def _on_sched_timer(self, *_):
        pass


class _Later(_Base088):
    """A flux-core whose Scheduler keeps its pass timer under other names."""

    _on_sched_timer = None

    def __init__(self) -> None:
        self._timer_armed = False
        self._pass_timer = _Timer()


def test_the_settle_hooks_are_found_on_a_0_88_scheduler_and_named_when_missing():
    assert settle_hooks_missing(_Base088, _Base088()) == []
    assert settle_hooks_missing(_Later, _Later()) == [
        "Scheduler._on_sched_timer()",
        "Scheduler._sched_pending (a bool)",
        "Scheduler._sched_timer.reset()",
    ]
    other = _Base088()
    other._sched_timer = object()  # a timer without reset()
    other._sched_pending = 0  # not the flag
    assert settle_hooks_missing(_Base088, other) == [
        "Scheduler._sched_pending (a bool)",
        "Scheduler._sched_timer.reset()",
    ]


def test_the_rule_switched_off_never_waits_and_says_why():
    settle = PassSettle(limit=30.0, off="flux-core 0.99 has no Scheduler._sched_timer.reset()")
    assert settle.bound() == 0.0
    assert settle.wait(1.0, message_waiting=True, commits_open=True) is None
    assert settle.stats()["settle_off"].startswith("flux-core 0.99")
    assert PassSettle().stats()["settle_off"] == ""


@pytest.mark.skipif(bool(available()), reason=str(available()))
def test_flux_cores_own_scheduler_has_what_the_settle_rule_needs():
    """A canary for the vendored flux-core: its Scheduler class has the callback, and its
    constructor sets the flag and the timer the rule reads (checked live, by the module's own
    check at load, in tests/flux/test_sched_module.py)."""
    import inspect

    from flux.scheduler import Scheduler

    assert callable(getattr(Scheduler, "_on_sched_timer", None))
    source = inspect.getsource(Scheduler.__init__)
    assert "self._sched_pending = False" in source
    assert "self._sched_timer = h.timer_watcher_create(0.0, self._on_sched_timer)" in source


def test_a_pass_put_off_by_open_commits_runs_when_they_are_answered_on_libflux(flux_instance):
    """The module's own path on a real libflux timer: the settle rule puts the pass off for 30 s
    (commits open after a long pass), then the last commit is answered. libflux's timer reset
    only sets an armed timer's time without re-arming it (libev), so with a bare reset the pass
    ran at its bound; ``_arm_pass`` stops the timer first, and the pass runs at once."""
    from rush.flux_module.scheduler import RushScheduler

    handle = flux_instance.handle()
    passes: list[float] = []

    class _Settling:
        _arm_pass = RushScheduler._arm_pass
        _commits_answered = RushScheduler._commits_answered

        def __init__(self) -> None:
            self.settle = PassSettle(limit=30.0)
            self._sched_timer = handle.timer_watcher_create(0.0, self._on_sched_timer)

        def _on_sched_timer(self, *_) -> None:
            passes.append(time.monotonic())
            handle.reactor_stop()

    module = _Settling()
    module.settle.ran(1.0, LONG_PASS_CPU)
    wait = module.settle.wait(time.monotonic(), message_waiting=False, commits_open=True)
    assert wait == pytest.approx(30.0, abs=1.0)
    module._arm_pass(wait)  # as _on_sched_timer does when the rule puts the pass off
    began = time.monotonic()
    module._commits_answered()
    bound = handle.timer_watcher_create(10.0, lambda h, *_: h.reactor_stop())  # the test's own
    bound.start()
    handle.reactor_run()
    bound.stop()
    module._sched_timer.stop()
    assert passes, "the pass was not woken by its commits' answers (it would run at its 30 s bound)"
    assert passes[0] - began < 10.0
