"""`rush campaign run` on bad input: a clear error naming the place, exit 2, nothing written.

None of these reaches a running RJMS: the checks come first, and the one that asks the RJMS is
given a Slurm whose commands are absent (an empty bin_dir), the state of a host without Slurm.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rush.campaign.records import CampaignError
from rush.campaign.runner import CampaignOptions, validate


def rush(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rush", "campaign", "run", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def empty_bin(tmp_path: Path) -> str:
    path = tmp_path / "bin"
    path.mkdir()
    return f"bin_dir={path}"


BASE = ["--apps", "halo,io", "--runs", "2"]


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["--apps", "halo,lammps", "--runs", "2"], "--apps"),
        (["--apps", "", "--runs", "2"], "--apps"),
        (["--apps", "halo,halo", "--runs", "2"], "--apps"),
        (["--apps", "x" * 10000, "--runs", "2"], "--apps"),
        (["--apps", "halo", "--runs", "0"], "--runs"),
        (["--apps", "halo", "--runs", "10001"], "--runs"),
        (["--apps", "halo", "--runs", "-5"], "--runs"),
        ([*BASE, "--ntasks", "1"], "--ntasks"),
        ([*BASE, "--ntasks", "2", "--nodes", "3"], "--nodes"),
        ([*BASE, "--scale", "nan"], "--scale"),
        ([*BASE, "--scale", "1e9"], "--scale"),
        ([*BASE, "--interval", "0"], "--interval"),
        ([*BASE, "--time-limit", "inf"], "--time-limit"),
        ([*BASE, "--concurrency", "0"], "--concurrency"),
        ([*BASE, "--noise", "maybe"], "--noise"),
        ([*BASE, "--noise", "on", "--noise-kinds", "cpu"], "--noise-kinds"),
        ([*BASE, "--noise", "on", "--noise-on", "5:1"], "--noise-on"),
        ([*BASE, "--noise-off", "a:b"], "--noise-off"),
        ([*BASE, "--probe-ring-bytes", "lots"], "--probe-ring-bytes"),
        ([*BASE, "--probe-allreduce-bytes", "1TB"], "--probe-allreduce-bytes"),
        ([*BASE, "--env", "NOEQUALS"], "--env"),
        ([*BASE, "--launcher", " "], "--launcher"),
        ([*BASE, "--rjms", "pbs"], "rjms.backend"),
        ([*BASE, "--rjms-option", "bogus=1"], "--rjms-option"),
        ([*BASE, "--rjms-option", "timeout=-3"], "rjms.options.timeout"),
        ([*BASE, "--no-procfs"], "--no-procfs"),
        ([*BASE, "--procfs-nodes", "node[3-1]"], "--procfs-nodes"),
        ([*BASE, "--procfs-nodes", "node[0-9999]"], "--procfs-nodes"),
        ([*BASE, "--procfs-nodes", "node 1"], "--procfs-nodes"),
    ],
)
def test_bad_input_exits_2_naming_the_place_and_writes_nothing(
    args: list[str], where: str, tmp_path: Path, empty_bin: str
) -> None:
    out = tmp_path / "campaign"
    run = rush(*args, "--out", str(out), "--rjms-option", empty_bin, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("error: ") and where in run.stderr and "fix:" in run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""
    assert not out.exists()


def test_unreachable_rjms_exits_2_before_any_file(tmp_path: Path, empty_bin: str) -> None:
    out = tmp_path / "campaign"
    run = rush(*BASE, "--out", str(out), "--rjms-option", empty_bin, cwd=tmp_path)
    assert run.returncode == 2
    assert "cannot be reached" in run.stderr and "squeue" in run.stderr
    assert not out.exists()


def test_an_existing_campaign_is_never_overwritten(tmp_path: Path, empty_bin: str) -> None:
    out = tmp_path / "campaign"
    out.mkdir()
    (out / "records.jsonl").write_text("precious\n")
    run = rush(*BASE, "--out", str(out), "--rjms-option", empty_bin, cwd=tmp_path)
    assert run.returncode == 2 and "never overwritten" in run.stderr
    assert (out / "records.jsonl").read_text() == "precious\n"
    assert sorted(p.name for p in out.iterdir()) == ["records.jsonl"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    run = rush(*BASE, "--out", str(a_file), "--rjms-option", empty_bin, cwd=tmp_path)
    assert run.returncode == 2 and "not a directory" in run.stderr


def test_an_output_directory_that_cannot_be_created(tmp_path: Path, empty_bin: str) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    run = rush(*BASE, "--out", str(a_file / "sub" / "dir"), "--rjms-option", empty_bin, cwd=tmp_path)
    assert run.returncode == 2 and "cannot create the output directory" in run.stderr
    assert a_file.read_text() == "x"


def test_bad_config_file_is_a_configuration_error(tmp_path: Path) -> None:
    config = tmp_path / "rush.toml"
    config.write_text('[rjms]\nbackend = "lsf"\n')
    run = rush(*BASE, "--out", str(tmp_path / "c"), "--config", str(config), cwd=tmp_path)
    assert run.returncode == 2 and "rjms.backend" in run.stderr
    assert not (tmp_path / "c").exists()


def test_validate_accepts_a_good_campaign(tmp_path: Path) -> None:
    options = CampaignOptions(apps=("halo", "cg", "compute", "io"), runs=3, out=tmp_path / "new")
    validate(options)  # no exception, nothing created
    assert not (tmp_path / "new").exists()
    options.runs = 1.5  # type: ignore[assignment]
    with pytest.raises(CampaignError, match="integer"):
        validate(options)
