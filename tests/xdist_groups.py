"""Which pytest-xdist worker runs which tests: whole groups, one worker each (tests/conftest.py).

A group is ``slurm-<install>`` for the tests of one live Slurm install, so that install's
session cluster starts once, on one worker; every other test is grouped by its module, so
module-scoped fixtures (a Flux instance, a trained model) are built once.

xdist's own ``--dist loadgroup`` carries a test's group as a suffix it writes into the test's
node id; pytest 9.2's structured node ids no longer take that write, and the groups silently
vanish (pytest-xdist issue 1386). So the groups travel on a side channel: each worker writes
the group of every test it collected to a JSON file in a directory the controller gives it
(``workerinput``), and the controller's scheduler, xdist's LoadScopeScheduling (whole scopes
to one worker, the largest first), reads them as its scopes. ``--dist loadgroup`` selects it.
The Slurm groups go out first: they are the longest (their tests wait on real jobs), and a
long group started last would finish alone.
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


def group_of(item: pytest.Item) -> str:
    """``slurm-<install>`` for a test of a live Slurm install, ``slurm-nodes`` for one of the
    multi-node cluster, else the test's module."""
    if "slurm_nodes" in getattr(item, "fixturenames", ()):
        return "slurm-nodes"  # the multi-node cluster (tests/conftest.py)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "slurm_cluster" in callspec.params:
        return f"slurm-{callspec.params['slurm_cluster']}"
    return item.nodeid.split("::", 1)[0]


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
            # the rest in xdist's order (the most tests first).
            if not self.ordered:
                self.ordered = True
                queue = sorted(self.workqueue.items(), key=lambda unit: not unit[0].startswith("slurm-"))
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


def pytest_unconfigure(config: pytest.Config) -> None:
    if _DIR_KEY in config.stash:
        shutil.rmtree(config.stash[_DIR_KEY], ignore_errors=True)
