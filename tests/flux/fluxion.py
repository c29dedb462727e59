"""Fluxion (flux-sched 0.54, the scheduler production Flux systems run) in a test instance.

Built by ``.ci/vendor-flux.sh`` (../shared/vendor/build-flux-sched.sh) into its own prefix,
``/opt/flux-sched`` (or ``RUSH_FLUXION_PREFIX``), so instances keep ``sched-simple`` unless a
test swaps Fluxion in (:func:`use_fluxion`: ``flux module remove sched-simple``, then
``sched-fluxion-resource`` and ``sched-fluxion-qmanager`` loaded by path).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.flux.instance import FluxInstance, available

DEFAULT_PREFIX = Path("/opt/flux-sched")


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


def use_fluxion(inst: FluxInstance, queue_policy: str = "fcfs", match_policy: str = "lonodex") -> None:
    """Replace the instance's scheduler by Fluxion (``queue_policy``: fcfs, easy, ...;
    ``match_policy``: lonodex takes whole nodes, lowest ids first, as rush's first fit)."""
    listing = inst.module("list").stdout
    for name in ("sched-simple", "sched-backfill", "sched-rush"):
        if any(line.split()[:1] == [name] for line in listing.splitlines()):
            inst.module("remove", name)
    inst.module("load", str(modules() / "sched-fluxion-resource.so"), f"match-policy={match_policy}")
    inst.module("load", str(modules() / "sched-fluxion-qmanager.so"), f"queue-policy={queue_policy}")
