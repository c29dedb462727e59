"""``rush.toml``: the daemon's configuration, validated by pydantic.

Any unknown key or bad value stops start-up with a message naming the key (dotted path)
and the fix. See ``deploy/rush.toml`` for a documented example.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.errors import ConfigError, RushError


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DaemonSection(Section):
    cycle_interval: float = Field(60.0, gt=0, description="seconds between cycles")
    partitions: list[str] = []
    dry_run: bool = True
    journal: Path = Path("/var/lib/rush/journal.sqlite")
    metrics_address: str = "127.0.0.1:9877"
    max_actions_per_cycle: int = Field(200, ge=0)
    max_requeues_per_job: int = Field(1, ge=0)
    backoff_max: float = Field(300.0, gt=0)

    @field_validator("metrics_address")
    @classmethod
    def _address(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:9877 (port 0 picks a free one)")
        return value


class PolicySection(Section):
    policy: str = "FCFS"
    backfill: Literal["easy", "conservative", "none"] = "easy"
    threshold: float | Literal["none"] = 200_000.0
    skip_limit: int = Field(10, ge=0)
    use_classes: bool = False
    kill_false_small: bool = False
    divider: float | None = Field(None, gt=0)

    @field_validator("policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        try:
            parse_policy(value)
        except RushError as exc:
            raise ValueError(exc.message + (f" ({exc.fix})" if exc.fix else "")) from None
        return value


class ModelsSection(Section):
    runtime_class: Path | None = None
    history: Path | None = None


class VariationSection(Section):
    """The rule predictor: flag jobs of ``workload_type`` while the mean of ``counter`` over
    the last ``window`` seconds (all nodes) exceeds ``threshold``."""

    enabled: bool = False
    workload_type: str = "network"
    counter: str = "ib_xmit_bytes_per_s"
    window: float = Field(300.0, gt=0)
    threshold: float = 0.0
    store: Path | None = None


class RJMSSection(Section):
    backend: str = "slurm"
    options: dict[str, str | int | float | bool] = {}


class RushConfig(Section):
    daemon: DaemonSection = DaemonSection()
    policy: PolicySection = PolicySection()
    models: ModelsSection = ModelsSection()
    variation: VariationSection = VariationSection()
    rjms: RJMSSection = RJMSSection()
    collect: dict | None = None  # validated by rush.collect.config when the collector runs

    def core_config(self) -> CoreConfig:
        p = self.policy
        return CoreConfig.from_names(
            p.policy,
            p.backfill,
            p.threshold,
            skip_limit=p.skip_limit,
            use_classes=p.use_classes,
            kill_false_small=p.kill_false_small,
            divider=p.divider,
            max_requeues=self.daemon.max_requeues_per_job,
        )


def load_config(path: str | Path) -> RushConfig:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            "configuration file not found", where=str(path), fix="copy deploy/rush.toml and edit it"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"not valid TOML: {exc}", where=str(path), fix="fix the syntax at the line shown"
        ) from exc
    try:
        config = RushConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        if first["type"] == "extra_forbidden":
            section = ".".join(str(part) for part in first["loc"][:-1]) or "top level"
            message, fix = (
                f"unknown key {key!r}",
                f"remove it or check its spelling (allowed in {section}: see deploy/rush.toml)",
            )
        else:
            message, fix = (
                f"bad value for {key!r}: {first['msg']}",
                "see deploy/rush.toml for the allowed values",
            )
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise ConfigError(message + more, where=f"{path}: {key}", fix=fix) from None
    if (
        config.policy.kill_false_small
        and config.policy.divider is None
        and config.models.runtime_class is None
    ):
        raise ConfigError(
            "kill_false_small needs a divider",
            where=f"{path}: policy.divider",
            fix="set policy.divider or models.runtime_class (its divider is used)",
        )
    return config
