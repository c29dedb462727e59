"""A job's room carried to the next job in conservative backfilling on nodes (issue 31).

:mod:`rush.core.conservative_nodes` searches each job's earliest window on the room its window
leaves: the machine's capacity less every booking overlapping ``[t, t + duration)``. A booking
overlaps exactly when it starts before the window's end and does not end by its start, so the
room is the capacity, less the bookings starting before the end cut, plus those ending by the
start cut (a booking ending by the start also starts before the end). Each cut is a position in
the bookings sorted by start and by end, and the room for any window follows from the room of
another by moving the two cuts over the bookings between: the pass carries the last job's room
to the next job's first window this way when that walks fewer bookings than building it afresh
(:func:`move_cost`); the rooms, and so the decisions, are the same.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def move_cost(cuts: tuple[int, int], to: tuple[int, int]) -> int:
    """Bookings a move of the cuts (bookings ending by the start, starting before the end)
    from ``cuts`` to ``to`` walks."""
    return abs(to[0] - cuts[0]) + abs(to[1] - cuts[1])


@njit(cache=True)
def _apply_run(
    order: np.ndarray,
    run: tuple[int, int],
    on: np.ndarray,
    slot: np.ndarray,
    entries: tuple[np.ndarray, np.ndarray, np.ndarray],
    room: tuple[np.ndarray, np.ndarray],
    sign: int,
) -> None:
    """Add (sign 1) or take (sign -1) the entries of the bookings ``order[run[0]:run[1]]``
    that are on (``on``) to or from ``room``."""
    at, take_c, take_g = entries
    room_c, room_g = room
    for x in range(run[0], run[1]):
        b = order[x]
        if on[b]:
            for k in range(slot[2 * b], slot[2 * b + 1]):
                room_c[at[k]] += sign * take_c[k]
                room_g[at[k]] += sign * take_g[k]


@njit(cache=True)
def move_cuts(
    orders: tuple[np.ndarray, np.ndarray],
    cuts: tuple[int, int],
    to: tuple[int, int],
    bookings: tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]],
    room: tuple[np.ndarray, np.ndarray],
) -> None:
    """Move the room's cuts from ``cuts`` to ``to`` (positions in ``orders``: the bookings by
    end and by start): a booking passing the end cut enters the window's room (taken), one
    passing the start cut leaves it (given back); backwards the other way round.
    ``bookings``: which are on, their entry ranges and the entries (node, cores, GPUs)."""
    by_end, by_start = orders
    on, slot, entries = bookings
    if to[1] > cuts[1]:
        _apply_run(by_start, (cuts[1], to[1]), on, slot, entries, room, -1)
    else:
        _apply_run(by_start, (to[1], cuts[1]), on, slot, entries, room, 1)
    if to[0] > cuts[0]:
        _apply_run(by_end, (cuts[0], to[0]), on, slot, entries, room, 1)
    else:
        _apply_run(by_end, (to[0], cuts[0]), on, slot, entries, room, -1)
