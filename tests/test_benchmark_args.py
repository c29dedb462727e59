"""The benchmarks' flags are checked by argparse (`benchmarks/bench_args.py`): a bad count,
share or tree is refused with exit 2 and the flag named before any work, not met as a traceback
minutes into a run."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.flag_checks import parse_flag, split_lists, unchecked_flags
from tests.script_module import load_script

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
bench_args = load_script(BENCHMARKS / "bench_args.py", "bench_args")
ab_trees = load_script(BENCHMARKS / "ab_trees.py", "ab_trees")


def test_no_benchmark_flag_is_a_bare_number() -> None:
    paths = sorted(BENCHMARKS.glob("*.py"))
    assert len(paths) > 30
    assert [flag for path in paths for flag in unchecked_flags(path)] == []


def test_the_check_sees_a_bare_number(tmp_path: Path) -> None:
    script = tmp_path / "bench_x.py"
    script.write_text(
        'import argparse\np = argparse.ArgumentParser()\np.add_argument("--rounds", type=int)\n'
    )
    assert unchecked_flags(script) == ["bench_x.py: --rounds"]


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        (bench_args.positive, "1", 1),
        (bench_args.positive, "10000", 10000),
        (bench_args.non_negative, "0", 0),
        (bench_args.fraction, "0", 0.0),
        (bench_args.fraction, "1", 1.0),
        (bench_args.fraction, "0.3", 0.3),
        (bench_args.positive_number, "1e-3", 0.001),
        (bench_args.positive, "10000000", 10_000_000),
        (bench_args.counts(1), "1000, 10000", (1000, 10000)),
        (bench_args.names(bench_args.SHELLS), "daemon", ("daemon",)),
        (bench_args.names(), "nodes cold,counts cold", ("nodes cold", "counts cold")),
    ],
)
def test_good_values_pass(kind, text: str, value) -> None:
    assert parse_flag(kind, text) == value


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        (bench_args.positive, "0"),
        (bench_args.positive, "-5"),
        (bench_args.positive, "2.5"),
        (bench_args.positive, "x"),
        (bench_args.non_negative, "-1"),
        (bench_args.fraction, "1.5"),
        (bench_args.fraction, "-0.1"),
        (bench_args.fraction, "nan"),
        (bench_args.positive_number, "0"),
        (bench_args.positive_number, "-1"),
        (bench_args.positive_number, "inf"),
        (bench_args.positive_number, "nan"),
        (bench_args.source_tree, "/nonexistent"),
        (bench_args.positive, "10000001"),
        (bench_args.counts(1), "1000,x"),
        (bench_args.counts(1), "1000,0"),
        (bench_args.counts(1), ""),
        (bench_args.names(bench_args.SHELLS), "flux-module,dameon"),
        (bench_args.names(bench_args.BACKFILL_MODES), "fcfs"),
        (bench_args.names(), " , "),
    ],
)
def test_bad_values_are_refused(kind, text: str) -> None:
    with pytest.raises(argparse.ArgumentError, match="argument --x"):
        parse_flag(kind, text)


def test_a_checkout_is_a_source_tree(tmp_path: Path) -> None:
    root = str(BENCHMARKS.parent)
    assert parse_flag(bench_args.source_tree, root) == root
    (tmp_path / "rush").mkdir()
    with pytest.raises(argparse.ArgumentError, match="not a rush checkout"):
        parse_flag(bench_args.source_tree, str(tmp_path))


def test_no_benchmark_splits_a_list_flag_itself(tmp_path: Path) -> None:
    assert [place for path in sorted(BENCHMARKS.glob("*.py")) for place in split_lists(path)] == []
    script = tmp_path / "bench_y.py"
    script.write_text('sizes = [int(x) for x in args.pending.split(",")]\n')
    assert split_lists(script) == ["bench_y.py:1 --pending"]


def test_summary_of_rounds() -> None:
    rows = {"A": [{"whole": 10.0}, {"whole": 14.0}], "B": [{"whole": 8.0}, {"whole": 13.0}]}
    assert ab_trees.summarize(rows, ["whole"]) == [
        "whole median of rounds A   12.0 B   10.5; B-A by round -2.0 -1.0 (median -1.5)"
    ]
    assert ab_trees.summarize(rows, ["whole"], ratio=True) == [
        "whole median of rounds A   12.0 B   10.5; B/A by round 0.800 0.929"
    ]
