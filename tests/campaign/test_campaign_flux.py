"""A small campaign (2 applications x 2 runs, the noise job switching) through the Flux backend on
a real Flux instance, end to end, run as an operator would: ``rush campaign run --rjms flux
--rjms-option uri=...``. Records valid per the contract, probes and counters in the store, Flux
agrees on every job, nothing outlives the campaign.

The instance has one fake node (``resource.config``, named ``node0``) on this host: OpenMPI's
mpirun inside each job starts its ranks locally, as on one real node. Records name the node the
job's R lists (``node0``, the name rush schedules by); ``--procfs-nodes node0`` writes this
host's counters under it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from rush.campaign.records import FORMAT, read_records
from rush.collect.probe import FEATURES
from rush.collect.store import FeatureStore
from tests.campaign.conftest import MPIRUN, assert_noise_labels_from_the_log
from tests.flux.instance import FluxInstance, available

APPS = ("halo", "compute")
RUNS = 2
HOST = socket.gethostname().split(".")[0]
NODE = "node0"  # the instance's one fake node


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FluxInstance, Path, dict]]:
    why = available()
    if why:
        pytest.skip(why)
    if MPIRUN is None:
        pytest.skip("OpenMPI mpirun not installed (.ci/install-deps.sh installs openmpi-bin)")
    pytest.importorskip("mpi4py", reason="mpi4py not installed in the venv")
    work = tmp_path_factory.mktemp("campaign-flux")
    flux = FluxInstance(work / "flux", size=1, cores=8).start()
    try:
        argv = [
            sys.executable, "-m", "rush", "campaign", "run", "--apps", ",".join(APPS), "--runs", str(RUNS),
            "--out", str(work / "campaign"), "--seed", "5", "--rjms", "flux", "--rjms-option", f"uri={flux.uri}",
            "--noise", "on", "--noise-kinds", "network", "--noise-on", "2:4", "--noise-off", "2:4",
            "--scale", "0.05", "--interval", "1", "--warmup", "2", "--time-limit", "300",
            "--probe-ring-bytes", "1MB", "--probe-allreduce-bytes", "1MB", "--procfs-nodes", NODE, "--json",
        ]  # fmt: skip
        out = subprocess.run(argv, capture_output=True, text=True, cwd=work, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        yield flux, work / "campaign", json.loads(out.stdout)
    finally:
        flux.stop()


def result(flux: FluxInstance, job_id: str) -> str:
    return flux.run("jobs", "-no", "{result}", job_id).stdout.strip()


def test_records_follow_the_contract(campaign: tuple[FluxInstance, Path, dict]) -> None:
    flux, out, summary = campaign
    header, runs = read_records(out / "records.jsonl")  # validates every record
    assert header is not None and header["format"] == FORMAT and header["rjms"] == "flux"
    assert len(runs) == len(APPS) * RUNS == summary["runs"] == summary["completed"]
    assert Counter(r["app"] for r in runs) == {app: RUNS for app in APPS}
    assert {r["app"]: r["wtype"] for r in runs} == {"halo": "network", "compute": "compute"}
    assert all(r["state"] == "COMPLETED" for r in runs), [r.get("error") for r in runs]
    assert len({r["job_id"] for r in runs}) == len(runs)
    for r in runs:
        assert r["nodes"] == [NODE] and r["ranks"] == [0]  # from the job's R
        assert r["submit"] <= r["start"] <= r["app_start"] <= r["app_start"] + r["runtime"] <= r["end"] + 1e-6
        assert set(r["probe"]) == set(FEATURES) and r["probe"]["allreduce_max"] > 0
        assert result(flux, r["job_id"]) == "COMPLETED"  # Flux agrees


def test_jobs_carry_their_tags_and_run_once(campaign: tuple[FluxInstance, Path, dict]) -> None:
    flux, out, _ = campaign
    _, runs = read_records(out / "records.jsonl")
    from rush.rjms.flux import FluxBackend

    backend = FluxBackend(uri=flux.uri)
    for r in runs:
        tags, limit = backend._jobspec_info(int(r["job_id"]))
        assert tags["app"] == r["app"] and tags["wtype"] == r["wtype"] and limit == 360
        # Two cores held, the job's command run once, as a batch script (its mpirun starts
        # the two ranks): one task on the one node, not one per core.
        assert flux.run("jobs", "-no", "{ncores} {ntasks}", r["job_id"]).stdout.split() == ["2", "1"]
    results = sorted((out / "jobs").glob("*.result.json"))
    assert len(results) == len(runs)
    assert all(json.loads(p.read_text())["job_id"] for p in results)


def test_noise_labels_come_from_the_noise_jobs_log(campaign: tuple[FluxInstance, Path, dict]) -> None:
    flux, out, _ = campaign
    assert_noise_labels_from_the_log(out)
    live = flux.run("jobs", "-no", "{id}", "--filter=pending,running").stdout.split()
    assert live == []  # the noise job does not outlive the campaign
    noise = [j for j in flux.run("jobs", "-a", "-no", "{id} {name}").stdout.splitlines() if "rush-noise" in j]
    assert len(noise) == 1 and result(flux, noise[0].split()[0]) == "CANCELED"


def test_counters_and_probes_are_in_the_store(campaign: tuple[FluxInstance, Path, dict]) -> None:
    _, out, summary = campaign
    _, runs = read_records(out / "records.jsonl")
    first, last = min(r["start"] for r in runs), max(r["end"] for r in runs)
    with FeatureStore(out / "features.sqlite") as store:
        before = store.window_features([NODE], first - 300, first, ["procfs"])
        assert {"mean_net_xmit_bytes_per_s", "max_cpu_user_frac"} <= set(before)
        probes = store.window_features([NODE], first - 1, last + 1, ["mpi_probe"])
        assert not store.samples([HOST], sources=["mpi_probe", "procfs"])  # all under the node's name
        assert {f"mean_{name}" for name in FEATURES} <= set(probes)
    assert summary["counter_errors"] == {} and summary["failures"] == []


def test_dataset_builder_reads_the_campaign(campaign: tuple[FluxInstance, Path, dict]) -> None:
    dataset_module = pytest.importorskip(
        "rush.models.variability.dataset", reason="the dataset builder absent"
    )
    _, out, _ = campaign
    dataset = dataset_module.build_dataset(
        out / "records.jsonl", out / "features.sqlite", dataset_module.DatasetOptions(window=60.0)
    )
    assert dataset.X.shape[0] == len(APPS) * RUNS
    assert any(name.startswith("job_mean_") and "net_xmit" in name for name in dataset.feature_names)


def test_unreachable_flux_fails_before_any_file(tmp_path: Path) -> None:
    if available():
        pytest.skip(available())
    out = subprocess.run(
        [sys.executable, "-m", "rush", "campaign", "run", "--apps", "halo", "--runs", "1", "--out",
         str(tmp_path / "c"), "--rjms", "flux", "--rjms-option", f"uri=local://{tmp_path}/nothing"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and "flux" in out.stderr.lower(), out.stderr
    assert not (tmp_path / "c").exists()
