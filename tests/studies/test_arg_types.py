"""The study scripts' argument types (`rush/studies/arg_types.py`) beyond the counts and numbers
tests/test_benchmark_args.py tries: a misspelt trace, rule or file is refused by argparse (exit 2,
the flag named) before any work, and good lists keep their order."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rush.studies import arg_types
from tests.flag_checks import parse_flag

TOO_LONG = "/tmp/" + "x" * 300 + "/runs.csv"  # a name over NAME_MAX: stat() fails with ENAMETOOLONG


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        (arg_types.names(("KTH-SP2", "CTC-SP2")), "CTC-SP2, KTH-SP2", ("CTC-SP2", "KTH-SP2")),
        (arg_types.names(("a, b", "c")), "a, b;c", None),  # one name with a comma: see below
        (arg_types.names(sep=";"), "H1: mean, EASY replay;limits", ("H1: mean, EASY replay", "limits")),
        (arg_types.trace_specs, "KTH-SP2,sdsc-blue", ("KTH-SP2", "sdsc-blue")),
        (arg_types.trace_specs, "lublin:100:64:3", ("lublin:100:64:3",)),
        (arg_types.trace_spec, "CTC-SP2", "CTC-SP2"),
        (arg_types.file_stem, "class_rules_shares", "class_rules_shares"),
        (arg_types.existing_file, __file__, __file__),
        (arg_types.folder, "/nonexistent/models", Path("/nonexistent/models")),  # made later
        (arg_types.folder, str(Path(__file__).parent), Path(__file__).parent),
    ],
)
def test_good_values_pass(kind, text: str, value) -> None:
    if value is None:
        with pytest.raises(argparse.ArgumentError):
            parse_flag(kind, text)  # split by commas: "a" is none of the allowed
        assert parse_flag(arg_types.names(("a, b", "c"), sep=";"), text) == ("a, b", "c")
    else:
        assert parse_flag(kind, text) == value


@pytest.mark.parametrize(
    ("kind", "text", "said"),
    [
        (arg_types.names(("KTH-SP2", "CTC-SP2")), "KTH-SP2,NOPE", "'NOPE' is not one of KTH-SP2, CTC-SP2"),
        (arg_types.names(sep=";"), ";", "no name given"),
        (arg_types.trace_specs, "KTH-SP2,NOPE", "'NOPE' is neither a file nor a catalogue trace"),
        (arg_types.trace_specs, "lublin:0", "bad synthetic spec"),
        (arg_types.trace_spec, "KTH-SP3", "did you mean"),
        (arg_types.file_stem, "../x", "not a file stem"),
        (arg_types.file_stem, "", "not a file stem"),
        (arg_types.existing_file, "/nonexistent/runs.csv.gz", "not a file"),
        (arg_types.folder, __file__, "is not a directory"),
        # Paths stat() cannot answer for (found by fuzzing): refused, not an OSError/RuntimeError.
        (arg_types.existing_file, TOO_LONG, "not a file"),
        (arg_types.folder, TOO_LONG, "cannot be a directory (File name too long)"),
        (arg_types.trace_spec, TOO_LONG, "neither a file nor a catalogue trace"),
        (arg_types.trace_spec, "~no-such-user-rfuzz/t.swf", "neither a file nor a catalogue trace"),
    ],
)
def test_bad_values_are_refused(kind, text: str, said: str) -> None:
    with pytest.raises(argparse.ArgumentError, match="argument --x") as refused:
        parse_flag(kind, text)
    assert said in str(refused.value)


def test_a_trace_file_is_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "mine.swf"
    trace.write_text("1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert parse_flag(arg_types.trace_specs, str(trace)) == (str(trace),)
