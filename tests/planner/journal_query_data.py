"""Journals with known contents for the ``rush explain`` / ``rush status`` tests, written through
the daemon's own :class:`~rush.planner.journal.Journal` (its schema, its row formats)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rush.core.config import CoreConfig
from rush.models.policies.heuristic_file import parse_policy_text
from rush.planner.journal import DecisionRow, JobRecord, Journal, QueueRow
from rush.planner.queue_view import describe_core

T0 = 1_700_000_000.0  # the first cycle's time
ORIGIN = T0 - 86400.0


def queue_row(job_id: int, **fields: object) -> QueueRow:
    values: dict[str, object] = dict(
        job_id=job_id,
        time=T0,
        cycle=1,
        state="pending",
        user="alice",
        account="physics",
        partition="batch",
        submit=T0 - 3600,
        procs=4,
        requested_time=7200.0,
        estimate=None,
        runtime_class=-1,
        fairshare=None,
        priority=None,
        priority_group=1,
        priority_key=T0 - 3600 - ORIGIN,
        estimated_start=None,
        estimate_basis=None,
        waits_behind=None,
        first_estimated_start=None,
        first_estimated_at=None,
        start=None,
        model_outputs=None,
    )
    values.update(fields)
    return QueueRow(**values)  # type: ignore[arg-type]


@dataclass
class Decision:
    job_id: int
    action: str
    reason: str
    status: str = "advice"
    time: float = T0
    cycle: int = 1
    value: float | None = None
    outputs: dict | None = None
    answer: str = ""


@dataclass
class JournalContents:
    queue: list[QueueRow] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    records: list[JobRecord] = field(default_factory=list)
    policy: str = "FCFS"
    core: dict = field(default_factory=dict)  # CoreConfig keyword arguments


def write_journal(path: Path, contents: JournalContents) -> Path:
    clock = [T0]
    journal = Journal(path, clock=lambda: clock[0])
    config = CoreConfig.from_names(parse_policy_text(contents.policy), **contents.core)
    journal.set_meta("core_config", describe_core(config, contents.policy))
    journal.set_meta("time_origin", repr(ORIGIN))
    journal.record_queue(contents.queue)
    with journal.transaction():
        for d in contents.decisions:
            clock[0] = d.time
            row = DecisionRow(d.cycle, d.job_id, d.action, d.reason, d.value, d.outputs, "apply")
            journal.record(row, d.status, d.answer)
        for rec in contents.records:
            journal.save_job(rec)
    journal.close()
    return path


def outputs(**values: object) -> str:
    return json.dumps(values, sort_keys=True)
