"""Per-second rates from successive counter readings, with wraparound and resets.

A counter that goes down either wrapped (it was in the upper half of its range, e.g. a
64-bit port counter or RAPL's ``max_energy_range_uj``) or was reset (driver reload,
reboot, ``perfquery -R``). A wrap yields ``(range - previous + current) / dt``; a reset
yields no rate for that interval (logged), since the work done across it is unknown.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable

log = logging.getLogger(__name__)
COUNTER_RANGE_64 = 2**64  # an int: 64-bit counters near the wrap do not fit a float exactly


class RateTracker:
    def __init__(self, counter_range: int | float = COUNTER_RANGE_64) -> None:
        self.counter_range = counter_range
        self._last: dict[Hashable, tuple[float, int | float]] = {}
        self.resets = 0

    def update(
        self, key: Hashable, timestamp: float, value: int | float, counter_range: int | float | None = None
    ) -> float | None:
        """Record a reading; return the rate since the previous one, or None.

        Pass counters as ints to keep 64-bit arithmetic exact.
        """
        limit = counter_range or self.counter_range
        previous = self._last.get(key)
        self._last[key] = (timestamp, value)
        if previous is None:
            return None
        t0, v0 = previous
        dt = timestamp - t0
        if dt <= 0:
            return None
        delta = value - v0
        if delta < 0:
            if v0 >= limit / 2:
                delta = limit - v0 + value
            else:
                self.resets += 1
                log.info("counter %s reset (%s -> %s): no rate for this interval", key, v0, value)
                return None
        return delta / dt
