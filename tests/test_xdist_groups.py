"""tests/xdist_groups.py under a real pytest-xdist run: each Slurm install's tests on one worker
(its session cluster set up once), every other module's tests together on one worker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CONFTEST = """
import pytest

pytest_plugins = ("tests.xdist_groups",)


@pytest.fixture(scope="session", params=("22.05", "25.11"))
def slurm_cluster(request, tmp_path_factory):
    # One line per set-up: the test counts how many clusters the whole run started.
    with open({setups!r}, "a") as log:
        log.write(request.param + "\\n")
    return request.param
"""

MODULE = """
import pytest


@pytest.mark.parametrize("case", range(4))
def test_live(slurm_cluster, case):
    assert slurm_cluster in ("22.05", "25.11")


# More tests than an install's group: xdist alone would send the modules out first.
@pytest.mark.parametrize("case", range(12))
def test_offline(case):
    assert case in range(12)
"""


def test_each_install_and_each_module_runs_on_one_worker(tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (the test extra has it)")
    setups = tmp_path / "setups.log"
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(textwrap.dedent(CONFTEST).format(setups=str(setups)))
    for name in ("test_a.py", "test_b.py"):
        (project / name).write_text(textwrap.dedent(MODULE))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "2"]
    argv += ["--dist", "loadgroup", "--rootdir", str(project), str(project)]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=project, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr

    workers: dict[str, set[str]] = defaultdict(set)
    first: dict[str, str] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d+)\] .*?PASSED (\S+)", out.stdout, re.MULTILINE):
        first.setdefault(worker, nodeid)
        install = re.search(r"\[(22\.05|25\.11)-", nodeid)
        group = f"slurm-{install.group(1)}" if install else nodeid.split("::")[0]
        workers[group].add(worker)
    assert set(workers) == {"slurm-22.05", "slurm-25.11", "test_a.py", "test_b.py"}, out.stdout
    assert all(len(w) == 1 for w in workers.values()), dict(workers)
    assert len(set().union(*workers.values())) == 2, dict(workers)  # both workers had work
    assert sorted(setups.read_text().split()) == ["22.05", "25.11"]  # one cluster per install
    # The Slurm groups (the longest in the real suite) go out first, one per worker.
    assert all("::test_live[" in nodeid for nodeid in first.values()), first
    assert "40 passed" in out.stdout.splitlines()[-1], out.stdout  # 2 x (4 x 2 installs + 12)
