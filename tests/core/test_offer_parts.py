"""The conservative node pass's GPU test as part of each node's offer state (issue 31, rounds 19
and 25).

:func:`rush.core.conservative_nodes._apply` splits the offer rule (:func:`_offer`) into a GPU part
and a cores part; for whole-node and shared requests the node's state (:func:`_state`) says
whether the GPU part holds, and only an entry taking GPUs reads or writes the GPU room (it
recomputes the state); for the other requests only such an entry writes it. The units it
reports, the rooms it leaves and the states must be those of the whole rule on both columns, for
every kind of request and on takes and gifts in any order (tests/core/test_offer_states.py slides a room as
the pass does; tests/core/test_conservative_nodes_speed.py checks the pass's decisions).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rush.core.conservative_nodes import _apply, _cores_part, _gpu_part, _offer, _state

# (nodes (0: cores anywhere), exclusive, cores and GPUs per node, flagged: the states kept)
RULES = [
    (0, 0, 0, 0, 0),  # cores anywhere
    (2, 1, 0, 0, 1),  # whole nodes
    (1, 0, 3, 0, 1),  # shared, no GPUs
    (1, 0, 2, 1, 1),  # shared with GPUs
    (3, 0, 1, 2, 1),
    (2, 1, 0, 0, 0),  # the same on an unsound pass: the rule before and after every entry
    (1, 0, 2, 1, 0),
]


def _want_state(rule, eligible: bool, room, capacity) -> int:
    """0 not eligible; for a flagged rule 3 when the GPUs fail it, else 1 + its offer; 1 else."""
    if not eligible:
        return 0
    if not rule[4]:
        return 1
    gpus_hold = room[1] == capacity[1] if rule[1] else room[1] >= rule[3]
    return 1 + _offer(rule, True, room, capacity) if gpus_hold else 3


@pytest.mark.parametrize("rule", RULES)
def test_the_two_parts_make_the_offer_and_the_state(rule) -> None:
    for eligible, room_c, room_g, cap_c, cap_g in itertools.product(
        (False, True), range(-3, 6), range(-2, 4), (0, 4), (0, 2)
    ):
        case = (eligible, room_c, room_g, cap_c, cap_g)
        whole = _offer(rule, eligible, (room_c, room_g), (cap_c, cap_g))
        parts = _cores_part(rule, room_c, cap_c) if eligible and _gpu_part(rule, room_g, cap_g) else 0
        assert parts == whole, case
        if rule[0] > 0:
            assert _state(rule, eligible, (room_c, room_g), (cap_c, cap_g)) == _want_state(
                rule[:4] + (1,), eligible, (room_c, room_g), (cap_c, cap_g)
            ), case


def _takes(rng, m: int, count: int):
    at = rng.integers(0, m, count).astype(np.int64)
    take_c = rng.integers(0, 4, count).astype(np.int64)
    take_g = np.where(rng.random(count) < 0.3, rng.integers(1, 3, count), 0).astype(np.int64)
    return at, take_c, take_g


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("rule", RULES)
def test_apply_keeps_rooms_units_and_states_of_the_whole_rule(rule, seed) -> None:
    rng = np.random.default_rng(seed)
    m = 6
    cap_c = rng.integers(2, 6, m).astype(np.int64)
    cap_g = np.where(rng.random(m) < 0.5, 2, 0).astype(np.int64)
    eligible = rng.random(m) < 0.8
    count = 40
    at, take_c, take_g = _takes(rng, m, count)
    room_c, room_g = cap_c.copy(), cap_g.copy()
    state = np.array(
        [_want_state(rule, bool(eligible[n]), (cap_c[n], cap_g[n]), (cap_c[n], cap_g[n])) for n in range(m)],
        dtype=np.int8,
    )
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
        delta = _apply((at, take_c, take_g), k0, k1, sign, (room_c, room_g), state, (cap_c, cap_g), rule)
        assert delta == after - before
        assert np.array_equal(room_c, want_c) and np.array_equal(room_g, want_g)
        for n in range(m):
            assert state[n] == _want_state(
                rule, bool(eligible[n]), (want_c[n], want_g[n]), (cap_c[n], cap_g[n])
            )


class _Watched:
    """A GPU room that counts its reads and writes (the pure-Python :func:`_apply` indexes it)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.reads = 0
        self.writes = 0

    def __getitem__(self, node):
        self.reads += 1
        return self.values[node]

    def __setitem__(self, node, value) -> None:
        self.writes += 1
        self.values[node] = value


@pytest.mark.parametrize("rule", RULES)
def test_an_entry_taking_no_gpus_leaves_the_gpu_room_alone(rule) -> None:
    """Only entries taking GPUs write the GPU room; for whole-node and shared requests on a
    sound pass (the states kept) only they read it (the cost this saves: an entry's GPU room
    read and written)."""
    rng = np.random.default_rng(7)
    m = 6
    cap_c = np.full(m, 4, dtype=np.int64)
    cap_g = np.full(m, 2, dtype=np.int64)
    at, take_c, take_g = _takes(rng, m, 30)
    state = np.array([_want_state(rule, True, (4, 2), (4, 2))] * m, dtype=np.int8)
    room_g = _Watched(cap_g.copy())
    room = (cap_c.copy(), room_g)
    apply = getattr(_apply, "py_func", _apply)  # the compiled one cannot index a Python object
    for sign in (-1, 1):
        for k in range(30):
            room_g.reads = room_g.writes = 0
            apply((at, take_c, take_g), k, k + 1, sign, room, state, (cap_c, cap_g), rule)
            assert (room_g.writes > 0) == (take_g[k] != 0), (k, sign, room_g.writes)
            if rule[4]:
                assert (room_g.reads > 0) == (take_g[k] != 0), (k, sign, room_g.reads)
