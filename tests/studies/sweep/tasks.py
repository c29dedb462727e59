"""Tasks and loaders for the sweep tests: top-level, so that Dask workers import them by name."""

from __future__ import annotations

import os
import time
from pathlib import Path


def record_load(log: str) -> dict:
    """A resource loader that appends this process's PID to ``log`` each time it is called."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return {"pid": os.getpid()}


def use_resource(cell: dict, resources) -> dict:
    return {"loaded_in": resources["counter"]["pid"], "ran_in": os.getpid(), "double": cell["x"] * 2}


def square(cell: dict, resources) -> dict:
    return {"square": cell["x"] ** 2, "label": f"x={cell['x']}"}


def per_week(cell: dict, resources) -> list[dict]:
    """Several rows per cell (one per week), with types the table must give back."""
    return [
        {"week": w, "value": cell["x"] + w / 4, "ok": w % 2 == 0, "tags": [w, "a"], "none": None}
        for w in range(3)
    ]


def flaky(cell: dict, resources) -> dict:
    if cell["x"] % 5 == 0:
        raise ValueError(f"x = {cell['x']} is a multiple of 5\nsecond line")
    return {"square": cell["x"] ** 2}


def fail_once(cell: dict, resources) -> dict:
    """Fails the first time it runs a cell listed in ``bad`` (a marker file remembers)."""
    marker = Path(cell["markers"]) / str(cell["x"])
    if cell["x"] in cell["bad"] and not marker.exists():
        marker.touch()
        raise RuntimeError(f"first attempt at {cell['x']}")
    return {"square": cell["x"] ** 2, "ran_in": os.getpid()}


def slow(cell: dict, resources) -> dict:
    time.sleep(cell["sleep"])
    return {"square": cell["x"] ** 2}


def bad_return(cell: dict, resources):
    return {"ok": [1], "x": 1} if cell["x"] == 1 else 42


def run_slow(out: str, cells: int, cluster: str) -> None:
    """Entry point of the interrupted sweep (a subprocess the test kills)."""
    from rush.studies.sweep import SweepOptions, run_sweep

    run_sweep(
        slow,
        [{"x": i, "sleep": 0.3} for i in range(cells)],
        SweepOptions(out=Path(out), cluster=cluster, progress=False, key_fields=["x"]),
    )


def where_am_i(cell: dict, resources) -> dict:
    """Which Slurm job (if any) ran the cell, and which process loaded the resource."""
    return {
        "slurm_job": os.environ.get("SLURM_JOB_ID", ""),
        "loaded_in": resources["counter"]["pid"],
        "ran_in": os.getpid(),
        "double": cell["x"] * 2,
    }


def crash(cell: dict, resources) -> dict:
    """Kills its worker process on cell 2 (as a segfault or the OOM killer would)."""
    if cell["x"] == 2:
        os._exit(3)
    return {"square": cell["x"] ** 2}
