"""A small sweep on dask-jobqueue's SLURMCluster against the suite's real Slurm (one node, localhost).

The Dask workers are Slurm batch jobs running the venv's python; SLURMCluster submits them
with the cluster's own sbatch (PATH and SLURM_CONF from the test cluster). Run alone with
``flock /tmp/rush-cluster.lock .venv/bin/python -m pytest tests/studies/sweep/test_slurm_sweep.py -k 22.05``.
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import pytest

from rush.studies.sweep import SlurmOptions, SweepOptions, run_sweep
from tests.studies.sweep import tasks

REPO = Path(__file__).resolve().parents[3]
ACTIVE = {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING"}


def test_sweep_on_slurm_cluster(slurm, tmp_path: Path) -> None:
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed (pip install 'rush[dask]')")
    from tests.slurm.cluster import _state

    log = tmp_path / "loads.log"
    cells = [{"x": i} for i in range(16)]
    options = SweepOptions(
        out=tmp_path / "out",
        cluster="slurm",
        progress=False,
        resources={"counter": functools.partial(tasks.record_load, str(log))},
        slurm=SlurmOptions(
            queue="debug",
            cores=1,
            memory="512MB",
            walltime="00:10:00",
            jobs=2,
            python=sys.executable,
            env={
                "PATH": slurm.env["PATH"],
                "SLURM_CONF": slurm.env["SLURM_CONF"],
                "PYTHONPATH": str(REPO),  # the workers import tests.studies.sweep.tasks
            },
            local_directory=str(tmp_path / "dask"),
            start_timeout=180,
        ),
    )
    rows = run_sweep(tasks.where_am_i, cells, options)
    assert rows.failed == 0 and rows.computed == 16
    assert [r["double"] for r in rows] == [2 * c["x"] for c in cells]
    jobs = {str(r["slurm_job"]) for r in rows}
    assert all(job.isdigit() for job in jobs) and 1 <= len(jobs) <= 2  # every cell ran inside a Slurm job
    loads = log.read_text().split()
    assert len(loads) == len(set(loads)) == len({r["loaded_in"] for r in rows}) <= 2  # once per worker
    assert all(r["loaded_in"] == r["ran_in"] for r in rows)
    # The cluster closed with the sweep: its worker jobs are cancelled.
    deadline = time.monotonic() + 60  # a bound on scancel's propagation, not a timing assertion
    while time.monotonic() < deadline:
        states = {_state(j) for j in slurm.squeue_json() if str(j.get("job_id")) in jobs}
        if not states & ACTIVE:
            break
        time.sleep(0.5)
    assert not states & ACTIVE, states


def test_rush_sweep_run_on_slurm(slurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The command: a grid with a [slurm] table, simulations in Slurm worker jobs."""
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed (pip install 'rush[dask]')")
    import json

    from tests.studies.sweep.helpers import run, write_swf

    trace = write_swf(tmp_path / "tiny.swf")
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'traces = ["{trace}"]\nslice = "week"\npolicies = ["FCFS", "SAF"]\n'
        f'[slurm]\nqueue = "debug"\ncores = 1\nmemory = "768MB"\nwalltime = "00:10:00"\njobs = 1\n'
        f'python = "{sys.executable}"\n'
    )
    for name in ("PATH", "SLURM_CONF"):  # the cluster's commands, as a user's shell would have them
        monkeypatch.setenv(name, slurm.env[name])
    out = tmp_path / "out"
    code, stdout, err = run(
        ["sweep", "run", str(grid), "--out", str(out), "--cluster", "slurm", "--json"], capsys, monkeypatch
    )
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["cells"] == 4 and summary["computed"] == 4 and summary["failed"] == 0
    description = json.loads((out / "sweep.json").read_text())
    assert description["cluster"] == "slurm"
    with (out / "sweep.csv").open() as handle:
        assert sum(1 for _ in handle) == 5  # header and one row per cell
