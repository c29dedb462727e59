"""Flux's job states (flux/job.h, a bit each) and urgency levels."""

from __future__ import annotations

# flux/job.h: job states (a bit each) and the virtual "pending"/"running" masks.
STATE_DEPEND, STATE_PRIORITY, STATE_SCHED, STATE_RUN, STATE_CLEANUP, STATE_INACTIVE = 2, 4, 8, 16, 32, 64
STATE_PENDING = STATE_DEPEND | STATE_PRIORITY | STATE_SCHED
STATE_RUNNING = STATE_RUN | STATE_CLEANUP
URGENCY_HOLD, URGENCY_DEFAULT, URGENCY_EXPEDITE = 0, 16, 31
