"""``rush.toml``: the daemon's configuration, read with tomllib and validated by pydantic.

Every section forbids unknown keys. Any unknown key or bad value stops start-up with a
:class:`~rush.errors.ConfigError` naming the key as a dotted path (``daemon.cycle_interval``)
and the fix (the field's description says what is allowed). ``deploy/rush.toml`` is a
documented example, and a test loads it.

Types are strict (``true`` is not 1 second, ``"false"`` is not false, ``"60"`` is not a
number), numbers finite and bounded (``cycle_interval = 1e10`` would overflow the sleep
later), paths neither empty nor directories. The file is read by
:func:`rush.config_file.read_toml` (UTF-8 only, at most 1 MiB, regular files only).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from rush.config_file import duration_or_number, file_path, host_port, read_toml
from rush.config_file import explain as explain_validation
from rush.core.config import CoreConfig
from rush.core.names import LINEAR_FEATURES
from rush.core.pass_budget import DEFAULT_MAX_JOBS_CONSIDERED
from rush.core.priority_values import MAX_VALUE
from rush.errors import ConfigError, RushError
from rush.models.policies.heuristic_file import parse_policy_text
from rush.planner.speculative import SpeculativeSection
from rush.rjms.base import backend_names

EXAMPLE = "deploy/rush.toml"
DAY = 86400.0
# Strict types everywhere: TOML ``true`` is not 1 second, ``"false"`` is not true, and NaN and
# inf are refused (``allow_inf_nan=False``), so a value that passes here cannot crash a cycle.
Seconds = Annotated[float, Field(strict=True)]
FilePath = Annotated[Path, BeforeValidator(file_path)]
Name = Annotated[StrictStr, Field(min_length=1, max_length=256, pattern=r"^[^\s,]+$")]
Address = Annotated[StrictStr, AfterValidator(host_port)]


def _threshold(value: Any) -> float | str:
    # One plain check instead of a float|"none" union: a union reports each branch's error.
    if value == "none":
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError('must be seconds (a number) or "none"')
    if not math.isfinite(value) or not 0 <= value <= 1e9:
        raise ValueError("must be >= 0 seconds (and at most 1e9)")
    return float(value)


def _job_count(value: Any) -> int | str:
    # As _threshold: one plain check instead of an int|"all" union.
    if value == "all":
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError('must be a number of jobs (an integer) or "all"')
    if not 1 <= value <= 10_000_000:
        raise ValueError("must be at least 1 (and at most 10000000)")
    return value


def _option_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number")
    if isinstance(value, str) and "\0" in value:
        raise ValueError("must not contain a NUL character")
    if not isinstance(value, str | int | float | bool):
        raise ValueError(f"must be a string, integer, number or boolean, not {type(value).__name__}")
    return value


OptionValue = Annotated[Any, PlainValidator(_option_value)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class DaemonSection(Section):
    cycle_interval: Seconds = Field(
        60.0, ge=1, le=DAY, description="seconds between cycles, from 1 to 86400 (e.g. 60)"
    )
    partitions: list[Name] = Field(
        [], max_length=10_000, description="partition names (no blanks or commas); [] means all"
    )
    dry_run: StrictBool = Field(True, description="true (only journal) or false (act); --apply/--dry-run win")
    journal: FilePath = Field(
        Path("/var/lib/rush/journal.sqlite"), description="the path of the SQLite journal file"
    )
    journal_retention: Annotated[Seconds, BeforeValidator(duration_or_number)] = Field(
        90 * DAY,
        ge=3600,
        le=36500 * DAY,
        description='how long decisions, events and cycles are kept: seconds >= 3600 or "90d"',
    )
    metrics_address: Address = Field(
        "127.0.0.1:9877",
        description="HOST:PORT or [IPv6]:PORT for Prometheus metrics (port 0 picks a free one)",
    )
    max_actions_per_cycle: StrictInt = Field(
        200, ge=0, le=1_000_000, description="an integer from 0 to 1000000 (RJMS calls per cycle)"
    )
    max_requeues_per_job: StrictInt = Field(
        1, ge=0, le=100, description="an integer from 0 to 100 (kills+requeues of one job)"
    )
    backoff_max: Seconds = Field(
        300.0, gt=0, le=DAY, description="seconds > 0 and <= 86400: longest wait after RJMS failures"
    )
    max_read_seconds: Seconds = Field(
        30.0,
        gt=0,
        le=3600,
        description="seconds > 0 and <= 3600: a slower queue read is treated as stale (no action)",
    )
    query_socket: FilePath = Field(
        Path("/run/rush/query.sock"),
        description="the Unix socket (mode 0666) where the daemon answers rush explain / rush status "
        "for users who cannot read the journal, each told only what the RJMS lets them see; "
        "at most 107 bytes",
    )

    @field_validator("query_socket")
    @classmethod
    def _socket_path(cls, value: Path) -> Path:
        if len(os.fsencode(value)) > 107:
            raise ValueError("is longer than a Unix socket path may be (107 bytes)")
        return value


class PolicySection(Section):
    policy: StrictStr = Field("FCFS", description="a policy name: FCFS, SPF, WFP3, F1..F4, LINEAR:q=1,...")
    backfill: Literal["easy", "conservative", "none"] = Field(
        "easy", description="easy, conservative or none"
    )
    placement: Literal["first-fit", "topology", "variability"] = Field(
        "first-fit",
        description="where jobs go on a cluster with nodes: first-fit (lowest free nodes, as RUSH's Flux), "
        "topology (fewest leaf switches) or variability (flagged jobs to quiet pods first, then skip-with-limit)",
    )
    threshold: Annotated[float | str, PlainValidator(_threshold)] = Field(
        200_000.0, description='starvation threshold in seconds from 0 to 1e9, or "none"'
    )
    rjms_priority: Literal["first", "ignore"] = Field(
        "first",
        description='when rush is the scheduler (Flux module): "first" orders by the RJMS\'s priority '
        "(urgency, hold, expedite, priority plugins such as flux-accounting's) and by the policy among "
        'equal priorities; "ignore": by the policy alone (those have no effect on the order)',
    )
    skip_limit: StrictInt = Field(
        10, ge=0, le=10_000, description="an integer from 0 to 10000: most skips of a variable job"
    )
    use_classes: StrictBool = Field(False, description="true or false: predicted-small jobs first")
    kill_false_small: StrictBool = Field(
        False, description="true or false: requeue opted-in false-small jobs"
    )
    divider: Seconds | None = Field(
        None, gt=0, le=1e9, description="seconds > 0 and <= 1e9: the small/large runtime divider"
    )
    wait_quantum: Seconds = Field(
        60.0,
        ge=0,
        le=86_400,
        description="seconds from 0 to 86400: time-dependent policies (WFP3, UNICEF, SEXP, ...) see "
        "waits rounded down to 0, Q, 2Q, 4Q, ..., so a job's priority changes only then (0: every cycle)",
    )
    max_jobs_considered: Annotated[int | str, PlainValidator(_job_count)] = Field(
        DEFAULT_MAX_JOBS_CONSIDERED,
        description='an integer >= 1 or "all": a pass considers at most this many pending jobs '
        "besides those holding a reservation (as Slurm's bf_max_job_test); the rest wait, listed in "
        f'the journal as not considered; default {DEFAULT_MAX_JOBS_CONSIDERED}; "all": every job',
    )
    runtime_prediction: Literal["none", "easy++", "gaussier", "runtime-quantiles"] = Field(
        "none",
        description="the runtime predictor whose predictions the core schedules and estimates starts "
        'with, as rush simulate --runtime-prediction: "easy++" (mean of the user\'s last two finished '
        'runtimes), "gaussier" (Gaussier et al.\'s regression, refit weekly on the kept history), '
        '"runtime-quantiles" (rush\'s quantile model, models.runtime_quantiles) or "none" (limits); '
        "predictions are capped at the limit, jobs are still killed only at it",
    )
    prediction_correction: Literal["none", "request", "stepwise"] | None = Field(
        None,
        description="how a running job that outlives its prediction is re-estimated: none, request or "
        "stepwise (Tsafrir et al.'s); absent: the predictor's rule (stepwise)",
    )
    estimate_rule: Literal["L2", "T"] = Field(
        "L2",
        description="how start estimates project a queued job with predicted quantiles (with "
        '"runtime-quantiles"): "L2", the larger of its calibrated mean and its upper quartile, or '
        '"T", that raised to the mean with the tail above its top predicted quantile at its limit '
        "(issue 29 round 30: refuted as the default, sim/runtime_predictions/estimates/dev_log.md); "
        "decisions never read it",
    )
    time_origin: Seconds | None = Field(
        None,
        ge=0,
        le=4e9,
        description="Unix time (seconds) from which F1-F4, LIN and LINEAR's r term counts submit "
        "times; absent: the time of the daemon's first cycle, kept in the journal",
    )

    @field_validator("policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        try:
            parse_policy_text(value)
        except RushError as exc:
            raise ValueError(exc.message + (f"; {exc.fix}" if exc.fix else "")) from None
        return value


class ModelsSection(Section):
    runtime_class: FilePath | None = Field(
        None, description="path of a runtime-class model (rush train runtime-class); absent: classes unknown"
    )
    history: FilePath | None = Field(
        None, description="path of the file where the live runtime history is kept (JSON)"
    )
    small_below: Seconds | None = Field(
        None,
        gt=0,
        le=1e9,
        description="seconds > 0 and <= 1e9: a rule classifier, jobs requesting at most this are "
        "predicted small (used when no model is configured)",
    )
    runtime_quantiles: FilePath | None = Field(
        None,
        description="path of a runtime-quantile model (rush train runtime-quantiles), loaded through its "
        'verified model card, for policy.runtime_prediction = "runtime-quantiles"',
    )


class VariationSection(Section):
    """The variation predictor; the shipped ``rule`` flags jobs of ``workload_type`` while the
    mean of ``counter`` over the last ``window`` seconds (all nodes) exceeds ``threshold``;
    ``learned`` flags jobs whose predicted class (``model``, on ``store``'s window of the
    model card's length) is one of ``classes``."""

    enabled: StrictBool = Field(False, description="true or false")
    predictor: StrictStr = Field("rule", description="a registered variation predictor name (rule, learned)")
    workload_type: Name = Field("network", description="the wtype tag of sensitive jobs (e.g. network)")
    counter: Name = Field("ib_xmit_bytes_per_s", description="a feature-store metric name")
    window: Seconds = Field(300.0, gt=0, le=30 * DAY, description="seconds > 0 and <= 30 days (default 300)")
    threshold: Annotated[float, Field(strict=True)] = Field(
        0.0, description="a finite number: the counter mean above which jobs are flagged"
    )
    store: FilePath | None = Field(None, description="path of the feature store file (rush collect)")
    model: FilePath | None = Field(
        None, description="path of a variability model (rush train variability), for predictor = learned"
    )
    classes: list[Literal["little", "variation"]] | None = Field(
        None,
        min_length=1,
        max_length=2,
        description='the predicted classes that flag a job, e.g. ["variation"] or ["little", "variation"] '
        "(learned; default: the model card's)",
    )
    flag_by_size: StrictBool = Field(
        False,
        description="true or false (learned): true flags a job by the threshold of its size in the model "
        "card's flag_threshold_by_size (the nearest size listed; the one threshold for a job of unknown "
        "size or a card without the table), false by the card's one flag_threshold for every job",
    )

    def predictor_options(self) -> dict[str, Any]:
        """The keyword arguments of the configured predictor (rush.planner.variation.get_predictor),
        for every shell that builds it from this section (the daemon, the Flux module)."""
        if self.predictor == "learned":
            # The model card fixes the window and the features; the rule's keys do not apply.
            return {
                "source": self.store,
                "model": self.model,
                "classes": self.classes,
                "flag_by_size": self.flag_by_size,
            }
        return {
            "source": self.store,
            "counter": self.counter,
            "threshold": self.threshold,
            "window": self.window,
            "workload_type": self.workload_type,
        }

    @field_validator("predictor")
    @classmethod
    def _predictor(cls, value: str) -> str:
        from rush.planner.variation import predictor_names

        if value not in predictor_names():
            raise ValueError(f"unknown predictor {value!r}; use one of: {', '.join(predictor_names())}")
        return value


class RJMSSection(Section):
    backend: StrictStr = Field("slurm", description="an RJMS backend name (slurm, pyslurm, flux)")
    options: dict[StrictStr, OptionValue] = Field(
        {},
        description="a table of the backend's options, each a string, integer, finite number or "
        "boolean (slurm: rest_url, jwt, slurm_conf, timeout, ...)",
    )

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str) -> str:
        if value not in backend_names():
            raise ValueError(f"unknown RJMS backend {value!r}; use one of: {', '.join(backend_names())}")
        return value


class SiteSection(Section):
    """How rush's order sits beside the site's own priorities (fair-share, QOS, age)."""

    priority_weight: StrictInt | None = Field(
        None,
        ge=1,
        le=MAX_VALUE,
        description="an integer from 1 to 1610612736: rush's priority values are scaled into "
        "[1, priority_weight], order kept, never 0 (Flux's hold: a job rush ranks last or releases as "
        "infeasible gets 1). Slurm: the SiteFactor, next to PriorityWeightFairshare and the others; "
        "Flux: the term added to the site's priority plugin. Absent: the full range, rush's order "
        "overrides the site's factors",
    )
    fairshare: Literal["none", "rjms"] = Field(
        "none",
        description='"rjms": read each pending job\'s fair-share factor from the RJMS (Slurm: '
        'sprio -n; Flux: flux-accounting) for the policy\'s fairshare term; "none": do not',
    )


class RushConfig(Section):
    daemon: DaemonSection = DaemonSection()
    policy: PolicySection = PolicySection()
    models: ModelsSection = ModelsSection()
    variation: VariationSection = VariationSection()
    speculative: SpeculativeSection = SpeculativeSection()
    rjms: RJMSSection = RJMSSection()
    site: SiteSection = SiteSection()
    # Validated by rush.collect.config when the collector service runs from the same file.
    collect: dict[str, Any] | None = None

    def core_config(self, divider: float | None = None, starts_jobs: bool = False) -> CoreConfig:
        """The core's configuration; ``divider`` (a model's) applies when policy.divider is unset.
        ``starts_jobs``: rush is the scheduler, so ``policy.rjms_priority`` applies (elsewhere the
        RJMS orders by its own priority, which rush sets)."""
        p = self.policy
        return CoreConfig.from_names(
            parse_policy_text(p.policy),
            p.backfill,
            p.threshold,
            skip_limit=p.skip_limit,
            use_classes=p.use_classes,
            kill_false_small=p.kill_false_small,
            divider=p.divider if p.divider is not None else divider,
            max_requeues=self.daemon.max_requeues_per_job,
            wait_quantum=p.wait_quantum,
            placement=p.placement,
            priority_weight=self.site.priority_weight,
            max_jobs_considered=None if p.max_jobs_considered == "all" else p.max_jobs_considered,
            rjms_priority_first=starts_jobs and p.rjms_priority == "first",
            estimate_rule=p.estimate_rule,
            **self.prediction_rules(),
        )

    def prediction_rules(self) -> dict[str, Any]:
        """The core's rules for the configured runtime predictor (as rush simulate
        --runtime-prediction): its backfill order (shortest predicted first) and correction
        rule, unless policy.prediction_correction names another; nothing without a predictor."""
        p = self.policy
        if p.runtime_prediction == "none":
            return {}
        from rush.core.runtime_predictions import prediction_policy

        order, correction = prediction_policy(p.runtime_prediction)
        return {"backfill_policy": order, "prediction_correction": p.prediction_correction or correction}


def explain(exc: ValidationError, source: str) -> ConfigError:
    """The first validation error as a ConfigError naming the dotted key and the fix."""
    return explain_validation(exc, source, RushConfig, example=EXAMPLE)


def _cross_checks(config: RushConfig, source: str) -> None:
    """Rules that involve two keys, reported on the key to change."""
    p, v = config.policy, config.variation
    if p.kill_false_small and p.divider is None and config.models.runtime_class is None:
        raise ConfigError(
            "kill_false_small needs a runtime divider",
            where=f"{source}: policy.divider",
            fix="set policy.divider (seconds) or models.runtime_class (the model's divider is used)",
        )
    if config.site.fairshare == "none" and _uses_fairshare(p.policy):
        raise ConfigError(
            "the policy has a fairshare term but no fair-share factor is read",
            where=f"{source}: site.fairshare",
            fix="set site.fairshare = \"rjms\" (the RJMS's factor), or drop the policy's fairshare term",
        )
    if p.runtime_prediction == "runtime-quantiles" and config.models.runtime_quantiles is None:
        raise ConfigError(
            "the runtime-quantiles predictor needs its model file",
            where=f"{source}: models.runtime_quantiles",
            fix="train one (rush train runtime-quantiles TRACE --out FILE) and set models.runtime_quantiles, "
            'or policy.runtime_prediction = "easy++"',
        )
    if p.prediction_correction is not None and p.runtime_prediction == "none":
        raise ConfigError(
            "policy.prediction_correction corrects runtime predictions, and none is configured",
            where=f"{source}: policy.prediction_correction",
            fix='set policy.runtime_prediction (e.g. "easy++"), or remove policy.prediction_correction',
        )
    if v.enabled and v.predictor == "learned" and v.model is None:
        raise ConfigError(
            "the learned variation predictor needs its model",
            where=f"{source}: variation.model",
            fix='set variation.model to a file written by rush train variability, or predictor = "rule"',
        )
    if v.enabled and v.predictor in ("rule", "learned") and v.store is None:
        raise ConfigError(
            f"the {v.predictor} variation predictor reads the feature store",
            where=f"{source}: variation.store",
            fix="set variation.store to the collector's feature store, or variation.enabled = false",
        )


def _uses_fairshare(policy_text: str) -> bool:
    policy = parse_policy_text(policy_text)
    return policy.name == "LINEAR" and policy.weights[LINEAR_FEATURES.index("fairshare")] != 0.0


def parse_config(raw: dict[str, Any], source: str = "config") -> RushConfig:
    """Validate an already parsed TOML document (``source`` names it in errors)."""
    try:
        config = RushConfig.model_validate(raw)
    except ValidationError as exc:
        raise explain(exc, source) from None
    _cross_checks(config, source)
    return config


def load_config(path: str | Path) -> RushConfig:
    """Read and validate ``rush.toml``; every problem is a ConfigError with where and fix."""
    return parse_config(read_toml(path, EXAMPLE), str(path))
