"""The daemon service's kernels compiled in a child interpreter (rush.daemon.warm_child)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_warm_live_pass_in_child_runs_the_callers_config(backfill: str, monkeypatch) -> None:
    """The child warms the caller's configuration: its pass count depends on the backfill (the
    daemon's start compiles there, round 30 r31cold: a compiling process keeps the compiler's
    state and ran its steady cycle 13-17 ms slower)."""
    from rush.core.config import CoreConfig
    from rush.core.warm_up import warm_live_pass
    from rush.daemon.warm_child import warm_live_pass_in_child

    config = CoreConfig.from_names("FCFS", backfill)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the child imports this tree
    passes = warm_live_pass_in_child(config)
    assert passes == warm_live_pass(config) == (4 if backfill == "none" else 8)


def test_a_child_that_overruns_its_time_is_an_error_the_service_catches() -> None:
    """A stuck child must not hold the service's start: it overruns, and the error raised is one
    the service catches (it then compiles in-process)."""
    import subprocess

    from rush.core.config import CoreConfig
    from rush.daemon.warm_child import warm_live_pass_in_child

    with pytest.raises(subprocess.SubprocessError):
        warm_live_pass_in_child(CoreConfig.from_names("FCFS", "easy"), timeout=0.01)
