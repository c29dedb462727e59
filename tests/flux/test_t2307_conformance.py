"""flux-core's own ``t/t2307-sched-backfill.t`` with rush's module in place of sched-backfill.

One run of the sharness test per session part (tests/flux/sharness.py says how it is run and
exactly what is substituted), then one pytest per sharness case, named as in the .t file. A
case rush does not pass yet is listed in :data:`NOT_YET` with why; those are strict xfails,
so a case that starts passing fails here until it is taken off the list.

The same harness runs the unmodified test with sched-backfill first: it must pass every case,
so that a failing case is rush's, not the harness's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.flux import sharness

pytestmark = pytest.mark.flux

WHY = sharness.unavailable()
NAMES = sharness.case_names() if WHY is None else []

# Case number -> why rush's module does not pass it yet. Empty: with the module's default
# configuration (FCFS under Flux's priority, EASY) every case passes.
NOT_YET: dict[int, str] = {}


@pytest.fixture(scope="module")
def rush_run(tmp_path_factory: pytest.TempPathFactory) -> sharness.Run:
    if WHY:
        pytest.skip(WHY)
    return sharness.run_conformance(tmp_path_factory.mktemp("t2307-rush"))


def test_the_harness_passes_sched_backfill(tmp_path: Path) -> None:
    """The unmodified t2307 against the installed flux: every case passes with sched-backfill."""
    if WHY:
        pytest.skip(WHY)
    run = sharness.run_conformance(tmp_path, scheduler="sched-backfill")
    assert len(run.results) == len(NAMES), run.tail()
    failed = [c for c in run.results.values() if not c.ok]
    assert not failed, "\n\n".join(sharness.case_log(run, c.number) for c in failed)


def test_the_substitution_touches_only_module_commands() -> None:
    """Only ``flux module ... sched-backfill`` lines change, and each names sched-rush."""
    if WHY:
        pytest.skip(WHY)
    original = sharness.original_test().splitlines()
    changed = sharness.substitute("\n".join(original)).splitlines()
    assert len(original) == len(changed)
    diff = [(a, b) for a, b in zip(original, changed, strict=True) if a != b]
    assert diff, "nothing substituted: t2307 no longer loads sched-backfill by name?"
    for before, after in diff:
        assert "flux module" in before and "sched-backfill" in before
        assert "sched-backfill" not in after and "sched-rush" in after
    assert all("sched-backfill" not in b for b in changed if "flux module" in b)


def _case_params() -> list:
    if not NAMES:
        return [pytest.param(0, "", marks=pytest.mark.skip(reason=WHY or "no cases"))]
    params = []
    for number, name in enumerate(NAMES, start=1):
        marks = [pytest.mark.xfail(strict=True, reason=NOT_YET[number])] if number in NOT_YET else []
        params.append(pytest.param(number, name, marks=marks, id=f"{number:02d}-{name}"))
    return params


@pytest.mark.parametrize(("number", "name"), _case_params())
def test_t2307_case_with_rush(rush_run: sharness.Run, number: int, name: str) -> None:
    case = rush_run.results.get(number)
    assert case is not None, f"case {number} did not run:\n{rush_run.tail()}"
    assert case.name == name
    assert case.ok, sharness.case_log(rush_run, number) + "\n\nbroker log:\n" + rush_run.broker_log()
