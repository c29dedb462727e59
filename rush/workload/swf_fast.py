"""Compiled tokenizer for the numeric block of an SWF file (the reader's fast path).

One pass over the bytes parses every job line into 18 floats. Blank lines and ``;``
comment lines (leading blanks allowed) are skipped. A line that is not 18 finite numbers
(integer fields within +-2**53, where a float64 is exact) is
left out and its 1-based line number recorded, so the reader can skip and count it or,
in strict mode, name it, without a second, slow, line-by-line pass over the file.
"""

from __future__ import annotations

import numpy as np
from numba import njit

N_FIELDS = 18
# Line numbers of malformed lines kept for messages; all of them are counted.
MAX_BAD_LINES_KEPT = 1000
# Integer fields must be exact in the float the tokenizer builds (and fit int64): a larger
# value (``1e308``, ``9223372036854775808``) makes the line malformed instead of wrapping
# silently to -2**63.
MAX_EXACT_INT = 2.0**53
# Longest exponent kept while reading digits: 10**400 is already inf (so the value is
# rejected) and the int64 accumulator cannot overflow on "1e99999999999999999999".
MAX_EXPONENT = 400
# The shortest job line: 18 one-character numbers and 17 blanks.
MIN_JOB_LINE = 2 * N_FIELDS - 1


@njit(cache=True, inline="always")
def _is_blank(c: int) -> bool:
    return c == 32 or c == 9 or c == 13  # space, tab, CR


@njit(cache=True)
def _parse_number(buf: np.ndarray, k: int, end: int) -> tuple[float, int, bool]:
    """(value, position after the token, ok) for the token starting at ``buf[k]``."""
    negative = False
    c = buf[k]
    if c == 45 or c == 43:  # sign
        negative = c == 45
        k += 1
    integer = 0.0
    digits = 0
    while k < end and 48 <= buf[k] <= 57:
        integer = integer * 10.0 + (buf[k] - 48)
        digits += 1
        k += 1
    value = integer
    if k < end and buf[k] == 46:  # '.'
        k += 1
        scale = 1.0
        fraction = 0.0
        while k < end and 48 <= buf[k] <= 57:
            fraction = fraction * 10.0 + (buf[k] - 48)
            scale *= 10.0
            digits += 1
            k += 1
        # Both exact below 2**53, so one division rounds correctly, like float().
        value = (integer * scale + fraction) / scale
    if digits == 0:
        return 0.0, k, False
    if k < end and (buf[k] == 101 or buf[k] == 69):  # exponent
        k += 1
        exp_negative = False
        if k < end and (buf[k] == 45 or buf[k] == 43):
            exp_negative = buf[k] == 45
            k += 1
        exponent = 0
        exp_digits = 0
        while k < end and 48 <= buf[k] <= 57:
            if exponent < MAX_EXPONENT:
                exponent = exponent * 10 + (buf[k] - 48)
            exp_digits += 1
            k += 1
        if exp_digits == 0:
            return 0.0, k, False
        value = value * 10.0 ** (-exponent if exp_negative else exponent)
    if k < end and not _is_blank(buf[k]):
        return 0.0, k, False  # e.g. "12x"
    return (-value if negative else value), k, True


@njit(cache=True)
def parse_swf_numbers(
    buf: np.ndarray, is_float: np.ndarray, capacity: int
) -> tuple[np.ndarray, np.ndarray, int, int, np.ndarray]:
    """Parse SWF bytes ``buf`` (uint8) with room for ``capacity`` job lines.

    ``is_float[k]`` says whether field ``k`` is stored as float64 (else int64, truncated).
    Returns (int fields as an (n_int, capacity) array, float fields as (n_float, capacity),
    rows, number of malformed lines, line numbers of the first ``MAX_BAD_LINES_KEPT`` of
    them). Only the first ``rows`` columns of the arrays are filled.
    """
    n = len(buf)
    slot = np.empty(N_FIELDS, dtype=np.int64)  # row of field k in its array
    n_int = 0
    n_float = 0
    for k in range(N_FIELDS):
        if is_float[k]:
            slot[k] = n_float
            n_float += 1
        else:
            slot[k] = n_int
            n_int += 1
    ints = np.empty((n_int, capacity), dtype=np.int64)
    floats = np.empty((n_float, capacity), dtype=np.float64)
    bad_lines = np.empty(MAX_BAD_LINES_KEPT, dtype=np.int64)
    n_bad = 0
    rows = 0
    lineno = 0
    i = 0
    while i < n:
        lineno += 1
        end = i
        while end < n and buf[end] != 10:
            end += 1
        k = i
        while k < end and _is_blank(buf[k]):
            k += 1
        if k == end or buf[k] == 59:  # blank or ';' comment line
            i = end + 1
            continue
        fields = 0
        ok = rows < capacity
        while ok and k < end:
            if _is_blank(buf[k]):
                k += 1
                continue
            if fields == N_FIELDS:
                ok = False
                break
            value, k, ok = _parse_number(buf, k, end)
            if not ok:
                break
            # A bad line leaves partial values in column ``rows``; the next good line overwrites them.
            if is_float[fields]:
                if not value - value == 0.0:  # inf or NaN (an overflowing mantissa or exponent)
                    ok = False
                    break
                floats[slot[fields], rows] = value
            else:
                if not -MAX_EXACT_INT <= value <= MAX_EXACT_INT:  # also false for NaN
                    ok = False
                    break
                ints[slot[fields], rows] = np.int64(value)
            fields += 1
        if ok and fields == N_FIELDS:
            rows += 1
        else:
            if n_bad < MAX_BAD_LINES_KEPT:
                bad_lines[n_bad] = lineno
            n_bad += 1
        i = end + 1
    return ints, floats, rows, n_bad, bad_lines[: min(n_bad, MAX_BAD_LINES_KEPT)]
