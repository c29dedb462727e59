"""Sweeps: many independent simulations on Dask, streamed into a resumable tidy table.

    from rush.studies.sweep import run_sweep, SweepOptions
    rows = run_sweep(task, cells, SweepOptions(out=Path("runs/s1"), cluster="local:2"))

``task(cell, resources) -> dict | list[dict]`` is a top-level function; ``cells`` JSON-able
dicts. See :mod:`rush.studies.sweep.engine` for the contract (keys, resume, failures) and
:mod:`rush.studies.sweep.grid` for the ``rush sweep run`` grid files.

Only light modules are imported here: dask is imported when a sweep runs on it.
"""

from __future__ import annotations

from rush.studies.sweep.engine import SweepRows, run_sweep
from rush.studies.sweep.keys import cell_key
from rush.studies.sweep.options import SlurmOptions, SweepOptions

__all__ = ["SlurmOptions", "SweepOptions", "SweepRows", "cell_key", "run_sweep"]
