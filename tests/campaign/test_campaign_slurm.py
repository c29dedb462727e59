"""A small campaign (4 applications x 3 runs = 12 control jobs, the noise job switching) on the
real test Slurm, end to end: records valid per the contract, probes and counters in the store.

Counters come from this host's procfs and, when prometheus and prometheus-node-exporter are
installed, from node_exporter on the real /proc and /sys through Prometheus.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from rush.campaign.records import FORMAT, read_records
from rush.campaign.runner import CampaignOptions, run_campaign
from rush.collect.probe import FEATURES
from rush.collect.store import FeatureStore
from tests.campaign.conftest import MPIRUN, assert_noise_labels_from_the_log
from tests.collect.fixtures_prom import tools_available
from tests.slurm.cluster import _state

APPS = ("halo", "cg", "compute", "io")
RUNS = 3


@pytest.fixture(scope="module")
def campaign(
    slurm_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, Path, dict]]:
    if MPIRUN is None:
        pytest.skip("OpenMPI mpirun not installed (.ci/install-deps.sh installs openmpi-bin)")
    pytest.importorskip("mpi4py", reason="mpi4py not installed in the venv")
    from tests.campaign.local import node_metrics

    slurm_cluster.cancel_all()
    work = tmp_path_factory.mktemp(f"campaign-{slurm_cluster.name}")
    with ExitStack() as stack:
        url = ""
        if tools_available():
            (work / "prom").mkdir()
            url = stack.enter_context(node_metrics(work / "prom", slurm_cluster.node, interval="1s"))
        options = CampaignOptions(
            apps=APPS,
            runs=RUNS,
            out=work / "campaign",
            seed=5,
            rjms_options=slurm_cluster.options(jobcomp_file=str(slurm_cluster.jobcomp)),
            noise=True,
            noise_on=(2.0, 5.0),
            noise_off=(2.0, 5.0),
            scale=0.05,
            interval=1.0,
            warmup=3.0,
            time_limit=300.0,
            prometheus=url,
            probe_ring_bytes="1MB",
            probe_allreduce_bytes="1MB",
            command="pytest",
        )
        summary = run_campaign(options)
    yield slurm_cluster, work / "campaign", summary
    slurm_cluster.cancel_all()


def test_records_follow_the_contract(campaign: tuple[Any, Path, dict]) -> None:
    cluster, out, summary = campaign
    header, runs = read_records(out / "records.jsonl")  # validates every record
    assert header is not None and header["format"] == FORMAT and header["seed"] == 5
    assert len(runs) == len(APPS) * RUNS == summary["runs"]
    assert Counter(r["app"] for r in runs) == {app: RUNS for app in APPS}
    assert {r["app"]: r["wtype"] for r in runs} == {
        "halo": "network",
        "cg": "network",
        "compute": "compute",
        "io": "io",
    }
    assert all(r["state"] == "COMPLETED" for r in runs), [r.get("error") for r in runs]
    assert len({r["job_id"] for r in runs}) == len(runs)
    for r in runs:
        assert r["nodes"] == [cluster.node]
        assert (
            r["submit"] <= r["start"] <= r["app_start"] and r["app_start"] + r["runtime"] <= r["end"] + 1e-6
        )
        assert set(r["probe"]) == set(FEATURES) and r["probe"]["allreduce_max"] > 0
        assert cluster.job(int(r["job_id"])).state == "COMPLETED"  # Slurm agrees


def test_noise_labels_come_from_the_noise_jobs_log(campaign: tuple[Any, Path, dict]) -> None:
    cluster, out, _ = campaign
    assert_noise_labels_from_the_log(out)
    live = [j for j in cluster.squeue_json() if _state(j) in ("PENDING", "RUNNING")]
    assert live == []  # the noise job does not outlive the campaign


def test_counters_and_probes_are_in_the_store(campaign: tuple[Any, Path, dict]) -> None:
    cluster, out, summary = campaign
    _, runs = read_records(out / "records.jsonl")
    first, last = min(r["start"] for r in runs), max(r["end"] for r in runs)
    with FeatureStore(out / "features.sqlite") as store:
        # The 5 minutes before the first job's start (it holds the warm-up samples).
        before = store.window_features([cluster.node], first - 300, first, ["procfs"])
        assert {"mean_net_xmit_bytes_per_s", "max_cpu_user_frac", "min_disk_write_bytes_per_s"} <= set(before)
        during = store.window_features([cluster.node], first, last, ["procfs"])
        assert during["max_disk_write_bytes_per_s"] > 0  # the io proxy and fsync noise wrote
        probes = store.window_features([cluster.node], first - 1, last + 1, ["mpi_probe"])
        assert {f"mean_{name}" for name in FEATURES} <= set(probes)
        if tools_available():
            prom = store.window_features([cluster.node], first, last, ["prometheus"])
            assert "mean_node_net_xmit_bytes_per_s" in prom and "mean_node_load1" in prom
    assert summary["counter_errors"] == {}
    absent = summary["absent_counters"]
    for family, path in (
        ("InfiniBand (sysclassib)", "/sys/class/infiniband"),
        ("Lustre client (llite)", "/proc/fs/lustre"),
    ):
        assert (family in absent) is (not Path(path).exists())


def test_dataset_builder_reads_the_campaign(campaign: tuple[Any, Path, dict]) -> None:
    dataset_module = pytest.importorskip(
        "rush.models.variability.dataset", reason="helper F's dataset builder not present"
    )
    _, out, _ = campaign
    dataset = dataset_module.build_dataset(
        out / "records.jsonl",
        out / "features.sqlite",
        dataset_module.DatasetOptions(window=60.0, scopes=("job", "all")),
    )
    assert dataset.X.shape[0] == len(APPS) * RUNS
    assert any(name.startswith("job_mean_") and "net_xmit" in name for name in dataset.feature_names)
