"""Compiled tokenizer for the numeric block of an SWF file (the reader's fast path).

It parses every job line into 18 floats in one pass over the bytes, skipping ``;``
comment lines. On anything unexpected (a letter, a line without 18 fields) it reports
failure and the reader falls back to its line-by-line parser, which names the line.
"""

from __future__ import annotations

import numpy as np
from numba import njit

N_FIELDS = 18


@njit(cache=True)
def parse_swf_numbers(buf: np.ndarray) -> tuple[np.ndarray, int, bool]:
    """(values as a flat float array, number of rows, ok) for SWF bytes ``buf`` (uint8)."""
    n = len(buf)
    out = np.empty(n // 2 + N_FIELDS, dtype=np.float64)
    count = 0
    rows = 0
    fields = 0
    i = 0
    line_start = True
    while i < n:
        c = buf[i]
        if line_start and c == 59:  # ';' comment line
            while i < n and buf[i] != 10:
                i += 1
            continue
        line_start = False
        if c == 10:  # '\n'
            if fields != 0:
                if fields != N_FIELDS:
                    return out[:count], rows, False
                rows += 1
                fields = 0
            line_start = True
            i += 1
            continue
        if c == 32 or c == 9 or c == 13:
            i += 1
            continue
        negative = False
        if c == 45 or c == 43:  # sign
            negative = c == 45
            i += 1
        integer = 0.0
        digits = 0
        while i < n and 48 <= buf[i] <= 57:
            integer = integer * 10.0 + (buf[i] - 48)
            digits += 1
            i += 1
        value = integer
        if i < n and buf[i] == 46:  # '.'
            i += 1
            scale = 1.0
            fraction = 0.0
            while i < n and 48 <= buf[i] <= 57:
                fraction = fraction * 10.0 + (buf[i] - 48)
                scale *= 10.0
                digits += 1
                i += 1
            # Both exact below 2**53, so one division rounds correctly, like float().
            value = (integer * scale + fraction) / scale
        if digits == 0:
            return out[:count], rows, False
        if i < n and (buf[i] == 101 or buf[i] == 69):  # exponent
            i += 1
            exp_negative = False
            if i < n and (buf[i] == 45 or buf[i] == 43):
                exp_negative = buf[i] == 45
                i += 1
            exponent = 0
            exp_digits = 0
            while i < n and 48 <= buf[i] <= 57:
                exponent = exponent * 10 + (buf[i] - 48)
                exp_digits += 1
                i += 1
            if exp_digits == 0:
                return out[:count], rows, False
            value = value * 10.0 ** (-exponent if exp_negative else exponent)
        if i < n and not (buf[i] == 32 or buf[i] == 9 or buf[i] == 13 or buf[i] == 10):
            return out[:count], rows, False
        out[count] = -value if negative else value
        count += 1
        fields += 1
    if fields != 0:
        if fields != N_FIELDS:
            return out[:count], rows, False
        rows += 1
    return out[:count], rows, True
