"""Slurm's SiteFactor as the backends write and read it (rush.rjms.site_factor)."""

from __future__ import annotations

import pytest

from rush.core.priority_values import MAX_VALUE
from rush.errors import RJMSError
from rush.rjms import site_factor


def test_every_priority_value_the_core_computes_fits_either_lever() -> None:
    for lever in ("site_factor", "nice"):
        assert site_factor.checked(1, lever) == 1
        assert site_factor.checked(MAX_VALUE, lever) == MAX_VALUE


@pytest.mark.parametrize("value", [2**31, -(2**31), True, 1.5, "7"])
def test_values_slurm_cannot_store_are_refused(value: object) -> None:
    with pytest.raises(RJMSError, match="invalid site factor") as err:
        site_factor.checked(value)  # type: ignore[arg-type]
    assert err.value.fix


def test_the_nice_lever_has_slurms_narrower_range() -> None:
    assert site_factor.checked(2**31 - 4, "nice") == 2**31 - 4
    with pytest.raises(RJMSError):
        site_factor.checked(2**31 - 3, "nice")
    assert site_factor.checked(2**31 - 3) == 2**31 - 3  # SiteFactor itself takes it


def test_nice_is_negated_and_slurmrestd_gets_the_stored_value() -> None:
    assert site_factor.as_nice(4321) == -4321
    assert site_factor.rest_raw(4321) == 4321 + 2**31
    assert site_factor.rest_raw(-5) == 2**31 - 5


def test_sprio_lines_it_cannot_read_are_left_out() -> None:
    text = "  101 4321\n102 -7\nJOBID SITE\n103\n104 x\n"
    assert site_factor.parse_sprio(text) == {101: 4321, 102: -7}


def test_sprio_digits_int_refuses_are_left_out_not_a_traceback() -> None:
    """str.isdigit accepts '²' and 5000-digit numbers, which int() refuses (found by fuzzing)."""
    text = "101 4321\n102 ²\n² 5\n103 " + "9" * 5000 + "\n104 -" + "9" * 30 + "\n"
    assert site_factor.parse_sprio(text) == {101: 4321}
