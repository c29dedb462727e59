"""The conservative node pass's room update with the GPU test as a per-node flag (issue 31).

:func:`rush.core.conservative_nodes._apply` keeps, per node, eligibility and the GPU part of the
job's offer rule as a flag rewritten only by entries that take GPUs, and tests the cores part on
each entry; the units it reports and the rooms it leaves must be those of the whole offer rule
(:func:`rush.core.conservative_nodes._offer`) applied to both columns, for every kind of request
(tests/core/test_conservative_nodes_speed.py checks the pass's decisions against its oracle).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rush.core.conservative_nodes import _apply, _cores_part, _gpu_part, _offer

RULES = [
    (0, 0, 0, 0),  # cores anywhere
    (2, 1, 0, 0),  # whole nodes
    (1, 0, 3, 0),  # shared, no GPUs
    (1, 0, 2, 1),  # shared with GPUs
    (3, 0, 1, 2),
]


@pytest.mark.parametrize("rule", RULES)
def test_the_two_parts_make_the_offer(rule) -> None:
    for eligible, room_c, room_g, cap_c, cap_g in itertools.product(
        (False, True), range(-3, 6), range(-2, 4), (0, 4), (0, 2)
    ):
        ok = _gpu_part(rule, eligible, room_g, cap_g)
        whole = _offer(rule, eligible, (room_c, room_g), (cap_c, cap_g))
        assert _cores_part(rule, ok, room_c, cap_c) == whole, (eligible, room_c, room_g, cap_c, cap_g)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("rule", RULES)
def test_apply_keeps_rooms_and_units_of_the_whole_rule(rule, seed) -> None:
    rng = np.random.default_rng(seed)
    m = 6
    cap_c = rng.integers(2, 6, m).astype(np.int64)
    cap_g = np.where(rng.random(m) < 0.5, 2, 0).astype(np.int64)
    eligible = rng.random(m) < 0.8
    count = 40
    at = rng.integers(0, m, count).astype(np.int64)
    take_c = rng.integers(0, 4, count).astype(np.int64)
    take_g = np.where(rng.random(count) < 0.3, rng.integers(1, 3, count), 0).astype(np.int64)
    room_c, room_g = cap_c.copy(), cap_g.copy()
    ok = np.array([_gpu_part(rule, bool(eligible[n]), int(room_g[n]), int(cap_g[n])) for n in range(m)])
    want_c, want_g = cap_c.copy(), cap_g.copy()
    applied = []
    for _ in range(60):
        if applied and rng.random() < 0.4:  # give one back
            k0, k1 = applied.pop(int(rng.integers(len(applied))))
            sign = 1
        else:
            k0 = int(rng.integers(0, count - 3))
            k1 = k0 + int(rng.integers(1, 4))
            applied.append((k0, k1))
            sign = -1
        before = sum(
            _offer(rule, bool(eligible[n]), (want_c[n], want_g[n]), (cap_c[n], cap_g[n])) for n in range(m)
        )
        for k in range(k0, k1):
            want_c[at[k]] += sign * take_c[k]
            want_g[at[k]] += sign * take_g[k]
        after = sum(
            _offer(rule, bool(eligible[n]), (want_c[n], want_g[n]), (cap_c[n], cap_g[n])) for n in range(m)
        )
        delta = _apply(
            (at, take_c, take_g), k0, k1, sign, (room_c, room_g), (eligible, ok), (cap_c, cap_g), rule
        )
        assert delta == after - before
        assert np.array_equal(room_c, want_c) and np.array_equal(room_g, want_g)
        for n in range(m):
            assert ok[n] == _gpu_part(rule, bool(eligible[n]), int(room_g[n]), int(cap_g[n]))
