"""Helpers for the campaign tests: how to run the proxies and the noise generator here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROXIES = REPO / "collectors" / "proxies"
NOISE = REPO / "collectors" / "noise.py"
MPIRUN = shutil.which("mpirun")


def mpi_env(session_dir: Path) -> dict[str, str]:
    # A session directory per test: concurrent mpiruns sharing /tmp/ompi.<host>.<uid> race.
    return {
        "OMPI_MCA_orte_tmpdir_base": str(session_dir),
        **os.environ,
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


def mpirun(script: Path, args: list[str], cwd: Path, np: int = 2) -> subprocess.CompletedProcess[str]:
    if MPIRUN is None:
        pytest.skip("OpenMPI mpirun not installed (.ci/install-deps.sh installs openmpi-bin)")
    pytest.importorskip("mpi4py", reason="mpi4py not installed in the venv")
    argv = [MPIRUN, "-np", str(np), "--mca", "btl", "self,vader"]
    argv += ["--mca", "btl_vader_single_copy_mechanism", "none", sys.executable, str(script), *args]
    # Short path under /tmp: OpenMPI puts its PMIx sockets in the session directory.
    with tempfile.TemporaryDirectory(prefix="rush-mpi-") as session_dir:
        env = mpi_env(Path(session_dir))
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def assert_noise_labels_from_the_log(out: Path) -> None:
    """A finished campaign in ``out``: the noise job switched on, every record's ``noise`` label
    is what its log says for the run's application time, and the log ends cleanly ("end")."""
    import json
    import time

    from rush.campaign.records import noise_during, noise_intervals, read_records

    found = noise_intervals(out / "noise.jsonl", now=time.time())
    assert found is not None
    header, intervals = found
    assert header["seed"] == 5 and intervals  # it did switch on
    _, runs = read_records(out / "records.jsonl")
    for r in runs:
        assert r["noise"] is noise_during(intervals, r["app_start"], r["app_start"] + r["runtime"])
    assert (
        json.loads((out / "noise.jsonl").read_text().splitlines()[-1])["event"] == "end"
    )  # cancelled cleanly
