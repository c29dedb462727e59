"""From the RJMS's :class:`ClusterState` to the core's :class:`Snapshot`.

Per job, the builder combines what the RJMS says (submit, procs, time limit, start), rush's
tags written at submit by the job_submit plugin (``idempotent``, ``wtype``, ``class``,
``requeues``), what the journal remembers (skip and requeue counts, the class predicted
while the job was pending) and the models' outputs of this cycle (runtime class,
variation flag). It holds no scheduling logic: that is the core's.

Runtime class: the core's precedence (:func:`rush.core.runtime_classes.class_by_precedence`: requeued,
then a class tag, then the class journaled at the first pass that saw the job, then this
pass's model: a trained classifier, or requested time <= ``models.small_below``; none
configured: UNKNOWN). The builder only gathers those inputs and names the source.

Pending jobs go to the core as columns (:class:`rush.core.job_columns.PendingRows`): the builder
writes each column straight from the RJMS jobs and its rules' values, keeps the rows between
cycles by job (a job read the same, with the same inputs, keeps its row), and makes a core job
only when something reads one (the pass's decisions in words; the journal's queue rows read the
columns).

Jobs held by someone else than rush are left out: the RJMS will not start them, and rush
never releases them. ``time_origin`` (F1-F4's and LIN's r = submit - origin) is the daemon's
live origin: ``policy.time_origin``, else its first cycle's time kept in the journal.
"""

from __future__ import annotations

import functools
import math
import operator
import os
import pwd
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rush.core.false_small_kill import kills_if_small
from rush.core.job_columns import PendingColumns, PendingRows, Same, pending_columns_from
from rush.core.resources import Slot
from rush.core.runtime_classes import class_by_precedence
from rush.core.schedule import unusable_jobs
from rush.core.snapshot import PendingJob, RunningJob, RuntimeClass, RuntimeQuantiles, Snapshot
from rush.errors import ModelError
from rush.planner.journal import JobRecord
from rush.planner.snapshot_columns import KeptRows
from rush.planner.variation import VariationPredictor
from rush.rjms.base import ClusterState, RJMSJob

CLASS_TAGS = {"small": RuntimeClass.SMALL, "large": RuntimeClass.LARGE}
CLASS_NAMES = {RuntimeClass.SMALL: "small", RuntimeClass.LARGE: "large", RuntimeClass.UNKNOWN: "unknown"}
# No time limit (Slurm's INFINITE) is a very long request for the classifier's features.
UNLIMITED_SECONDS = 365 * 86400.0


def user_id(name: str) -> int:
    """A stable integer per user name: the models' user key (:func:`rush.models.users.user_key`,
    the same mapping as training on sacct output)."""
    key = _USER_KEYS.get(name)
    if key is None:
        from rush.models.users import user_key

        if len(_USER_KEYS) >= MAX_KEPT_USERS:  # bounded: a site's users, not every string seen
            _USER_KEYS.clear()
        key = _USER_KEYS[name] = user_key(name)
    return key


def own_accounts() -> frozenset[str]:
    """The account rush runs as, by name and by uid (Flux's backend reports uids)."""
    uid = os.geteuid()
    try:
        return frozenset({pwd.getpwuid(uid).pw_name, str(uid)})
    except KeyError:
        return frozenset({str(uid)})


def model_user(job: RJMSJob, kind: str, own: frozenset[str], name_from_tag: bool) -> int:
    """The user key a live job is learned and predicted under, for a model whose card says
    ``kind`` (``user_key_kind``): every shell and both predictors key jobs here.

    A job of rush's own account may name the user it stands for in its ``user`` tag (a
    replay's; another account's tag is ignored: users cannot borrow someone else's history).
    On a ``"trace-id"`` model a replay's ``trace-N`` tag is keyed N
    (:func:`rush.models.users.replay_user_key`); otherwise the name's key: the tag's for the
    runtime predictors (``name_from_tag``), the account's for the runtime-class model."""
    from rush.models.users import replay_user_key

    tag = job.tags.get("user", "") if job.user in own else ""
    number = replay_user_key(tag, kind)
    if number is not None:
        return number
    return user_id(tag if name_from_tag and tag else job.user)


# User name -> key, kept: a queue of 10 000 jobs has a few hundred users.
_USER_KEYS: dict[str, int] = {}
MAX_KEPT_USERS = 100_000


class ClassPredictor(Protocol):
    """The daemon's view of a runtime classifier."""

    name: str
    version: str
    divider: float | None

    def predict(self, jobs: Sequence[RJMSJob], killable: Sequence[bool] | None = None) -> list[int]:
        """Classes of these jobs; ``killable``: per job, whether the core would kill it at the
        divider if called small (:func:`rush.core.false_small_kill.kills_if_small`)."""
        ...

    def observe_finished(self, job: RJMSJob, end: float) -> None: ...

    def save(self) -> None: ...


class RuleClassPredictor:
    """Baseline without a model: a job requesting at most ``small_below`` seconds is small."""

    name = "rule"

    def __init__(self, small_below: float) -> None:
        self.small_below = float(small_below)
        self.version = f"small_below={self.small_below:g}"
        self.divider = None

    def predict(self, jobs: Sequence[RJMSJob], killable: Sequence[bool] | None = None) -> list[int]:
        return [
            int(RuntimeClass.SMALL if j.requested_time <= self.small_below else RuntimeClass.LARGE)
            for j in jobs
        ]

    def observe_finished(self, job: RJMSJob, end: float) -> None:
        pass

    def save(self) -> None:
        pass


class ModelClassPredictor:
    """A trained runtime-class pipeline; its feature step keeps the live per-user history.

    Jobs go in as raw columns on the model's time base (absolute Unix submit times; calendar
    features in the model's zone) with :func:`model_user` keys, as in training. What the
    administrator should know (e.g. that live users cannot match a model trained on SWF trace
    ids) is logged at load and kept in ``notes``.
    """

    name = "runtime-class"

    def __init__(
        self,
        model_path: str | Path,
        history_path: str | Path | None = None,
        own: frozenset[str] | None = None,
    ) -> None:
        import logging

        from rush.models.runtime_pipeline import LiveRuntimeModel

        self.live = LiveRuntimeModel(model_path, history_path)
        self.divider = self.live.divider
        self.notes = list(self.live.notes)
        card = self.live.card
        self.user_key_kind = str(card["user_key_kind"])
        self.own = own if own is not None else own_accounts()
        self.version = f"{card['created']} sha256:{card['sha256'][:12]}"
        for note in self.notes:
            logging.getLogger("rush.daemon").warning("runtime-class model %s: %s", model_path, note)

    @property
    def history(self):
        return self.live.history

    def _columns(self, jobs: Sequence[RJMSJob]):
        from rush.models.history import JobColumns

        return JobColumns(
            np.array([model_user(j, self.user_key_kind, self.own, False) for j in jobs], dtype=np.int64),
            np.array([j.procs for j in jobs], dtype=np.int64),
            np.array([min(j.requested_time, UNLIMITED_SECONDS) for j in jobs], dtype=np.float64),
            np.array([j.submit for j in jobs], dtype=np.float64),
        )

    def features(self, jobs: Sequence[RJMSJob]) -> np.ndarray:
        """The feature matrix the model sees for these jobs (for checks and the journal)."""
        return self.live.features_of(self._columns(jobs))

    def predict(self, jobs: Sequence[RJMSJob], killable: Sequence[bool] | None = None) -> list[int]:
        if not jobs:
            return []
        columns = self._columns(jobs)
        # A job with an unreadable value (NaN limit, submit in year 10^22) stays UNKNOWN;
        # it must not stop the model classifying every other job.
        ok = columns.valid_rows()
        classes = np.full(len(jobs), int(RuntimeClass.UNKNOWN), dtype=np.int64)
        if ok.any():
            # Jobs the core would kill if they outran the divider are judged at the model's
            # idempotent threshold.
            kills = np.zeros(len(jobs), dtype=bool) if killable is None else np.asarray(killable, dtype=bool)
            subset = ok.all()
            classes[ok] = self.live.predict(
                columns if subset else columns.subset(ok), kills if subset else kills[ok]
            )
        return classes.tolist()

    def observe_finished(self, job: RJMSJob, end: float) -> None:
        if job.start is not None:
            self.live.observe_finished(
                model_user(job, self.user_key_kind, self.own, False),
                job.procs,
                min(job.requested_time, UNLIMITED_SECONDS),
                job.submit,
                max(end - job.start, 0.0),
                end,
            )

    def save(self) -> None:
        self.live.save()


def load_class_predictor(
    runtime_class: Path | None, history: Path | None, small_below: float | None
) -> ClassPredictor | None:
    """The configured classifier; raises ModelError for a missing or corrupt model file."""
    if runtime_class is not None:
        if not Path(runtime_class).exists():
            raise ModelError(
                "runtime-class model file not found",
                where=str(runtime_class),
                fix="train one (rush train runtime-class) or remove models.runtime_class",
            )
        return ModelClassPredictor(runtime_class, history)
    if small_below is not None:
        return RuleClassPredictor(small_below)
    return None


@dataclass
class Built:
    snapshot: Snapshot
    # Model outputs per job id, journaled with each decision about the job.
    outputs: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Classes predicted for pending jobs this cycle (remembered for when they run).
    predicted: dict[int, int] = field(default_factory=dict)
    model_seconds: dict[str, float] = field(default_factory=dict)
    # Jobs left out because the RJMS reported values the core cannot use: (job id, why).
    dropped: list[tuple[int, str]] = field(default_factory=list)
    # Pending jobs read as a new object equal (==, every field) to the one the builder kept from
    # an earlier read (a daemon's fresh read): that object, by job id. The same object while
    # the job is unchanged, for a reader that compares jobs by identity (the queue rows).
    kept_jobs: dict[int, RJMSJob] = field(default_factory=dict)


ErrorSink = Callable[[str, Exception], None]


class RuntimeSource(Protocol):
    """The builder's view of a live runtime predictor (rush.planner.runtime_prediction)."""

    name: str

    def forget_except(self, live: set[int]) -> None: ...

    def predict_new(self, jobs: Sequence[RJMSJob]) -> int: ...

    def estimates(self, jobs: Sequence[RJMSJob]) -> dict[int, tuple[float, str]]: ...


class SnapshotBuilder:
    def __init__(
        self,
        classifier: ClassPredictor | None = None,
        variation: VariationPredictor | None = None,
        on_model_error: ErrorSink | None = None,
        time_origin: float = 0.0,
        kill_false_small: bool = False,
        runtime: RuntimeSource | None = None,
    ) -> None:
        self.time_origin = float(time_origin)
        # The runtime predictor (rush.planner.runtime_prediction): jobs' estimates; None: limits.
        self.runtime = runtime
        self.kill_false_small = bool(kill_false_small)
        self.classifier = classifier
        self.variation = variation
        self.on_model_error = on_model_error or (lambda name, exc: None)
        # job id -> its entry [the RJMSJob read, the inputs that vary, its row of rule-made
        # fields, its outputs, its core job once made, the shared inputs it was made with (a job
        # with only the predictor's answers; else None)]: a job read as the same (the Flux
        # scheduler module keeps its job objects and runs a pass per event) or an equal object
        # with the same record, class and flag keeps its entry, so its columns' row below is kept.
        self._pending_cache: dict[int, list] = {}
        self._running_outputs: dict[int, dict[str, Any]] = {}
        # The pending jobs' columns, one row per job kept between cycles (a row is written again
        # when its job's entry above is new).
        self._rows: KeptRows[PendingColumns] = KeptRows(_entry_columns, _entry_ids)
        self._blank_outputs: dict[str, Any] = {}
        self._blank_varies: tuple = ()  # the last build's, kept while equal (entries compare by identity)
        # (the runtime predictor, its answers_token()) as of the last build whose pending entries
        # hold that predictor's answers of the time; None: ask it for every job.
        self._answered: tuple[Any, tuple] | None = None

    @property
    def rows_read(self) -> int:
        """Pending jobs whose columns the last build wrote (arrivals and changed jobs)."""
        return self._rows.rewritten

    def _pending_job(self, entries: list[list], k: int) -> PendingJob:
        """Row ``k``'s core job, made once per entry and kept in it (the same object while its job
        is unchanged)."""
        entry = entries[k]
        made = entry[4]
        if made is None:
            made = entry[4] = _made_job(entry)
        return made

    @staticmethod
    def _pending_jobs(entries: list[list]) -> list[PendingJob]:
        """Every row's core job (one walk, for a reader of all of them)."""
        return [entry[4] or _made_job(entry) for entry in entries]

    def _classes(self, jobs: list[RJMSJob], built: Built) -> dict[int, int]:
        if self.classifier is None or not jobs:
            return {}
        started = time.perf_counter()
        killable = [kills_if_small(self.kill_false_small, _flag(j.tags.get("idempotent"))) for j in jobs]
        try:
            classes = self.classifier.predict(jobs, killable)
        except Exception as exc:  # a model failing on live input must not stop scheduling
            self.on_model_error(self.classifier.name, exc)
            return {}
        built.model_seconds[self.classifier.name] = time.perf_counter() - started
        return {j.job_id: int(c) for j, c in zip(jobs, classes, strict=True)}

    def _variable(self, jobs: list[RJMSJob], now: float, built: Built) -> dict[int, bool]:
        if self.variation is None or not jobs:
            return {}
        started = time.perf_counter()
        try:
            flags = self.variation.predict(jobs, now)
        except Exception as exc:
            self.on_model_error(f"variation:{self.variation.name}", exc)
            return {}
        built.model_seconds[f"variation:{self.variation.name}"] = time.perf_counter() - started
        return {j.job_id: bool(f) for j, f in zip(jobs, flags, strict=True)}

    def _predicted(self, jobs: list[RJMSJob], state: ClusterState, built: Built) -> bool:
        """The runtime predictor told which jobs are gone and asked to predict the new ones;
        False when it fails (the limits then, as without one)."""
        started = time.perf_counter()
        try:
            self.runtime.forget_except(set(map(operator.attrgetter("job_id"), state.jobs)))
            if self.runtime.predict_new(jobs):
                built.model_seconds[f"runtime:{self.runtime.name}"] = time.perf_counter() - started
            return True
        except Exception as exc:  # a model failing on live input must not stop scheduling
            self.on_model_error(f"runtime:{self.runtime.name}", exc)
            return False

    def _estimates(self, jobs: list[RJMSJob]) -> dict[int, tuple[float, str]] | None:
        """Each job's guarded predicted runtime and its source; None when the predictor fails."""
        try:
            return self.runtime.estimates(jobs)
        except Exception as exc:
            self.on_model_error(f"runtime:{self.runtime.name}", exc)
            return None

    def _quantiles(self, jobs: list[RJMSJob]) -> dict[int, RuntimeQuantiles] | None:
        """The jobs' predicted runtime quantiles (a quantile model's: a running job's as of its
        start, a pending job's its latest), for the start estimates' rules
        (rush.core.remaining_runtime); {} without them; None when the predictor fails (the
        estimates then read the running jobs' estimates, as without)."""
        get = getattr(self.runtime, "runtime_quantiles", None)
        if get is None or not jobs:
            return {}
        try:
            return get(jobs)
        except Exception as exc:
            self.on_model_error(f"runtime:{self.runtime.name}", exc)
            return None

    def _answers(
        self, pending: list[RJMSJob], running: list[RJMSJob], state: ClusterState, built: Built, cache: dict
    ) -> tuple[dict[int, tuple[float, str]], dict[int, RuntimeQuantiles], set[int] | None]:
        """The runtime predictor's answers: estimates and quantiles by job id, and the pending
        jobs they were asked for (None: every one). A pending job not asked keeps its entry's
        answers (``cache``, the last build's): the predictor has not revised them since
        (:meth:`LiveRuntimePredictor.revised_since`) and the job's request is the same, so they
        are what asking would give."""
        if self.runtime is None:
            return {}, {}, None
        answered, self._answered = self._answered, None  # kept again only if every step answers
        if not self._predicted([*pending, *running], state, built):
            return {}, self._quantiles([*running, *pending]) or {}, None
        revised = None
        if answered is not None and answered[0] is self.runtime:
            revised = self.runtime.revised_since(answered[1])
        asked, fresh = pending, None
        if revised is not None:
            asked = [
                j
                for j in pending
                if (hit := cache.get(j.job_id)) is None
                or j.job_id in revised
                or not (hit[0] is j or hit[0].requested_time == j.requested_time)
            ]
            fresh = set(map(operator.attrgetter("job_id"), asked))
        runtimes = self._estimates([*asked, *running])
        quantiles = self._quantiles([*running, *asked])
        if runtimes is not None and quantiles is not None:
            token = getattr(self.runtime, "answers_token", None)
            if token is not None:
                self._answered = (self.runtime, token())
        elif fresh is not None:  # a step failed: no answer kept, every job's asked as without them
            fresh = None
            runtimes = {} if runtimes is None else self._estimates([*pending, *running])
            quantiles = {} if quantiles is None else self._quantiles([*running, *pending])
        return runtimes or {}, quantiles or {}, fresh

    def build(self, state: ClusterState, records: dict[int, JobRecord]) -> Built:
        now = state.taken_at
        built = Built(Snapshot(now, state.total_procs, state.free_procs))
        bad = _unusable(state.jobs)
        usable, seen = [], set()
        for j, unusable in zip(state.jobs, bad, strict=True):
            why = "listed twice" if j.job_id in seen else _why_unusable(j) if unusable else ""
            if why:
                built.dropped.append((j.job_id, why))
            else:
                usable.append(j)
                seen.add(j.job_id)
        state = replace(state, jobs=tuple(usable))
        pending_jobs = [
            j
            for j in state.jobs
            if j.state == "PENDING" and not (j.held and not records.get(j.job_id, _NO_RECORD).held_by_rush)
        ]
        running_jobs = [j for j in state.jobs if j.state != "PENDING" and j.start is not None]
        need_class: list[RJMSJob] = []
        if self.classifier is not None:
            # A job is classified once, at the first pass that sees it pending (as offline,
            # where each job's features are read at its submission): its class is then the
            # journal's, so a pass over 10,000 pending jobs classifies only the new ones.
            need_class = [
                j
                for j in pending_jobs
                if _fixed_class(j) is None
                and _requeues(j, records.get(j.job_id)) == 0
                and records.get(j.job_id, _NO_RECORD).predicted_class < 0
            ]
            # Running jobs rush never saw pending (e.g. started before the daemon) are classified now.
            need_class += [
                j
                for j in running_jobs
                if _fixed_class(j) is None
                and _requeues(j, records.get(j.job_id)) == 0
                and records.get(j.job_id, _NO_RECORD).predicted_class < 0
            ]
        predicted = self._classes(need_class, built)
        cache, self._pending_cache = self._pending_cache, {}
        runtimes, quantiles, fresh = self._answers(pending_jobs, running_jobs, state, built, cache)
        variable = self._variable(pending_jobs, now, built)
        variation_outputs = _variation_outputs(self.variation)
        source_name = self.classifier.name if self.classifier else "none"

        # The class and its source of a job with no tag, no journaled class and no prediction.
        untagged = _class_of(_UNTAGGED, 0, -1, -1, source_name)
        # Its row's rule-made fields (_ROW_FIELDS), shared while nothing of this pass is its own.
        blank_row = (untagged[0], False, 0, 0, math.inf, None, False, None)
        # A predictor's own outputs per job (the learned one: class, probabilities, reason).
        outputs_of = getattr(self.variation, "job_outputs", None)
        # A job with nothing of its own this pass (no record, prediction, flag, estimate or
        # quantiles: most of a queue) has these inputs, and, untagged, this row and these outputs,
        # shared (the outputs kept across passes while the same, for the queue rows' memo).
        blank_varies = (None, None, False, variation_outputs, source_name, _NO_OUTPUTS, None, None)
        if self._blank_varies == blank_varies:
            blank_varies = self._blank_varies
        self._blank_varies = blank_varies
        plain_varies = blank_varies[:6]  # and the job's (estimate, quantiles)
        blank_outputs = {"runtime_class": CLASS_NAMES[untagged[0]], "class_source": untagged[1]}
        blank_outputs.update(variable=False, **variation_outputs)
        if self._blank_outputs == blank_outputs:
            blank_outputs = self._blank_outputs
        self._blank_outputs = blank_outputs
        entries = []
        for j in pending_jobs:
            job_id = j.job_id
            stored = records.get(job_id)
            job_outputs = _NO_OUTPUTS if outputs_of is None else outputs_of(job_id)
            hit = cache.get(job_id)
            if fresh is None or job_id in fresh:
                estimated = runtimes.get(job_id) if runtimes else None
                quantile = quantiles.get(job_id) if quantiles else None
                shared = None
            else:  # not asked: its entry's answers stand (_answers)
                estimated, quantile = hit[1][6], hit[1][7]
                shared = hit[5]
            flagged = variable.get(job_id, False) if variable else False
            # Nothing of its own but, perhaps, the runtime predictor's answers (most of a live
            # queue with a predictor); blank: not even those.
            plain = stored is None and not flagged and job_outputs is _NO_OUTPUTS and job_id not in predicted
            blank = plain and estimated is None and quantile is None
            varies = (
                hit[1]  # its answers kept, made with these shared parts: its very inputs
                if plain and shared is blank_varies
                else blank_varies
                if blank
                else (*plain_varies, estimated, quantile)
                if plain
                else (
                    (stored.skips, stored.requeues, stored.predicted_class, stored.reserved_at)
                    if stored is not None
                    else None,
                    predicted.get(job_id),
                    flagged,
                    variation_outputs,
                    source_name,
                    job_outputs,
                    estimated,
                    quantile,
                )
            )
            # The same object (the Flux module keeps them) or an equal one (a daemon's fresh read).
            if hit is not None and (hit[0] is j or hit[0] == j) and hit[1] == varies:
                self._pending_cache[job_id] = hit
                if hit[0] is not j:
                    built.kept_jobs[job_id] = hit[0]
                entries.append(hit)
                built.outputs[job_id] = hit[3]
                if job_id in predicted:
                    built.predicted[job_id] = int(hit[2][0])
                continue
            if blank and not j.tags:  # the usual arrival
                entry = self._pending_cache[job_id] = [j, varies, blank_row, blank_outputs, None, None]
                entries.append(entry)
                built.outputs[job_id] = blank_outputs
                continue
            if plain and not j.tags:  # an arrival with the predictor's answers only: the shared parts
                row = (*blank_row[:5], None if estimated is None else estimated[0], False, quantile)
                outputs = (
                    dict(blank_outputs)
                    if estimated is None
                    else {**blank_outputs, "predicted_runtime": estimated[0], "runtime_source": estimated[1]}
                )
                entry = self._pending_cache[job_id] = [j, varies, row, outputs, None, blank_varies]
                entries.append(entry)
                built.outputs[job_id] = outputs
                continue
            if stored is None and not j.tags and job_id not in predicted:
                # No tags, nothing journaled, no class of this pass's model.
                cls, source = untagged
                row = (cls, False, 0, 0, math.inf, _estimate(estimated), flagged, quantile)
            else:
                rec = stored or _NO_RECORD
                requeues = _requeues(j, rec)
                journaled = -1 if job_id in predicted else rec.predicted_class
                cls, source = _class_of(j, requeues, journaled, predicted.get(job_id, -1), source_name)
                reserved_at = math.inf if rec.reserved_at is None else rec.reserved_at
                idempotent = _flag(j.tags.get("idempotent"))
                row = (
                    cls,
                    idempotent,
                    rec.skips,
                    requeues,
                    reserved_at,
                    _estimate(estimated),
                    flagged,
                    quantile,
                )
            if job_id in predicted:
                built.predicted[job_id] = predicted[job_id]
            runtime_outputs = (
                _NO_OUTPUTS
                if estimated is None
                else {"predicted_runtime": estimated[0], "runtime_source": estimated[1]}
            )
            built.outputs[job_id] = {
                "runtime_class": CLASS_NAMES[cls],
                "class_source": source,
                "variable": flagged,
                **variation_outputs,
                **job_outputs,
                **runtime_outputs,
            }
            entry = [j, varies, row, built.outputs[job_id], None, None]
            self._pending_cache[job_id] = entry
            entries.append(entry)
        # The pass's columns, kept by job: only the rows of jobs that arrived or changed are
        # written, straight from the read; a core job is made only where one is read.
        pending = PendingRows(
            self._rows.update(entries),
            functools.partial(self._pending_job, entries),
            functools.partial(self._pending_jobs, entries),
        )
        running = []
        node_index = {node.name: i for i, node in enumerate(state.nodes)}
        # Running jobs' outputs kept while equal (one object while the same, for the queue rows).
        last_running_outputs, running_outputs = self._running_outputs, {}
        self._running_outputs = running_outputs
        for j in running_jobs:
            rec = records.get(j.job_id) or _NO_RECORD
            requeues = _requeues(j, rec)
            cls, source = _class_of(
                j, requeues, rec.predicted_class, predicted.get(j.job_id, -1), source_name
            )
            if j.job_id in predicted:
                built.predicted[j.job_id] = predicted[j.job_id]
            estimate, runtime_outputs = _runtime_of(runtimes, j.job_id)
            outputs = {"runtime_class": CLASS_NAMES[cls], "class_source": source, **runtime_outputs}
            built.outputs[j.job_id] = running_outputs[j.job_id] = _same_or(
                last_running_outputs.get(j.job_id), outputs
            )
            running.append(
                RunningJob(
                    job_id=j.job_id,
                    start=float(j.start),
                    procs=j.procs,
                    requested_time=j.requested_time,
                    estimate=estimate,
                    runtime_class=cls,
                    idempotent=_flag(j.tags.get("idempotent")),
                    requeues=requeues,
                    # A job the core kills now competes in the same pass with these.
                    submit=j.submit,
                    skips=rec.skips,
                    request=j.request,
                    allocation=_slots(j, node_index),
                    runtime_quantiles=quantiles.get(j.job_id),
                )
            )
        built.snapshot = Snapshot(
            now=now,
            total_procs=state.total_procs,
            free_procs=state.free_procs,
            pending=pending,
            running=tuple(running),
            time_origin=self.time_origin,
            nodes=state.nodes,
        )
        return built


def _made_job(entry: list) -> PendingJob:
    """The core job of an entry ([RJMS job, inputs, row, outputs, core job or None, shared
    inputs]), kept in it."""
    j = entry[0]
    cls, idempotent, skips, requeues, reserved_at, estimate, flagged, quantile = entry[2]
    made = entry[4] = PendingJob(
        # Positional, in the field order (a keyword call costs a third more).
        j.job_id,
        j.submit,
        j.procs,
        j.requested_time,
        estimate,
        cls,
        idempotent,
        flagged,
        skips,
        user_id(j.user),
        requeues,
        reserved_at,
        j.request,
        float(j.priority),
        # The site's factor as the backend read it (site.fairshare = "rjms"); None is neutral in
        # the core, which refuses one outside [0, 1] by job.
        j.fairshare,
        # Its latest predicted quantiles: the start projection's rule L2.
        quantile,
    )
    return made


# A pending job's fields the builder's rules make (the rest are the RJMS job's), in its row's order.
_ROW_FIELDS = (
    "runtime_class",
    "idempotent",
    "skips",
    "requeues",
    "reserved_at",
    "estimate",
    "variable",
    "runtime_quantiles",
)
# The core's pending fields read from the RJMS job's attribute of another name.
_RJMS_NAMES = {"rjms_priority": "priority"}


def _entry_columns(entries: Sequence[tuple]) -> PendingColumns:
    """The pending columns of these entries ((RJMS job, inputs, row, outputs)): each field one
    C-level read, from the RJMS jobs or from the rows (a shared row for most jobs)."""
    jobs = list(map(operator.itemgetter(0), entries))
    rows = list(map(operator.itemgetter(2), entries))
    at = {name: k for k, name in enumerate(_ROW_FIELDS)}
    # One row for all (a first cycle of jobs with nothing of their own): its columns made whole.
    shared = rows[0] if rows and rows.count(rows[0]) == len(rows) else None

    def values(name: str):
        if name in at:
            if shared is not None:
                return Same(shared[at[name]])
            return map(operator.itemgetter(at[name]), rows)
        return map(operator.attrgetter(_RJMS_NAMES.get(name, name)), jobs)

    return pending_columns_from(values, len(entries))


def _entry_ids(entries: Sequence[tuple]) -> list[int]:
    return list(map(operator.attrgetter("job_id"), map(operator.itemgetter(0), entries)))


def _estimate(estimated: tuple[float, str] | None) -> float | None:
    """A job's estimate for the core (None: its limit) from the runtime predictor's answer."""
    return None if estimated is None else estimated[0]


def _same_or(kept: dict[str, Any] | None, outputs: dict[str, Any]) -> dict[str, Any]:
    """``kept`` where equal to ``outputs`` with values of the same types (the same JSON), else
    ``outputs``."""
    if kept is not None and kept == outputs and all(type(kept[k]) is type(v) for k, v in outputs.items()):
        return kept
    return outputs


def _runtime_of(runtimes: dict[int, tuple[float, str]], job_id: int) -> tuple[float | None, dict[str, Any]]:
    """A job's estimate for the core (None: its limit) and what the journal says of it."""
    got = runtimes.get(job_id)
    if got is None:
        return None, {}
    return got[0], {"predicted_runtime": got[0], "runtime_source": got[1]}


def _slots(job: RJMSJob, node_index: dict[str, int]) -> tuple[Slot, ...]:
    """A running job's allocation on the snapshot's nodes (nodes the RJMS did not list, e.g.
    outside the partitions rush schedules, are left out)."""
    return tuple(Slot(node_index[n], c, g) for n, c, g in job.allocation if n in node_index)


def _unusable(jobs: tuple[RJMSJob, ...]) -> list[bool]:
    """The core's rule (:func:`rush.core.schedule.unusable_jobs`) over the jobs as read: the
    start time counts for running jobs, the submit time for all."""
    n = len(jobs)
    procs = np.fromiter((j.procs for j in jobs), dtype=np.int64, count=n)
    submit = np.fromiter((j.submit for j in jobs), dtype=np.float64, count=n)
    start = np.fromiter(
        (j.start if j.state != "PENDING" and j.start is not None else 0.0 for j in jobs),
        dtype=np.float64,
        count=n,
    )
    requested = np.fromiter((j.requested_time for j in jobs), dtype=np.float64, count=n)
    # A NaN in either time makes their sum NaN: one finiteness test covers both.
    return unusable_jobs(procs, submit + start, requested, requested).tolist()


def _why_unusable(job: RJMSJob) -> str:
    """Words for the journal about a job the core's rule refused."""
    if job.procs <= 0:
        return f"{job.procs} processors"
    if not math.isfinite(job.submit):
        return f"submit time {job.submit!r}"
    if not job.requested_time >= 0:
        return f"time limit {job.requested_time!r}"
    return f"start time {job.start!r}"


def _requeues(job: RJMSJob, rec: JobRecord | None) -> int:
    """Times rush requeued the job: the journal's count, or the tag it wrote with the requeue."""
    return max(rec.requeues if rec is not None else 0, _int(job.tags.get("requeues")))


def _class_of(
    job: RJMSJob, requeues: int, journaled: int, predicted: int, model: str
) -> tuple[RuntimeClass, str]:
    """The core's precedence (runtime_classes.class_by_precedence) over what this job has: its class
    tag, the journal's class, the model's prediction; the source named for the journal."""
    tagged = CLASS_TAGS.get(job.tags.get("class", ""))
    cls, source = class_by_precedence(requeues, None if tagged is None else int(tagged), journaled, predicted)
    known = _RUNTIME_CLASS.get(cls)
    return known if known is not None else RuntimeClass(cls), model if source == "model" else source


# A dict lookup per job, not an enum call.
_RUNTIME_CLASS = {int(c): c for c in RuntimeClass}
# Shared and never written: merged into each job's outputs.
_NO_OUTPUTS: dict[str, Any] = {}
# A job with no tags, for the class such a job gets (_class_of reads only its tags).
_UNTAGGED = RJMSJob(-1, "PENDING", 0.0, 1, 0.0)
# What the journal remembers of a job it has no record of; shared, only read (one record
# made per job cost as much as the job's own snapshot entry).
_NO_RECORD = JobRecord(-1)


def _fixed_class(job: RJMSJob) -> RuntimeClass | None:
    """A class no model may override: the job's class tag (rush's or an administrator's)."""
    return CLASS_TAGS.get(job.tags.get("class", ""))


def _variation_outputs(variation: VariationPredictor | None) -> dict[str, Any]:
    if variation is None:
        return {}
    out: dict[str, Any] = {"variation_predictor": variation.name}
    for attr in ("counter", "threshold", "last_mean"):
        if hasattr(variation, attr):
            out[f"variation_{attr}"] = getattr(variation, attr)
    return out


def _flag(value: str | None) -> bool:
    return bool(value) and value.lower() in ("1", "yes", "true")


def _int(value: str | None) -> int:
    """A small count from a job tag; garbage, negatives and huge numbers are clamped."""
    if value is None:  # no such tag: most jobs
        return 0
    try:
        return min(max(int(value or 0), 0), 1_000)
    except ValueError:
        return 0
