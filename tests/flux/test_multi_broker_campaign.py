"""A campaign whose control jobs span brokers, on a Flux instance of four (``flux start
--test-size=4``, each broker a fake node of two cores), run as an operator would:
``rush campaign run --rjms flux --ntasks 2 --nodes 2``.

What one fake node cannot show: each control job is submitted with a node count (a jobspec with
a node level) and Flux gives it two brokers; the record names the broker ranks and node names
of the job's R (not the host name of the processes, which is this host for every broker); the
probe's rows in the feature store are under those node names, and the counters of this host
(``--procfs-nodes``: every broker is on it) too, so the dataset finds the job's nodes' features.

All brokers run on this host: the job's command runs on its first broker and mpirun starts
the ranks locally. That the ranks run where Flux placed them is what a real cluster adds.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rush.campaign.records import read_records
from rush.collect.probe import FEATURES
from rush.collect.store import FeatureStore
from rush.rjms.flux import expand_hostlist, idset_ids
from tests.campaign.conftest import MPIRUN

APPS = ("halo", "compute")
RUNS = 2
BROKERS = 4
HOST = socket.gethostname().split(".")[0]


def test_control_jobs_span_brokers_and_their_records_name_them(start_flux: Any, tmp_path: Path) -> None:
    if MPIRUN is None:
        pytest.skip("OpenMPI mpirun not installed (.ci/install-deps.sh installs openmpi-bin)")
    pytest.importorskip("mpi4py", reason="mpi4py not installed in the venv")
    dataset_module = pytest.importorskip(
        "rush.models.variability.dataset", reason="the dataset builder absent"
    )
    flux = start_flux(size=BROKERS, cores=2)
    out = tmp_path / "campaign"
    argv = [
        sys.executable, "-m", "rush", "campaign", "run", "--apps", ",".join(APPS), "--runs", str(RUNS),
        "--out", str(out), "--seed", "7", "--rjms", "flux", "--rjms-option", f"uri={flux.uri}",
        "--ntasks", "2", "--nodes", "2", "--concurrency", "2", "--procfs-nodes", f"node[0-{BROKERS - 1}]",
        "--launcher", "mpirun --oversubscribe", "--scale", "0.05", "--interval", "1", "--warmup", "2",
        "--time-limit", "300", "--probe-ring-bytes", "1MB", "--probe-allreduce-bytes", "1MB", "--json",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    _, runs = read_records(out / "records.jsonl")
    assert len(runs) == len(APPS) * RUNS == summary["completed"], [r.get("error") for r in runs]
    brokers = {f"node{rank}" for rank in range(BROKERS)}
    for r in runs:
        job = r["job_id"]
        # Flux gave the job two brokers, and the record names the ones its R lists.
        nnodes, ranks, nodelist = flux.run("jobs", "-no", "{nnodes} {ranks} {nodelist}", job).stdout.split()
        assert int(nnodes) == 2 and len(r["nodes"]) == 2 and set(r["nodes"]) <= brokers
        assert r["ranks"] == idset_ids(ranks) and r["nodes"] == expand_hostlist(nodelist)
        assert r["nodes"] == [f"node{rank}" for rank in r["ranks"]]  # --test-hosts names rank N nodeN
        # The jobspec asked for nodes: two one-core slots, one per node, each node's task count one.
        spec = json.loads(flux.run("job", "info", job, "jobspec").stdout)
        assert spec["resources"][0]["type"] == "node" and spec["resources"][0]["count"] == 2
        assert flux.run("jobs", "-no", "{ncores} {ntasks}", job).stdout.split() == ["2", "2"]
    with FeatureStore(out / "features.sqlite") as store:
        for r in runs:
            # The probe's rows are under the job's two nodes (not this host's name).
            probes = store.window_features(r["nodes"], r["start"] - 1, r["end"] + 1, ["mpi_probe"])
            assert {f"mean_{name}" for name in FEATURES} <= set(probes), r
        probe_hosts = {s.host for s in store.samples(sources=["mpi_probe"])}
        assert probe_hosts == {n for r in runs for n in r["nodes"]}  # never this host's name
        assert {s.host for s in store.samples(sources=["procfs"])} == brokers
    dataset = dataset_module.build_dataset(
        out / "records.jsonl", out / "features.sqlite", dataset_module.DatasetOptions(window=60.0)
    )
    assert dataset.X.shape[0] == len(runs)
    assert any(name.startswith("job_mean_") and "net_xmit" in name for name in dataset.feature_names)
