"""The EASY pass on nodes allocates nothing (it is compiled without numba's runtime), so it
sorts its own starts' estimated ends in place (``easy_nodes._sort_ends``): checked here against
numpy's sort on random ends with many ties, rows carried with their ends."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.easy_nodes import _sort_ends


@pytest.mark.parametrize("seed", range(20))
def test_ends_come_out_sorted_with_their_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    spare = int(rng.integers(0, 5))  # the buffers are longer than the starts: the tail stays
    ends = np.concatenate([rng.integers(0, 8, n).astype(np.float64), np.full(spare, -1.0)])
    rows = np.concatenate([np.arange(n), np.full(spare, -7)]).astype(np.int64)
    before = ends.copy()
    _sort_ends(ends, rows, n)
    assert np.array_equal(ends[:n], np.sort(before[:n]))
    assert sorted(rows[:n].tolist()) == list(range(n))
    assert np.array_equal(before[rows[:n]], ends[:n])  # each row kept its end
    assert np.all(ends[n:] == -1.0) and np.all(rows[n:] == -7)
