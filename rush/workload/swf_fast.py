"""Compiled tokenizer for the numeric block of an SWF file (the reader's fast path).

One pass over the bytes parses every job line into 18 floats. Blank lines and ``;``
comment lines (leading blanks allowed) are skipped. A line that is not 18 numbers is
left out and its 1-based line number recorded, so the reader can skip and count it or,
in strict mode, name it, without a second, slow, line-by-line pass over the file.
"""

from __future__ import annotations

import numpy as np
from numba import njit

N_FIELDS = 18
# Line numbers of malformed lines kept for messages; all of them are counted.
MAX_BAD_LINES_KEPT = 1000


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
def parse_swf_numbers(buf: np.ndarray) -> tuple[np.ndarray, int, int, np.ndarray]:
    """Parse SWF bytes ``buf`` (uint8).

    Returns (values as a flat float array of ``rows * 18``, rows, number of malformed
    lines, line numbers of the first ``MAX_BAD_LINES_KEPT`` malformed lines).
    """
    n = len(buf)
    out = np.empty(n // 2 + N_FIELDS, dtype=np.float64)
    bad_lines = np.empty(MAX_BAD_LINES_KEPT, dtype=np.int64)
    n_bad = 0
    count = 0
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
        line_start = count
        fields = 0
        ok = True
        while k < end:
            if _is_blank(buf[k]):
                k += 1
                continue
            if fields == N_FIELDS:
                ok = False
                break
            value, k, ok = _parse_number(buf, k, end)
            if not ok:
                break
            out[count] = value
            count += 1
            fields += 1
        if ok and fields == N_FIELDS:
            rows += 1
        else:
            count = line_start  # drop the line's values
            if n_bad < MAX_BAD_LINES_KEPT:
                bad_lines[n_bad] = lineno
            n_bad += 1
        i = end + 1
    return out[:count], rows, n_bad, bad_lines[: min(n_bad, MAX_BAD_LINES_KEPT)]
