"""Round 13's protocol audit of the runtime-prediction study (``estimates/class_audit.py``): the
small share the thesis's Tables 6.4 and 6.5 imply, and the history a job had in earlier weeks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.script_module import load_script

FOLDER = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "estimates"

# Seed 003, Table 6.4: recall (%) per trace.
TABLE_6_4_RECALL = {"KTH-SP2": 90, "CTC-SP2": 86, "SDSC-SP2": 91, "SDSC-BLUE": 83}


def _script():
    return load_script(FOLDER / "class_audit.py", "class_audit")


def test_tables_6_4_and_6_5_agree_read_as_shares_of_all_jobs() -> None:
    s = _script()
    for trace, recall in TABLE_6_4_RECALL.items():
        implied = s.implied_by_tables(*s.THESIS_TABLE_6_5[trace])
        assert abs(implied["recall"] - recall / 100) < 0.006, trace
    kth = s.implied_by_tables(9.27, 4.03, 79)
    assert kth["accuracy"] == pytest.approx(0.8670)
    assert kth["small_share"] == pytest.approx(0.0927 * 0.79 / 0.21 + 0.0403)
    assert s.implied_by_tables(*s.THESIS_TABLE_6_5["SDSC-SP2"])["small_share"] == pytest.approx(
        0.641, abs=0.001
    )


def test_a_confusion_that_cannot_be_is_refused() -> None:
    s = _script()
    for bad in ((9.0, 4.0, 100), (9.0, 4.0, 0), (-1.0, 4.0, 79), (60.0, 50.0, 79)):
        with pytest.raises(ValueError, match="not a confusion"):
            s.implied_by_tables(*bad)


def test_earlier_week_counts_see_only_weeks_before_the_jobs_own() -> None:
    s = _script()
    code = np.array([0, 0, 0, 1, 0, 1])
    week = np.array([0, 0, 1, 1, 2, 2])
    assert s.earlier_week_counts(code, week).tolist() == [0, 0, 2, 0, 3, 1]
    assert s.earlier_week_counts(np.zeros(0), np.zeros(0)).tolist() == []
    with pytest.raises(ValueError, match="3 categories for 2 weeks"):
        s.earlier_week_counts(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match=">= 0"):
        s.earlier_week_counts(np.array([0]), np.array([-1]))


def test_history_complete_needs_three_earlier_jobs_in_both_categories() -> None:
    s = _script()
    # user 1: three jobs in week 0 (request 600, 4 processors), then in week 1 one of the same
    # shape, one with another processor count, and one more of the same shape in week 0's burst
    user = np.array([1, 1, 1, 1, 1, 2, 1])
    request = np.array([600, 600, 600, 600, 600, 600, 600])
    procs = np.array([4, 4, 4, 4, 8, 4, 4])
    week = np.array([0, 0, 0, 1, 1, 1, 0])
    complete = s.history_complete(user, request, procs, week)
    # the week-1 job of the same shape has four earlier jobs in both; the 8-processor one has
    # none in (user, processors); user 2 has none; week 0's jobs have no earlier week
    assert complete.tolist() == [False, False, False, True, False, False, False]


def test_a_rule_whose_columns_are_not_attached_is_refused_not_run_without_them() -> None:
    history = load_script(FOLDER / "class_history.py", "class_history")

    def recent(divider: float) -> np.ndarray:  # R9a's columns only, as class_audit.py passes them
        return np.zeros((0, 6))

    for rule in ("blend-recent-wide", "blend-monotone", "blend-monotone-history"):
        with pytest.raises(SystemExit, match=f"{rule}: its columns are not attached"):
            history.rule_proba(None, rule, None, None, recent)
