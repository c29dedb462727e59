"""Which pytest-xdist worker runs which tests: whole groups, one worker each (tests/conftest.py).

A group is ``slurm-<install>`` for the tests of one live Slurm install, so that install's
session cluster starts once, on one worker; every other test is grouped by its module, so
module-scoped fixtures (a Flux instance, a trained model) are built once. A module whose
module-scoped fixture is parametrized over clusters of its own (``SPLIT_BY_PARAM``) is one group
per parameter, and one whose tests each start their own cluster (``SPLIT_BY_TEST``) one group per
test: each group still sets its cluster up once, and they can run side by side.

xdist's own ``--dist loadgroup`` carries a test's group as a suffix it writes into the test's
node id; pytest 9.2's structured node ids no longer take that write, and the groups silently
vanish (pytest-xdist issue 1386). So the groups travel on a side channel: each worker writes
the group of every test it collected to a JSON file in a directory the controller gives it
(``workerinput``), and the controller's scheduler, xdist's LoadScopeScheduling (whole scopes
to one worker, the largest first), reads them as its scopes. ``--dist loadgroup`` selects it.
The Slurm groups go out first: they are the longest (their tests wait on real jobs), and a
long group started last would finish alone. The other groups follow longest first, by the
seconds tests/slow_tests.txt records for its known-slow tests and ``DEFAULT_SECONDS`` for
every other test (a run otherwise ended on a four-minute module of two tests started last).
At the end of the run the controller lists the slowest groups, the figures that file needs.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

GROUPS_DIR = "rush_xdist_groups"
_DIR_KEY = pytest.StashKey[Path]()
SLOW_TESTS = Path(__file__).with_name("slow_tests.txt")
# A test slow_tests.txt does not name (a guess: most tests take well under a second); the same for
# every such test, so groups of unknown tests keep xdist's own order (the most tests first).
DEFAULT_SECONDS = 0.3
# Modules whose clusters are a module-scoped fixture parametrized over installs: the fixture's
# name. Their groups are ``<module>[<param>]``; the clusters have their own ports and state.
SPLIT_BY_PARAM = {"tests/slurm/test_fairshare_live.py": "cluster"}
# Modules whose every test has a cluster of its own (no fixture shared between two tests): one
# group per test.
SPLIT_BY_TEST = frozenset({"tests/slurm/test_replay_fidelity.py"})
SUMMARY_GROUPS = 15


def group_of(item: pytest.Item) -> str:
    """``slurm-<install>`` for a test of a live Slurm install, ``slurm-nodes`` for one of the
    multi-node cluster, else the test's module (or a part of it, ``SPLIT_BY_PARAM``,
    ``SPLIT_BY_TEST``)."""
    if "slurm_nodes" in getattr(item, "fixturenames", ()):
        return "slurm-nodes"  # the multi-node cluster (tests/conftest.py)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "slurm_cluster" in callspec.params:
        return f"slurm-{callspec.params['slurm_cluster']}"
    module = item.nodeid.split("::", 1)[0]
    if module in SPLIT_BY_TEST:
        return item.nodeid
    param = SPLIT_BY_PARAM.get(module)
    if callspec is not None and param in callspec.params:
        return f"{module}[{callspec.params[param]}]"
    return module


# The parts of a run beside the vendored builds (.ci/pytest-beside-builds.sh, RUSH_TEST_PART):
# Debian Slurm's live tests, which need none of the builds, and the rest.
PARTS = ("debian-slurm", "rest")
DEBIAN_SLURM = "22.05"


def part_of(item: pytest.Item) -> str:
    """``debian-slurm`` for a test of a live cluster of Debian's own Slurm (a build-free group),
    else ``rest``."""
    group = group_of(item)
    module = item.nodeid.split("::", 1)[0]
    if group in (f"slurm-{DEBIAN_SLURM}", f"{module}[{DEBIAN_SLURM}]"):
        return "debian-slurm"
    return "rest"


def select_part(config: pytest.Config, items: list[pytest.Item], part: str) -> None:
    """Keep the tests of one part (RUSH_TEST_PART), deselect the others."""
    if part not in PARTS:
        raise pytest.UsageError(f"RUSH_TEST_PART must be one of {', '.join(PARTS)}, not {part!r} (or unset)")
    kept = [item for item in items if part_of(item) == part]
    dropped = [item for item in items if part_of(item) != part]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def read_slow_tests(path: Path = SLOW_TESTS) -> dict[str, float]:
    """slow_tests.txt as {node ID or module: seconds}; a malformed line is a clear error."""
    known: dict[str, float] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        seconds, _, nodeid = line.strip().partition(" ")
        try:
            known[nodeid.strip()] = float(seconds)
        except ValueError:
            raise ValueError(f"{path}:{number}: expected 'SECONDS NODE-ID', got {line!r}") from None
        if not nodeid.strip() or not known[nodeid.strip()] >= 0:
            raise ValueError(f"{path}:{number}: expected 'SECONDS NODE-ID', got {line!r}")
    return known


def estimated_seconds(nodeids: list[str], known: dict[str, float]) -> dict[str, float]:
    """Each test's expected seconds: its own line, else its module's line shared among the
    module's tests, else DEFAULT_SECONDS."""
    per_module: dict[str, int] = {}
    for nodeid in nodeids:
        module = nodeid.split("::", 1)[0]
        per_module[module] = per_module.get(module, 0) + 1
    seconds = {}
    for nodeid in nodeids:
        module = nodeid.split("::", 1)[0]
        if nodeid in known:
            seconds[nodeid] = known[nodeid]
        elif module in known:
            seconds[nodeid] = known[module] / per_module[module]
        else:
            seconds[nodeid] = DEFAULT_SECONDS
    return seconds


def work_order(units: dict[str, list[str]], known: dict[str, float]) -> list[str]:
    """The groups in the order they go out: the Slurm groups first, then the longest first
    (ties: the most tests first, as xdist orders them)."""
    seconds = estimated_seconds([n for nodeids in units.values() for n in nodeids], known)
    return sorted(
        units,
        key=lambda g: (not g.startswith("slurm-"), -sum(seconds[n] for n in units[g]), -len(units[g])),
    )


def _groups_dir(config: pytest.Config) -> Path:
    if _DIR_KEY not in config.stash:
        config.stash[_DIR_KEY] = Path(tempfile.mkdtemp(prefix="rush-xdist-groups-"))
    return config.stash[_DIR_KEY]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller: tell each worker where to write its groups."""
    node.workerinput[GROUPS_DIR] = str(_groups_dir(node.config))


# trylast: after every other plugin has settled the items and their node ids.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker: write the group of every collected test (before xdist reports the collection)."""
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or GROUPS_DIR not in workerinput:
        return
    path = Path(workerinput[GROUPS_DIR]) / f"{workerinput['workerid']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({item.nodeid: group_of(item) for item in items}))
    os.replace(tmp, path)  # a restarted worker rewrites it whole


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist", "no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    groups_dir = _groups_dir(config)

    class GroupScheduling(LoadScopeScheduling):
        """LoadScopeScheduling with the workers' groups as scopes."""

        groups: dict[str, str] | None = None
        ordered = False

        def _assign_work_unit(self, node: Any) -> None:
            # The queue is complete at the first assignment: the Slurm groups to its front,
            # the rest longest first (work_order).
            if not self.ordered:
                self.ordered = True
                units = {scope: list(unit) for scope, unit in self.workqueue.items()}
                queue = [(scope, self.workqueue[scope]) for scope in work_order(units, read_slow_tests())]
                self.workqueue.clear()
                self.workqueue.update(queue)
            super()._assign_work_unit(node)

        def _split_scope(self, nodeid: str) -> str:
            # Called once every worker has reported its collection, so every file is written.
            if self.groups is None:
                self.groups = {}
                for path in sorted(groups_dir.glob("*.json")):
                    self.groups.update(json.loads(path.read_text()))
            return self.groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)


@pytest.hookimpl(hookwrapper=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> Any:
    """Controller, after pytest's own summary: the slowest groups, summed over their tests."""
    yield
    if _DIR_KEY not in config.stash or getattr(config, "workerinput", None) is not None:
        return
    groups: dict[str, str] = {}
    for path in sorted(_groups_dir(config).glob("*.json")):
        groups.update(json.loads(path.read_text()))
    if not groups:
        return
    seconds: dict[str, float] = {}
    tests: dict[str, int] = {}
    per_test: dict[str, float] = {}
    per_worker: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid, duration = getattr(report, "nodeid", None), getattr(report, "duration", None)
            if nodeid in groups and isinstance(duration, float):
                group = groups[nodeid]
                seconds[group] = seconds.get(group, 0.0) + duration
                per_test[nodeid] = per_test.get(nodeid, 0.0) + duration
                worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "?")
                per_worker[worker] = per_worker.get(worker, 0.0) + duration
                if getattr(report, "when", None) == "call":
                    tests[group] = tests.get(group, 0) + 1
    slowest = sorted(seconds, key=seconds.__getitem__, reverse=True)[:SUMMARY_GROUPS]
    terminalreporter.write_sep("=", f"slowest {len(slowest)} xdist groups (tests/slow_tests.txt)")
    for group in slowest:
        terminalreporter.write_line(f"{seconds[group]:8.1f}s  {group} ({tests.get(group, 0)} tests)")
    busy = ", ".join(f"{w} {per_worker[w]:.0f} s" for w in sorted(per_worker))
    terminalreporter.write_line(f"seconds in tests per worker: {busy}")
    # Every test's seconds, for tests/slow_tests.txt (./setup.sh test prints only the slowest).
    target = os.environ.get("RUSH_TEST_DURATIONS")
    if target:
        Path(target).write_text(json.dumps(dict(sorted(per_test.items(), key=lambda kv: -kv[1])), indent=0))
        terminalreporter.write_line(f"every test's seconds: {target}")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _DIR_KEY in config.stash:
        shutil.rmtree(config.stash[_DIR_KEY], ignore_errors=True)
