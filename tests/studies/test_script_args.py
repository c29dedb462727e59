"""Every study and benchmark script checks its command line with argparse (its own parser, the
live-window scripts' shared one, or `rush.studies.script_args.run_main` made from `main`'s
signature): a missing, extra or malformed argument is refused with exit 2 before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from rush.studies.script_args import parser_for, run_main
from tests.flag_checks import split_lists, unchecked_flags

ROOT = Path(__file__).resolve().parents[2]
PARSERS = ("ArgumentParser(", "recorded_runs(", "run_main(")


def scripts() -> list[Path]:
    return sorted(
        p
        for p in [*ROOT.glob("sim/**/*.py"), *ROOT.glob("benchmarks/*.py")]
        if 'if __name__ == "__main__":' in p.read_text()
    )


def test_every_script_parses_its_command_line() -> None:
    found = scripts()
    assert len(found) > 60
    assert [str(p.relative_to(ROOT)) for p in found if not any(m in p.read_text() for m in PARSERS)] == []


def replay(name: str, window: str, speedup: float, nodes: int = 10, extra: str = "") -> tuple:
    return (name, window, speedup, nodes, extra)


def tables(pod: str, *committed: str) -> tuple:
    return (pod, committed)


def listed(paths: list[str]) -> list[str]:
    return paths


def test_arguments_are_converted_and_defaults_kept() -> None:
    assert run_main(replay, ["w", "0:80", "10"]) == ("w", "0:80", 10.0, 10, "")
    assert run_main(replay, ["w", "0:80", "2.5", "4", "bf=1"]) == ("w", "0:80", 2.5, 4, "bf=1")
    assert run_main(tables, ["pod.csv", "a", "b"]) == ("pod.csv", ("a", "b"))
    assert run_main(tables, ["pod.csv"]) == ("pod.csv", ())
    assert run_main(listed, ["x", "y"]) == ["x", "y"]


@pytest.mark.parametrize(
    "argv",
    [
        [],  # missing
        ["w", "0:80"],  # missing
        ["w", "0:80", "ten"],  # not a number
        ["w", "0:80", "10", "4.5"],  # not a whole number
        ["w", "0:80", "10", "4", "x", "extra"],  # one too many
        ["w", "0:80", "10", "--bogus"],  # no such option
    ],
)
def test_bad_command_lines_exit_2_before_main_runs(argv: list[str], capsys) -> None:
    called = []
    with pytest.raises(SystemExit) as stop:
        run_main(_record(called), argv)
    assert stop.value.code == 2 and called == []
    assert "usage:" in capsys.readouterr().err


def _record(called: list):
    def main(name: str, window: str, speedup: float, nodes: int = 10, extra: str = "") -> None:
        called.append((name, window, speedup, nodes, extra))

    return main


def test_usage_names_each_argument() -> None:
    usage = parser_for(replay).format_usage()
    assert "name window speedup [nodes] [extra]" in " ".join(usage.split())


def sim_scripts() -> list[Path]:
    return sorted(ROOT.glob("sim/**/*.py"))


def test_no_study_flag_is_a_bare_number() -> None:
    """A count or a number flag of a study is checked by `rush/studies/arg_types.py`'s types
    (least value, cap, finite), as the benchmarks' are."""
    paths = sim_scripts()
    assert len(paths) > 50
    assert [flag for path in paths for flag in unchecked_flags(path)] == []


def test_no_study_splits_a_list_flag_itself(tmp_path: Path) -> None:
    """A list flag of a study (traces, rules, candidates) is parsed and checked by argparse
    (`names`, `counts`, `trace_specs`), not split by the script after the parse."""
    assert [place for path in sim_scripts() for place in split_lists(path)] == []
    script = tmp_path / "study_y.py"
    script.write_text('for c in args.only.split(";"):\n    pass\ntraces = args.traces.split(",")\n')
    assert split_lists(script) == ["study_y.py:1 --only", "study_y.py:3 --traces"]
