"""A job read with one field changed for every job (the Slurm backends' site and fair-share
factors) made by :func:`rush.rjms.base.with_fields`: differential against main's
``dataclasses.replace`` over random jobs and changes, and through the real backend reading a
recorded squeue answer with an ``sprio`` that gives each pending job its factor."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rush.core.resources import Request
from rush.rjms.base import RJMSJob, get_backend, with_fields

NAMES = [f.name for f in dataclasses.fields(RJMSJob)]
# What Slurm 25.11's commands answered (tests/slurm/record_answers.py recorded them).
RECORDED = Path(__file__).resolve().parent / "recorded" / "25.11"


def recorded_squeue(tmp_path: Path) -> Path:
    """A bin directory whose squeue and scontrol print Slurm 25.11's recorded answers."""
    directory = RECORDED / "commands"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nodes_tool = (directory / "nodes-from").read_text().split()[0]
    for tool, answer in (("squeue", "jobs.json"), (nodes_tool, "nodes.json")):
        (bin_dir / tool).write_text(f"#!/bin/sh\ncat '{directory / answer}'\n")
        (bin_dir / tool).chmod(0o755)
    return bin_dir


def random_job(rng: np.random.Generator, job_id: int) -> RJMSJob:
    running = rng.random() < 0.3
    return RJMSJob(
        job_id,
        "RUNNING" if running else "PENDING",
        float(rng.integers(0, 10**6)),
        int(rng.integers(1, 64)),
        math.inf if rng.random() < 0.1 else float(rng.integers(60, 86_400)),
        start=float(rng.integers(0, 10**6)) if running else None,
        user=f"u{rng.integers(0, 5)}",
        account=str(rng.choice(["", "a", "b"])),
        tags={"idempotent": "1"} if rng.random() < 0.5 else {},
        held=bool(rng.random() < 0.1),
        site_factor=int(rng.integers(-5, 5)),
        priority=float(rng.integers(0, 100)),
        fairshare=None if rng.random() < 0.5 else float(rng.random()),
        request=Request(int(rng.integers(1, 4)), int(rng.integers(1, 8))) if rng.random() < 0.5 else None,
        allocation=(("n1", 4, 0),) if running else (),
    )


def same_as(made: RJMSJob, want: RJMSJob) -> None:
    """Equal, of the same class, its fields in the same order and each value the same object."""
    assert made == want and type(made) is type(want)
    assert list(vars(made)) == list(vars(want)) == NAMES
    assert all(getattr(made, n) is getattr(want, n) for n in NAMES)


@pytest.mark.parametrize("seed", range(25))
def test_with_fields_is_replace(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for job_id in range(1, 60):
        job = random_job(rng, job_id)
        changed = rng.choice(NAMES, size=int(rng.integers(0, 4)), replace=False).tolist()
        donor = random_job(rng, job_id + 1000)
        changes: dict[str, Any] = {name: getattr(donor, name) for name in changed}
        made = with_fields(job, **changes)
        same_as(made, replace(job, **changes))
        assert made is not job  # a new job, as replace gives
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.site_factor = 1  # type: ignore[misc]


def test_a_name_that_is_no_field_and_a_subclass_go_through_replace() -> None:
    job = RJMSJob(1, "PENDING", 0.0, 1, 60.0)
    with pytest.raises(TypeError):
        with_fields(job, site_factr=3)

    @dataclasses.dataclass(frozen=True)
    class Checked(RJMSJob):
        def __post_init__(self) -> None:
            if self.site_factor < 0:
                raise ValueError("negative site factor")

    checked = Checked(1, "PENDING", 0.0, 1, 60.0)
    assert type(with_fields(checked, site_factor=2)) is Checked
    with pytest.raises(ValueError, match="negative"):
        with_fields(checked, site_factor=-1)


def test_the_backend_reads_each_pending_jobs_site_factor_as_replace_did(tmp_path) -> None:
    """A recorded squeue answer through the real command backend, with an sprio script giving
    each pending job a factor: the jobs equal main's (every job parsed, then ``replace``)."""
    bin_dir = recorded_squeue(tmp_path)
    plain = get_backend("slurm", priority_lever="site_factor", bin_dir=str(bin_dir)).read_state()
    pending = [j.job_id for j in plain.jobs if j.state == "PENDING"]
    assert pending and all(j.site_factor == 0 for j in plain.jobs)
    factors = {job_id: 100 + k for k, job_id in enumerate(pending)}
    lines = "".join(f"{job_id} {f}\\n" for job_id, f in factors.items())
    (bin_dir / "sprio").write_text(f"#!/bin/sh\nprintf '{lines}'\n")
    (bin_dir / "sprio").chmod(0o755)
    state = get_backend("slurm", priority_lever="site_factor", bin_dir=str(bin_dir)).read_state()
    want = [replace(j, site_factor=factors.get(j.job_id, 0)) for j in plain.jobs]
    assert (
        len(state.jobs) == len(want) == len(json.loads((RECORDED / "manifest.json").read_text())["jobs"]) - 2
    )  # two finished
    for made, wanted in zip(state.jobs, want, strict=True):
        assert made == wanted and list(vars(made)) == NAMES
    assert sorted(j.site_factor for j in state.jobs if j.state == "PENDING") == sorted(factors.values())
