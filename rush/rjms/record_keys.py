"""A record's values as bytes, exactly: what the backends compare to keep a job between reads
(Slurm's :class:`rush.rjms.slurm_json.ParsedJobs`, the Flux backend's kept jobs)."""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from itertools import repeat
from typing import Any


def record_key(record: dict[str, Any], names: Sequence[str]) -> bytes | None:
    """The values of a record's fields ``names``, exactly: marshal (version 2) writes each
    value's type, dict key order and float bits (1, 1.0, true and "1" differ, so do 0.0 and
    -0.0) and ``marshal.loads`` gives them back, so equal keys are strictly equal values; an
    absent field is an Ellipsis (JSON has none, so absent and null differ). ``None`` for a
    value marshal refuses (a subclass, a nesting too deep): not kept."""
    try:
        return marshal.dumps(tuple(map(record.get, names, repeat(...))), 2)
    except ValueError:
        return None
