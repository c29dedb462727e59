"""The flag rule of RUSH (rush.core.variation_flag): the threshold of the job's nearest size, else
the card's one threshold, else the most probable class."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.variation_flag import VariationFlagRule, variation_flags

TABLE = {"8": 0.2, "16": 0.5, "32": 0.8}


def test_each_job_takes_the_threshold_of_its_nearest_size() -> None:
    rule = VariationFlagRule.of(0.9, TABLE)
    # Between two sizes the nearer wins; a tie (24 between 16 and 32, 12 between 8 and 16) the smaller.
    assert [rule.threshold_for(n) for n in (1, 8, 11, 12, 13, 16, 24, 25, 32, 512)] == [
        0.2, 0.2, 0.2, 0.2, 0.5, 0.5, 0.5, 0.8, 0.8, 0.8,
    ]  # fmt: skip
    assert rule.threshold_for(None) == 0.9  # size unknown: the card's one threshold
    p = np.full(4, 0.6)
    assert variation_flags(rule, p, np.zeros(4, bool), [8, 16, 32, None]) == [True, True, False, False]


def test_the_threshold_itself_flags() -> None:
    rule = VariationFlagRule.of(None, {"16": 0.5})
    assert variation_flags(rule, np.array([0.5, np.nextafter(0.5, 0.0)]), np.zeros(2, bool), [16, 16]) == [
        True,
        False,
    ]


def test_without_a_threshold_the_most_probable_class_decides() -> None:
    rule = VariationFlagRule.of(None, None)
    top = np.array([True, False])
    assert variation_flags(rule, np.array([0.1, 0.9]), top, [16, 16]) == [True, False]
    # A table, but a job of unknown size and no one threshold: the most probable class again.
    assert variation_flags(VariationFlagRule.of(None, TABLE), np.array([0.9]), np.array([False]), [None]) == [
        False
    ]


def test_the_journal_gets_the_threshold_applied_to_the_job_not_the_table() -> None:
    one = VariationFlagRule.of(0.25)
    assert one.journal(["variation"], 16) == {
        "variation_rule": "P(variation) >= 0.25",
        "variation_threshold": 0.25,
    }
    assert VariationFlagRule.of(None).journal(["little", "variation"], 16) == {
        "variation_rule": "most probable class in ['little', 'variation']"
    }
    sized = VariationFlagRule.of(0.25, TABLE)
    assert sized.journal(["variation"], 24) == {
        "variation_rule": "P(variation) >= 0.5 (the threshold of 16-node jobs, the nearest size to 24)",
        "variation_threshold": 0.5,
        "variation_threshold_nodes": 16,
    }
    # Size unknown: the one threshold, and no table size.
    assert sized.journal(["variation"], None) == {
        "variation_rule": "P(variation) >= 0.25",
        "variation_threshold": 0.25,
    }


@pytest.mark.parametrize("table", [{"0": 0.5}, {"-8": 0.5}, {"8": 1.5}, {"8": -0.1}, {"8": float("nan")}])
def test_a_table_outside_its_bounds_is_refused(table) -> None:
    with pytest.raises(ValueError, match="flag threshold"):
        VariationFlagRule.of(0.5, table)
