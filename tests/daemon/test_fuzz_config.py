"""Fuzzed rush.toml (a derandomized hypothesis profile, tests/hostile_mutations.py): the shipped
deploy/rush.toml with hostile values in its tables, and with damaged bytes, read by the daemon's
and the collector's loaders. Each is a valid configuration or a ConfigError naming where;
never another exception (which the command line would print as a traceback, exit 1)."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rush.collect.config import load_collect_config
from rush.errors import ConfigError
from rush.planner.config import load_config, parse_config
from tests.hostile_mutations import FUZZ, byte_mutate, mutate

SHIPPED = Path(__file__).parents[2] / "deploy" / "rush.toml"
RAW = SHIPPED.read_bytes()
CONFIG = tomllib.loads(RAW.decode())
PATHS = ["/tmp/" + "x" * 300 + "/f", "/tmp", "", "a\x00b", "~no-such-user-rfuzz/f"]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def refused_clearly(load) -> None:
    try:
        load()
    except ConfigError as err:
        assert err.where and err.fix, str(err)


@FUZZ
@given(st.data())
def test_fuzzed_config_values(data):
    doc = copy.deepcopy(CONFIG)
    for _ in range(data.draw(st.integers(0, 1))):  # the path keys, whose checks touch the file system
        key = data.draw(st.sampled_from(["journal", "query_socket"]))
        doc["daemon"][key] = data.draw(st.sampled_from(PATHS))
    doc = mutate(doc, data, 3)
    refused_clearly(lambda: parse_config(doc, "rush.toml"))


@FUZZ
@given(st.data())
def test_fuzzed_config_bytes(scratch, data):
    path = scratch / "rush.toml"
    path.write_bytes(byte_mutate(RAW, data))
    refused_clearly(lambda: load_config(path))
    refused_clearly(lambda: load_collect_config(path))
