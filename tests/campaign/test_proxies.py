"""The proxy applications (collectors/proxies) under a real OpenMPI mpirun with 2 ranks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.campaign.conftest import PROXIES, mpirun

APPS = {"halo": "network", "cg": "network", "compute": "compute", "io": "io"}


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("app", sorted(APPS))
def test_proxy_prints_one_json_line_with_its_runtime(app: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    run = mpirun(
        PROXIES / f"{app}.py",
        ["--scale", "0.05", "--seed", "3", f"--workdir={tmp_path}", f"--output={out}"],
        tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = _json_lines(run.stdout)
    assert len(lines) == 1  # rank 0 only
    result = lines[0]
    assert result["format"] == "rush-proxy/1"
    assert result["app"] == app and result["wtype"] == APPS[app]
    assert result["ranks"] == 2 and result["seed"] == 3 and result["scale"] == 0.05
    assert result["runtime"] > 0 and result["hosts"]
    assert json.loads(out.read_text()) == result  # --output holds the same object
    if app == "io":
        assert result["bytes_read"] == 2 * result["chunks"] * result["chunk_bytes"]
        assert not list(tmp_path.glob(".rush-io-proxy-*"))  # its files are removed


def test_same_seed_same_numerical_result(tmp_path: Path) -> None:
    checks = []
    for _ in range(2):
        run = mpirun(PROXIES / "cg.py", ["--scale", "0.02", "--seed", "9"], tmp_path)
        assert run.returncode == 0, run.stderr
        checks.append(_json_lines(run.stdout)[0]["residual"])
    assert checks[0] == checks[1]


@pytest.mark.parametrize(
    "args",
    [
        ["--scale", "nan"],
        ["--scale", "0"],
        ["--scale", "-1"],
        ["--scale", "1e9"],
        ["--scale", "x"],
        ["--seed", "1.5"],
    ],
)
def test_hostile_arguments_exit_2_without_mpi(args: list[str], tmp_path: Path) -> None:
    # argparse runs before MPI is touched: a plain python start is enough to test it.
    pytest.importorskip("mpi4py")
    run = subprocess.run(
        [sys.executable, str(PROXIES / "compute.py"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert run.returncode == 2
    assert "error" in run.stderr and not _json_lines(run.stdout)


def test_io_proxy_refuses_a_missing_workdir(tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    run = subprocess.run(
        [sys.executable, str(PROXIES / "io.py"), f"--workdir={tmp_path / 'absent'}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2
    assert "not a directory" in run.stdout and '"format"' not in run.stdout
