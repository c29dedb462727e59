"""Fuzzed study-script flags (a derandomized hypothesis profile): every argument type of
rush/studies/arg_types.py given arbitrary text and known-hostile strings gives its value or
argparse's ArgumentTypeError (exit 2, the flag named), never another exception."""

from __future__ import annotations

import argparse
import math

from hypothesis import given
from hypothesis import strategies as st

from rush.studies import arg_types
from tests.hostile_mutations import FUZZ

HOSTILE = ["9" * 5000, "1e999", "nan", "-0", "٣", "²", "1_000", " 5 ", "0x10", "x" * 300, "/tmp/" + "x" * 300]
HOSTILE += ["~no-such-user-rfuzz/t.swf", "lublin:0", "lublin:99999999999", "", ",", "/dev/zero", "/tmp"]
TYPES = [
    arg_types.count(1), arg_types.counts(0), arg_types.names(["a", "b"]), arg_types.names(sep=";"),
    arg_types.fraction, arg_types.positive_number, arg_types.file_stem, arg_types.trace_spec,
    arg_types.trace_specs, arg_types.existing_file, arg_types.folder,
]  # fmt: skip


@FUZZ
@given(st.sampled_from(HOSTILE) | st.text(max_size=40))
def test_fuzzed_flag_values(text):
    for parse in TYPES:
        try:
            value = parse(text)
        except argparse.ArgumentTypeError:
            continue
        assert not isinstance(value, float) or math.isfinite(value), (parse.__name__, value)
