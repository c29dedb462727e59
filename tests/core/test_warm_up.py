"""rush.core.warm_up: after :func:`warm_live_pass`, a live pass over a long queue on nodes calls
no compiled kernel that was not loaded yet (the Flux module's first pass over more than 2 000
waiting jobs compiled the start-estimate projection, 13.8-41.8 s during which it answered
nothing). Each case runs in a fresh interpreter: kernels loaded by earlier tests in this
process would hide a gap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numba
    from rush.core.config import CoreConfig
    from rush.core.resources import Node, Request
    from rush.core.schedule import schedule
    from rush.core.snapshot import PendingJob, RunningJob, Snapshot
    from rush.core.start_estimates import EASY_REPLAY_MAX_JOBS
    from rush.core.warm_up import warm_live_pass

    def loaded():
        # Every compiled kernel of the core and how many type signatures it holds.
        out = {}
        for name, module in list(sys.modules.items()):
            if name.startswith("rush.core") and module is not None:
                for attr, value in vars(module).items():
                    if isinstance(value, numba.core.registry.CPUDispatcher):
                        out[f"{value.py_func.__module__}.{value.py_func.__qualname__}"] = len(value.overloads)
        return out

    backfill, limit, warm = sys.argv[1], None if sys.argv[2] == "none" else int(sys.argv[2]), sys.argv[3]
    config = CoreConfig.from_names("FCFS", backfill, max_jobs_considered=limit)
    now = 1_000_000.0
    if warm == "live":
        warm_live_pass(config)
    else:  # the module's warm-up before: one pass on processor counts
        schedule(Snapshot(now, 2, 1, (PendingJob(1, now, 2, 60.0),), (RunningJob(2, now, 1, 60.0),)), config)
    before = loaded()
    nodes = tuple(Node(f"n{i}", 4) for i in range(10))
    waiting = EASY_REPLAY_MAX_JOBS + 100
    pending = tuple(
        PendingJob(k, now - waiting + k, 4, 600.0, request=Request(1, 4, exclusive=True)) for k in range(waiting)
    )
    decided = schedule(Snapshot(now, 40, 40, pending, (), nodes=nodes), config)
    after = loaded()
    new = sorted(k for k in after if after[k] > before.get(k, 0))
    started = sum(d.action == "start" for d in decided.decisions)
    print(json.dumps({"new": new, "started": started}))
    """
)


def kernels_loaded_in_the_pass(backfill: str, limit: str, warm: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, backfill, limit, warm],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=900,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("backfill", "limit"), [("easy", "none"), ("easy", "2000"), ("conservative", "2000"), ("none", "none")]
)
def test_a_long_queue_on_nodes_loads_no_kernel_after_the_warm_up(backfill: str, limit: str) -> None:
    result = kernels_loaded_in_the_pass(backfill, limit, "live")
    assert result["started"] == 10  # the pass ran: one whole node each
    assert result["new"] == []


def test_the_warm_up_of_one_pass_on_processor_counts_left_the_projection_for_the_long_queue() -> None:
    # What this module fixes: the check above can see a kernel first loaded inside the pass.
    result = kernels_loaded_in_the_pass("easy", "none", "procs")
    assert "rush.core.start_estimates.project_starts" in result["new"]
