"""Net freed room (rush.core.net_freed; issue 31, item 2): a window that meets no node's net
freed hull gains no room on that node, so a kept reservation need not search it.

The cover rule against brute force on random soft entries and added bookings; then the live
one-second cycles behind overdue jobs, with early ends and arrivals, deciding exactly as
searching every kept reservation from now (the pass that knows nothing freed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from rush.core.net_freed import add_booking, free_soft, net_hull, new_net_freed, widen_hard
from tests.core.test_kept_nodes_live import CONSERVATIVE, _blind, _initial, _pending, _plan
from tests.script_module import load_script

live = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "live_next_pass.py", "live_next_pass")


def _meets(window: tuple[float, float], t: float, d: float) -> bool:
    return window[0] < t + d and window[1] > t


def test_a_window_outside_the_net_hull_gains_no_room() -> None:
    outside = gaining = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        now = 100.0
        net = new_net_freed((np.full(2, np.inf), np.full(2, -np.inf)), 64)
        soft = []
        added = []
        for _ in range(int(rng.integers(1, 5))):
            t0 = float(rng.choice([60.0, 100.0, 110.0, 130.0, 150.0]))
            w = (t0, t0 + float(rng.choice([10.0, 20.0, 40.0])))
            take = (int(rng.integers(0, 3)), int(rng.integers(0, 2)))
            free_soft(net, 0, w, take)
            soft.append((w, take))
        for _ in range(int(rng.integers(0, 6))):
            t0 = float(rng.choice([100.0, 101.0, 110.0, 120.0, 130.0, 150.0, 170.0]))
            w = (t0, t0 + float(rng.choice([1.0, 10.0, 20.0, 50.0])))
            take = (int(rng.integers(0, 4)), int(rng.integers(0, 2)))
            add_booking(net, 0, w, take)
            added.append((w, take))
        hard = rng.random() < 0.2
        if hard:
            widen_hard(net, 0, (140.0, 160.0))
        lo, hi = net_hull(net, 0, now)
        assert not hard or (lo <= 140.0 and hi >= 160.0)
        assert net_hull(net, 1, now)[0] == np.inf  # another node: nothing freed
        for t in np.arange(now, 240.0, 0.5):
            for d in (0.5, 1.0, 5.0, 30.0):
                gain = [sum(k[i] for w, k in soft if _meets(w, t, d) and w[1] > now) for i in (0, 1)]
                loss = [sum(k[i] for w, k in added if _meets(w, t, d)) for i in (0, 1)]
                if _meets((lo, hi), t, d):  # the hull holds the hard room too
                    gaining += gain[0] > loss[0] or gain[1] > loss[1]
                    continue
                outside += 1
                assert gain[0] <= loss[0] and gain[1] <= loss[1], (seed, t, d, lo, hi)
    assert outside > 10_000 and gaining > 1_000  # both sides of the rule are exercised


def test_one_second_cycles_decide_as_searching_every_kept_reservation_from_now(monkeypatch) -> None:
    # Many cycles one second apart behind jobs past their estimates (their bookings tick on,
    # the reservations right behind them fail and are placed again: the room they free is taken
    # back by the tick and their new bookings), with early ends and arrivals.
    for seed in range(24):
        rng = np.random.default_rng(900 + seed)
        snapshot = _initial(rng)
        overdue = tuple(
            replace(r, start=snapshot.now - r.requested_time - 5.0) if rng.random() < 0.6 else r
            for r in snapshot.running
        )
        snapshot = replace(snapshot, running=overdue)
        decided = live_schedule(snapshot)
        for _ in range(6):
            snapshot = live.next_snapshot(snapshot, decided, int(rng.integers(0, 2)), kept=True, step=1.0)
            arrivals = _pending(
                rng, 1000 + int(rng.integers(0, 10**6)) * 100, int(rng.integers(0, 2)), snapshot.now
            )
            snapshot = replace(snapshot, pending=(*snapshot.pending, *arrivals))
            with monkeypatch.context() as patch:
                _blind(patch)
                blind = live_schedule(snapshot)
            informed = live_schedule(snapshot)
            assert _plan(informed) == _plan(blind), seed
            decided = informed


def live_schedule(snapshot):
    from rush.core.schedule import schedule

    return schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
