"""Per-second rates from successive counter readings, with wraparound and resets.

A counter that goes down either wrapped past the top of its range (``2**64`` for 64-bit
port counters, ``2**32`` for old 32-bit ones, RAPL's ``max_energy_range_uj``) or was reset
(driver reload, reboot, ``perfquery -R``). The two are told apart by plausibility: a wrap
means the counter advanced by ``range - previous + current``, which must be less than
half the range (a counter sampled often enough never moves by more between readings).
A drop that would need a larger advance is a reset: no rate for that interval (the work
done across it is unknown), logged and counted in ``resets``. The first reading of a
counter emits nothing.

A reading is refused (no rate, the baseline untouched, counted in ``rejected`` by reason and
logged once per reason) when its time is not finite or lies more than ``max_future`` seconds
(default 300) after the tracker's clock, or its value is not a finite number in
``[0, range)``. Without this one row stamped in the far future (a bad node clock, a corrupt
LDMS line) would become the baseline, and every later, correct reading would look out of
order and be dropped until a restart.
"""

from __future__ import annotations

import logging
import math
import numbers
import time
from collections.abc import Callable, Hashable, Iterable

from rush.collect.base import Sample

log = logging.getLogger(__name__)
COUNTER_RANGE_64 = 2**64  # ints: 64-bit counters near the top do not fit a float exactly
COUNTER_RANGE_32 = 2**32


MAX_FUTURE_S = 300.0  # clock skew tolerated between a reading's source and this host


class RateTracker:
    """Remembers the last reading per key; ``update`` returns the rate since it."""

    def __init__(
        self,
        counter_range: int | float = COUNTER_RANGE_64,
        *,
        max_future: float = MAX_FUTURE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.counter_range = counter_range
        self.max_future = max_future
        self.clock = clock
        self._last: dict[Hashable, tuple[float, int | float]] = {}
        self.resets = 0
        self.wraps = 0
        # Readings refused by reason: "future_time", "bad_time", "bad_value".
        self.rejected: dict[str, int] = {}

    def _reject(self, reason: str, key: Hashable, timestamp: float, value: object) -> None:
        if reason not in self.rejected:
            log.warning("counter %s: reading refused (%s): time %r, value %r", key, reason, timestamp, value)
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def _valid(self, key: Hashable, timestamp: float, value: int | float, limit: int | float) -> bool:
        try:
            finite = isinstance(timestamp, numbers.Real) and math.isfinite(timestamp)
        except OverflowError:  # an int beyond float range
            finite = False
        if not finite:
            self._reject("bad_time", key, timestamp, value)
            return False
        if timestamp > self.clock() + self.max_future:
            self._reject("future_time", key, timestamp, value)
            return False
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)  # numpy numbers too; not text or Decimal
            or not (0 <= value < limit)  # also false for NaN
        ):
            self._reject("bad_value", key, timestamp, value)
            return False
        return True

    def update(
        self, key: Hashable, timestamp: float, value: int | float, counter_range: int | float | None = None
    ) -> float | None:
        """Record a reading; return the per-second rate since the previous one, or None.

        None for the first reading of ``key``, a reading not after the previous one, a
        refused reading (module docstring) and a reset. Pass counters as ints to keep 64-bit arithmetic exact. ``counter_range``
        overrides the tracker's range for this counter (RAPL zones each have their own).
        """
        limit = counter_range or self.counter_range
        if not self._valid(key, timestamp, value, limit):
            return None
        previous = self._last.get(key)
        if previous is not None and timestamp <= previous[0]:
            return None  # a repeated or out-of-order reading: keep the older baseline
        self._last[key] = (timestamp, value)
        if previous is None:
            return None
        t0, v0 = previous
        delta = value - v0
        if delta < 0:
            wrapped = limit - v0 + value
            if 0 <= wrapped < limit / 2:
                self.wraps += 1
                delta = wrapped
            else:
                self.resets += 1
                log.info("counter %s reset (%s -> %s): no rate for this interval", key, v0, value)
                return None
        return delta / (timestamp - t0)

    def rate_samples(self, counters: Iterable[Sample], suffix: str = "") -> list[Sample]:
        """Counter samples in, rate samples out, keyed by (host, source, metric).

        The rate keeps the counter's host, source and timestamp; its metric is the
        counter's name plus ``suffix`` (e.g. ``"_per_s"``).
        """
        rates = []
        for s in counters:
            rate = self.update((s.host, s.source, s.metric), s.timestamp, s.value)
            if rate is not None:
                rates.append(Sample(s.timestamp, s.host, s.source, s.metric + suffix, rate))
        return rates

    def forget(self, key: Hashable) -> None:
        """Drop a counter's baseline (its device went away)."""
        self._last.pop(key, None)
