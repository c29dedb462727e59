"""Rule L2's columns read from a predictor's tables equal those read from per-job objects.

The live predictor keeps its answers as arrays (:class:`rush.core.snapshot.QuantileTable`, one
per prediction) and hands each job a row handle (:class:`rush.core.snapshot.QuantileRow`) that
reads as a :class:`rush.core.snapshot.RuntimeQuantiles`; the core reads the rows of tables in
bulk. Differential: over random queues mixing several tables (two sets of levels, a table of
the wrong width, one with bad levels), plain objects and no quantiles, with NaN, infinite and
negative quantiles and requests with no limit, the columns from the handles equal, bit for bit,
those from the same quantiles as plain objects; and the handles read, compare and hash as them.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from rush.core.job_columns import pending_columns
from rush.core.remaining_runtime import queued_projection_columns, queued_projection_from_columns
from rush.core.snapshot import PendingJob, QuantileRow, QuantileTable, RuntimeQuantiles

LEVELS = ((0.1, 0.25, 0.5, 0.75, 0.9), (0.25, 0.5, 0.75))


def _table(rng: np.random.Generator, n: int, kind: int) -> QuantileTable:
    """Random answers of one prediction: ``kind`` 0-1 a model's levels, 2 one column too few,
    3 levels out of (0, 1); NaN, infinite and negative values sprinkled in."""
    levels = LEVELS[kind % 2] if kind < 3 else (0.0, 0.5, 1.0)
    width = len(levels) - (kind == 2)
    seconds = np.exp(rng.uniform(1.0, 9.0, size=(n, width)))
    bad = rng.random(size=(n, width))
    seconds[bad < 0.03] = np.nan
    seconds[(bad >= 0.03) & (bad < 0.05)] = np.inf
    seconds[(bad >= 0.05) & (bad < 0.08)] *= -1.0
    return QuantileTable(levels, seconds)


def _queue(rng: np.random.Generator, n: int) -> tuple[list, list]:
    """A queue's quantiles as handles and the same as plain objects (None: none)."""
    tables = [_table(rng, int(rng.integers(1, 40)), int(k)) for k in rng.integers(0, 4, size=5)]
    handles, plain = [], []
    for _ in range(n):
        pick = int(rng.integers(0, 10))
        if pick == 0:
            handles.append(None)
            plain.append(None)
        elif pick == 1:  # an object of its own (rules C and D make these), with a D2 shift
            q = RuntimeQuantiles(LEVELS[0], tuple(np.sort(rng.uniform(10, 900, size=5)).tolist()), 0.3)
            handles.append(q)
            plain.append(q)
        else:
            t = tables[int(rng.integers(0, len(tables)))]
            h = QuantileRow((t, int(rng.integers(0, len(t.seconds)))))
            handles.append(h)
            plain.append(h.plain())
    return handles, plain


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)  # NaN where NaN, bit-equal values elsewhere


@pytest.mark.parametrize("seed", range(12))
def test_columns_from_table_rows_equal_those_from_objects(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    handles, plain = _queue(rng, n)
    request = rng.choice(
        [np.inf, 0.0, np.nan, 600.0, 3_600.0, 86_400.0], size=n, p=[0.05, 0.05, 0.03, 0.29, 0.29, 0.29]
    )
    got = queued_projection_columns(handles, request)
    want = queued_projection_columns(plain, request)
    for a, b in zip(got, want, strict=True):
        _same(a, b)
    assert (got[0] == 0).any() and (got[0] > 0).any()  # usable and refused rows both checked
    est = np.minimum(request, 1_000.0)
    ids = np.arange(1, n + 1)
    out, notes = queued_projection_from_columns(got, request, ids, est)
    out_plain, notes_plain = queued_projection_from_columns(want, request, ids, est)
    _same(out, out_plain)
    assert list(notes.items()) == list(notes_plain.items())  # the same reasons, in the same order


@pytest.mark.parametrize("seed", range(8))
def test_columns_from_one_tables_rows_equal_those_from_objects(seed: int) -> None:
    """A first cycle: every job's quantiles rows of one prediction (some jobs without any)."""
    rng = np.random.default_rng(50 + seed)
    table = _table(rng, 500, seed % 4)
    order = rng.permutation(500)
    handles = [None if k % 7 == 3 else QuantileRow((table, int(r))) for k, r in enumerate(order)]
    plain = [None if h is None else h.plain() for h in handles]
    request = rng.choice([np.inf, 0.0, 600.0, 86_400.0], size=500, p=[0.05, 0.05, 0.45, 0.45])
    got = queued_projection_columns(handles, request)
    want = queued_projection_columns(plain, request)
    for a, b in zip(got, want, strict=True):
        _same(a, b)


@pytest.mark.parametrize("seed", range(4))
def test_pending_columns_read_table_rows_as_objects(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    handles, plain = _queue(rng, 300)

    def jobs(quantiles: list) -> list[PendingJob]:
        return [
            PendingJob(k + 1, 0.0, 1, 3_600.0, None, runtime_quantiles=q) for k, q in enumerate(quantiles)
        ]

    got, want = pending_columns(jobs(handles)), pending_columns(jobs(plain))
    for name in ("quantile_code", "queued_upper", "projection_shift", "quantile_key"):
        _same(getattr(got, name), getattr(want, name))


def test_a_row_reads_compares_and_hashes_as_its_object() -> None:
    seconds = np.array([[10.0, 20.0, 30.0], [1.0, np.nan, 3.0]])
    table = QuantileTable(LEVELS[1], seconds)
    row, bad = QuantileRow((table, 0)), QuantileRow((table, 1))
    plain = RuntimeQuantiles(LEVELS[1], (10.0, 20.0, 30.0))
    assert (row.levels, row.seconds, row.projection_shift) == (plain.levels, plain.seconds, 0.0)
    assert row == plain and plain == row and hash(row) == hash(plain)
    assert row != bad and row != RuntimeQuantiles(LEVELS[1], (10.0, 20.0, 30.0), 0.5)
    assert repr(row) == repr(plain)
    assert pickle.loads(pickle.dumps(row)) == plain
