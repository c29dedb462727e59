"""What a Slurm must be set to for a replay to compare its backfill with the simulator's EASY.

The simulator's EASY counts cores and reserves for the first waiting job only; Slurm's
backfill (``sched/backfill``, 25.11 ``backfill.c``) plans on node bitmaps, reserves for every
job it tests and rounds its plan to ``bf_resolution`` seconds. Measured on two busy KTH-SP2
windows (docs/admin-slurm.md, "Replay"), each of these doubles or halves the difference, so
a replay reports the ones its Slurm has (:func:`setting_differences`) next to the ones no
setting removes (:data:`INHERENT`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rush.core.config import CoreConfig
from rush.core.resources import Node
from rush.core.slurm_backfill import SlurmScheduler
from rush.errors import RJMSError
from rush.rjms.base import RJMSBackend
from rush.studies.replay_window import Observed, fidelity_report
from rush.workload.model import Workload

# Slurm's defaults where slurm.conf leaves a parameter out (slurm.conf(5), 25.11).
DEFAULTS = {"bf_resolution": "60", "bf_window": "1440", "bf_job_part_count_reserve": "0"}

# Differences no setting removes, with what they cost (measured, docs/admin-slurm.md "Replay").
INHERENT = (
    "Slurm decides on whole-second ticks (slurmctld's loop and bf_interval run each second; "
    "the main scheduler runs at most each batch_sched_delay s after a submit or an end): a "
    "job starts up to about 1 s after the simulator starts it, and a chain of sub-second jobs "
    "on the same cores adds about 1 s per job",
    "Slurm's reservation for the waiting job takes the nodes its select plugin picks (possibly "
    "nodes free now); EASY's shadow count leaves every other core to backfill, so Slurm may "
    "backfill less beside a reservation",
    "EASY is sensitive to sub-second timing: a job that fits at once in the simulator but "
    "arrives just after Slurm's tick may find the cores taken, and the schedules part from there",
)


def slurm_settings(backend: RJMSBackend) -> dict[str, str]:
    """The scheduler settings of the backend's Slurm (``scontrol show config``), SchedulerParameters
    split into its items; {} when they cannot be read (no scontrol here, or not Slurm)."""
    cli = getattr(backend, "cli", None)  # SlurmBackend's commands; other backends have none
    if backend.name != "slurm" or cli is None or not cli.has("scontrol"):
        return {}
    try:
        out = cli.run("scontrol", "show", "config")
    except RJMSError:
        return {}
    if out.returncode != 0:
        return {}
    return parse_config(out.stdout)


def parse_config(text: str) -> dict[str, str]:
    """``scontrol show config`` lines ``Key = value``; SchedulerParameters' ``a=b,c`` items as keys."""
    settings: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        settings[key] = value
        if key == "SchedulerParameters" and value != "(null)":
            for item in value.split(","):
                name, _, setting = item.partition("=")
                settings[name.strip()] = setting.strip()
    return settings


def setting_differences(settings: dict[str, str], nodes: Sequence[Node], max_limit: float) -> list[str]:
    """What in this Slurm makes its backfill differ from the simulator's EASY, with the fix.

    ``nodes`` are the RJMS's nodes (empty: unknown), ``max_limit`` the longest scaled time
    limit of the window (seconds). Empty ``settings``: only the node layout is checked.
    """
    found = []
    wide = [node for node in nodes if node.cores > 1]
    if wide:
        found.append(
            f"{len(wide)} of {len(nodes)} nodes have more than one core (up to {max(n.cores for n in wide)}): "
            "Slurm's backfill reserves whole nodes for the job it plans, so no job backfills on the "
            "cores beside a reservation; replay on one-core nodes (NodeName=... CPUs=1)"
        )
    if not settings:
        return found

    def value(name: str) -> str:
        return settings.get(name, DEFAULTS.get(name, ""))

    if value("bf_job_part_count_reserve") != "1":
        found.append(
            "bf_job_part_count_reserve is not 1: Slurm's backfill reserves for every job it tests "
            "(conservative backfilling), EASY for the first one only; set bf_job_part_count_reserve=1"
        )
    resolution = _number(value("bf_resolution"))
    if resolution is None or resolution > 1:
        found.append(
            f"bf_resolution={value('bf_resolution')} s: Slurm's backfill rounds its plan to that many "
            "seconds, as long as a replayed job's limit; set bf_resolution=1"
        )
    window = _number(value("bf_window"))
    if window is not None and max_limit > window * 60:
        found.append(
            f"bf_window={value('bf_window')} min is shorter than the longest limit ({max_limit:.0f} s): "
            "Slurm plans no reservation past it; raise bf_window"
        )
    if settings.get("PriorityType") == "priority/multifactor":
        weights = [k for k in settings if k.startswith("PriorityWeight") and _number(settings[k])]
        if weights:
            found.append(
                f"{', '.join(sorted(weights))} not 0: Slurm orders the queue by a priority recalculated "
                "each PriorityCalcPeriod, the simulator's FCFS by submit time; set them to 0 for a replay"
            )
    return found


def _number(text: str) -> float | None:
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def slurm_mode_report(
    as_seen: Workload,
    observed: list[Observed],
    scheduler: SlurmScheduler,
    config: CoreConfig,
    clock_offset: float,
    tau: float = 10.0,
    granularity: float = 5.0,
) -> dict:
    """The simulator's Slurm mode (:mod:`rush.simulator.slurm_mode`) against what Slurm did:
    the same comparison as the replay's, on Slurm's clock (``clock_offset``: the replay's time
    0 in epoch seconds)."""
    from rush.simulator.slurm_mode import SlurmClock, simulate_slurm

    simulated = simulate_slurm(as_seen, scheduler, config, SlurmClock(offset=clock_offset))
    report = fidelity_report(simulated, observed, tau=tau, rjms="slurm", granularity=granularity)
    report["scheduler"] = {k: getattr(scheduler, k) for k in scheduler.__dataclass_fields__}
    return report


def slurm_scheduler(backend: RJMSBackend, nodes: Sequence[Node]) -> tuple[SlurmScheduler | None, str]:
    """The Slurm mode's scheduler for this Slurm (``scontrol show config`` and its nodes), or
    None and the reason (settings unreadable, nodes of several sizes, a parameter the mode
    does not know): then only the EASY comparisons are made."""
    from rush.errors import ConfigError
    from rush.rjms.slurm_conf import scheduler_from_settings

    settings = slurm_settings(backend)
    if not settings or not nodes:
        return None, "Slurm's settings could not be read (scontrol show config)"
    try:
        found = scheduler_from_settings(settings, [node.cores for node in nodes], "scontrol show config")
    except ConfigError as exc:
        return None, str(exc)
    return found.scheduler, ""
