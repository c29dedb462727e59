"""rush.toml validation: every error names the dotted key and the fix; the example loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rush.errors import ConfigError
from rush.planner.config import RushConfig, load_config, parse_config
from rush.planner.plan import make_backend

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "rush.toml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rush.toml"
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    return info.value


def test_example_config_validates():
    config = load_config(EXAMPLE)
    assert config.daemon.dry_run is True and config.daemon.metrics_address == "127.0.0.1:9877"
    assert config.policy.policy == "WFP3" and config.variation.window == 300
    assert config.core_config().policy.name == "WFP3"


def test_defaults_without_a_file_body(tmp_path):
    config = load_config(write(tmp_path, ""))
    assert config.daemon.metrics_address == "127.0.0.1:9877" and config.daemon.dry_run
    assert config.variation.window == 300.0 and config.rjms.backend == "slurm"


def test_unknown_key_names_dotted_path_and_allowed_keys(tmp_path):
    err = error_of(tmp_path, "[daemon]\ncycle_intervall = 30\n")
    assert err.where.endswith("daemon.cycle_intervall")
    assert "unknown key 'daemon.cycle_intervall'" in err.message
    assert "cycle_interval" in err.fix and "max_actions_per_cycle" in err.fix


def test_unknown_section(tmp_path):
    err = error_of(tmp_path, "[deamon]\ncycle_interval = 30\n")
    assert "unknown key 'deamon'" in err.message and "daemon" in err.fix


def test_bad_value_names_key_and_fix(tmp_path):
    err = error_of(tmp_path, "[daemon]\ncycle_interval = -5\n")
    assert err.where.endswith("daemon.cycle_interval")
    assert "-5" in err.message and "greater than or equal to 1" in err.message
    assert "seconds" in err.fix and "daemon.cycle_interval must be" in err.fix
    err = error_of(tmp_path, '[daemon]\nmax_actions_per_cycle = "many"\n')
    assert err.where.endswith("daemon.max_actions_per_cycle") and "'many'" in err.message
    err = error_of(tmp_path, '[daemon]\nmetrics_address = "localhost"\n')
    assert err.where.endswith("daemon.metrics_address") and "HOST:PORT" in err.message


def test_bad_policy_name(tmp_path):
    err = error_of(tmp_path, '[policy]\npolicy = "SJF"\n')
    assert err.where.endswith("policy.policy")
    assert "unknown policy 'SJF'" in err.message and "WFP3" in err.message
    err = error_of(tmp_path, '[policy]\npolicy = "LINEAR:q=1,zz=2"\n')
    assert err.where.endswith("policy.policy") and "zz=2" in err.message


def test_bad_backfill_and_threshold(tmp_path):
    err = error_of(tmp_path, '[policy]\nbackfill = "aggressive"\n')
    assert err.where.endswith("policy.backfill") and "easy" in err.fix
    err = error_of(tmp_path, "[policy]\nthreshold = -1\n")
    assert err.where.endswith("policy.threshold") and ">= 0" in err.message
    assert load_config(write(tmp_path, '[policy]\nthreshold = "none"\n')).core_config().threshold is None


def test_cross_checks_name_the_key_to_change(tmp_path):
    err = error_of(tmp_path, "[policy]\nkill_false_small = true\n")
    assert err.where.endswith("policy.divider") and "models.runtime_class" in err.fix
    err = error_of(tmp_path, "[variation]\nenabled = true\n")
    assert err.where.endswith("variation.store")
    err = error_of(tmp_path, '[variation]\npredictor = "oracle"\n')
    assert err.where.endswith("variation.predictor") and "rule" in err.message


def test_unknown_backend_and_backend_options(tmp_path):
    err = error_of(tmp_path, '[rjms]\nbackend = "pbs"\n')
    assert err.where.endswith("rjms.backend") and "slurm" in err.message
    config = parse_config({"rjms": {"backend": "slurm", "options": {"rest_uri": "http://x"}}})
    with pytest.raises(ConfigError) as info:
        make_backend(config)
    assert info.value.where == "rjms.options" and "rest_uri" in info.value.message


def test_toml_syntax_error_gives_the_line(tmp_path):
    err = error_of(tmp_path, "[daemon]\ncycle_interval = 60\ndry_run = \n")
    assert "not valid TOML" in err.message and "line 3" in err.message


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.toml")
    assert "not found" in info.value.message and "deploy/rush.toml" in info.value.fix
    assert info.value.where == str(tmp_path / "nope.toml")


def test_round_trip_through_json():
    config = RushConfig.model_validate({"daemon": {"cycle_interval": 5}, "policy": {"policy": "spf"}})
    again = RushConfig.model_validate_json(config.model_dump_json())
    assert again == config and again.core_config().policy.name == "SPF"


def test_cli_stops_on_a_bad_config(tmp_path):
    path = write(tmp_path, "[daemon]\ncycle_interval = 0\n")
    out = subprocess.run(
        [sys.executable, "-m", "rush", "daemon", "--config", str(path), "--once"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert "daemon.cycle_interval" in out.stderr and "fix:" in out.stderr
