"""slurm.conf as the Slurm mode reads it (rush/rjms/slurm_conf.py): the settings, Slurm's
defaults, and bad input named by file, line and key; ``rush simulate --slurm-conf`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rush.errors import ConfigError
from rush.rjms.slurm_conf import read_slurm_conf, scheduler_from_settings
from rush.studies.replay_slurm import parse_config
from tests.rush_cli import rush

CONF = """# a site's slurm.conf (the parts the Slurm mode reads)
ClusterName=site
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_continue,bf_resolution=30,bf_max_job_test=50,default_queue_depth=100
NodeName=DEFAULT RealMemory=1000
NodeName=c[1-4] CPUs=8 State=UNKNOWN
NodeName=big[1-2] Sockets=2 CoresPerSocket=16 ThreadsPerCore=1
PartitionName=batch Nodes=c[1-4] Default=YES MaxTime=INFINITE State=UP
PartitionName=fat Nodes=big[1-2] State=UP
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "slurm.conf"
    path.write_text(text)
    return path


def test_settings_nodes_and_slurm_defaults(tmp_path: Path) -> None:
    conf = read_slurm_conf(write(tmp_path, CONF))
    s = conf.scheduler
    assert (s.nodes, s.cpus_per_node) == (4, 8)
    assert (s.bf_interval, s.bf_resolution, s.bf_max_job_test) == (1.0, 30.0, 50)
    # Left out: Slurm's defaults (a day's window, a reservation for every job tested).
    assert (s.bf_window, s.bf_job_part_count_reserve) == (86400.0, 0)
    assert conf.not_modelled == ("bf_continue", "default_queue_depth")
    fat = read_slurm_conf(write(tmp_path, CONF), partition="fat").scheduler
    assert (fat.nodes, fat.cpus_per_node) == (2, 32)


def test_from_scontrol_show_config() -> None:
    settings = parse_config(
        "SchedulerParameters     = bf_job_part_count_reserve=1,bf_window=60,sched_min_interval=100000\n"
        "SchedulerType           = sched/backfill\n"
    )
    s = scheduler_from_settings(settings, [10] * 10, "scontrol show config").scheduler
    assert (s.nodes, s.cpus_per_node, s.bf_job_part_count_reserve, s.bf_window) == (10, 10, 1, 3600.0)
    with pytest.raises(ConfigError, match="one size"):
        scheduler_from_settings(settings, [10, 4], "scontrol show config")


@pytest.mark.parametrize(
    ("parameters", "named", "fix"),
    [
        ("bf_resoluton=1", "bf_resoluton", "did you mean bf_resolution"),
        ("bf_resolution=1m", "bf_resolution", "whole number"),
        ("bf_resolution=0", "bf_resolution", "1 to 3600"),
        ("bf_window=99999", "bf_window", "1 to 43200"),
        ("bf_job_part_count_reserve", "bf_job_part_count_reserve", "=N"),
        ("frobnicate=3", "frobnicate", "slurm.conf(5)"),
    ],
)
def test_bad_scheduler_parameters_name_the_line_and_key(tmp_path: Path, parameters, named, fix) -> None:
    path = write(tmp_path, CONF.replace("bf_interval=1,", f"{parameters},"))
    with pytest.raises(ConfigError) as caught:
        read_slurm_conf(path)
    err = caught.value
    assert named in err.message and f"{path}:4" in err.where and fix in err.fix, (
        err.message,
        err.where,
        err.fix,
    )


def test_other_bad_configurations(tmp_path: Path) -> None:
    cases = {
        CONF.replace("sched/backfill", "sched/builtin"): "sched/backfill only",
        CONF.replace("Nodes=c[1-4]", "Nodes=c[1-4],big1"): "one size",
        CONF.replace("NodeName=c[1-4]", "NodeName=c[1-4"): "malformed",
        "\n".join(line for line in CONF.splitlines() if not line.startswith("NodeName")): "no NodeName",
    }
    for text, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            read_slurm_conf(write(tmp_path, text))
    with pytest.raises(ConfigError, match="no partition 'gpu'"):
        read_slurm_conf(write(tmp_path, CONF), partition="gpu")
    with pytest.raises(ConfigError, match="cannot read"):
        read_slurm_conf(tmp_path / "absent.conf")


def test_simulate_with_the_slurm_conf(tmp_path: Path) -> None:
    conf = write(tmp_path, CONF.replace("CPUs=8", "CPUs=25"))  # 100 CPUs, as lublin's machine
    out = rush("simulate", "lublin:200:100:1", "--slurm-conf", str(conf), "--json")
    assert out.returncode == 0, out.stderr
    metrics = json.loads(out.stdout)
    assert metrics["settings"]["backfill"] == "slurm"
    assert metrics["jobs"] == 200


def test_simulate_refuses_bad_slurm_conf_with_exit_2_before_reading_the_trace(tmp_path: Path) -> None:
    conf = write(tmp_path, CONF.replace("bf_interval=1", "bf_interval=often"))
    out = rush("simulate", "no-such-trace.swf", "--slurm-conf", str(conf))
    assert out.returncode == 2 and "bf_interval" in out.stderr and "slurm.conf:4" in out.stderr, out.stderr
    out = rush("simulate", "lublin:50:100:1", "--slurm-conf", str(conf).replace("slurm.conf", "x"), "--nodes")
    assert out.returncode == 2 and "--nodes" in out.stderr, out.stderr
    out = rush("simulate", "lublin:50:100:1", "--partition", "batch")
    assert out.returncode == 2 and "--slurm-conf" in out.stderr, out.stderr
