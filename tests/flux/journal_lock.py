"""Hold a pass of rush's Flux module inside the pass, for tests of what happens meanwhile.

The test takes the journal's writer lock; the module's next pass waits on its first journal
write (SQLite's busy timeout, 30 s in rush.planner.journal) with its reactor stopped (the
module's process has one reactor thread), so
whatever Flux sends the module meanwhile (a cancel, a node going down) is read only after
that pass. ``module_waits_on_the_journal`` tells when the module's thread is asleep there.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# System call numbers of SQLite's busy-handler sleep on x86-64: clock_nanosleep, nanosleep.
SLEEPS = ("230", "35")


def module_waits_on_the_journal(flux, module: str = "sched-rush") -> bool:
    """Whether the module's process (flux-core 0.88 runs a Python module as a child of the
    broker, named after the module) is asleep in a system call of SQLite's busy handler: the
    journal lock the test holds is what it waits for (an idle module waits in epoll_wait, a
    pass that computes is running)."""
    broker = flux.run("getattr", "broker.pid").stdout.strip()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() != module:
                continue
            ppid = (proc / "stat").read_text().rsplit(")", 1)[1].split()[1]
            if ppid == broker and (proc / "syscall").read_text().split()[0] in SLEEPS:
                return True
        except (OSError, IndexError):
            continue  # a process that ended meanwhile
    return False


@contextmanager
def journal_held(journal: Path) -> Iterator[None]:
    """The journal's writer lock, held for the block (a module write waits up to 30 s)."""
    lock = sqlite3.connect(journal, isolation_level=None, timeout=30)
    try:
        lock.execute("BEGIN IMMEDIATE")
        yield
    finally:
        if lock.in_transaction:
            lock.execute("ROLLBACK")
        lock.close()
