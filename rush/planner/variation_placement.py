"""The variation predictor at the nodes a job would get (issue 20 §3): live, as in the study.

A pending job has no nodes, but the core decides where it would start. When the variation
predictor reads job-node windows (``uses_job_nodes``: a learned model trained on job-node
features), :func:`predict_at_placement`

1. runs the core's pass once with no job flagged,
2. reads each would-start job's nodes from the decisions (its tentative placement),
3. predicts on those nodes' window (``predict_on``) and reruns the pass with the answers,
   until no unasked job starts (a flag only matters for a job the pass would start now:
   the core skips exactly those, so asking the others changes nothing),

and leaves the flags in the snapshot, whose pass the planner then runs as usual: its
decisions are those of the last rerun. The contention simulator's shell does the same
(:mod:`rush.contention.shell`).

With ``placement = "variability"`` each node's ``quiet`` comes from the predictor's
``quiet_leaves`` per leaf switch (the rule is documented in :mod:`rush.planner.variation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import repeat
from typing import Any

import numpy as np

from rush.core.config import CoreConfig
from rush.core.job_columns import PendingRows
from rush.core.resources import Node
from rush.core.schedule import schedule
from rush.core.snapshot import Snapshot
from rush.planner.snapshot_builder import Built
from rush.rjms.base import ClusterState

# Reruns are bounded: each asks about at least one new job, so this only guards odd predictors.
MAX_RERUNS = 64


def quiet_nodes(nodes: Sequence[Node], predictor: Any, now: float) -> tuple[Node, ...]:
    """``nodes`` with ``quiet`` set per leaf from ``predictor.quiet_leaves``."""
    leaves: dict[int, list[str]] = {}
    for node in nodes:
        leaves.setdefault(node.leaf, []).append(node.name)
    quiet = predictor.quiet_leaves(now, leaves)
    return tuple(replace(n, quiet=bool(quiet.get(n.leaf, True))) for n in nodes)


def predict_at_placement(built: Built, predictor: Any, config: CoreConfig, state: ClusterState) -> Built:
    """``built`` with Node.quiet per leaf (variability-aware placement) and, for a predictor
    reading job-node windows, the flags predicted at each would-start job's placement."""
    snapshot = built.snapshot
    if predictor is None or not snapshot.nodes or not snapshot.pending:
        return built
    if config.placement == "variability" and hasattr(predictor, "quiet_leaves"):
        snapshot = replace(snapshot, nodes=quiet_nodes(snapshot.nodes, predictor, snapshot.now))
    if getattr(predictor, "uses_job_nodes", False) and hasattr(predictor, "predict_on"):
        snapshot = _flags_at_placement(built, snapshot, predictor, config, state)
    built.snapshot = snapshot
    return built


def _flags_at_placement(
    built: Built, snapshot: Snapshot, predictor: Any, config: CoreConfig, state: ClusterState
) -> Snapshot:
    jobs = {j.job_id: j for j in state.jobs}
    answers: dict[int, bool] = {}
    for _ in range(MAX_RERUNS):
        trial = _with_flags(snapshot, answers)
        decisions = schedule(trial, config, explain_priorities=False)
        unasked = [
            d for d in decisions.decisions if d.action in ("start", "backfill") and d.job_id not in answers
        ]
        if not unasked:
            break
        flags = predictor.predict_on(
            [jobs[d.job_id] for d in unasked], snapshot.now, [d.nodes for d in unasked]
        )
        for d, flag in zip(unasked, flags, strict=True):
            answers[d.job_id] = bool(flag)
            # A copy: the snapshot builder shares one outputs dictionary among jobs alike.
            outputs = built.outputs[d.job_id] = dict(built.outputs.get(d.job_id, {}))
            outputs.update(predictor.job_outputs(d.job_id) if hasattr(predictor, "job_outputs") else {})
    # Jobs not asked whose outputs were one dictionary (the builder shares one among jobs alike)
    # share one new one: id of the old -> (the old, kept alive while its id is a key; the new).
    not_asked: dict[int, tuple[dict, dict]] = {}
    for job_id in _job_ids(snapshot.pending):
        before = built.outputs.get(job_id, _NONE)
        if job_id in answers:
            outputs = built.outputs[job_id] = dict(before)
            outputs["variable"] = answers[job_id]
            outputs["variation_scope"] = "job nodes at the tentative placement"
            continue
        shared = not_asked.get(id(before))
        if shared is None:
            outputs = dict(before)
            outputs["variable"] = False
            # The all-node prediction the builder made is not this model's answer: drop it.
            for key in _ALL_NODE_OUTPUTS:
                outputs.pop(key, None)
            outputs["variation_scope"] = "job nodes: not asked (would not start now)"
            shared = not_asked[id(before)] = (before, outputs)
        built.outputs[job_id] = shared[1]
    return _with_flags(snapshot, answers)


# A job's journal outputs of the builder's all-node variation prediction.
_ALL_NODE_OUTPUTS = (
    "variation_class",
    "variation_p",
    "variation_reason",
    "variation_imputed",
    "variation_rule",
    "variation_threshold",
    "variation_threshold_nodes",
)
_NONE: dict = {}


def _job_ids(pending) -> list[int]:
    """The pending jobs' ids, from their columns when given as such (no core job made)."""
    if isinstance(pending, PendingRows):
        return pending.columns.job_id.tolist()
    return [p.job_id for p in pending]


def _with_flags(snapshot: Snapshot, answers: dict[int, bool]) -> Snapshot:
    """``snapshot`` with each pending job flagged as ``answers`` says (False where not asked):
    jobs given as columns get a new ``variable`` column, each core job made only when read."""
    pending = snapshot.pending
    if isinstance(pending, PendingRows):
        ids = pending.columns.job_id.tolist()
        flags = np.fromiter(map(answers.get, ids, repeat(False)), dtype=np.bool_, count=len(ids))
        return replace(snapshot, pending=pending.with_column("variable", flags))
    return replace(
        snapshot, pending=tuple(replace(p, variable=answers.get(p.job_id, False)) for p in pending)
    )
