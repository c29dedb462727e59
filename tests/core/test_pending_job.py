"""``pending_job`` (the live shells' quick way to make a PendingJob) makes the constructor's job:
equal, same hash, same fields and defaults, immutable, and as ``dataclasses.replace`` sees it."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pytest

from rush.core import PendingJob, RuntimeClass
from rush.core.resources import Request
from rush.core.snapshot import pending_job


def random_fields(rng: np.random.Generator) -> dict[str, object]:
    """Some of PendingJob's fields, random values; the rest left to their defaults."""
    every = {
        "job_id": int(rng.integers(1, 10**6)),
        "submit": float(rng.uniform(0, 1e6)),
        "procs": int(rng.integers(1, 100)),
        "requested_time": float(rng.uniform(1, 1e5)),
        "estimate": None if rng.random() < 0.5 else float(rng.uniform(1, 1e5)),
        "runtime_class": RuntimeClass(int(rng.integers(-1, 2))),
        "idempotent": bool(rng.random() < 0.5),
        "variable": bool(rng.random() < 0.5),
        "skips": int(rng.integers(0, 5)),
        "user": int(rng.integers(-1, 50)),
        "requeues": int(rng.integers(0, 3)),
        "reserved_at": math.inf if rng.random() < 0.5 else float(rng.uniform(0, 1e6)),
        "request": None if rng.random() < 0.5 else Request(int(rng.integers(1, 4)), int(rng.integers(1, 9))),
        "rjms_priority": float(rng.integers(0, 100)),
        "fairshare": None if rng.random() < 0.5 else float(rng.random()),
    }
    required = ("job_id", "submit", "procs", "requested_time")
    return {k: v for k, v in every.items() if k in required or rng.random() < 0.6}


@pytest.mark.parametrize("seed", range(20))
def test_pending_job_is_the_constructors_job(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(20):
        fields = random_fields(rng)
        quick, made = pending_job(**fields), PendingJob(**fields)
        assert type(quick) is PendingJob
        assert quick == made and hash(quick) == hash(made) and repr(quick) == repr(made)
        for f in dataclasses.fields(PendingJob):
            assert getattr(quick, f.name) == getattr(made, f.name) or (
                getattr(made, f.name) != getattr(made, f.name)  # a NaN default would differ from itself
            )
        assert dataclasses.replace(quick, skips=7) == dataclasses.replace(made, skips=7)
        assert pickle.loads(pickle.dumps(quick)) == made
        with pytest.raises(dataclasses.FrozenInstanceError):
            quick.skips = 3  # type: ignore[misc]
