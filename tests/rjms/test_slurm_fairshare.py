"""Slurm's fair-share factor read for LINEAR's fairshare term (site.fairshare = "rjms").

The backend reads ``sshare -P -n -a -o Account,User,Partition,FairShare`` once per cycle with
pending jobs. Garbage, a factor outside [0, 1] or a job whose association sshare does not list
are RJMSErrors naming the source, and the planner's cycle then acts on nothing. A real Slurm
never prints such answers, so the commands here are scripts printing them (the recorded 25.11
queue for squeue and scontrol); the live read is tests/slurm/test_fairshare_live.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rush.errors import ConfigError, RJMSError
from rush.planner.config import parse_config
from rush.planner.plan import Planner, make_backend
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms import site_factor
from rush.rjms.base import get_backend

RECORDED = Path(__file__).resolve().parents[1] / "slurm" / "recorded" / "25.11" / "commands"
# A 22.05 answer's shape: accounts indented by depth, account lines without a user.
SSHARE = """root|||1.000000
 root|root||0.500000
 acct_a|||0.166667
  acct_a|root||0.250000
 acct_b|||0.833333
  acct_b|root||0.750000
  acct_b|root|gpu|0.900000
"""


def test_users_factors_by_association() -> None:
    assert site_factor.parse_sshare(SSHARE) == {
        ("root", "root", ""): 0.5,
        ("acct_a", "root", ""): 0.25,
        ("acct_b", "root", ""): 0.75,
        ("acct_b", "root", "gpu"): 0.9,
    }


def test_a_job_takes_its_partitions_association_else_its_accounts() -> None:
    factors = site_factor.parse_sshare(SSHARE)
    assert site_factor.fairshare_of(7, "acct_b", "root", "gpu", factors) == 0.9
    assert site_factor.fairshare_of(7, "acct_b", "root", "debug", factors) == 0.75


def test_a_job_without_an_association_is_named() -> None:
    with pytest.raises(RJMSError, match="job 7: sshare lists no association for account 'gone'") as err:
        site_factor.fairshare_of(7, "gone", "root", "", site_factor.parse_sshare(SSHARE))
    assert err.value.where.startswith("sshare") and "sacctmgr" in err.value.fix


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  acct_a|root||1.5\n", "'acct_a' user 'root' the fair-share factor '1.5', outside"),
        ("  acct_a|root||-0.1\n", "outside"),
        ("  acct_a|root||nan\n", "'nan', outside"),
        ("  acct_a|root||inf\n", "'inf', outside"),
        ("  acct_a|root||0,25\n", "'0,25', outside"),
        ("  acct_a|root||\n", "'', outside"),
        ("JOBID PRIORITY FAIRSHARE\n", "unreadable sshare line 1"),
        (" acct_a|root|0.5\n", "unreadable sshare line 1"),
        ("root|||1\n acct_a|root||0.5|extra\n", "unreadable sshare line 2"),
    ],
)
def test_garbage_and_factors_outside_the_unit_interval_are_refused(text: str, message: str) -> None:
    with pytest.raises(RJMSError, match=message) as err:
        site_factor.parse_sshare(text)
    assert err.value.where.startswith("sshare -P -n -a") and err.value.fix


# -- through the backend and the planner -------------------------------------------------------
def commands(tmp_path: Path, sshare: str, accounts: dict[int, str], status: int = 0) -> Path:
    """squeue and scontrol print the recorded 25.11 queue (jobs 2 and 3 pending, job 3 released
    here) with these accounts; sshare prints ``sshare`` and exits with ``status``; every scontrol call and
    sshare run is logged to ``calls``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    jobs = json.loads((RECORDED / "jobs.json").read_text())
    for job in jobs["jobs"]:
        job["account"] = accounts.get(job["job_id"], "")
        if job["job_id"] == 3:  # held by its user in the recording: rush would leave it out
            job |= {"state_reason": "Priority", "hold": False, "priority": {"set": True, "number": 1000}}
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    (tmp_path / "sshare.txt").write_text(sshare)
    calls = tmp_path / "calls"
    scripts = {
        "squeue": f"cat '{tmp_path / 'jobs.json'}'",
        "scontrol": f'echo "scontrol $*" >> \'{calls}\'\n[ "$1" = show ] && [ "$2" = nodes ] && '
        f"cat '{RECORDED / 'nodes.json'}'\nexit 0",
        "sprio": "exit 0",
        "sshare": f"echo \"sshare $*\" >> '{calls}'\ncat '{tmp_path / 'sshare.txt'}'\nexit {status}",
    }
    for tool, body in scripts.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(0o755)
    return bin_dir


ACCOUNTS = {2: "acct_a", 3: "acct_b"}


def test_the_backend_fills_pending_jobs_factors_with_one_sshare(tmp_path: Path) -> None:
    bin_dir = commands(tmp_path, SSHARE, ACCOUNTS)
    state = get_backend("slurm", bin_dir=str(bin_dir), fairshare=True).read_state()
    factors = {j.job_id: j.fairshare for j in state.jobs}
    assert factors == {1: None, 2: 0.25, 3: 0.75}  # job 1 runs: no factor read for it
    assert (tmp_path / "calls").read_text().count("sshare") == 1
    # The snapshot carries them to the core.
    built = SnapshotBuilder().build(state, {})
    assert {p.job_id: p.fairshare for p in built.snapshot.pending} == {2: 0.25, 3: 0.75}


def test_reads_keep_a_pending_job_while_its_record_and_factor_are_unchanged(tmp_path: Path) -> None:
    """The backend's later reads give back the last read's job objects (r31fair: the snapshot
    builder's ``is`` then passes); a changed association's jobs come anew with the new factor,
    equal to what the first read of that answer gives."""
    bin_dir = commands(tmp_path, SSHARE, ACCOUNTS)
    backend = get_backend("slurm", bin_dir=str(bin_dir), fairshare=True)
    first = {j.job_id: j for j in backend.read_state().jobs}
    second = {j.job_id: j for j in backend.read_state().jobs}
    assert all(second[k] is first[k] for k in first)
    (tmp_path / "sshare.txt").write_text(SSHARE.replace("acct_a|root||0.250000", "acct_a|root||0.300000"))
    third = {j.job_id: j for j in backend.read_state().jobs}
    assert third[2] is not first[2] and third[2].fairshare == 0.3 and third[3] is first[3]
    fresh = {
        j.job_id: j for j in get_backend("slurm", bin_dir=str(bin_dir), fairshare=True).read_state().jobs
    }
    assert third == fresh


def test_without_the_option_nothing_is_read(tmp_path: Path) -> None:
    bin_dir = commands(tmp_path, SSHARE, ACCOUNTS)
    state = get_backend("slurm", bin_dir=str(bin_dir)).read_state()
    assert all(j.fairshare is None for j in state.jobs)
    assert "sshare" not in (tmp_path / "calls").read_text()


def test_without_sshare_the_option_is_refused_at_start(tmp_path: Path) -> None:
    bin_dir = commands(tmp_path, SSHARE, ACCOUNTS)
    (bin_dir / "sshare").unlink()
    with pytest.raises(ConfigError, match="needs sshare") as err:
        get_backend("slurm", bin_dir=str(bin_dir), fairshare=True)
    assert err.value.where == "site.fairshare"


@pytest.mark.parametrize("backend", ["slurm", "pyslurm"])
def test_a_host_without_sshare_is_refused_at_start_for_site_fairshare(tmp_path: Path, backend: str) -> None:
    """Both Slurm backends read the factor with sshare (pyslurm has no share query); without it
    the daemon does not start (ConfigError: exit 2), before any libslurm set-up."""
    empty = tmp_path / "empty"
    empty.mkdir()
    config = parse_config(
        {"site": {"fairshare": "rjms"}, "rjms": {"backend": backend, "options": {"bin_dir": str(empty)}}}
    )
    with pytest.raises(ConfigError, match="needs sshare") as err:
        make_backend(config)
    assert err.value.where == "site.fairshare"


def _planner(tmp_path: Path, bin_dir: Path) -> Planner:
    """The daemon's planner on these commands; site.fairshare = "rjms" switches the read on."""
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": False},
            # No starvation threshold: the recording's jobs waited longer than the default's.
            "policy": {"policy": "LINEAR:r=1,fairshare=-1e6", "threshold": "none"},
            "site": {"fairshare": "rjms", "priority_weight": 1000},
            "rjms": {"backend": "slurm", "options": {"bin_dir": str(bin_dir)}},
        }
    )
    return Planner(config)


# Job 2 of the recorded queue is UNLIMITED: its LINEAR key was NaN (0 x inf), unorderable.
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_the_planner_orders_by_the_read_factor(tmp_path: Path) -> None:
    planner = _planner(tmp_path, commands(tmp_path, SSHARE, ACCOUNTS))
    report = planner.run_cycle()
    assert report.ok, report.error
    # acct_b's 0.75 above acct_a's 0.25 (same submit time: FCFS's term alone ties them), in
    # the SiteFactor written, scaled into [1, priority_weight].
    updates = [
        line.split() for line in (tmp_path / "calls").read_text().splitlines() if "SiteFactor=" in line
    ]
    written = {int(u[2].removeprefix("JobId=")): int(u[3].removeprefix("SiteFactor=")) for u in updates}
    assert set(written) == {2, 3}
    assert 1000 >= written[3] > written[2] >= 1


@pytest.mark.parametrize(
    ("sshare", "accounts", "status", "message"),
    [
        ("  acct_a|root||1.5\n  acct_b|root||0.5\n", ACCOUNTS, 0, "outside"),
        ("  acct_a|root||0.5\n  acct_b|root||NaN\n", ACCOUNTS, 0, "outside"),
        ("<html>500 Internal Server Error</html>\n", ACCOUNTS, 0, "unreadable sshare line 1"),
        (SSHARE, {2: "acct_a", 3: "acct_gone"}, 0, "job 3: sshare lists no association"),
        ("", ACCOUNTS, 1, "sshare failed"),
    ],
)
def test_a_bad_factor_answer_fails_the_cycle_and_nothing_is_applied(
    tmp_path: Path, sshare: str, accounts: dict[int, str], status: int, message: str
) -> None:
    planner = _planner(tmp_path, commands(tmp_path, sshare, accounts, status))
    report = planner.run_cycle()
    assert not report.ok and report.outcome == "rjms_error"
    assert message in report.error
    calls = (tmp_path / "calls").read_text()
    assert "update" not in calls and "hold" not in calls and "release" not in calls


# -- priority_weight: small values through Slurm's levers --------------------------------------
@pytest.mark.parametrize("weight", [1, 1000, 10_000])
def test_scaled_values_pass_both_levers_unchanged(weight: int) -> None:
    """The core's values scaled into [1, priority_weight] (never 0) are what each lever
    writes: SiteFactor as is, nice negated, slurmrestd's raw SiteFactor offset by 2**31."""
    import numpy as np

    from rush.core.priority_values import MAX_VALUE, scaled

    values = scaled(np.array([1, 2, MAX_VALUE // 2, MAX_VALUE - 1, MAX_VALUE]), weight).tolist()
    assert values[0] == 1 and values[-1] == weight and values == sorted(values)
    for value in values:
        assert site_factor.checked(value, "site_factor") == value
        assert site_factor.checked(value, "nice") == value
        assert site_factor.as_nice(value) == -value
        assert site_factor.rest_raw(value) == value + 2**31


def test_a_zero_site_factor_is_written_as_zero(tmp_path: Path) -> None:
    bin_dir = commands(tmp_path, SSHARE, ACCOUNTS)
    for lever, field in (("site_factor", "SiteFactor=0"), ("nice", "Nice=0")):
        result = get_backend("slurm", bin_dir=str(bin_dir), priority_lever=lever).set_priority(2, 0)
        assert result.ok
        assert f"scontrol update JobId=2 {field}" in (tmp_path / "calls").read_text()
