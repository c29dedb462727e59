"""The probe job's command (``rush probe submit``) gives its mpirun a private OpenMPI session
directory, as the campaign's control jobs get (one rule: rush/collect/mpi_session.py). The
command rush builds runs here with a fake ``mpirun`` first on PATH that records the environment
it was given."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rush.collect.mpi_session import SESSION_DIR_KEYS
from rush.collect.probe import MPI_SESSION_SCRIPT, probe_command
from tests.polling import wait_for

# Records the two session keys and whether the directory exists, then runs on for $HOLD seconds.
FAKE_MPIRUN = """#!/bin/sh
d="$OMPI_MCA_orte_tmpdir_base"
if [ -n "$d" ] && [ -d "$d" ]; then there=yes; else there=no; fi
printf '%s\\n%s\\n%s\\n%s\\n' "$d" "$PRTE_MCA_prte_tmpdir_base" "$there" "$*" > "$RECORD.tmp"
mv "$RECORD.tmp" "$RECORD"
if [ -n "$HOLD" ]; then exec sleep "$HOLD"; fi
exit 3
"""


@pytest.fixture
def node(tmp_path: Path) -> dict[str, str]:
    """A compute node's environment: the fake mpirun first on PATH, a TMPDIR of its own, no site setting."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mpirun").write_text(FAKE_MPIRUN)
    (bin_dir / "mpirun").chmod(0o755)
    (tmp_path / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in SESSION_DIR_KEYS and k != "HOLD"}
    return env | {
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "TMPDIR": str(tmp_path / "tmp"),
        "RECORD": str(tmp_path / "record"),
    }


def probe_job(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """What the probe job runs on its first node: the command submit_probe hands the RJMS."""
    command = probe_command(4, nodes=2, python=sys.executable, probe_args=["--ring-bytes=1MB"])
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def recorded(env: dict[str, str]) -> tuple[str, str, bool, str]:
    ompi, prte, there, argv = Path(env["RECORD"]).read_text().splitlines()
    return ompi, prte, there == "yes", argv


def test_the_command_runs_mpirun_through_the_session_rule() -> None:
    command = probe_command(4, nodes=2, python=sys.executable)
    assert command[:2] == [sys.executable, str(MPI_SESSION_SCRIPT)]
    assert command[2:7] == ["mpirun", "-np", "4", "--npernode", "2"]


def test_mpirun_gets_a_private_directory_that_is_removed_after(node: dict[str, str]) -> None:
    first = probe_job(node)
    assert first.wait(timeout=120) == 3, first.communicate()  # mpirun's status is the job's
    ompi, prte, there, argv = recorded(node)
    assert there and prte == ompi  # it existed while mpirun ran; OpenMPI 5 (PRRTE) reads its own key
    assert Path(ompi).parent == Path(node["TMPDIR"])
    assert argv.startswith("-np 4 --npernode 2 ") and argv.endswith("--ring-bytes=1MB")
    assert not Path(ompi).exists()
    second = probe_job(node)
    assert second.wait(timeout=120) == 3
    assert recorded(node)[0] != ompi  # two probes on one node never share a session directory


def test_a_site_setting_is_kept(node: dict[str, str], tmp_path: Path) -> None:
    site = tmp_path / "site-tmp"
    site.mkdir()
    job = probe_job(node | {"OMPI_MCA_orte_tmpdir_base": str(site)})
    assert job.wait(timeout=120) == 3
    ompi, prte, there, _ = recorded(node)
    assert (ompi, prte, there) == (str(site), "", True)
    assert site.is_dir()  # the site's directory is not rush's to remove
    assert list((tmp_path / "tmp").iterdir()) == []  # and rush made none of its own


def test_a_cancelled_probe_job_removes_its_directory(node: dict[str, str]) -> None:
    """The RJMS cancels the job (SIGTERM): mpirun gets the signal, the directory still goes."""
    job = probe_job(node | {"HOLD": "600"})
    wait_for(lambda: Path(node["RECORD"]).exists(), timeout=120, step=0.05)
    ompi, _, there, _ = recorded(node)
    assert there
    job.send_signal(signal.SIGTERM)
    assert job.wait(timeout=120) == 128 + signal.SIGTERM  # mpirun (sleep) ended by the signal
    assert not Path(ompi).exists()
