"""The queue as rush sees it, one journal row per job: what ``rush status`` lists and
``rush explain`` starts from.

A cycle's rows come from the RJMS's read (owner, account, state), the snapshot the core saw
(inputs) and the core's decisions (priority value, group and key, estimated start, why, the
job it waits behind). Only rows that changed are written; the first estimate made for a job
is kept, so its accuracy can be measured against its real start.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, is_dataclass

from rush.core.config import CoreConfig
from rush.core.job_columns import PendingRows, pending_columns
from rush.core.priority_terms import JobInputs, priority_terms
from rush.core.runtime_predictions import correction_code, running_estimate
from rush.core.snapshot import Decisions
from rush.planner.journal import QueueRow
from rush.planner.snapshot_builder import Built
from rush.rjms.base import ClusterState, RJMSJob


@dataclass(frozen=True)
class QueueView:
    cycle: int
    now: float
    state: ClusterState
    built: Built
    decisions: Decisions
    config: CoreConfig
    policy_text: str  # the policy as the site wrote it


def terms_json(config: CoreConfig, policy_text: str, job: JobInputs, now: float, time_origin: float) -> str:
    """The terms of a job's priority at ``now``, as rush explain shows them (JSON)."""
    # The encoder turns the nested dataclasses into objects itself (asdict's deep copy cost
    # more than the rest of a job's first journal row).
    terms = dict(vars(priority_terms(config, job, now, time_origin)))
    terms["policy"] = config.policy.name
    terms["policy_text"] = policy_text
    return json.dumps(terms, default=_plain, sort_keys=True)


def _plain(value: object) -> object:
    return vars(value) if is_dataclass(value) else float(value)  # type: ignore[arg-type]


# A pending job's values its row reads from the pass's columns: its own estimate (None: none),
# runtime class and fairshare factor (None: the RJMS gave none), as its core job holds them.
Pending = tuple[float | None, int, float | None]


def _pending_of(view: QueueView) -> dict[int, Pending]:
    """Each pending job's row values by job id, read from the pass's pending columns (the
    builder's, so that no core job is made for a job no decision names)."""
    pending = view.built.snapshot.pending
    columns = pending.columns if isinstance(pending, PendingRows) else pending_columns(pending)
    estimates, fairshares = columns.as_given("estimate"), columns.as_given("fairshare")
    values = zip(estimates, columns.runtime_class.tolist(), fairshares, strict=True)
    return dict(zip(columns.job_id.tolist(), values, strict=True))


def _inputs(job: RJMSJob, p: Pending) -> JobInputs:
    """The priority inputs of pending ``job`` (its core job's: submit, procs and request the
    RJMS's, the estimate its own or else the request)."""
    estimate = job.requested_time if p[0] is None else p[0]
    return JobInputs(job.submit, job.procs, estimate, p[1], p[2])


def describe_core(config: CoreConfig, policy_text: str) -> str:
    """The core's configuration as JSON, with the policy as the site wrote it."""
    fields = asdict(config)
    fields.pop("policy", None)
    fields.pop("backfill_policy", None)
    return json.dumps({"policy": policy_text, **fields}, default=str, sort_keys=True)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _running_estimates(view: QueueView) -> dict[int, float]:
    """Running jobs' predicted lengths as the core's projection uses them (a prediction the run
    outlived, corrected by the configured rule): what ``rush explain`` ends them at."""
    code = correction_code(view.config.prediction_correction)
    now = view.now
    return {
        r.job_id: float(running_estimate(code, float(r.estimate), now - r.start, float(r.requested_time)))
        for r in view.built.snapshot.running
        if r.estimate is not None
    }


# A job's row inputs at the last pass: (its RJMSJob, its pending values, outputs, their JSON,
# the decisions' values); the RJMSJob and outputs are compared by identity (the Flux module and
# the snapshot builder keep them while a job is unchanged).
RowInputs = tuple[RJMSJob, "Pending | None", "dict | None", "str | None", tuple]


def queue_rows(
    view: QueueView, previous: dict[int, QueueRow], inputs: dict[int, RowInputs] | None = None
) -> list[QueueRow]:
    """The rows that changed since ``previous`` (the rows last written, by job id), with
    jobs that left the queue marked ``gone``. ``inputs``, when given, holds each job's row
    inputs from the last call (replaced by this call's): a job whose inputs are the same
    objects and values has the same row, so it is not rebuilt, and its outputs' JSON is
    encoded again only when they changed (a pass over 10 000 pending jobs rebuilt every row)."""
    d = view.decisions
    pending = _pending_of(view)
    running_now = _running_estimates(view)
    changed: list[QueueRow] = []
    seen = set()
    last = inputs if inputs is not None else {}
    now_inputs: dict[int, RowInputs] = {}
    for job in view.state.jobs:
        seen.add(job.job_id)
        old = previous.get(job.job_id)
        p = pending.get(job.job_id)
        running = job.state != "PENDING" and job.start is not None
        estimated = None if running else _finite(d.estimated_start.get(job.job_id))
        outputs = view.built.outputs.get(job.job_id)
        values = (
            estimated,
            running_now.get(job.job_id) if running else None,
            d.priority.get(job.job_id),
            d.priority_group.get(job.job_id),
            d.priority_key.get(job.job_id),
            None if running else d.estimate_basis.get(job.job_id),
            None if running else d.waits_behind.get(job.job_id),
        )
        hit = last.get(job.job_id)
        if hit is not None and hit[2] is outputs:
            encoded = hit[3]
        else:
            encoded = None if outputs is None else json.dumps(outputs, default=str, sort_keys=True)
        now_inputs[job.job_id] = (job, p, outputs, encoded, values)
        if old is not None and hit is not None and hit[0] is job and hit[1] == p and hit[2] is outputs:
            if hit[4] == values:
                continue  # the row it gave last time, still in ``previous``
        first_at = old.first_estimated_at if old is not None else None
        first = old.first_estimated_start if old is not None else None
        if first_at is None and estimated is not None:
            first, first_at = estimated, view.now
        row = QueueRow(
            job_id=job.job_id,
            time=view.now,
            cycle=view.cycle,
            state="running" if running else "pending",
            user=job.user,
            account=job.account,
            partition=job.partition,
            submit=job.submit,
            procs=job.procs,
            requested_time=job.requested_time,
            estimate=running_now.get(job.job_id) if running else None if p is None else p[0],
            runtime_class=-1 if p is None else p[1],
            fairshare=None if p is None else p[2],
            priority=d.priority.get(job.job_id),
            priority_group=d.priority_group.get(job.job_id),
            priority_key=d.priority_key.get(job.job_id),
            estimated_start=estimated,
            estimate_basis=None if running else d.estimate_basis.get(job.job_id),
            waits_behind=None if running else d.waits_behind.get(job.job_id),
            first_estimated_start=first,
            first_estimated_at=first_at,
            start=job.start if running else None,
            model_outputs=encoded,
        )
        if p is not None and row.priority_key is not None:
            # Recomputed only when the key or group moved (a static policy: once).
            same = old is not None and (old.priority_key, old.priority_group) == (
                row.priority_key,
                row.priority_group,
            )
            if same:
                row = row._replace(priority_terms=old.priority_terms)
            else:
                origin = view.built.snapshot.time_origin
                terms = terms_json(view.config, view.policy_text, _inputs(job, p), view.now, origin)
                row = row._replace(priority_terms=terms)
        if old is None or row[3:] != old[3:]:
            changed.append(row)
    for job_id, old in previous.items():
        if job_id not in seen and old.state != "gone":
            changed.append(old._replace(time=view.now, cycle=view.cycle, state="gone"))
    if inputs is not None:
        inputs.clear()
        inputs.update(now_inputs)
    return changed
