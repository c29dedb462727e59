"""The MPI probe under a real OpenMPI mpirun, its JSON, and `rush probe ingest` into the store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rush.cli.main import app
from rush.collect.probe import (
    FEATURES,
    MPI_SESSION_SCRIPT,
    PROBE_SCRIPT,
    SOURCE,
    parse_probe_output,
    probe_arguments,
    probe_command,
    read_probe_file,
    submit_probe,
)
from rush.collect.service import open_store
from rush.errors import CollectorError
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend

MPIRUN = shutil.which("mpirun")
RANKS = 4
RING_BYTES = 1_048_576
ALLREDUCE_BYTES = 65_536


def _mpirun(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
    }
    env.pop("SLURM_JOB_ID", None)
    command = [
        MPIRUN or "mpirun",
        "-np", str(RANKS), "--oversubscribe", "--allow-run-as-root",
        # Shared memory only, and no CMA/KNEM single copy: containers forbid ptrace between ranks.
        "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none",
        sys.executable, str(PROBE_SCRIPT), *args,
    ]  # fmt: skip
    # A session directory of its own: concurrent mpiruns sharing /tmp/ompi.<host>.<uid> race.
    with tempfile.TemporaryDirectory(prefix="rush-mpi-") as session_dir:
        env["OMPI_MCA_orte_tmpdir_base"] = session_dir
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    if MPIRUN is None:
        pytest.skip("OpenMPI mpirun not installed")
    pytest.importorskip("mpi4py")
    work = tmp_path_factory.mktemp("probe")
    out = work / "probe-{job_id}.json"
    args = probe_arguments(
        ring_bytes="1MiB", ring_iterations=5, allreduce_bytes="64KiB", allreduce_iterations=3, output=str(out)
    )
    run = _mpirun(args, work)
    assert run.returncode == 0, run.stderr[-3000:]
    return work / "probe-nojob.json", run


def test_probe_prints_nine_features_and_metadata(
    probe_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    path, run = probe_run
    printed = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert len(printed) == 1  # rank 0 only
    obj = printed[0]
    assert json.loads(path.read_text()) == obj
    for feature in FEATURES:
        assert obj[feature] > 0, feature
    for op in ("send", "recv", "allreduce"):
        assert obj[f"{op}_min"] <= obj[f"{op}_mean"] <= obj[f"{op}_max"]
    assert obj["ranks"] == RANKS
    assert len(obj["rank_hosts"]) == RANKS
    assert obj["ring_bytes"] == RING_BYTES and obj["allreduce_bytes"] == ALLREDUCE_BYTES
    assert obj["ring_iterations"] == 5 and obj["allreduce_iterations"] == 3
    assert obj["job_id"] is None
    assert "Open MPI" in obj["mpi"]


def test_ingest_cli_puts_features_in_store(
    probe_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    path, _ = probe_run
    db = tmp_path / "features.sqlite"
    result = CliRunner().invoke(app, ["probe", "ingest", str(path), "--store", str(db)])
    assert result.exit_code == 0, result.output
    probe = read_probe_file(path)[0]
    assert f"ingested {9 * len(probe.hosts)} samples" in result.output
    store = open_store(db)
    try:
        features = store.window_features(
            list(probe.hosts), probe.timestamp - 1, probe.timestamp + 1, [SOURCE]
        )
    finally:
        store.close()
    for feature in FEATURES:
        # One probe in the window: its min, max and mean over the window are the probe's value.
        for stat in ("min", "max", "mean"):
            assert features[f"{stat}_{feature}"] == pytest.approx(probe.features[feature])


def test_job_output_with_noise_parses(probe_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, run = probe_run
    noisy = (
        "--------------------------------\nWARNING: There was an error initializing an OpenFabrics device.\n"
    )
    noisy += run.stdout + '{"unrelated": true}\n'
    results = parse_probe_output(noisy, where="slurm-1.out")
    assert len(results) == 1
    assert results[0].ranks == RANKS
    assert len(results[0].samples()) == 9 * len(results[0].hosts)
    assert {s.source for s in results[0].samples()} == {SOURCE}


def _probe_json(**changes: object) -> str:
    obj: dict[str, object] = {f: 0.001 for f in FEATURES}
    obj.update(
        format="rush-mpi-probe/1", ranks=2, hosts=["n1", "n2"], timestamp=1.7e9, ring_bytes=8,
        ring_iterations=1, allreduce_bytes=8, allreduce_iterations=1, job_id="17",
    )  # fmt: skip
    obj.update(changes)
    return json.dumps(obj)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mpirun noise only\n", "no probe result found"),
        (_probe_json(send_max=-1.0), "'send_max' must be a finite non-negative number"),
        (_probe_json(send_min=0.5), "send_min <= send_mean <= send_max"),
        (_probe_json(hosts=[]), "'hosts' must be a non-empty list"),
        (_probe_json(format="other/9"), "unknown probe format"),
        (_probe_json(ranks=1.5), "'ranks' must be a non-negative integer"),
        (_probe_json()[:60], "truncated or broken probe JSON"),
    ],
)
def test_bad_probe_output_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(CollectorError, match=message) as info:
        parse_probe_output(text, where="probe.json")
    assert info.value.where is not None and info.value.where.startswith("probe.json")


def test_good_probe_json_roundtrip() -> None:
    (result,) = parse_probe_output(_probe_json(extra_field=3))
    assert result.job_id == "17" and result.hosts == ("n1", "n2")
    assert result.metadata == {"extra_field": 3}


def test_ingest_cli_reports_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("nothing here\n")
    result = CliRunner().invoke(app, ["probe", "ingest", str(bad), "--store", str(tmp_path / "db.sqlite")])
    assert result.exit_code != 0
    assert isinstance(result.exception, CollectorError)


# ------------------------------------------------------------------------------- submit


class RecordingBackend(RJMSBackend):
    """Records submit() calls; only to check the command rush builds (the Slurm test runs it for real)."""

    name = "recording"

    def __init__(self) -> None:
        self.submitted: list[dict[str, object]] = []

    def submit(self, *, name: str, procs: int, time_limit: float, command: Sequence[str], comment: str = "",
               begin: float | None = None, partition: str = "") -> int:  # fmt: skip
        self.submitted.append(
            {"name": name, "procs": procs, "time_limit": time_limit, "command": list(command)}
        )
        return 4242

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        raise NotImplementedError

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        raise NotImplementedError

    def hold(self, job_id: int) -> ActionResult:
        raise NotImplementedError

    def release(self, job_id: int) -> ActionResult:
        raise NotImplementedError

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        raise NotImplementedError

    def cancel(self, job_id: int) -> ActionResult:
        raise NotImplementedError


def test_submit_builds_an_mpirun_command() -> None:
    backend = RecordingBackend()
    args = probe_arguments(ring_bytes="10MB", output="/shared/p-{job_id}.json")
    assert submit_probe(backend, ntasks=8, nodes=2, probe_args=args) == 4242
    (job,) = backend.submitted
    command = job["command"]
    assert job["procs"] == 8
    assert command[:2] == [sys.executable, str(MPI_SESSION_SCRIPT)]  # a private MPI session directory
    assert command[2:7] == ["mpirun", "-np", "8", "--npernode", "4"]
    assert command[7:9] == [sys.executable, str(PROBE_SCRIPT)]
    assert "--ring-bytes=10MB" in command and "--output=/shared/p-{job_id}.json" in command


def test_submit_validates_layout() -> None:
    with pytest.raises(CollectorError, match="at least 2 tasks"):
        submit_probe(RecordingBackend(), ntasks=1)
    with pytest.raises(CollectorError, match="--nodes 5"):
        submit_probe(RecordingBackend(), ntasks=4, nodes=5)


def test_probe_command_with_srun_launcher() -> None:
    command = probe_command(4, launcher="srun --mpi=pmix", probe_args=["--ring-bytes=1MB"])
    assert command[2:4] == ["srun", "--mpi=pmix"]  # srun takes the task count from the allocation
    assert command[4:] == [sys.executable, str(PROBE_SCRIPT), "--ring-bytes=1MB"]
    assert command[-1] == "--ring-bytes=1MB"
