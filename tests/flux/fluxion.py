"""Fluxion (flux-sched 0.54, the scheduler production Flux systems run) in a test instance.

Built by ``.ci/vendor-flux.sh`` (../shared/vendor/build-flux-sched.sh) into its own prefix,
``/opt/flux-sched`` (or ``RUSH_FLUXION_PREFIX``), so instances keep ``sched-simple`` unless a
test swaps Fluxion in (:func:`use_fluxion`: ``flux module remove sched-simple``, then
``sched-fluxion-resource`` and ``sched-fluxion-qmanager`` loaded by path).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.flux.instance import FluxInstance, available

DEFAULT_PREFIX = Path("/opt/flux-sched")
# Each step of use_fluxion (a load, a module's start-up): well under a second on a loaded
# 2-core host (0.1-0.3 s at load 13), seconds for 1 000 fake nodes; a step that takes
# longer has hung (a 300 s bound did not save yesterday's run), so the bound only decides
# how soon the failure is reported.
STEP_TIMEOUT = 120.0


def prefix() -> Path:
    return Path(os.environ.get("RUSH_FLUXION_PREFIX") or DEFAULT_PREFIX)


def modules() -> Path:
    return prefix() / "lib" / "flux" / "modules"


def unavailable() -> str | None:
    """None when Fluxion can run here, else why not (the skip reason)."""
    why = available()
    if why:
        return why
    for name in ("sched-fluxion-resource.so", "sched-fluxion-qmanager.so"):
        if not (modules() / name).exists():
            return (
                f"Fluxion is not installed ({modules() / name} missing): run .ci/vendor-flux.sh, which "
                "builds ../shared/vendor/flux-sched-*.tar.gz into /opt/flux-sched, or set RUSH_FLUXION_PREFIX"
            )
    return None


class FluxionLoadError(RuntimeError):
    """A step of :func:`use_fluxion` failed or did not answer; the message holds the broker's state."""


def use_fluxion(
    inst: FluxInstance,
    queue_policy: str = "fcfs",
    match_policy: str = "lonodex",
    timeout: float = STEP_TIMEOUT,
) -> None:
    """Replace the instance's scheduler by Fluxion (``queue_policy``: fcfs, easy, ...;
    ``match_policy``: lonodex takes whole nodes, lowest ids first, as rush's first fit).

    Each module is loaded only once the one before it is ready. ``flux module load`` returns
    as soon as a Fluxion module reports itself running, which both do *before* their
    synchronous start-up (flux-sched 0.54: ``sched-fluxion-resource`` then reads its graph
    through ``resource.acquire``; ``sched-fluxion-qmanager`` then handshakes with it and with
    the job-manager). A module answers ``flux module stats`` only from its reactor, that is
    once that start-up is done, so the qmanager is loaded (dlopen in the broker's main thread)
    after the resource module has finished, and this returns with the queue ready. Every step
    is bounded by ``timeout`` seconds; a failure or a step that does not answer raises
    :class:`FluxionLoadError` with ``flux module list``, ``flux dmesg``, the instance's log and
    the broker's threads (when gdb is here)."""
    try:
        inst.remove_schedulers(timeout)
        if "sched-fluxion-resource" in inst.modules(timeout):
            inst.module("remove", "sched-fluxion-resource", timeout=timeout)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        raise FluxionLoadError(
            f"removing the loaded scheduler: {_said(error)}\n{inst.diagnostics(min(timeout, 20.0))}"
        ) from error
    for step in (
        ("load", str(modules() / "sched-fluxion-resource.so"), f"match-policy={match_policy}"),
        ("stats", "sched-fluxion-resource"),  # answers once the resource graph is loaded
        ("load", str(modules() / "sched-fluxion-qmanager.so"), f"queue-policy={queue_policy}"),
        ("stats", "sched-fluxion-qmanager"),  # answers once both handshakes are done
    ):
        started = time.monotonic()
        try:
            inst.module(*step, timeout=timeout)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
            raise FluxionLoadError(
                f"flux module {' '.join(step)}: {_said(error)} "
                f"(after {time.monotonic() - started:.1f} s)\n{inst.diagnostics(min(timeout, 20.0))}"
            ) from error


def _said(error: subprocess.CalledProcessError | subprocess.TimeoutExpired) -> str:
    if isinstance(error, subprocess.TimeoutExpired):
        return f"no answer in {error.timeout:g} s"
    return f"exit {error.returncode}: {(error.stderr or '').strip()}"
