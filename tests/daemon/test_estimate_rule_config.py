"""``policy.estimate_rule`` (issue 29, round 30): a site chooses how start estimates project a
queued job with predicted quantiles, L2 (the default) or T; the choice reaches the core's
configuration, and a bad value is refused naming the key and the choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from rush.errors import ConfigError
from rush.planner.config import load_config


def _load(tmp_path: Path, text: str):
    path = tmp_path / "rush.toml"
    path.write_text(text)
    return load_config(path)


def test_the_default_is_l2(tmp_path):
    assert _load(tmp_path, "").core_config().estimate_rule == "L2"


def test_t_reaches_the_core(tmp_path):
    config = _load(tmp_path, '[policy]\nestimate_rule = "T"\n')
    assert config.core_config().estimate_rule == "T"


def test_a_bad_rule_is_refused_with_the_key_and_the_choices(tmp_path):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, '[policy]\nestimate_rule = "tail"\n')
    err = info.value
    assert err.where.endswith("policy.estimate_rule")
    assert "'L2'" in err.message + (err.fix or "") and "'T'" in err.message + (err.fix or "")
