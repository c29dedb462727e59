"""A site's Slurm scheduler, read from its slurm.conf (or ``scontrol show config``), as the
simulator's Slurm mode needs it (:class:`rush.core.slurm_backfill.SlurmScheduler`).

Read: ``SchedulerParameters`` (``bf_interval``, ``bf_resolution``, ``bf_window``,
``bf_max_job_test``, ``bf_job_part_count_reserve``, ``sched_interval``; every other
parameter Slurm knows is accepted and listed as not modelled), ``SchedulerType`` (only
``sched/backfill`` is modelled), the nodes (``NodeName=... CPUs=``, or sockets x cores x
threads) and the default partition's ``Nodes=``. Values are validated (pydantic) with Slurm's
own bounds (backfill.c ``_load_config``); an unknown parameter, a garbled value or nodes of
several sizes are a :class:`~rush.errors.ConfigError` naming the file, line and key (exit 2).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rush.core.slurm_backfill import SlurmScheduler
from rush.errors import ConfigError
from rush.rjms.slurm_json import hostlist

# SchedulerParameters Slurm 25.11 knows (slurm.conf(5); job_scheduler.c, backfill.c).
KNOWN_PARAMETERS = frozenset(
    """allow_zero_lic assoc_limit_stop batch_sched_delay bb_array_stage_cnt bf_allow_magnetic_slot
    bf_busy_nodes bf_continue bf_hetjob_immediate bf_hetjob_prio bf_ignore_newly_avail_nodes
    bf_interval bf_job_part_count_reserve bf_licenses bf_max_job_array_resv bf_max_job_assoc
    bf_max_job_part bf_max_job_start bf_max_job_test bf_max_job_user bf_max_job_user_part
    bf_max_time bf_min_age_reserve bf_min_prio_reserve bf_node_space_size bf_one_resv_per_job
    bf_resolution bf_running_job_reserve bf_topopt_enable bf_topopt_iterations bf_window
    bf_window_linear bf_yield_interval bf_yield_rpc_cnt bf_yield_rpc_count bf_yield_sleep
    build_queue_timeout default_queue_depth defer defer_batch delay_boot disable_job_shrink
    enable_hetjob_steps enable_user_top extra_constraints ignore_prefer_validation
    kill_invalid_depend max_array_tasks max_depend_depth max_rpc_cnt max_rpc_count
    max_sched_time max_script_size max_submit_line_size max_switch_wait no_backup_scheduling
    no_env_cache nohold_on_prolog_fail pack_serial_at_end partition_job_depth
    permit_job_expansion preempt_reorder_count preempt_strict_order preempt_youngest_first
    reduce_completing_frag requeue_setup_env_fail salloc_wait_nodes sbatch_wait_nodes
    sched_interval sched_max_job_start sched_min_interval spec_cores_first step_retry_count
    step_retry_time time_min_as_soft_limit whole_hetjob whole_pack""".split()
)
# The ones the Slurm mode models.
MODELLED = ("bf_interval", "bf_resolution", "bf_window", "bf_max_job_test", "bf_job_part_count_reserve",
            "sched_interval")  # fmt: skip


class SchedulerParameters(BaseModel):
    """The modelled parameters with Slurm's bounds (backfill.c, job_scheduler.c), Slurm's units."""

    model_config = ConfigDict(extra="ignore", strict=False)

    bf_interval: int = Field(30, ge=1, le=10800, description="seconds between backfill cycles")
    bf_resolution: int = Field(60, ge=1, le=3600, description="seconds the plan is rounded to")
    bf_window: int = Field(1440, ge=1, le=43200, description="minutes backfill plans ahead")
    bf_max_job_test: int = Field(500, ge=1, le=1_000_000, description="jobs tested per cycle")
    bf_job_part_count_reserve: int = Field(0, ge=0, le=100_000, description="reservations per partition")
    sched_interval: int = Field(60, ge=1, description="seconds between main scheduler runs")


@dataclass(frozen=True)
class SlurmConfig:
    """What was read: the scheduler the Slurm mode runs, and the parameters it does not model."""

    scheduler: SlurmScheduler
    not_modelled: tuple[str, ...]
    source: str


def _integer(name: str, text: str, where: str) -> int:
    if not re.fullmatch(r"\s*\d+\s*", text):
        raise ConfigError(
            f"{name}={text!r} is not a whole number", where=where, fix=f"write {name}=N with N a whole number"
        )
    return int(text)


def scheduler_parameters(text: str, where: str) -> tuple[dict[str, int], list[str]]:
    """``a=b,c,...`` -> the modelled values (validated) and the other known names."""
    values: dict[str, int] = {}
    other: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = (p.strip() for p in item.partition("="))
        key = name.lower()
        if key not in KNOWN_PARAMETERS:
            close = difflib.get_close_matches(key, sorted(KNOWN_PARAMETERS), n=1)
            raise ConfigError(
                f"unknown SchedulerParameters item {name!r}",
                where=f"{where}: SchedulerParameters",
                fix=f"did you mean {close[0]}?"
                if close
                else "see slurm.conf(5) for the parameters Slurm knows",
            )
        if key in MODELLED:
            if not sep:
                raise ConfigError(
                    f"SchedulerParameters {name} has no value",
                    where=f"{where}: SchedulerParameters {name}",
                    fix=f"write {name}=N",
                )
            number = _integer(name, value, f"{where}: SchedulerParameters {name}")
            values.setdefault(key, number)  # Slurm reads the first occurrence (xstrcasestr)
        else:
            other.append(key)
    try:
        checked = SchedulerParameters(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0])
        field = SchedulerParameters.model_fields[key]
        bounds = [getattr(m, a) for m in field.metadata for a in ("ge", "le") if hasattr(m, a)]
        raise ConfigError(
            f"SchedulerParameters {key}={values.get(key)!r}: {first['msg']}",
            where=f"{where}: SchedulerParameters {key}",
            fix=f"{field.description}: Slurm accepts {' to '.join(map(str, bounds))}",
        ) from None
    return checked.model_dump(), other


def _pairs(line: str) -> list[tuple[str, str]]:
    return [(k.strip(), v.strip()) for k, _, v in (word.partition("=") for word in line.split())]


def _node_cpus(fields: dict[str, str], where: str) -> int:
    if "cpus" in fields or "procs" in fields:
        return _integer("CPUs", fields.get("cpus", fields.get("procs", "")), where)
    cpus = 1
    for key in ("boards", "sockets", "corespersocket", "threadspercore"):
        if key in fields:
            cpus *= _integer(key, fields[key], where)
    return cpus


def read_slurm_conf(path: Path, partition: str = "") -> SlurmConfig:
    """The scheduler of ``partition`` (default: the Default=YES one, else the first) in the
    slurm.conf at ``path``."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read {path}: {exc}", where="--slurm-conf", fix="give a readable slurm.conf"
        ) from None
    nodes: dict[str, int] = {}
    partitions: list[tuple[str, list[str], bool]] = []
    params: tuple[dict[str, int], list[str]] = ({}, [])
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{number}"
        pairs = _pairs(line)
        key, value = pairs[0][0].lower(), pairs[0][1]
        if key == "schedulerparameters":
            params = scheduler_parameters(line.partition("=")[2].strip(), where)
        elif key == "schedulertype" and value.lower() != "sched/backfill":
            raise ConfigError(
                f"SchedulerType={value}: the Slurm mode models sched/backfill only",
                where=where,
                fix="simulate with --backfill easy/conservative/none for other schedulers",
            )
        elif key == "nodename" and value.lower() != "default":
            fields = {k.lower(): v for k, v in pairs[1:]}
            try:
                names = hostlist(value, "NodeName")
            except ValueError as exc:
                raise ConfigError(str(exc), where=where, fix="write NodeName as a Slurm host list") from None
            for name in names:
                nodes[name] = _node_cpus(fields, where)
        elif key == "partitionname" and value.lower() != "default":
            fields = {k.lower(): v for k, v in pairs[1:]}
            members = fields.get("nodes", "ALL")
            try:
                names = list(nodes) if members.upper() == "ALL" else hostlist(members, "Nodes")
            except ValueError as exc:
                raise ConfigError(str(exc), where=where, fix="write Nodes= as a Slurm host list") from None
            partitions.append((value, names, fields.get("default", "no").lower() == "yes"))
    return _config(nodes, partitions, params, str(path), partition)


def _config(
    nodes: dict[str, int],
    partitions: list[tuple[str, list[str], bool]],
    params: tuple[dict[str, int], list[str]],
    source: str,
    partition: str = "",
) -> SlurmConfig:
    if not nodes:
        raise ConfigError(
            "no NodeName line", where=source, fix="give the slurm.conf that defines the cluster's nodes"
        )
    chosen = [p for p in partitions if p[0] == partition] if partition else [p for p in partitions if p[2]]
    if partition and not chosen:
        raise ConfigError(
            f"no partition {partition!r}",
            where=source,
            fix=f"one of: {', '.join(p[0] for p in partitions) or '(none defined)'}",
        )
    members = (chosen or partitions or [("", list(nodes), True)])[0][1]
    unknown = [n for n in members if n not in nodes]
    if unknown:
        raise ConfigError(
            f"the partition names undefined nodes {unknown[:5]}",
            where=source,
            fix="define them with NodeName=",
        )
    sizes = sorted({nodes[n] for n in members})
    if len(sizes) != 1:
        raise ConfigError(
            f"the partition's nodes have {', '.join(map(str, sizes))} CPUs: the Slurm mode models nodes of one size",
            where=source,
            fix="simulate one partition of equal nodes (--partition)",
        )
    values, other = params
    window = values.get("bf_window", 1440)
    scheduler = SlurmScheduler(
        nodes=len(members),
        cpus_per_node=sizes[0],
        bf_interval=float(values.get("bf_interval", 30)),
        bf_resolution=float(values.get("bf_resolution", 60)),
        bf_window=float(window) * 60.0,
        bf_max_job_test=int(values.get("bf_max_job_test", 500)),
        bf_job_part_count_reserve=int(values.get("bf_job_part_count_reserve", 0)),
        sched_interval=float(values.get("sched_interval", 60)),
    )
    return SlurmConfig(scheduler, tuple(sorted(set(other))), source)


def scheduler_from_settings(settings: dict[str, str], node_cpus: list[int], source: str) -> SlurmConfig:
    """From ``scontrol show config`` (:func:`rush.studies.replay_slurm.parse_config`'s
    ``SchedulerParameters``) and the partition's nodes' CPU counts (the RJMS's state)."""
    raw = settings.get("SchedulerParameters", "")
    params = scheduler_parameters("" if raw == "(null)" else raw, source)
    nodes = {f"node{i}": cpus for i, cpus in enumerate(node_cpus)}
    return _config(nodes, [], params, source)
