"""A snapshot's jobs as columns, read in one pass over the job objects.

A live queue holds up to 100 000 pending jobs; reading each attribute with its own Python
loop cost more than the scheduling pass itself. Here each column is one ``numpy.fromiter``
over ``operator.attrgetter`` (in C), read once per pass and reused; each column's field
declares its type and what stands for a None, and one reader reads both kinds. Rows
can be taken or reordered with :meth:`PendingColumns.take` without touching the objects.

A shell can also give the pending jobs as columns from the start (:class:`PendingRows`, which
the planner's snapshot builder writes straight from the RJMS read): the core then reads the
columns and makes a :class:`~rush.core.snapshot.PendingJob` only for a job it names in words.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any, NamedTuple, TypeVar

import numpy as np

from rush.core.names import NEUTRAL_FAIRSHARE


class Same(NamedTuple):
    """One value for every job of a column (e.g. a row the builder shares between jobs with
    nothing of their own): the column is made whole instead of walked."""

    value: Any


def _or_default(values: tuple, default: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """``values`` as floats, a None replaced by ``default`` (a NaN given as such stays NaN, for
    the snapshot check to refuse), and where a value was given (not None)."""
    if values and values[0] is None and values.count(None) == len(values):
        return _same_or_default(None, default, len(values))
    out = np.array(values, dtype=np.float64).reshape(len(values))
    given = np.ones(len(values), dtype=np.bool_)
    if np.isnan(out).any():
        # Which NaNs were None: one C-level walk (all of them, for a column of estimates left to
        # the requests).
        none = np.fromiter(map(operator.is_, values, repeat(None)), dtype=np.bool_, count=len(values))
        out[none] = default[none] if isinstance(default, np.ndarray) else default
        given = ~none
    return out, given


def _same_or_default(value: Any, default: np.ndarray | float, count: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_or_default` of ``count`` times ``value``, made whole."""
    if value is None:
        if isinstance(default, np.ndarray):
            return np.array(default, dtype=np.float64), np.zeros(count, dtype=np.bool_)
        return np.full(count, default, dtype=np.float64), np.zeros(count, dtype=np.bool_)
    return np.full(count, value, dtype=np.float64), np.ones(count, dtype=np.bool_)


def _read(dtype: type, none: str | float | None = None) -> Any:
    """A column's field: read from each job's attribute of the field's name as ``dtype``;
    ``none``: what stands for a None (another column's name, or a value); ``object``: the
    values as they are, in a tuple."""
    return dataclasses.field(metadata={"dtype": dtype, "none": none, "given": None})


def _derived(dtype: type) -> Any:
    """A field computed from other columns when rows are read (rule L2's per-job inputs, from
    ``runtime_quantiles`` and ``requested_time``: :func:`_quantile_columns`), never from a job's
    attribute of its own."""
    return dataclasses.field(metadata={"dtype": dtype, "none": None, "given": None, "derived": True})


def _given(source: str) -> Any:
    """A mask field: True where the job gave its own ``source`` value, False where ``source``'s
    column holds what stands for a None (read with ``source``, in the same walk)."""
    return dataclasses.field(metadata={"dtype": np.bool_, "none": None, "given": source})


@dataclasses.dataclass(frozen=True)
class _JobColumns:
    """The columns pending and running jobs both have."""

    job_id: np.ndarray = _read(np.int64)
    procs: np.ndarray = _read(np.int64)
    requested_time: np.ndarray = _read(np.float64)
    # The policy's runtime estimate; the request where the job has none.
    estimate: np.ndarray = _read(np.float64, none="requested_time")
    # Whether the job has an estimate of its own (False: ``estimate`` holds its request).
    own_estimate: np.ndarray = _given("estimate")
    runtime_class: np.ndarray = _read(np.int64)
    idempotent: np.ndarray = _read(np.bool_)
    requeues: np.ndarray = _read(np.int64)


@dataclasses.dataclass(frozen=True)
class PendingColumns(_JobColumns):
    submit: np.ndarray = _read(np.float64)
    variable: np.ndarray = _read(np.bool_)
    skips: np.ndarray = _read(np.int64)
    reserved_at: np.ndarray = _read(np.float64)
    rjms_priority: np.ndarray = _read(np.float64)
    # Unknown (None): rush.core.names.NEUTRAL_FAIRSHARE.
    fairshare: np.ndarray = _read(np.float64, none=NEUTRAL_FAIRSHARE)
    # Whether the RJMS gave its factor (False: ``fairshare`` holds the neutral one).
    own_fairshare: np.ndarray = _given("fairshare")
    request: tuple = _read(object)
    # Its predicted runtime quantiles (None: none), for the start projection's rule L2.
    runtime_quantiles: tuple = _read(object)
    # Rules L2's and T's inputs that do not depend on the pass, computed once when the row is
    # read (rush.core.remaining_runtime.queued_rule_columns): whether the quantiles are usable
    # (NO_QUANTILES, 0, or the code of why they are refused), their upper runtime (NaN: none),
    # rule D2's projection shift and their set of levels as a number (the refusals' order).
    quantile_code: np.ndarray = _derived(np.int64)
    queued_upper: np.ndarray = _derived(np.float64)
    # Rule T's tail-carried mean (rush.core.remaining_runtime.tail_carried_mean; NaN: none).
    queued_tail: np.ndarray = _derived(np.float64)
    projection_shift: np.ndarray = _derived(np.float64)
    quantile_key: np.ndarray = _derived(np.int64)
    # Its request's shape as a code (:func:`request_shapes`: the same code for equal shapes, in
    # every pass of the process; NO_SHAPE: none kept), for the node pass's distinct requests
    # (rush.core.nodes_snapshot), computed once when the row is read.
    request_shape: np.ndarray = _derived(np.int64)

    def take(self, rows: np.ndarray) -> PendingColumns:
        """These columns' ``rows``, in that order."""
        return PendingColumns(
            **{
                f.name: _taken(getattr(self, f.name), rows)
                if f.metadata["dtype"] is object
                else getattr(self, f.name)[rows]
                for f in dataclasses.fields(self)
            }
        )

    @staticmethod
    def concatenate(first: PendingColumns, second: PendingColumns) -> PendingColumns:
        return PendingColumns(
            **{
                f.name: getattr(first, f.name) + getattr(second, f.name)
                if f.metadata["dtype"] is object
                else np.concatenate([getattr(first, f.name), getattr(second, f.name)])
                for f in dataclasses.fields(first)
            }
        )

    def as_given(self, name: str) -> list:
        """Column ``name``'s values as Python numbers, None where the job gave none (as its core
        job's field holds it): ``estimate`` or ``fairshare``."""
        values = getattr(self, name)
        given = getattr(self, _MASK_OF[name])
        if given.all():
            return values.tolist()
        out = np.full(len(values), None, dtype=object)
        out[given] = values[given]  # (Python floats: a cast to objects)
        return out.tolist()


def _taken(values: tuple, rows: np.ndarray) -> tuple:
    """An object column's ``rows``, in that order."""
    picked = operator.itemgetter(*rows.tolist())(values) if len(rows) else ()
    return picked if len(rows) != 1 else (picked,)


# A column -> the mask of where its jobs gave their own value.
_MASK_OF = {
    f.metadata["given"]: f.name for f in dataclasses.fields(PendingColumns) if f.metadata["given"] is not None
}


# Columns computed from others (and what they are computed from), never set alone.
_DERIVED = frozenset(f.name for f in dataclasses.fields(PendingColumns) if f.metadata.get("derived"))
_DERIVED_FROM = frozenset({"runtime_quantiles", "requested_time", "request"})


@dataclasses.dataclass(frozen=True)
class RunningColumns(_JobColumns):
    start: np.ndarray = _read(np.float64)

    def take(self, rows: np.ndarray) -> RunningColumns:
        return RunningColumns(**{f.name: getattr(self, f.name)[rows] for f in dataclasses.fields(self)})


class SnapshotColumns(NamedTuple):
    """A snapshot's pending and running jobs' columns, row for row in its ``pending`` and
    ``running`` order (:attr:`rush.core.snapshot.Snapshot.columns`)."""

    pending: PendingColumns
    running: RunningColumns


Columns = TypeVar("Columns", bound=_JobColumns)


def _columns(kind: type[Columns], jobs: Sequence) -> Columns:
    """``kind``'s columns of ``jobs``, each read as its field declares."""
    return _columns_from(kind, lambda name: map(operator.attrgetter(name), jobs), len(jobs))


def _columns_from(kind: type[Columns], values: Callable[[str], Iterable], count: int) -> Columns:
    """``kind``'s columns of ``count`` jobs, each field's values (``values(name)``) read as the
    field declares."""
    read: dict = {}
    fields = dataclasses.fields(kind)
    masks = {f.metadata["given"]: f.name for f in fields if f.metadata["given"] is not None}
    derived = False
    for f in fields:
        dtype, none = f.metadata["dtype"], f.metadata["none"]
        if f.metadata.get("derived"):
            derived = True
            continue  # computed from the columns read, below
        if f.metadata["given"] is not None:
            continue  # read with its source
        got = values(f.name)
        if isinstance(got, Same):
            if dtype is object:
                read[f.name] = (got.value,) * count
                continue
            if none is None and got.value is not None:  # (None: refused below as in a walk)
                read[f.name] = np.full(count, got.value, dtype=dtype)
                continue
            if none is not None:
                default = read[none] if isinstance(none, str) else none
                read[f.name], given = _same_or_default(got.value, default, count)
                if f.name in masks:
                    read[masks[f.name]] = given
                continue
            got = repeat(got.value, count)
        if dtype is object:
            read[f.name] = tuple(got)
        elif none is None:
            # (A map stays in C and makes no per-job tuple, which would wake the collector.)
            read[f.name] = np.fromiter(got, dtype=dtype, count=count)
        else:
            read[f.name], given = _or_default(tuple(got), read[none] if isinstance(none, str) else none)
            if f.name in masks:
                read[masks[f.name]] = given
    if derived:
        read.update(_quantile_columns(read["runtime_quantiles"], read["requested_time"]))
        read["request_shape"] = request_shapes(read["request"])
    return kind(**read)


# What a request's shape is: every field of rush.core.resources.Request (None: no request).
request_shape = operator.attrgetter("nodes", "cores_per_node", "gpus_per_node", "exclusive", "partition")
# Shape -> its code, for the whole process: a code is never given to another shape, so a row
# read in an earlier pass keeps a valid one. Bounded: a shape first met when it is full gets
# NO_SHAPE (a hostile queue of endless shapes), and the node pass then reads every request.
# 65 536 shapes hold a site's whole variety (nodes x cores x GPUs x partitions met in a
# daemon's life) in about 13 MB at most; 1 << 20 would let a stream of odd requests pin ~200 MB.
_SHAPE_CODES: dict[tuple | None, int] = {}
_SHAPE_LOCK = threading.Lock()
MAX_SHAPES = 1 << 16
NO_SHAPE = -1


def _new_shape(key: tuple | None) -> int:
    """``key``'s code, made under the lock (two threads never give one code to two shapes)."""
    with _SHAPE_LOCK:
        code = _SHAPE_CODES.get(key)
        if code is None:
            if len(_SHAPE_CODES) >= MAX_SHAPES:
                return NO_SHAPE
            code = _SHAPE_CODES[key] = len(_SHAPE_CODES)
        return code


def request_shapes(requests: Sequence) -> np.ndarray:
    """Each request's shape code (equal shapes, as dict keys are equal, one code); NO_SHAPE
    for every row where they cannot be kept (a full registry, a field that cannot be a key, an
    object that is no request: the node pass then reads the requests itself, as before)."""
    try:
        return _coded(map(request_shape, requests), len(requests))
    except AttributeError:  # a job without a request (None) among them
        pass
    except Exception:
        return np.full(len(requests), NO_SHAPE, dtype=np.int64)
    try:
        return _coded((None if r is None else request_shape(r) for r in requests), len(requests))
    except Exception:
        return np.full(len(requests), NO_SHAPE, dtype=np.int64)


def _coded(keys: Iterable, count: int) -> np.ndarray:
    get = _SHAPE_CODES.get
    return np.fromiter(
        (code if (code := get(key)) is not None else _new_shape(key) for key in keys),
        dtype=np.int64,
        count=count,
    )


def _quantile_columns(quantiles: tuple, requested_time: np.ndarray) -> dict[str, np.ndarray]:
    """The derived columns of rows with these quantiles and requests (the core's rule, loaded
    only when some job has quantiles: a queue without them needs no compiled code)."""
    n = len(quantiles)
    if not n or not np.fromiter(map(operator.is_not, quantiles, repeat(None)), dtype=np.bool_, count=n).any():
        return {
            "quantile_code": np.full(n, -1, dtype=np.int64),
            "queued_upper": np.full(n, np.nan),
            "queued_tail": np.full(n, np.nan),
            "projection_shift": np.zeros(n),
            "quantile_key": np.zeros(n, dtype=np.int64),
        }
    from rush.core.remaining_runtime import queued_rule_columns

    code, upper, tail, shift, key = queued_rule_columns(quantiles, requested_time)
    return {
        "quantile_code": code,
        "queued_upper": upper,
        "queued_tail": tail,
        "projection_shift": shift,
        "quantile_key": key,
    }


def pending_columns_from(values: Callable[[str], Iterable], count: int) -> PendingColumns:
    """The columns of ``count`` pending jobs given field by field: ``values(name)``, the values
    of :class:`rush.core.snapshot.PendingJob`'s field ``name`` in row order, or :class:`Same`
    for one value in every row (read as
    :func:`pending_columns` reads the jobs' attributes: a None estimate is the request, ...)."""
    return _columns_from(PendingColumns, values, count)


def snapshot_columns(pending: Sequence, running: Sequence) -> SnapshotColumns:
    """The columns of a snapshot's ``pending`` and ``running`` jobs, read from the objects."""
    return SnapshotColumns(pending_columns(pending), running_columns(running))


def pending_columns(jobs: Sequence) -> PendingColumns:
    """The columns of ``jobs`` (:class:`rush.core.snapshot.PendingJob`), in their order."""
    return _columns(PendingColumns, jobs)


def running_columns(jobs: Sequence) -> RunningColumns:
    """The columns of ``jobs`` (:class:`rush.core.snapshot.RunningJob`), in their order."""
    return _columns(RunningColumns, jobs)


class PendingRows(Sequence):
    """Pending jobs given as their columns, each core job made only when read.

    A shell that writes the pass's columns straight from its RJMS read (the planner's snapshot
    builder) gives the snapshot these: the core reads its per-job inputs from ``columns``
    and makes a :class:`rush.core.snapshot.PendingJob` only for the few decisions it puts in
    words; ``make(k)`` is row ``k``'s job (its ``job_id`` is ``columns.job_id[k]``, each field
    the value its column holds), made once and kept.
    """

    def __init__(
        self,
        columns: PendingColumns,
        make: Callable[[int], Any],
        make_all: Callable[[], list] | None = None,
    ) -> None:
        self.columns = columns
        self._make = make
        # Every row's job at once (the same objects ``make`` gives), for a reader of all of them.
        self._make_all = make_all
        self._made: list = [None] * len(columns.job_id)
        self._every = False  # every row's job made

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return tuple(self[i] for i in range(*k.indices(len(self))))
        job = self._made[k]
        if job is None:
            job = self._made[k] = self._make(range(len(self))[k])
        return job

    def __iter__(self) -> Iterator:
        if self._make_all is not None:  # every job read: made (or taken as made) in one walk
            self._made, self._make_all = self._make_all(), None
            self._every = True
        if self._every:
            return iter(self._made)
        return map(self.__getitem__, range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(map(operator.eq, self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Sequence) -> tuple:  # as a tuple of the jobs does (every job made)
        return (*self, *other)

    def __radd__(self, other: Sequence) -> tuple:
        return (*other, *self)

    def __repr__(self) -> str:
        return f"PendingRows({len(self)} jobs)"

    def made(self) -> int:
        """How many core jobs were made so far."""
        return sum(job is not None for job in self._made)

    def with_column(self, name: str, values: np.ndarray) -> PendingRows:
        """These rows with column ``name`` (a plain field: ``variable``, ``skips``, ...) set to
        ``values``, each core job made when read with its field ``name`` set alike."""
        given = [f.name for f in dataclasses.fields(self.columns) if f.metadata["given"] is not None]
        if name in given or name in _MASK_OF:
            raise ValueError(f"column {name!r} has a mask; set it with its mask")
        if name in _DERIVED or name in _DERIVED_FROM:
            raise ValueError(f"column {name!r} is derived or derived from; read the jobs again instead")
        listed = values.tolist()
        return PendingRows(
            dataclasses.replace(self.columns, **{name: values}),
            lambda k: dataclasses.replace(self[k], **{name: listed[k]}),
        )

    def take(self, rows: np.ndarray, columns: PendingColumns | None = None) -> PendingRows:
        """These rows, in that order (the jobs made so far kept); ``columns``: the columns to
        take them from when not its own (the pass's, the same jobs in the same order: the
        core then takes them once for both)."""
        order = rows.tolist()
        picked = PendingRows((columns or self.columns).take(rows), lambda k: self[order[k]])
        picked._made = [self._made[k] for k in order]
        return picked
