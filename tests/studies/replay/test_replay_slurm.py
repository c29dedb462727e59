"""The Slurm settings a replay checks before comparing Slurm's backfill with the simulator's EASY."""

from __future__ import annotations

from rush.core.resources import Node
from rush.studies.replay_slurm import INHERENT, parse_config, setting_differences

# As `scontrol show config` prints them (25.11), cut to the lines the check reads.
CONFIG = """Configuration data as of 2026-11-26T00:40:00
PriorityCalcPeriod      = 00:05:00
PriorityType            = priority/multifactor
PriorityWeightAge       = 0
PriorityWeightFairShare = 0
PriorityWeightTRES      = (null)
SchedulerParameters     = bf_interval=1,sched_interval=2,bf_resolution=1,bf_job_part_count_reserve=1
SchedulerType           = sched/backfill
"""
ONE_CORE = [Node(f"n{i}", cores=1) for i in range(4)]


def test_parse_config_splits_scheduler_parameters():
    settings = parse_config(CONFIG)
    assert settings["bf_resolution"] == "1" and settings["bf_job_part_count_reserve"] == "1"
    assert settings["PriorityType"] == "priority/multifactor"
    assert settings["PriorityCalcPeriod"] == "00:05:00"


def test_a_replay_cluster_set_for_easy_has_no_setting_difference():
    assert setting_differences(parse_config(CONFIG), ONE_CORE, max_limit=120.0) == []
    # What no setting removes is still listed for the report.
    assert any("whole-second" in text for text in INHERENT)


def test_each_missing_setting_is_named_with_its_fix():
    # Slurm's defaults: bf_resolution=60, no bf_job_part_count_reserve; one node of 64 cores.
    settings = parse_config(CONFIG.replace(",bf_resolution=1,bf_job_part_count_reserve=1", ""))
    found = setting_differences(settings, [Node("vm", cores=64)], max_limit=120.0)
    assert len(found) == 3
    assert "whole nodes" in found[0] and "CPUs=1" in found[0]
    assert "bf_job_part_count_reserve=1" in found[1]
    assert "bf_resolution=60" in found[2] and "bf_resolution=1" in found[2]


def test_priority_weights_and_a_short_bf_window_are_reported():
    text = CONFIG.replace("PriorityWeightAge       = 0", "PriorityWeightAge       = 1000")
    text = text.replace("bf_interval=1", "bf_interval=1,bf_window=1")
    found = setting_differences(parse_config(text), ONE_CORE, max_limit=120.0)
    assert any("PriorityWeightAge" in f and "FCFS" in f for f in found)
    assert any("bf_window=1 min" in f for f in found)


def test_without_settings_only_the_node_layout_is_checked():
    assert setting_differences({}, ONE_CORE, max_limit=60.0) == []
    assert len(setting_differences({}, [Node("vm", cores=8)], max_limit=60.0)) == 1
