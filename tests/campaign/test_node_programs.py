"""What runs on compute nodes ships in the package: campaigns work from a non-editable install.

The runner starts the noise job and the proxy applications from ``rush/campaign/node_programs``
(and the MPI probe from ``rush/collect``); ``collectors/`` in the repository links to them. A wheel
is built from a copy of the sources (pip's build isolation takes setuptools from the configured
index, as an admin's ``pip install .`` does) and its contents are checked against the files the
runner uses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rush.campaign.runner import APPS, JOBRUN, NOISE_SCRIPT, PROXIES
from rush.collect.probe import MPI_SESSION_SCRIPT, PROBE_SCRIPT

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "rush"


def node_programs() -> list[Path]:
    """Every file a campaign starts on a node, and what those files import beside them."""
    proxies = [PROXIES / script for script, _ in APPS.values()] + [PROXIES / "_common.py"]
    return [*proxies, NOISE_SCRIPT, JOBRUN, PROBE_SCRIPT, MPI_SESSION_SCRIPT]


def test_the_runner_uses_files_inside_the_package() -> None:
    for path in node_programs():
        assert path.is_file(), path
        assert path.resolve().is_relative_to(PACKAGE), f"{path} is outside the package"


def test_collectors_directory_links_to_the_shipped_programs() -> None:
    linked = {
        REPO / "collectors" / "noise.py": NOISE_SCRIPT,
        REPO / "collectors" / "mpi_probe.py": PROBE_SCRIPT,
        **{REPO / "collectors" / "proxies" / path.name: path for path in PROXIES.glob("*.py")},
    }
    assert len(linked) == 2 + len(APPS) + 1  # the apps and _common.py
    for repo_path, shipped in linked.items():
        assert repo_path.resolve() == shipped.resolve(), repo_path


@pytest.mark.timeout(300)
def test_the_wheel_holds_every_node_program(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(PACKAGE, source / "rush", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            str(source),
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        # the build's own environment, not this process's import path
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    if build.returncode and "No matching distribution found for setuptools" in build.stderr:
        pytest.skip("no package index to build a wheel from (pip cannot fetch setuptools)")
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = tmp_path.glob("rush-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for path in node_programs():
            inside = path.resolve().relative_to(PACKAGE.parent).as_posix()
            assert inside in names, f"{inside} is not in {wheel.name}"
            assert archive.read(inside) == path.read_bytes(), inside
        # Flux loads the scheduler module by path: it ships too.
        assert "rush/flux_module/sched-rush.py" in names
