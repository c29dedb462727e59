"""The card's flag thresholds are validated when the model loads: a per-size table
(``flag_threshold_by_size``) with a size that is no whole number of nodes, or a threshold that is
NaN, negative, above 1 or no number, is refused naming the card file, the key and the fix."""

from __future__ import annotations

import json
import shutil

import pytest

from rush.errors import ModelError
from rush.models.variability.train import load_variability_model


def card_with(model_file, tmp_path, **keys):
    """A copy of the session's model whose card has ``keys`` (the session's files stay untouched)."""
    copy = tmp_path / model_file.name
    shutil.copy(model_file, copy)
    card = json.loads(model_file.with_name(model_file.name + ".json").read_text())
    card.update(keys)
    side = copy.with_name(copy.name + ".json")
    side.write_text(json.dumps(card))  # NaN is written as NaN, as a hand-edited card could hold
    return copy, side


@pytest.mark.parametrize(
    "table, named",
    [
        ({"16": float("nan")}, "'16'"),
        ({"8": 0.3, "16": -0.1}, "'16'"),
        ({"32": 1.5}, "'32'"),
        ({"16": float("inf")}, "'16'"),
        ({"16": "0.4"}, "string"),
        ({"16": None}, "null"),
        ({"16": [0.4]}, "array"),
        ({"16": True}, "boolean"),
        ({"8.5": 0.4}, "'8.5'"),
        ({"eight": 0.4}, "'eight'"),
        ({"0": 0.4}, "'0'"),
        ({"-8": 0.4}, "'-8'"),
        ({"016": 0.4}, "'016'"),
        ({"1e3": 0.4}, "'1e3'"),
        ({"x" * 5000: 0.4}, "'xxxxxxxxxxxxxxxxxxxx...'"),
        ([0.4, 0.5], "array"),
    ],
)
def test_a_bad_size_table_is_refused_naming_the_card_the_key_and_the_fix(model_file, tmp_path, table, named):
    copy, side = card_with(model_file, tmp_path, flag_threshold_by_size=table)
    with pytest.raises(ModelError) as refused:
        load_variability_model(copy)
    text = str(refused.value)
    assert refused.value.where.startswith(f"{side}: flag_threshold_by_size")
    assert named in text and "x" * 100 not in text  # the offending entry, cut short
    assert 'each size a whole number of nodes >= 1 as a string ("16")' in refused.value.fix
    assert "rush train variability" in refused.value.fix


def test_a_nan_flag_threshold_is_refused_as_not_finite(model_file, tmp_path):
    copy, side = card_with(model_file, tmp_path, flag_threshold=float("nan"))
    with pytest.raises(ModelError, match="finite") as refused:
        load_variability_model(copy)
    assert refused.value.where == f"{side}: flag_threshold"
    assert "a number in [0, 1]" in refused.value.fix


def test_a_valid_size_table_loads(model_file, tmp_path):
    table = {"8": 0.0, "16": 0.25, "32": 1, "1024": 0.5}
    copy, _ = card_with(model_file, tmp_path, flag_threshold_by_size=table)
    _, card = load_variability_model(copy)
    assert card["flag_threshold_by_size"] == table
    copy, _ = card_with(model_file, tmp_path, flag_threshold_by_size=None)
    assert load_variability_model(copy)[1]["flag_threshold_by_size"] is None
