"""When a due pass of the Flux module runs: after what is queued for it has been read.

flux-core 0.88's job-manager sends one alloc request per turn of its reactor, and the module's
reactor dispatches one message per turn (libflux's handle watcher), on the same turns as the
base class's zero-delay pass timer. So a pass could run after every single message read while
hundreds were queued, and the responses to the module's own KVS commits, queued behind them,
were read (and their jobs answered) only after the next passes: at 1 000 jobs no job ran for
1.2 s after the first passes had started 370 (benchmarks/bench_flux_nodes.py, round of
2026-11-29, 10:00 UTC).

A due pass therefore *settles* first, with the reactor running: it is put off while a message is
waiting for the module (``flux_pollevents``), and, after a long pass (at least
:data:`LONG_PASS_CPU` seconds of CPU: a long queue), while one of its commits is open, for at
most the module's ``settle=`` seconds (default :data:`SETTLE_MIN`; 0: no settling, the module
as before). A burst is read whole before a pass, a steady stream of messages does not hold
passes back, and before a pass over a long queue the previous pass's commits may complete. After
a short pass the commits are not waited for: on a loaded host a commit took 0.2-1 s, and a wait
for them before every pass of 1 000 jobs left the module idle while the commit was slow. A bound
growing to half the last pass's seconds (up to 1 s) was tried and lost 12 % at 10 000 jobs in
two pairs against the module without settling; the fixed 0.05 s bound was level there (0.97x)
and ahead at 1 000 jobs (benchmarks/bench_flux_nodes.py, round of 2026-11-29). The module never
blocks: a waiting message is read on the next turn, the last open commit's answer wakes the
pass, and the bound ends any wait.

An idle module does not settle: when it runs no job, none of its commits is open and at most
the module's ``idle-queue=`` jobs (default :data:`IDLE_QUEUE`; 0 turns this off) are queued, the due pass runs at once on what has arrived, as flux-core's
sched-backfill decides each request as it arrives while the instance is idle. That is the first
pass of a burst: its few starts are committed and answered at once (alloc_answers.py), so the
first job runs without waiting for the rest of the burst to be read (up to the bound, and the
allocation of every job read meanwhile: at 1 000 jobs the first pass took 51 jobs after a
0.05 s settle in one run, 1 in another; benchmarks/bench_flux_nodes.py --lag, r30tput6). Once
a job runs or a commit is open the rule settles as above.
"""

from __future__ import annotations

from dataclasses import dataclass

# Default of the module argument ``settle=`` (s), the bound: a burst's messages are read in a
# tenth of a millisecond each.
SETTLE_MIN = 0.05
# A pass of at least this many CPU seconds (a queue of thousands) waits for the commits before it.
LONG_PASS_CPU = 0.1
# An idle module's due pass with at most this many jobs queued runs at once, unsettled: the
# size of a pass whose commit is answered at once (alloc_answers.ANSWER_AT_ONCE).
IDLE_QUEUE = 64


# What the rule needs of flux-core's Python ``flux.scheduler.Scheduler`` (0.88), all private to
# it: the pass timer's callback (overridden to settle first), the flag that keeps the base
# class's events from re-arming the timer while a pass settles, and the timer (re-armed).
SETTLE_FIX = (
    "rush's module settles only on flux-core 0.88's Scheduler; it runs without settling "
    "(as settle=0) meanwhile: run flux-core 0.88, or a rush release made for this flux-core"
)


def settle_hooks_missing(base: type, sched: object) -> list[str]:
    """The members of flux-core's ``Scheduler`` the settle rule relies on that ``base`` (the
    class) or ``sched`` (a constructed scheduler) lacks or has in another form; [] when all are
    there as in flux-core 0.88."""
    missing = []
    if not callable(getattr(base, "_on_sched_timer", None)):
        missing.append("Scheduler._on_sched_timer()")
    if not isinstance(getattr(sched, "_sched_pending", None), bool):
        missing.append("Scheduler._sched_pending (a bool)")
    if not callable(getattr(getattr(sched, "_sched_timer", None), "reset", None)):
        missing.append("Scheduler._sched_timer.reset()")
    return missing


@dataclass
class PassSettle:
    """The settle rule and its counters (reported by the module's ``stats-get``)."""

    limit: float = SETTLE_MIN  # the module's settle=, the bound (0: a due pass runs at once)
    # The module's idle-queue=: an idle module with at most this many jobs queued runs its due
    # pass at once (0: an idle module settles as a busy one).
    idle_queue: int = IDLE_QUEUE
    since: float | None = None  # when the due pass began to settle
    # The last pass's wall-clock and CPU seconds: the rule reads the CPU; both are in the stats
    # (a pass far longer by the clock than in CPU was waiting: a slow host or journal).
    last_pass_seconds: float = 0.0
    last_pass_cpu: float = 0.0
    passes: int = 0
    # Passes put off at least once for a message waiting (a burst read before the pass).
    drained: int = 0
    _read_first: bool = False
    # Passes that ran at the bound with a message still waiting, or a commit open after a long pass.
    cut_short: int = 0
    # Passes that began while one of the module's commits was open (after a short pass, at the
    # bound, or with settle=0).
    begun_with_commits_open: int = 0
    # Passes run at once, unsettled, because the module was idle (idle-queue=, IDLE_QUEUE).
    idle_passes: int = 0
    # Why the rule is off whatever settle= says ("": on): flux-core's Scheduler lacks what it
    # needs (settle_hooks_missing); the module then runs every due pass at once.
    off: str = ""

    def bound(self) -> float:
        """The longest a due pass settles."""
        return 0.0 if self.off else max(self.limit, 0.0)

    def is_idle(self, running: int, queued: int) -> bool:
        """No job running and at most ``idle_queue`` jobs queued (idle-queue=; 0: never idle)."""
        return self.idle_queue > 0 and running == 0 and queued <= self.idle_queue

    def wait(
        self, now: float, message_waiting: bool, commits_open: bool, jobs: tuple[int, int] | None = None
    ) -> float | None:
        """Seconds to put the due pass off for (0: the next reactor turn), or None: run it now.
        ``jobs``: the module's (running, queued) job counts, None when unknown (never idle); an
        idle module (:meth:`is_idle`) with no commit open runs the pass at once."""
        if jobs is not None and self.is_idle(*jobs) and not commits_open and self.bound() > 0:
            self.since = None
            self.passes += 1
            self.idle_passes += 1
            self._read_first = False
            return None
        if self.since is None:
            self.since = now
        left = self.bound() - (now - self.since)
        if left > 0 and message_waiting:  # a commit's response is read after those before it
            self._read_first = True
            return 0.0
        if left > 0 and commits_open and self.last_pass_cpu >= LONG_PASS_CPU:
            return left  # the last open commit's answer wakes the pass sooner
        self.since = None
        self.passes += 1
        self.drained += self._read_first
        self._read_first = False
        if message_waiting or (commits_open and self.last_pass_cpu >= LONG_PASS_CPU):
            self.cut_short += 1
        if commits_open:
            self.begun_with_commits_open += 1
        return None

    def ran(self, seconds: float, cpu_seconds: float) -> None:
        self.last_pass_seconds, self.last_pass_cpu = seconds, cpu_seconds

    def settling(self) -> bool:
        return self.since is not None

    def stats(self) -> dict[str, float | int]:
        return {
            "settle_bound": self.bound(),
            "settled_passes": self.passes,
            "passes_after_reading_a_burst": self.drained,
            "settle_cut_short": self.cut_short,
            "passes_begun_with_commits_open": self.begun_with_commits_open,
            "passes_run_at_once_idle": self.idle_passes,
            "last_pass_seconds": self.last_pass_seconds,
            "last_pass_cpu_seconds": self.last_pass_cpu,
            "settle_off": self.off,
        }
