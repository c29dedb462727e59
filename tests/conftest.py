"""Shared fixtures. ``slurm_cluster``: one real Slurm on localhost per test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    from tests.slurm.cluster import SlurmCluster, available

    reason = available()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except Exception as exc:  # report the daemons' logs, then stop what started
        cluster.stop()
        pytest.fail(f"could not start the test Slurm: {exc}")
    yield cluster
    cluster.cancel_all()
    cluster.stop()


@pytest.fixture
def slurm(slurm_cluster):
    """The session cluster with an empty queue."""
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()
