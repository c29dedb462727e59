"""Shared fixtures. ``slurm_cluster``: one real Slurm on localhost per test session and install.

``slurm_cluster`` is parametrised over the Slurm installs of tests/slurm/cluster.py
(Debian's 22.05 and 25.11 built from ../shared/vendor), so every live Slurm test runs on
each: ``test_x[22.05]``, ``test_x[25.11]``; an install that cannot run here is skipped with
its reason. Pytest groups the tests by the session fixture's parameter and finalises one
cluster before it creates the next, so only one Slurm runs at a time. ``-k 22.05`` or
``-k 25.11`` selects one. Tests that use ``slurm_cluster`` (or ``slurm``) get the ``slurm``
marker automatically, so ``pytest -m "not slurm"`` runs everything else. The cluster's API
is in tests/slurm/cluster.py.

Under pytest-xdist (``./setup.sh test`` runs ``-n <cores> --dist loadgroup``) the tests of one
Slurm install run on one worker, so that install's cluster starts once; the rest go module by
module (tests/xdist_groups.py). The two installs' clusters may then run at the same time on
two workers: each has its own ports, munge socket, state and spool directories
(tests/slurm/cluster.py), so they do not meet.

``slurm_nodes``: the multi-node Slurm (tests/slurm/cluster.py, ``MULTI_NODE``: eight slurmd on
this host, partitions ``batch`` and ``gpu``, GPUs, n4 drained), one per session, for
tests/slurm/test_nodes_live.py and tests/daemon/test_live_slurm_nodes.py alike (defined here, not
in a subdirectory's conftest, so both directories share the one cluster). Slurm 25.11 only
(Debian's 22.05 has no ``--enable-multiple-slurmd``). Its tests are one xdist group
(``slurm-nodes``, tests/xdist_groups.py), so the cluster starts once, on one worker; its ports,
munge socket and directories are its own, so it runs beside the single-node clusters.

``RUSH_TEST_PART=debian-slurm`` keeps only the tests of Debian Slurm's live clusters, which need
none of the vendored builds, and ``RUSH_TEST_PART=rest`` every other test:
.ci/pytest-beside-builds.sh runs the first beside the builds on a machine that has none yet.
"""

from __future__ import annotations

import os

import pytest

# The install names of tests/slurm/cluster.py's INSTALLS (kept literal: ids at collection).
SLURM_INSTALLS = ("22.05", "25.11")


pytest_plugins = ("tests.xdist_groups",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "slurm_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slurm)
    # One part of a run beside the vendored builds (.ci/pytest-beside-builds.sh).
    part = os.environ.get("RUSH_TEST_PART")
    if part:
        from tests.xdist_groups import select_part

        select_part(config, items, part)


@pytest.fixture(scope="session", params=SLURM_INSTALLS)
def slurm_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A started :class:`tests.slurm.cluster.SlurmCluster` of one install (skips when that
    install is absent or cannot run here)."""
    from tests.slurm.cluster import INSTALLS, SlurmCluster

    install = INSTALLS[request.param]
    reason = install.available()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp(f"slurm-{install.name}"), install=install)
    try:
        cluster.start()
    except Exception as exc:  # stop what did start; the message carries the daemons' logs
        cluster.stop()
        pytest.fail(f"could not start the test Slurm {install.name}: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def slurm(slurm_cluster):
    """The session cluster with an empty queue before and after the test."""
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()


@pytest.fixture(scope="session")
def slurm_nodes(tmp_path_factory: pytest.TempPathFactory):
    """A started multi-node :class:`tests.slurm.cluster.SlurmCluster` (skips when Slurm 25.11
    cannot run here); stopped by its daemons' PIDs at the end of the session."""
    from tests.slurm.cluster import MULTI_NODE, VENDORED, SlurmCluster

    reason = VENDORED.available()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm-nodes"), install=VENDORED, layout=MULTI_NODE)
    try:
        cluster.start()
    except Exception as exc:  # stop what did start; the message carries the daemons' logs
        cluster.stop()
        pytest.fail(f"could not start the multi-node test Slurm: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def nodes_cluster(slurm_nodes):
    """The multi-node cluster with an empty queue before and after the test."""
    slurm_nodes.cancel_all()
    yield slurm_nodes
    slurm_nodes.cancel_all()
