"""The multi-node Slurm for tests/slurm/test_nodes_live.py: one per session (tests/slurm/cluster.py,
``MULTI_NODE``: eight slurmd on this host, partitions ``batch`` and ``gpu``, GPUs, n4 drained).

Slurm 25.11 only (Debian's 22.05 has no ``--enable-multiple-slurmd``). Its tests are one xdist
group (``slurm-nodes``, tests/xdist_groups.py), so the cluster starts once, on one worker; its
ports, munge socket and directories are its own, so it runs beside the single-node clusters.
"""

from __future__ import annotations

import pytest


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
