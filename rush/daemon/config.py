"""``rush.toml``: the daemon's configuration, read with tomllib and validated by pydantic.

Every section forbids unknown keys. Any unknown key or bad value stops start-up with a
:class:`~rush.errors.ConfigError` naming the key as a dotted path (``daemon.cycle_interval``)
and the fix (the field's description says what is allowed). ``deploy/rush.toml`` is a
documented example, and a test loads it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.errors import ConfigError, RushError
from rush.rjms.base import backend_names

EXAMPLE = "deploy/rush.toml"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DaemonSection(Section):
    cycle_interval: float = Field(60.0, gt=0, description="seconds between cycles, > 0 (e.g. 60)")
    partitions: list[str] = Field([], description="partition names to schedule; [] means all")
    dry_run: bool = Field(True, description="true (only journal) or false (act); --apply/--dry-run win")
    journal: Path = Field(Path("/var/lib/rush/journal.sqlite"), description="path of the SQLite journal")
    metrics_address: str = Field(
        "127.0.0.1:9877", description="HOST:PORT for Prometheus metrics (port 0 picks a free one)"
    )
    max_actions_per_cycle: int = Field(200, ge=0, description="an integer >= 0 (RJMS calls per cycle)")
    max_requeues_per_job: int = Field(1, ge=0, description="an integer >= 0 (kills+requeues of one job)")
    backoff_max: float = Field(300.0, gt=0, description="seconds > 0: longest wait after RJMS failures")
    max_read_seconds: float = Field(
        30.0, gt=0, description="seconds > 0: a slower queue read is treated as stale (no action)"
    )

    @field_validator("metrics_address")
    @classmethod
    def _address(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:9877")
        return value


class PolicySection(Section):
    policy: str = Field("FCFS", description="a policy name: FCFS, SPF, WFP3, F1..F4, LINEAR:q=1,...")
    backfill: Literal["easy", "conservative", "none"] = Field(
        "easy", description="easy, conservative or none"
    )
    threshold: float | Literal["none"] = Field(
        200_000.0, description='starvation threshold in seconds >= 0, or "none"'
    )
    skip_limit: int = Field(
        10, ge=0, description="an integer >= 0: most cycles a job is held for variability"
    )
    use_classes: bool = Field(False, description="true or false: predicted-small jobs first")
    kill_false_small: bool = Field(False, description="true or false: requeue opted-in false-small jobs")
    divider: float | None = Field(None, gt=0, description="seconds > 0: the small/large runtime divider")

    @field_validator("policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        try:
            parse_policy(value)
        except RushError as exc:
            raise ValueError(exc.message + (f"; {exc.fix}" if exc.fix else "")) from None
        return value

    @field_validator("threshold")
    @classmethod
    def _threshold(cls, value: float | str) -> float | str:
        if isinstance(value, float | int) and value < 0:
            raise ValueError("must be >= 0 seconds")
        return value


class ModelsSection(Section):
    runtime_class: Path | None = Field(
        None, description="path of a runtime-class model (rush train runtime-class); absent: classes unknown"
    )
    history: Path | None = Field(None, description="path where the live runtime history is kept (JSON)")
    small_below: float | None = Field(
        None,
        gt=0,
        description="seconds > 0: a rule classifier, jobs requesting at most this are predicted small "
        "(used when no model is configured)",
    )


class VariationSection(Section):
    """The variation predictor; the shipped ``rule`` flags jobs of ``workload_type`` while the
    mean of ``counter`` over the last ``window`` seconds (all nodes) exceeds ``threshold``."""

    enabled: bool = Field(False, description="true or false")
    predictor: str = Field("rule", description="a registered variation predictor name (rule)")
    workload_type: str = Field("network", description="the wtype tag of sensitive jobs (e.g. network)")
    counter: str = Field("ib_xmit_bytes_per_s", description="a feature-store metric name")
    window: float = Field(300.0, gt=0, description="seconds > 0 (default 300)")
    threshold: float = Field(0.0, description="a number: the counter mean above which jobs are flagged")
    store: Path | None = Field(None, description="path of the feature store (rush collect)")

    @field_validator("predictor")
    @classmethod
    def _predictor(cls, value: str) -> str:
        from rush.daemon.variation import predictor_names

        if value not in predictor_names():
            raise ValueError(f"unknown predictor {value!r}; use one of: {', '.join(predictor_names())}")
        return value


class RJMSSection(Section):
    backend: str = Field("slurm", description="an RJMS backend name (slurm, flux)")
    options: dict[str, str | int | float | bool] = Field(
        {}, description="the backend's options (slurm: rest_url, jwt, slurm_conf, timeout, ...)"
    )

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str) -> str:
        if value not in backend_names():
            raise ValueError(f"unknown RJMS backend {value!r}; use one of: {', '.join(backend_names())}")
        return value


class RushConfig(Section):
    daemon: DaemonSection = DaemonSection()
    policy: PolicySection = PolicySection()
    models: ModelsSection = ModelsSection()
    variation: VariationSection = VariationSection()
    rjms: RJMSSection = RJMSSection()
    # Validated by rush.collect.config when the collector service runs from the same file.
    collect: dict[str, Any] | None = None

    def core_config(self, divider: float | None = None) -> CoreConfig:
        """The core's configuration; ``divider`` (a model's) applies when policy.divider is unset."""
        p = self.policy
        return CoreConfig.from_names(
            p.policy,
            p.backfill,
            p.threshold,
            skip_limit=p.skip_limit,
            use_classes=p.use_classes,
            kill_false_small=p.kill_false_small,
            divider=p.divider if p.divider is not None else divider,
            max_requeues=self.daemon.max_requeues_per_job,
        )


def _field_description(loc: tuple[Any, ...]) -> str | None:
    """The description of the field at ``loc`` (walking the section models)."""
    model: Any = RushConfig
    info = None
    for part in loc:
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return info.description if info is not None else None
        info = fields[part]
        model = info.annotation
    return info.description if info is not None else None


def explain(exc: ValidationError, source: str) -> ConfigError:
    """The first validation error as a ConfigError naming the dotted key and the fix."""
    errors = exc.errors()
    first = errors[0]
    loc = tuple(first["loc"])
    key = ".".join(str(part) for part in loc) or "top level"
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    if first["type"] == "extra_forbidden":
        parent: Any = RushConfig
        for part in loc[:-1]:
            parent = parent.model_fields[part].annotation if hasattr(parent, "model_fields") else None
        allowed = ", ".join(getattr(parent, "model_fields", {})) or "see " + EXAMPLE
        section = ".".join(str(p) for p in loc[:-1]) or "the top level"
        return ConfigError(
            f"unknown key {key!r}{more}",
            where=f"{source}: {key}",
            fix=f"remove it or fix its spelling; allowed in {section}: {allowed}",
        )
    message = first["msg"].removeprefix("Value error, ")
    value = first.get("input")
    shown = "" if isinstance(value, dict) else f" {value!r}"
    description = _field_description(loc)
    return ConfigError(
        f"bad value{shown} for {key!r}: {message}{more}",
        where=f"{source}: {key}",
        fix=(f"{key} must be {description}" if description else f"see {EXAMPLE}"),
    )


def _cross_checks(config: RushConfig, source: str) -> None:
    """Rules that involve two keys, reported on the key to change."""
    p, v = config.policy, config.variation
    if p.kill_false_small and p.divider is None and config.models.runtime_class is None:
        raise ConfigError(
            "kill_false_small needs a runtime divider",
            where=f"{source}: policy.divider",
            fix="set policy.divider (seconds) or models.runtime_class (the model's divider is used)",
        )
    if v.enabled and v.predictor == "rule" and v.store is None:
        raise ConfigError(
            "the rule variation predictor reads the feature store",
            where=f"{source}: variation.store",
            fix="set variation.store to the collector's feature store, or variation.enabled = false",
        )


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
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(
            "configuration file not found", where=str(path), fix=f"copy {EXAMPLE} there and edit it"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the configuration: {exc.strerror}", where=str(path)) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message ends with "(at line L, column C)".
        raise ConfigError(
            f"not valid TOML: {exc}", where=str(path), fix="fix the syntax at the line and column shown"
        ) from None
    return parse_config(raw, str(path))
