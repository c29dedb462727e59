"""Shared fixtures. ``slurm_cluster``: one real Slurm on localhost per test session.

Tests that use ``slurm_cluster`` (or ``slurm``) get the ``slurm`` marker automatically, so
``pytest -m "not slurm"`` runs everything else. The cluster's API is in tests/slurm/cluster.py.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "slurm_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slurm)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A started :class:`tests.slurm.cluster.SlurmCluster` (skips when Slurm is not installed)."""
    from tests.slurm.cluster import SlurmCluster, available

    reason = available()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except Exception as exc:  # stop what did start; the message carries the daemons' logs
        cluster.stop()
        pytest.fail(f"could not start the test Slurm: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def slurm(slurm_cluster):
    """The session cluster with an empty queue before and after the test."""
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()
