"""``rush.config_file.explain``: the one converter from pydantic's errors to ConfigError."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from rush.config_file import MAX_SHOWN, explain
from rush.errors import ConfigError


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    size: StrictInt = Field(1, gt=0, description="a positive integer")


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(description="a name")
    items: list[Inner] = Field(default_factory=list, description="a list of tables")
    counts: list[StrictInt] = Field(default_factory=list, description="a list of integers")


def error(doc: dict, prefix: str = "") -> ConfigError:
    with pytest.raises(ValidationError) as info:
        Outer.model_validate(doc)
    return explain(info.value, "f.toml", Outer, prefix=prefix, example="the example")


def test_unknown_key_inside_a_list_names_its_path_the_allowed_keys_and_the_closest_spelling() -> None:
    err = error({"name": "a", "items": [{"size": 1}, {"szie": 2}]}, prefix="section")
    assert err.where == "f.toml: section.items[1].szie"
    assert err.message == "unknown key 'section.items[1].szie'"
    assert "did you mean 'size'?" in err.fix and "allowed in section.items[1]: size" in err.fix


def test_bad_value_names_the_key_and_the_field_description() -> None:
    err = error({"name": "a", "items": [{"size": 0}]})
    assert err.where == "f.toml: items[0].size"
    assert err.message.startswith("bad value 0 for 'items[0].size': Input should be greater than 0")
    assert err.fix == "items[0].size must be a positive integer"


def test_a_list_entry_is_described_by_its_list() -> None:
    err = error({"name": "a", "counts": [1, "2"]})
    assert err.where == "f.toml: counts[1]" and err.fix == "counts must be a list of integers"


def test_missing_key_and_more_problems_are_counted() -> None:
    err = error({"items": 3, "extra": 1})
    assert err.message.startswith("missing key 'name'") and "(and 2 more problems)" in err.message
    assert err.fix == "add name: a name"


def test_a_huge_value_is_not_echoed_whole() -> None:
    err = error({"name": "a", "counts": ["x" * 10_000]})
    assert len(err.message) < MAX_SHOWN + 100


class Flags(BaseModel):
    model_config = ConfigDict(strict=True)
    runs: StrictInt = Field(ge=1, alias="--runs", description="an integer from 1")


def test_fields_keyed_by_their_alias_are_named_and_described_by_it() -> None:
    with pytest.raises(ValidationError) as info:
        Flags.model_validate({"--runs": 0})
    err = explain(info.value, "command line", Flags)
    assert err.where == "command line: --runs" and err.fix == "--runs must be an integer from 1"
