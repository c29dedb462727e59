"""tests/xdist_groups.py under a real pytest-xdist run: each Slurm install's tests on one worker
(its session cluster set up once), every other module's tests together on one worker."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.xdist_groups import (
    DEFAULT_SECONDS,
    SPLIT_BY_PARAM,
    SPLIT_BY_TEST,
    estimated_seconds,
    group_of,
    read_slow_tests,
    work_order,
)

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
    env = {**os.environ, "PYTHONPATH": str(REPO), "RUSH_TEST_DURATIONS": str(tmp_path / "durations.json")}
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
    # The controller lists the slowest groups at the end (the figures tests/slow_tests.txt keeps).
    assert "xdist groups (tests/slow_tests.txt)" in out.stdout, out.stdout
    listed = re.findall(r"^\s+\d+\.\d+s  (\S+) \((\d+) tests\)$", out.stdout, re.MULTILINE)
    assert dict(listed) == {"slurm-22.05": "8", "slurm-25.11": "8", "test_a.py": "12", "test_b.py": "12"}
    assert re.search(r"^seconds in tests per worker: gw0 \d+ s, gw1 \d+ s$", out.stdout, re.MULTILINE)
    durations = json.loads((tmp_path / "durations.json").read_text())
    assert len(durations) == 40 and all(seconds >= 0 for seconds in durations.values())


def test_known_slow_groups_go_out_first_longest_first() -> None:
    units = {
        "tests/many.py": [f"tests/many.py::test_{i}" for i in range(40)],  # 40 x 0.3 s = 12 s
        "tests/few.py": [f"tests/few.py::test_{i}" for i in range(3)],
        "tests/two.py": ["tests/two.py::test_long", "tests/two.py::test_short"],
        "tests/split.py[22.05]": ["tests/split.py::test_x[22.05]"],
        "tests/split.py[25.11]": ["tests/split.py::test_x[25.11]"],
        "slurm-25.11": ["tests/live.py::test_y[25.11]"],
    }
    known = {"tests/two.py::test_long": 90.0, "tests/split.py": 100.0}
    seconds = estimated_seconds([n for nodeids in units.values() for n in nodeids], known)
    assert seconds["tests/two.py::test_short"] == DEFAULT_SECONDS
    assert seconds["tests/split.py::test_x[25.11]"] == 50.0  # the module's line, shared
    # Without slow_tests.txt xdist's order (most tests first) would send tests/two.py out last.
    assert work_order(units, known) == [
        "slurm-25.11",
        "tests/two.py",
        "tests/split.py[22.05]",
        "tests/split.py[25.11]",
        "tests/many.py",
        "tests/few.py",
    ]
    assert work_order(units, {}) == ["slurm-25.11", "tests/many.py", "tests/few.py", "tests/two.py"] + [
        "tests/split.py[22.05]",
        "tests/split.py[25.11]",
    ]


def test_a_module_split_by_its_clusters_is_one_group_per_cluster() -> None:
    module = next(iter(SPLIT_BY_PARAM))
    item = SimpleNamespace(
        nodeid=f"{module}::test_x[25.11]",
        fixturenames=["cluster", "tmp_path"],
        callspec=SimpleNamespace(params={SPLIT_BY_PARAM[module]: "25.11"}),
    )
    assert group_of(item) == f"{module}[25.11]"
    other = SimpleNamespace(nodeid="tests/other.py::test_x[25.11]", fixturenames=[], callspec=item.callspec)
    assert group_of(other) == "tests/other.py"
    live = SimpleNamespace(
        nodeid="tests/live.py::test_x[22.05]",
        fixturenames=["slurm_cluster"],
        callspec=SimpleNamespace(params={"slurm_cluster": "22.05"}),
    )
    assert group_of(live) == "slurm-22.05"
    module = next(iter(SPLIT_BY_TEST))
    alone = SimpleNamespace(nodeid=f"{module}::test_one", fixturenames=["tmp_path"], callspec=None)
    assert group_of(alone) == f"{module}::test_one"


def test_the_slow_tests_file_names_tests_that_exist(tmp_path: Path) -> None:
    known = read_slow_tests()
    assert known and all(seconds > 0 for seconds in known.values())
    for nodeid in known:
        module, _, name = nodeid.partition("::")
        path = REPO / module
        assert path.is_file(), f"tests/slow_tests.txt names {module}, which does not exist"
        if name:
            assert f"def {name.split('[')[0]}(" in path.read_text(), f"tests/slow_tests.txt: no {nodeid}"
    for module in [*SPLIT_BY_PARAM, *SPLIT_BY_TEST]:
        assert (REPO / module).is_file(), module
    bad = tmp_path / "slow.txt"
    bad.write_text("# comment\n12 tests/x.py\nslow tests/y.py\n")
    with pytest.raises(ValueError, match=r"slow\.txt:3: expected 'SECONDS NODE-ID'"):
        read_slow_tests(bad)
