"""The simulator: replays a workload through the core's decisions.

    simulate(workload, config, inputs=None, progress=False) -> SimResult

The event loop (:mod:`rush.simulator.loop`) holds only time and state; ordering, backfilling,
skip-with-limit and false-small kills are the core's (:mod:`rush.core`). Model outputs
enter through :class:`SimInputs`, the extension point for runtime predictions.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from rush.core.config import CoreConfig
from rush.core.fairshare import Associations, DecayedFairShare, associations, fair_share_tree, no_fair_share
from rush.core.gaussier_online import CV_LOSS, checked_loss
from rush.core.names import LINEAR_FEATURES, NEUTRAL_FAIRSHARE
from rush.core.node_pool import NodeRequests, NodeView, new_slots
from rush.core.node_view import node_view, procs_only_view, uniform_pool
from rush.core.ordering import static_keys
from rush.core.pass_data import OrderPolicy, order_policy, pass_config
from rush.core.policies import Policy
from rush.core.runtime_predictions import (
    JITTER_OFF,
    ONLINE_GAUSSIER,
    ONLINE_RULES,
    PREDICTION_SCOPES,
    SCOPE_BACKFILL,
    correction_code,
    ranking_runtimes,
)
from rush.errors import RushError
from rush.simulator.loop import KillRules, SimJobs, VariabilityWindows, run_simulation
from rush.simulator.result import SimResult
from rush.workload.model import Workload


@dataclass
class SimInputs:
    """Per-job inputs from models, aligned with the workload (submit order).

    * ``estimate``: runtime predictions replacing p~ for scheduling (kills stay at p~); with
      ``CoreConfig.prediction_correction`` a running job that outlives its estimate gets a
      corrected one (:mod:`rush.core.runtime_predictions`). Predictions from a runtime
      predictor come from :func:`rush.models.runtime_predictors.predict_walkforward`.
    * ``runtime_class``: predicted class per job (0 small, 1 large, -1 unknown); used with
      ``CoreConfig.use_classes`` and ``kill_false_small``.
    * ``idempotent``: opt-in mask for false-small kills (default: every job opted in).
    * ``sensitive``: jobs the variation predictor watches (skip-with-limit).
    * ``variable_intervals``: (k, 2) sorted, disjoint [start, end) times during which
      sensitive jobs are predicted to suffer variability.
    * ``divider``: per-job class divider in force when the job was classified (a weekly
      retrained classifier changes it); overrides ``CoreConfig.divider``.
    * ``reservations`` (n, K) and ``reservation_counts`` (n,): speculative reservations. Job j
      with ``c = reservation_counts[j] > 0`` runs its attempts with the time limits
      ``reservations[j, :c]`` (increasing, > 0) instead of its walltime: killed at a limit it
      would exceed, its work lost, requeued with its original submit time and the next limit
      (:mod:`rush.core.speculative_reservations`); the last limit's kill is final. Backfilling sees
      min(estimate, current limit); the queue order sees ``estimate`` as given.
    * ``rank_estimate``: runtime predictions that only rank jobs: the queue order and the
      backfill scan of a time-independent policy (SPF, SAF, ...) see them, the reservations and
      the backfill test keep ``estimate`` (rank on predictions, plan on limits:
      :func:`rush.core.runtime_predictions.ranking_runtimes`, its guard included).
    * ``fairshare``: the site's fair-share factor per job in [0, 1] (LINEAR's ``fairshare``
      term); default: neutral (0.5) for every job.
    * ``online_prediction``: a prediction source run inside the replay
      (:data:`rush.core.runtime_predictions.ONLINE_PREDICTIONS`): each job's estimate is
      computed at its arrival from what finished so far *in this replay*, instead of given up
      front: ``"easy++-online"``, its user's last two runs
      (:func:`rush.core.runtime_predictions.last_two_prediction`), as Tsafrir et al. ran EASY++;
      ``"gaussier-online"``, Gaussier et al.'s regression updated at every finished run, with
      the user's running jobs among its features (:mod:`rush.core.gaussier_online`), as their
      simulator ran it. Exclusive with ``estimate``, and with ``rank_estimate`` unless
      ``prediction_scope`` is ``"backfill"``.
    * ``prediction_scope`` (with ``online_prediction``;
      :data:`rush.core.runtime_predictions.PREDICTION_SCOPES`): ``"order-and-backfill"``
      (default) uses the online predictions everywhere a runtime is assumed; ``"backfill"``
      keeps the queue order on the request (or on ``rank_estimate``, then allowed: a
      time-independent order's keys given up front) and gives the predictions to the backfill
      scan, the backfill test and the head's reservation only (``sim/runtime_predictions``, H19).
    * ``prediction_jitter_seed`` (with ``online_prediction``; a study's, ``sim/runtime_predictions``
      round 26): 0 (default) leaves the predictions as made; a seed >= 1 multiplies each by an
      information-free 1 + e, |e| <= 0.1 %, as it becomes the job's estimate
      (:func:`rush.core.runtime_predictions.jittered_prediction`): the schedule's own noise.
    * ``gaussier_loss`` (with a ``gaussier-online`` source; a study's sensitivity grid, round 26):
      another of Gaussier et al.'s composite losses
      (:func:`rush.core.gaussier_online.composite_loss`); default their cross-validated E-Loss.
    * ``fair_share_model``: compute the factors during the replay instead, from the trace's
      users (and groups) and their decayed usage (:mod:`rush.core.fairshare`); exclusive with
      ``fairshare``. The run's ``attributes`` then hold each job's ``association`` and
      ``info["fair_share"]`` the associations (see
      :func:`rush.simulator.metrics.fair_share_summary`).
    """

    estimate: np.ndarray | None = None
    runtime_class: np.ndarray | None = None
    idempotent: np.ndarray | None = None
    sensitive: np.ndarray | None = None
    variable_intervals: np.ndarray | None = None
    divider: np.ndarray | None = None
    reservations: np.ndarray | None = None
    reservation_counts: np.ndarray | None = None
    rank_estimate: np.ndarray | None = None
    fairshare: np.ndarray | None = None
    fair_share_model: DecayedFairShare | None = None
    online_prediction: str | None = None
    prediction_scope: str = "order-and-backfill"
    prediction_jitter_seed: int = JITTER_OFF
    gaussier_loss: np.ndarray | None = None


def _study_knobs(inputs: SimInputs) -> tuple[int, np.ndarray]:
    """``inputs``' jitter seed and Gaussier loss, checked: each only with the online source it
    perturbs; a seed an integer >= 0; a loss six numbers."""
    seed = inputs.prediction_jitter_seed
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise RushError(
            f"the jitter seed must be an integer from 0 to 2**63 - 1, got {seed!r}",
            where="SimInputs.prediction_jitter_seed",
            fix="give 0 (no jitter) or a seed >= 1",
        )
    if seed != JITTER_OFF and inputs.online_prediction is None:
        raise RushError(
            "a prediction jitter without online predictions",
            where="SimInputs.prediction_jitter_seed",
            fix="give online_prediction too, or leave the seed at 0",
        )
    if inputs.gaussier_loss is None:
        return int(seed), CV_LOSS
    loss = np.ascontiguousarray(inputs.gaussier_loss, dtype=np.float64)
    if ONLINE_RULES.get(inputs.online_prediction or "", 0) < ONLINE_GAUSSIER or loss.shape != CV_LOSS.shape:
        raise RushError(
            f"a Gaussier loss of shape {loss.shape} with online prediction {inputs.online_prediction!r}",
            where="SimInputs.gaussier_loss",
            fix="build it with rush.core.gaussier_online.composite_loss and give a gaussier-online source",
        )
    return int(seed), checked_loss(loss, "SimInputs.gaussier_loss")


def _history_users(workload: Workload, inputs: SimInputs) -> np.ndarray:
    """Each job's user as an index of the replay's per-user history (-1: unknown user) when
    ``inputs.online_prediction`` asks for predictions from the replay's completions; else empty."""
    source = inputs.online_prediction
    if source is None:
        return np.zeros(0, dtype=np.int64)
    where = "SimInputs.online_prediction"
    if source not in ONLINE_RULES:
        raise RushError(
            f"unknown online prediction source {source!r}",
            where=where,
            fix=f"use one of: {', '.join(ONLINE_RULES)}",
        )
    ranked_apart = inputs.rank_estimate is not None and _scope(inputs) != SCOPE_BACKFILL
    if inputs.estimate is not None or ranked_apart:
        raise RushError(
            "online predictions set the jobs' estimates; estimate or rank_estimate was given too",
            where=where,
            fix="give the predictions up front (estimate) or compute them in the replay, not both "
            "(rank_estimate goes with prediction_scope='backfill' only)",
        )
    user = np.asarray(workload.user, dtype=np.int64)
    known = user >= 0
    index = np.full(len(user), -1, dtype=np.int64)
    index[known] = np.unique(user[known], return_inverse=True)[1]
    return index


def _scope(inputs: SimInputs) -> int:
    """``inputs.prediction_scope``'s code (:data:`PREDICTION_SCOPES`), checked."""
    where = "SimInputs.prediction_scope"
    if inputs.prediction_scope not in PREDICTION_SCOPES:
        raise RushError(
            f"unknown prediction scope {inputs.prediction_scope!r}",
            where=where,
            fix=f"use one of: {', '.join(PREDICTION_SCOPES)}",
        )
    scope = PREDICTION_SCOPES[inputs.prediction_scope]
    if scope == SCOPE_BACKFILL and inputs.online_prediction is None:
        raise RushError(
            "a prediction scope without online predictions",
            where=where,
            fix="give online_prediction too, or leave prediction_scope at its default",
        )
    return scope


def _aligned(name: str, values: np.ndarray | None, n: int, default: np.ndarray, dtype: type) -> np.ndarray:
    if values is None:
        return default
    arr = np.ascontiguousarray(values, dtype=dtype)
    if arr.shape != (n,):
        raise RushError(
            f"{name} has shape {arr.shape}, the workload has {n} jobs",
            where=f"SimInputs.{name}",
            fix="give one value per job, in the workload's (submit, job_id) order",
        )
    return arr


def _reservation_arrays(inputs: SimInputs, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, K) limits and (n,) counts, checked: each job's first ``count`` limits increase and are > 0."""
    where = "SimInputs.reservations"
    if inputs.reservations is None and inputs.reservation_counts is None:
        return np.zeros((n, 1), dtype=np.float64), np.zeros(n, dtype=np.int64)
    if inputs.reservations is None or inputs.reservation_counts is None:
        raise RushError(
            "reservations and reservation_counts go together",
            where=where,
            fix="give both: an (n, K) array of limits and the number used per job (0: walltime)",
        )
    seq = np.ascontiguousarray(inputs.reservations, dtype=np.float64)
    if seq.ndim != 2 or seq.shape[0] != n or seq.shape[1] < 1:
        raise RushError(
            f"reservations has shape {seq.shape}, expected ({n}, K) with K >= 1",
            where=where,
            fix="one row per job in the workload's (submit, job_id) order, padded to the longest sequence",
        )
    counts = _aligned("reservation_counts", inputs.reservation_counts, n, np.zeros(n, np.int64), np.int64)
    if counts.min(initial=0) < 0 or counts.max(initial=0) > seq.shape[1]:
        raise RushError(
            f"reservation_counts must lie in [0, {seq.shape[1]}]", where="SimInputs.reservation_counts"
        )
    used = np.arange(seq.shape[1])[None, :] < counts[:, None]
    values = np.where(used, seq, 1.0)
    rising = np.where(used[:, 1:], np.diff(values, axis=1) > 0, True)
    bad = ~np.isfinite(values).all(axis=1) | (values <= 0).any(axis=1) | ~rising.all(axis=1)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise RushError(
            f"job #{j}'s reservations {seq[j, : counts[j]].tolist()} are not finite, > 0 and increasing",
            where=where,
            fix="give each job a strictly increasing sequence of positive limits",
        )
    return seq, counts


def _order_policy(
    policy: Policy, time_origin: float, workload: Workload, estimate: np.ndarray
) -> OrderPolicy:
    """A time-independent policy's keys are computed once for the whole trace."""
    if policy.dynamic:
        return order_policy(policy)
    keys = static_keys(
        policy.code, policy.weight_array(), time_origin, workload.submit, workload.procs, estimate
    )
    return order_policy(policy, keys)


def _node_view(workload: Workload, config: CoreConfig, nodes_per_leaf: int) -> NodeView:
    """The trace's machine as nodes and each job's request (SWF partitions are not node sets
    in the archive's logs, so every job may use every node)."""
    machine, requests = workload.machine, workload.requests
    if machine is None or requests is None or machine.nodes <= 0:
        raise RushError(
            "this workload does not say what nodes its machine has",
            where="workload.machine",
            fix="read the trace with workload_from_trace (SWF), or simulate on processor counts",
        )
    pool = uniform_pool(machine.nodes, machine.cores_per_node, nodes_per_leaf)
    n = len(workload)
    view = NodeRequests(
        np.ascontiguousarray(requests.nodes, dtype=np.int64),
        np.where(requests.nodes > 0, requests.cores_per_node, workload.procs).astype(np.int64),
        np.ascontiguousarray(requests.gpus_per_node, dtype=np.int64),
        np.ascontiguousarray(requests.exclusive, dtype=np.bool_),
        np.full(n, -1, dtype=np.int64),
    )
    return node_view(pool, view, new_slots(0, 0), config.placement)


# simulate(on_nodes=NODE_KERNELS): on the trace's nodes with the node kernels, even where the
# nodes are interchangeable.
NODE_KERNELS = "kernels"


def interchangeable_nodes(workload: Workload, config: CoreConfig, nodes_per_leaf: int | None = None) -> bool:
    """Whether no decision of a replay on the trace's nodes can depend on which nodes a job
    gets, so that the processor-count kernels decide exactly as the node kernels (issue 31):
    the simulator's machine is identical up nodes without GPUs or partitions, and either its
    nodes have one core (every request is then a count of cores) or every job asks for whole
    exclusive nodes and its processors are its nodes times their cores (free cores are then
    always whole idle nodes). EASY and list scheduling only: a conservative reservation needs
    the same nodes for its whole window, which a count profile does not see. First-fit
    placement only: it lets a job that ends by the shadow time take the head's blocked nodes
    first wherever they are, as the counts do; topology placement picks a leaf first, and
    variability-aware placement may start a flagged job on quiet nodes where the counts skip it.
    Topology placement on one leaf switch (``nodes_per_leaf`` 0, or at least the machine's
    nodes; ``None``: not known) is first-fit: the one leaf holds the job whenever the machine
    does, and its nodes are taken preferred first, then by index, as first-fit takes them."""
    machine, requests = workload.machine, workload.requests
    if machine is None or requests is None or machine.nodes <= 0:
        return False
    one_leaf = nodes_per_leaf is not None and (nodes_per_leaf == 0 or nodes_per_leaf >= machine.nodes)
    first_fit = config.placement == "first-fit" or (config.placement == "topology" and one_leaf)
    if config.backfill == "conservative" or not first_fit:
        return False
    if int(workload.machine_procs) != machine.nodes * machine.cores_per_node:
        return False
    if np.any(np.asarray(requests.gpus_per_node) != 0):
        return False
    nodes = np.asarray(requests.nodes)
    if machine.cores_per_node == 1:
        return bool(np.all((nodes == 0) | (np.asarray(workload.procs) == nodes)))
    whole = np.asarray(requests.exclusive) & (nodes > 0)
    return bool(np.all(whole & (np.asarray(workload.procs) == nodes * machine.cores_per_node)))


def simulate(
    workload: Workload,
    config: CoreConfig | None = None,
    inputs: SimInputs | None = None,
    *,
    time_origin: float = 0.0,
    progress: bool = False,
    label: str = "",
    on_nodes: bool | str = False,
    nodes_per_leaf: int = 0,
) -> SimResult:
    """Replay ``workload`` under ``config``. ``time_origin`` is F1-F4's trace start (SWF: 0).

    ``on_nodes``: schedule on the trace's nodes (``workload.machine``: whole nodes where the
    log allocated them, else one-core nodes, which decide as processor counts do), with
    leaf switches of ``nodes_per_leaf`` nodes for topology placement (0: one switch). Where
    the nodes are interchangeable (:func:`interchangeable_nodes`) the replay runs the
    processor-count kernels, whose decisions are then the same and several times faster;
    ``on_nodes=NODE_KERNELS`` runs the node kernels anyway (tests and benchmarks compare the two)."""
    if on_nodes not in (False, True, NODE_KERNELS):
        raise RushError(
            f"on_nodes={on_nodes!r}",
            where="simulate",
            fix=f"give False, True or {NODE_KERNELS!r} (the node kernels even on interchangeable nodes)",
        )
    node_kernels = on_nodes == NODE_KERNELS
    on_nodes = bool(on_nodes)
    config = config or CoreConfig()
    if config.max_jobs_considered is not None:
        raise RushError(
            "max_jobs_considered bounds the live pass only; the simulator replays every pass in full",
            where="max_jobs_considered",
            fix="leave it out of the configuration you replay",
        )
    inputs = inputs or SimInputs()
    n = len(workload)
    submit = np.ascontiguousarray(workload.submit, dtype=np.float64)
    runtime = np.ascontiguousarray(workload.runtime, dtype=np.float64)
    requested = np.ascontiguousarray(workload.requested_time, dtype=np.float64)
    procs = np.ascontiguousarray(workload.procs, dtype=np.int64)
    history_user = _history_users(workload, inputs)
    estimate = _aligned("estimate", inputs.estimate, n, requested, np.float64)
    runtime_class = _aligned(
        "runtime_class", inputs.runtime_class, n, np.full(n, -1, dtype=np.int64), np.int64
    )
    idempotent = _aligned("idempotent", inputs.idempotent, n, np.ones(n, dtype=np.bool_), np.bool_)
    sensitive = _aligned("sensitive", inputs.sensitive, n, np.zeros(n, dtype=np.bool_), np.bool_)
    scalar_divider = float(config.divider) if config.divider is not None else np.inf
    divider = _aligned("divider", inputs.divider, n, np.full(n, scalar_divider), np.float64)
    res_seq, res_count = _reservation_arrays(inputs, n)
    found = _associations(workload, inputs)
    fairshare = _aligned("fairshare", inputs.fairshare, n, np.full(n, NEUTRAL_FAIRSHARE), np.float64)
    if not np.all((fairshare >= 0.0) & (fairshare <= 1.0)):
        raise RushError(
            "a fair-share factor is outside [0, 1] (or NaN)",
            where="SimInputs.fairshare",
            fix="give factors in [0, 1], 1 for an association without usage",
        )
    intervals = (
        np.zeros((0, 2))
        if inputs.variable_intervals is None
        else np.asarray(inputs.variable_intervals, float)
    )
    if intervals.ndim != 2 or intervals.shape[1] != 2 or np.any(np.diff(intervals[:, 0]) < 0):
        raise RushError(
            "variable_intervals must be a sorted (k, 2) array of [start, end) times",
            where="SimInputs.variable_intervals",
        )
    if n and procs.max() > workload.machine_procs:
        raise RushError(
            f"a job needs {procs.max()} processors, the machine has {workload.machine_procs}",
            where="workload",
            fix="build the workload with workload_from_trace, which drops such jobs",
        )

    for named in (config.policy, config.scan_policy):
        if named.name == "RJMS":
            raise RushError(
                "the RJMS policy orders by the RJMS's own priority, which a trace does not have",
                where="policy",
                fix="simulate another policy (FCFS is what an RJMS without a priority plugin does)",
            )
    scope = _scope(inputs)
    jitter_seed, gaussier_loss = _study_knobs(inputs)
    rank = _aligned("rank_estimate", inputs.rank_estimate, n, estimate, np.float64)
    if inputs.rank_estimate is not None:
        ranked = (config.policy,) if scope == SCOPE_BACKFILL else (config.policy, config.scan_policy)
        dynamic = [p.name for p in ranked if p.dynamic]
        if dynamic:
            raise RushError(
                f"ranking predictions need a time-independent order; {dynamic[0]} depends on the wait",
                where="SimInputs.rank_estimate",
                fix="use a static policy and backfill order (SPF, SAF, FCFS), or give the predictions as estimate",
            )
        rank = ranking_runtimes(rank, estimate, requested)
    if scope == SCOPE_BACKFILL and config.policy.dynamic:
        raise RushError(
            f"the queue order keeps its own key under prediction_scope='backfill'; {config.policy.name} "
            "reads the (predicted) estimate at every pass",
            where="SimInputs.prediction_scope",
            fix="use a time-independent order (SPF, SAF, FCFS), or leave prediction_scope at its default",
        )
    order = _order_policy(config.policy, time_origin, workload, rank)
    scan = config.scan_policy
    # The scan keeps keys of its own when the predictions key it apart from the order.
    apart = scan != config.policy or scope == SCOPE_BACKFILL
    scan_order = _order_policy(scan, time_origin, workload, rank) if apart else order
    counter = np.zeros(1, dtype=np.int64)
    nodes = _node_view(workload, config, nodes_per_leaf) if on_nodes else procs_only_view(n)
    by_counts = on_nodes and not node_kernels and interchangeable_nodes(workload, config, nodes_per_leaf)
    if by_counts:
        nodes = procs_only_view(n)
    args = (
        SimJobs(
            submit,
            runtime,
            requested,
            procs,
            estimate,
            runtime_class,
            idempotent,
            sensitive,
            divider,
            res_seq,
            res_count,
            fairshare,
            history_user,
            ONLINE_RULES.get(inputs.online_prediction or "", 0),
            scope,
            jitter_seed,
            gaussier_loss,
        ),
        pass_config(config, order, scan_order, time_origin)._replace(same_scan=not apart),
        KillRules(
            bool(config.kill_false_small),
            int(config.max_requeues),
            correction_code(config.prediction_correction),
        ),
        VariabilityWindows(np.ascontiguousarray(intervals[:, 0]), np.ascontiguousarray(intervals[:, 1])),
        int(workload.machine_procs),
        counter,
        nodes,
        no_fair_share()
        if found is None or inputs.fair_share_model is None
        else fair_share_tree(found, inputs.fair_share_model, float(submit[0]), _reads_fairshare(config)),
    )
    t0 = time.perf_counter()
    if progress and n:
        out = _run_with_progress(args, counter, n, label or config.policy.name)
    else:
        out = run_simulation(*args)
    elapsed = time.perf_counter() - t0
    start, end, backfilled, killed, requeues, wasted, skips, final_class, first_reservation = out[:9]
    reservation_kills = out.reservation_kills
    info = {
        "trace": workload.name,
        "policy": config.policy.name,
        "backfill": config.backfill,
        "backfill_policy": scan.name,
        "threshold": config.threshold,
        "machine_procs": int(workload.machine_procs),
        "dropped": dict(workload.dropped),
        "simulation_seconds": elapsed,
        "unstarted": int(np.sum(start < 0)),
    }
    attributes = {
        "runtime_class": final_class,
        "first_reservation": first_reservation,
        "reservation_kills": reservation_kills,
        "fairshare": out.fairshare_at_start,
    }
    if inputs.online_prediction is not None:
        attributes["estimate"] = out.estimate  # the predictions made in the replay
    if found is not None and inputs.fair_share_model is not None:
        info["fair_share"] = _fair_share_info(found, inputs.fair_share_model)
        attributes["association"] = found.job_assoc
    return SimResult(
        job_id=workload.job_id,
        submit=submit,
        start=start,
        end=end,
        procs=procs,
        requested_time=requested,
        runtime=runtime,
        backfilled=backfilled,
        killed=killed,
        machine_procs=int(workload.machine_procs),
        requeues=requeues,
        wasted_area=wasted,
        skips=skips,
        info=info,
        attributes=attributes,
    )


def _associations(workload: Workload, inputs: SimInputs) -> Associations | None:
    """The trace's fair-share associations when a model is given (checked against a static
    ``fairshare`` input, which it would silently override)."""
    model = inputs.fair_share_model
    if model is None or len(workload) == 0:
        return None
    if inputs.fairshare is not None:
        raise RushError(
            "both per-job fair-share factors and a fair-share model were given",
            where="SimInputs.fairshare",
            fix="give the factors (a site's own) or the model (factors from the trace's usage), not both",
        )
    return associations(workload.user, workload.extra.get("group"), model)


def _reads_fairshare(config: CoreConfig) -> bool:
    """Whether the queue order or the backfill scan has a LINEAR fairshare term."""
    return any(
        p.name == "LINEAR" and p.weights[LINEAR_FEATURES.index("fairshare")] != 0.0
        for p in (config.policy, config.scan_policy)
    )


def _fair_share_info(found: Associations, model: DecayedFairShare) -> dict:
    """The model and its associations, for reports (JSON-ready)."""
    return {
        "half_life": model.half_life,
        "calc_period": model.calc_period,
        "by_group": model.by_group,
        "user": found.user.tolist(),
        "group": found.group.tolist(),
        "share": found.norm_share.tolist(),
    }


def _run_with_progress(args: tuple, counter: np.ndarray, n: int, label: str):
    """Run the (GIL-free) loop in a thread and show a progress bar fed by its job counter."""
    import sys

    from rich.console import Console
    from rich.progress import Progress

    result: list = []
    worker = threading.Thread(target=lambda: result.append(run_simulation(*args)), daemon=True)
    worker.start()
    # No bar when stderr is not a terminal (a log file would get hundreds of lines).
    with Progress(console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(label, total=n)
        while worker.is_alive():
            worker.join(0.2)
            bar.update(task, completed=int(counter[0]))
        bar.update(task, completed=n)
    return result[0]
