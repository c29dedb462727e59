"""The RJMS backend interface and its registry (modelled on ReFrame's schedulers registry).

A backend lives in its own module (``slurm.py``, ``flux.py``), registers itself by name
with :func:`register_backend`, and imports its optional dependency lazily so that
``rush`` works without it and says clearly what is missing when it is asked for.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from rush.core.resources import Node, Request
from rush.errors import BackendUnavailableError, ConfigError, RJMSError


@dataclass(frozen=True)
class RJMSJob:
    """One job as the RJMS reports it (pending or running)."""

    job_id: int
    state: str  # "PENDING", "RUNNING", ... as the RJMS names it
    submit: float  # unix seconds
    procs: int
    requested_time: float  # seconds (time limit)
    start: float | None = None  # unix seconds, when running
    user: str = ""
    account: str = ""
    partition: str = ""
    name: str = ""
    # rush's per-job inputs recorded at submit by the job_submit plugin
    # (e.g. {"idempotent": "1", "app": "lammps", "wtype": "network", "class": "large"}).
    tags: dict[str, str] = field(default_factory=dict)
    # Held by someone (rush or a user/admin), and the reason the RJMS gives.
    held: bool = False
    reason: str = ""
    site_factor: int = 0
    restarts: int = 0
    # The RJMS's own priority (Flux: the job's priority from its urgency and plugins; Slurm:
    # its multifactor priority), read by the RJMS policy.
    priority: float = 0.0
    # The site's fair-share factor of the job's association in [0, 1] (Slurm: sprio -n's
    # FAIRSHARE; Flux: flux-accounting's fairshare), read with site.fairshare = "rjms"; None: not read.
    fairshare: float | None = None
    # Nodes x (cores, GPUs), exclusivity, partition, as the RJMS records the request
    # (rush.core.resources.Request); None: ``procs`` cores anywhere.
    request: Request | None = None
    # Why ``request`` is None although the RJMS records a request: rush cannot read it (its
    # cores anywhere); the daemon journals it once per job. "": read, or nothing to read.
    request_note: str = ""
    # Where a running job runs: (node name, cores, GPUs) per node.
    allocation: tuple[tuple[str, int, int], ...] = ()


_JOB_FIELDS = frozenset(f.name for f in fields(RJMSJob))


def with_fields(job: RJMSJob, **changes: Any) -> RJMSJob:
    """``dataclasses.replace(job, **changes)``'s job (equal to it, its fields in the same order,
    each value the same object), made without the frozen ``__init__``'s ``object.__setattr__``
    per field: a read that sets one field of every job (the Slurm backends' site and fair-share
    factors) paid 5 us a job for it, 54 ms a cycle at 10 000 jobs. RJMSJob has no
    ``__post_init__``: the old job's fields are already the new one's, checked where it was read."""
    if type(job) is not RJMSJob or not _JOB_FIELDS.issuperset(changes):
        return replace(job, **changes)  # a subclass, or a name that is no field: replace's own way
    made = object.__new__(RJMSJob)
    kept = made.__dict__
    kept.update(job.__dict__)
    kept.update(changes)
    return made


@dataclass(frozen=True)
class ClusterState:
    """A consistent read of the queue; ``taken_at`` is unix seconds at the read."""

    taken_at: float
    total_procs: int
    free_procs: int
    jobs: tuple[RJMSJob, ...]
    partitions: tuple[str, ...] = ()
    # The nodes with their state and free cores/GPUs (empty: the RJMS gave only counts).
    nodes: tuple[Node, ...] = ()

    @property
    def pending(self) -> list[RJMSJob]:
        return [j for j in self.jobs if j.state == "PENDING"]

    @property
    def running(self) -> list[RJMSJob]:
        return [j for j in self.jobs if j.state == "RUNNING"]


@dataclass(frozen=True)
class ActionResult:
    ok: bool
    # The RJMS's own answer (stdout/stderr or HTTP body), kept for the journal.
    answer: str = ""
    # False when nothing reached the RJMS (e.g. the lever needs a command this host lacks):
    # the failure is certain, so the journal need not reconcile it against the queue.
    attempted: bool = True


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, declared on its class (the daemon reads it, never probes)."""

    # True when rush itself is the RJMS's scheduler (the Flux scheduler module): the shell
    # starts the core's start/backfill decisions and the core's order is the priority, so
    # the planner plans no priority actions and journals no start advice; a job the core
    # skips is simply not started, so a hold or release is bookkeeping, never an RJMS call.
    starts_jobs: bool = False
    # True when the RJMS has no requeue and rush's requeue cancels and resubmits (Flux): the
    # daemon confirms a replacement job (a new id) through :meth:`RJMSBackend.confirm_replacement`.
    requeue_replaces_job: bool = False
    # Seconds a time limit is rounded up to (Slurm: whole minutes; Flux: seconds).
    time_limit_granularity: float = 60.0
    # True when :meth:`RJMSBackend.submit` takes ``nodes`` (a node count: the job spans that
    # many nodes) and :meth:`RJMSBackend.accounting` names each finished job's ``nodes``.
    submits_node_counts: bool = False


@dataclass(frozen=True)
class BackendOption:
    """One option a backend's constructor takes (``rjms.options``, ``--rjms-option``)."""

    name: str
    type: type  # str, bool, int or float; a string value is parsed to it
    help: str
    optional: bool = False  # None is accepted (the backend's own default)


class RJMSBackend(abc.ABC):
    """What rush needs from a resource and job management system."""

    name: str = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    # The constructor's keyword options, checked by :func:`check_options` before it runs.
    options: ClassVar[tuple[BackendOption, ...]] = ()
    # A backend with many options takes them as one dataclass of this type (its fields are
    # the declared options); :func:`get_backend` builds it from the checked options.
    options_type: ClassVar[type | None] = None

    @abc.abstractmethod
    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        """Read pending and running jobs and free resources. Raise RJMSError if unreachable."""

    @abc.abstractmethod
    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        """Nudge a pending job's priority through the RJMS's own lever (Slurm: SiteFactor)."""

    def set_priorities(self, pairs: Sequence[tuple[int, int]]) -> list[ActionResult]:
        """Many jobs' priorities, one result per (job id, value) pair in order. A backend with a
        batch lever (Flux's jobtap plugin: one RPC for thousands of jobs) overrides this."""
        return [self.set_priority(job_id, value) for job_id, value in pairs]

    @abc.abstractmethod
    def hold(self, job_id: int) -> ActionResult: ...

    @abc.abstractmethod
    def release(self, job_id: int) -> ActionResult: ...

    @abc.abstractmethod
    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        """Kill and requeue a running job, updating its rush tags (e.g. class=large).

        Returns as soon as the RJMS accepted the request: the daemon confirms the requeue on
        a later cycle (restart count, tags) and then calls :meth:`finish_requeue`.
        """

    def finish_requeue(self, job: RJMSJob) -> ActionResult | None:
        """Called once a requeue is confirmed. ``None``: the requeue is still in progress
        (ask again next cycle); otherwise the result of any follow-up (e.g. its begin time)."""
        return ActionResult(ok=True, answer="nothing to finish")

    def set_time_limit(self, job_id: int, seconds: float) -> ActionResult:
        """Set a pending job's time limit (speculative reservations: the attempt's t_k)."""
        return ActionResult(False, f"the {self.name} backend cannot change a time limit", attempted=False)

    def requeue_with_limit(self, job_id: int, tags: dict[str, str], seconds: float) -> ActionResult:
        """Run a job that ended at its time limit again with a new limit and updated rush tags
        (Slurm: requeue the same job; Flux: resubmit its jobspec, a new job). Returns once the
        RJMS accepted it; the daemon confirms it on a later read."""
        return ActionResult(False, f"the {self.name} backend cannot requeue a timed-out job", attempted=False)

    @abc.abstractmethod
    def submit(
        self,
        *,
        name: str,
        procs: int,
        time_limit: float,
        command: Sequence[str],
        comment: str = "",
        begin: float | None = None,
        partition: str = "",
    ) -> int:
        """Submit a batch job; return its id. Used by replay mode and MPI probes."""

    @abc.abstractmethod
    def cancel(self, job_id: int) -> ActionResult: ...

    def ended_unstarted(self, job_id: int) -> str | None:
        """The RJMS's reason a job that left the queue ended without starting (Flux: the
        exception in its eventlog, e.g. Fluxion's ``unsatisfiable``); None when it started,
        or when the backend cannot say. Asked only of jobs rush expected to start or
        released to it as infeasible (rush.planner.start_order)."""
        return None

    def accounting(self, job_ids: Sequence[int]) -> list[dict]:
        """Finished-job records (submit/start/end/state...), where the RJMS keeps them."""
        raise NotImplementedError(f"{self.name} backend has no accounting reader")

    def confirm_replacement(self, job_id: int, tags: dict[str, str], state: ClusterState) -> tuple[str, str]:
        """Settle a kill left open on a backend whose requeue replaces the job
        (``capabilities.requeue_replaces_job``): (journal status, answer)."""
        raise NotImplementedError(f"the {self.name} backend requeues in place; nothing replaces a job")


def check_submit(procs: object, time_limit: object, command: Sequence[str], begin: object = None) -> None:
    """The checks every backend's :meth:`RJMSBackend.submit` makes before reaching the RJMS:
    a positive processor count, a finite positive time limit (seconds), a non-empty argv of
    one-line strings and, when given, a begin time in Unix seconds."""
    if isinstance(procs, bool) or not isinstance(procs, int) or procs <= 0:
        raise RJMSError(f"invalid procs {procs!r}", where="submit", fix="a positive integer")
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or not 0 < time_limit < 2**40:
        raise RJMSError(f"invalid time limit {time_limit!r}", where="submit", fix="seconds > 0")
    if not command or any(not isinstance(c, str) or "\n" in c or "\0" in c for c in command):
        raise RJMSError(
            f"invalid command {list(command)!r}", where="submit", fix="a non-empty argv list, one line"
        )
    if begin is not None and (
        isinstance(begin, bool) or not isinstance(begin, int | float) or not 0 <= begin < 2**40
    ):
        raise RJMSError(f"invalid begin time {begin!r}", where="submit", fix="Unix seconds >= 0")


def check_time_limit(seconds: object, where: str = "time limit") -> float:
    """A time limit in seconds as every backend takes it: a finite number, 0 < seconds < 2**40."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < 2**40:
        raise RJMSError(f"invalid time limit {seconds!r}", where=where, fix="seconds > 0")
    return float(seconds)


_BACKENDS: dict[str, str] = {
    # name -> module that registers it; imported lazily on first use.
    "slurm": "rush.rjms.slurm",
    "flux": "rush.rjms.flux",
    "pyslurm": "rush.rjms.slurm_pyslurm",
}
_REGISTERED: dict[str, Callable[..., RJMSBackend]] = {}


def register_backend(name: str) -> Callable[[type[RJMSBackend]], type[RJMSBackend]]:
    def decorate(cls: type[RJMSBackend]) -> type[RJMSBackend]:
        cls.name = name
        _REGISTERED[name] = cls
        return cls

    return decorate


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def backend_class(name: str) -> type[RJMSBackend]:
    """The class registered as ``name``, importing its module on first use."""
    if name not in _BACKENDS:
        raise ConfigError(
            f"unknown RJMS backend {name!r}",
            where="rjms.backend",
            fix=f"use one of: {', '.join(backend_names())}",
        )
    if name not in _REGISTERED:
        try:
            importlib.import_module(_BACKENDS[name])
        except ImportError as exc:
            raise BackendUnavailableError(
                f"the {name} backend needs a module that is not installed: {exc.name}",
                where=f"rjms backend {name!r}",
                fix=f"pip install 'rush[{name}]' (or install {exc.name})",
            ) from exc
    return _REGISTERED[name]


def _parse_value(text: str, kind: type) -> object:
    # A command-line string as the declared type; ValueError when it is not one.
    if kind is bool:
        lowered = text.strip().lower()
        if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
            raise ValueError(text)
        return lowered in ("true", "1", "yes", "on")
    return kind(text)


def check_options(
    backend: type[RJMSBackend], options: Mapping[str, object], where: str = "rjms.options"
) -> dict[str, object]:
    """``options`` checked against ``backend.options``: a ConfigError for an unknown key (all
    of them named, with the valid ones) or a value not of the declared type; strings
    (``--rjms-option KEY=VALUE``) are parsed to the declared type. Ranges are the backend's."""
    declared = {option.name: option for option in backend.options}
    unknown = sorted(set(options) - set(declared))
    if unknown:
        raise ConfigError(
            f"the {backend.name} backend does not accept these options: {', '.join(unknown)}",
            where=where,
            fix=f"valid options: {', '.join(sorted(declared))}" if declared else "give no option",
        )
    checked: dict[str, object] = {}
    for key, value in options.items():
        option = declared[key]
        kind_name = option.type.__name__
        if isinstance(value, str) and option.type is not str:
            try:
                value = _parse_value(value, option.type)
            except ValueError:
                raise ConfigError(
                    f"invalid {key} {value!r}", where=f"{where}.{key}", fix=f"a {kind_name}: {option.help}"
                ) from None
        numeric = option.type is float and isinstance(value, int) and not isinstance(value, bool)
        fits = numeric or (
            isinstance(value, option.type) and (option.type is bool or not isinstance(value, bool))
        )
        if not (fits or (value is None and option.optional)):
            raise ConfigError(
                f"invalid {key} {value!r}", where=f"{where}.{key}", fix=f"a {kind_name}: {option.help}"
            )
        checked[key] = value
    return checked


def get_backend(name: str, **options: object) -> RJMSBackend:
    """Instantiate backend ``name`` with its options (endpoint, socket, binaries...), checked
    against the options its class declares before the constructor runs."""
    cls = backend_class(name)
    checked = check_options(cls, options)
    if cls.options_type is not None:
        return cls(cls.options_type(**checked))  # type: ignore[call-arg]
    return cls(**checked)


def parse_backend_options(name: str, pairs: Sequence[str], where: str = "--rjms-option") -> dict[str, object]:
    """``KEY=VALUE`` strings from the command line, checked against backend ``name``'s options."""
    options: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"bad backend option {pair!r}",
                where=where,
                fix="write KEY=VALUE, e.g. slurm_conf=/etc/slurm/slurm.conf",
            )
        options[key.strip()] = value
    return check_options(backend_class(name), options, where)
