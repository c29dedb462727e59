"""Replacing a Flux instance's scheduler module safely (``flux module remove`` then ``load``).

``flux module remove`` returns when the module has exited, but a module the broker runs as a
process (flux-core's Python ``sched-simple`` and ``sched-backfill``, rush's module) is torn down
after that, in the broker's rexec thread, and flux-core 0.88's ``msgchan_destroy``
(``src/common/libsubprocess/msgchan.c``) closes one socket of its message channel twice (strace
on a test broker: ``close(125) = 0``, then ``close(125) = -1 EBADF`` 0.15 ms later). A module
loaded in between can be handed that descriptor number and lose it: seen here as Fluxion's
resource module failing its start-up with EBADF (twice in about 3 700 remove/load cycles under
load), the likely cause of a ``flux module load`` that never returned. So a scheduler is loaded
only once ``flux sproc ps`` (the rexec service's list, which keeps a process until its teardown is
over) no longer lists the removed ones.

The functions take ``flux``, a callable that runs one ``flux`` command and returns its standard
output (raising on failure), so the replay's CLI runner and the tests' instance share them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

# Scheduler modules by name (flux-core's, rush's), removed even when not providing ``sched``.
SCHEDULER_MODULES = ("sched-simple", "sched-fifo", "sched-backfill", "sched-rush")
# How often the teardown is polled (the broker's teardown took ~25 ms idle, up to ~8 s at load 15).
POLL_SECONDS = 0.05

FluxRunner = Callable[..., str]


def loaded_modules(flux: FluxRunner) -> dict[str, list[str]]:
    """``flux module list``: each loaded module's name -> the services it provides."""
    loaded: dict[str, list[str]] = {}
    for line in flux("module", "list").splitlines()[1:]:
        fields = line.split()  # Module Idle S Sendq Recvq [Service,...]
        if fields:
            loaded[fields[0]] = fields[5].split(",") if len(fields) > 5 else []
    return loaded


def loaded_scheduler(flux: FluxRunner) -> str | None:
    """The name of the module that provides the ``sched`` service (None: no scheduler)."""
    return next((name for name, services in loaded_modules(flux).items() if "sched" in services), None)


def module_processes(flux: FluxRunner) -> dict[int, str]:
    """The modules the broker runs as processes: PID -> module name (the stem of the module
    file in the process's command line, "" when it has exited but is not torn down yet)."""
    found: dict[int, str] = {}
    for line in flux("sproc", "ps", "-no", "{pid} {cmd}").splitlines():
        pid, _, cmd = line.partition(" ")
        if not (pid.isdigit() and cmd.startswith("flux module-")):
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # exited (or on another node): listed until the broker has torn it down
            argv = []
        files = [Path(arg).stem for arg in argv if arg.endswith((".py", ".so"))]
        found[int(pid)] = files[-1] if files else ""
    return found


def remove_schedulers(flux: FluxRunner, timeout: float = 300.0) -> list[str]:
    """Remove every loaded scheduler module (whatever provides ``sched``, and any of
    :data:`SCHEDULER_MODULES`), check none is left, and return (their names) only once the broker
    has torn down each one it ran as a process. RuntimeError when one is left, TimeoutError when
    a teardown outlasts ``timeout`` seconds."""
    processes = module_processes(flux)
    removed = [
        name
        for name, services in loaded_modules(flux).items()
        if name in SCHEDULER_MODULES or "sched" in services
    ]
    for name in removed:
        flux("module", "remove", name)
    left = loaded_scheduler(flux)
    if left is not None:
        raise RuntimeError(f"{left} still provides the sched service after its removal")
    tearing_down = {pid for pid, name in processes.items() if name in removed}
    deadline = time.monotonic() + timeout
    while tearing_down & module_processes(flux).keys():
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the broker still lists the processes {sorted(tearing_down)} of "
                f"{', '.join(removed)} {timeout:g} s after their removal (flux sproc ps)"
            )
        time.sleep(POLL_SECONDS)
    return removed
